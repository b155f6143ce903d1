"""Terminal reliability diagram (calibcli.render.diagram).

Snapshots: the plain-mode drawings of small fixed inputs are stored in ``tests/snapshots/*.txt`` so
that any change to the drawing shows up as a diff. After an intended change, regenerate them with

    CALIBCLI_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_diagram.py

and review the diff before committing.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import reference
from rich.console import Console

from calibcli.metrics.core import BinStats
from calibcli.render.diagram import DiagramSeries, diagram_lines, render_diagram

SNAPSHOTS = Path(__file__).parent / "snapshots"
HEIGHT = 16  # default rows of the accuracy panel
ESCAPE = re.compile(r"\x1b\[([0-9;]*)m")


def series_from_arrays(count, confidence, accuracy, *, label="fixture", bins=None) -> DiagramSeries:
    """A series from hand-written per-bin values over equal-width bins."""
    count = np.asarray(count, dtype=float)
    bins = len(count) if bins is None else bins
    edges = np.array([k / bins for k in range(bins + 1)])
    n = int(count.sum())
    populated = count > 0
    conf = np.asarray(confidence, dtype=float)
    acc = np.asarray(accuracy, dtype=float)
    ece = sum(count[i] / n * abs(conf[i] - acc[i]) for i in range(bins) if populated[i]) if n else 0
    mean_conf = sum(count[i] * conf[i] for i in range(bins) if populated[i]) / n if n else 0
    total_acc = sum(count[i] * acc[i] for i in range(bins) if populated[i]) / n if n else 0
    return DiagramSeries(
        label=label,
        bin_lower=edges[:-1],
        bin_upper=edges[1:],
        confidence=conf,
        accuracy=acc,
        count=count,
        accuracy_ci=None,
        ece=float(ece),
        brier=0.1875,
        n=n,
        mean_confidence=float(mean_conf),
        accuracy_total=float(total_acc),
    )


# Ten bins: bins 1 and 4 empty, bin 0 populated with accuracy 0 (must not look like bins 1 and 4),
# bins 2, 3 and 5 under-confident or calibrated, bins 6-9 over-confident.
FIXTURE = {
    "count": [4, 0, 5, 10, 0, 20, 40, 50, 80, 160],
    "confidence": [0.06, math.nan, 0.25, 0.35, math.nan, 0.55, 0.66, 0.75, 0.85, 0.95],
    "accuracy": [0.0, math.nan, 0.6, 0.5, math.nan, 0.55, 0.5, 0.6, 0.7, 0.8],
}


@pytest.fixture
def fixture_series() -> DiagramSeries:
    return series_from_arrays(**FIXTURE)


def check_snapshot(name: str, lines: list[str]) -> None:
    path = SNAPSHOTS / name
    text = "\n".join(lines) + "\n"
    if os.environ.get("CALIBCLI_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing snapshot {path}; create it with CALIBCLI_UPDATE_SNAPSHOTS=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"drawing differs from {path} (CALIBCLI_UPDATE_SNAPSHOTS=1 updates it)"


def main_panel(lines: list[str]) -> list[str]:
    """The HEIGHT rows of the accuracy panel, top row first, padded to equal length."""
    start = lines.index("accuracy") + 1
    rows = lines[start : start + HEIGHT]
    width = max(len(r) for r in rows)
    return [r.ljust(width) for r in rows]


def column(rows: list[str], i: int, column_width: int) -> list[str]:
    """Bar characters of bin i, bottom row first: 7-character margin, a leading space, then
    ``column_width - 1`` bar characters and one space per bin."""
    start = 7 + 1 + i * column_width
    return ["".join(r[start : start + column_width - 1]) for r in reversed(rows)]


# --- snapshots --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("width", "name"), [(80, "diagram_10bins_80.txt"), (40, "diagram_10bins_40.txt")]
)
def test_plain_snapshot(fixture_series, width, name):
    check_snapshot(name, diagram_lines(fixture_series, plain=True, width=width))


def test_plain_snapshot_merged_bins():
    # 45 bins do not fit at two characters each in 80 columns: drawn as 15 columns of 3 bins.
    rng = np.random.default_rng(7)
    count = rng.integers(0, 30, 45).astype(float)
    count[[3, 4, 5, 20]] = 0  # bins 3-5 form a merged column that is empty
    centres = (np.arange(45) + 0.5) / 45
    accuracy = np.clip(centres - 0.15, 0, 1)
    series = series_from_arrays(count, centres, accuracy, label="45 bins")
    lines = diagram_lines(series, plain=True)
    assert "(45 bins, 3 per column)" in lines
    check_snapshot("diagram_45bins_80.txt", lines)


# --- what the drawing shows ---------------------------------------------------------------------


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def test_bars_and_gaps_have_the_right_heights(fixture_series):
    rows = main_panel(diagram_lines(fixture_series, plain=True, width=80))
    for i in range(10):
        cells = column(rows, i, column_width=6)  # 10 bins at 80 columns: 6 characters per bin
        glyphs = []
        for cell in cells:  # a bar cell is filled across the column; elsewhere only the diagonal
            marks = set(cell) - {" ", "/"}
            assert not marks or (set(cell) == marks and len(marks) == 1), f"bin {i}: {cells}"
            glyphs.append(cell[0] if marks else " ")
        if FIXTURE["count"][i] == 0:
            assert set(glyphs) == {" "}, f"empty bin {i} must stay blank: {cells}"
            continue
        acc = round_half_up(FIXTURE["accuracy"][i] * HEIGHT)
        conf = round_half_up(FIXTURE["confidence"][i] * HEIGHT)
        expected = ["#"] * min(acc, conf)
        expected += [":"] * (conf - acc) if conf > acc else ["+"] * (acc - conf)
        assert glyphs[: len(expected)] == expected, f"bin {i}"
        assert set(glyphs[len(expected) :]) == {" "}, f"bin {i}"


def test_zero_accuracy_bin_differs_from_empty_bins(fixture_series):
    lines = diagram_lines(fixture_series, plain=True, width=80)
    rows = main_panel(lines)
    # bin 0 holds 4 wrong predictions at confidence 0.06: one row of over-confident gap
    assert column(rows, 0, 6)[0] == ":::::"
    hist_start = lines.index("accuracy") + 1 + HEIGHT + 1  # after the "0.0 +----" axis line
    histogram = [r.ljust(80) for r in lines[hist_start : hist_start + 4]]
    bottom = column(histogram, 0, 6)[0]
    assert bottom == "#####", "a populated bin gets at least one histogram cell"
    for empty in (1, 4):
        assert set("".join(column(histogram, empty, 6))) == {" "}


def test_count_histogram_scales_to_the_largest_bin(fixture_series):
    lines = diagram_lines(fixture_series, plain=True, width=80)
    start = next(i for i, line in enumerate(lines) if line.startswith("  160 +"))
    histogram = [r.ljust(80) for r in lines[start : start + 4]]
    for i, n in enumerate(FIXTURE["count"]):
        filled = sum(cell == "#####" for cell in column(histogram, i, 6))
        expected = 0 if n == 0 else max(1, round_half_up(n / 160 * 4))
        assert filled == expected, f"bin {i}: {filled} != {expected}"


def test_header_and_axes(fixture_series):
    lines = diagram_lines(fixture_series, plain=True, width=80)
    assert lines[0] == "Reliability diagram: fixture"
    assert "ECE 0.1447" in lines[1]  # 53.39 / 369: sum of n_k |conf_k - acc_k| over the bins / N
    assert "N 369" in lines[1]
    axis = next(line for line in lines if line.lstrip().startswith("0.0   0.1"))
    assert axis.split() == [f"{k / 10:.1f}" for k in range(11)]
    assert lines[-3].strip() == "confidence"
    assert any("over-confident gap" in line for line in lines)
    assert any("under-confident gap" in line for line in lines)


# --- width, plain text, colour ------------------------------------------------------------------


@pytest.mark.parametrize("bins", [1, 2, 3, 7, 10, 15, 20, 34, 35, 36, 50, 100, 1000])
@pytest.mark.parametrize("width", [32, 40, 60, 80])
def test_fits_the_width_and_is_plain_ascii(bins, width):
    rng = np.random.default_rng(bins)
    count = rng.integers(0, 5, bins).astype(float)
    count[0] = 3
    centres = (np.arange(bins) + 0.5) / bins
    series = series_from_arrays(count, centres, rng.random(bins), label="x" * 100)
    lines = diagram_lines(series, plain=True, width=width)
    assert max(len(line) for line in lines) <= width
    for line in lines:
        assert all(32 <= ord(ch) < 127 for ch in line), repr(line)


def test_too_narrow_is_an_error(fixture_series):
    with pytest.raises(ValueError, match="at least 32"):
        diagram_lines(fixture_series, width=20)


def render(renderable, **console_options) -> str:
    buffer = io.StringIO()
    Console(file=buffer, **console_options).print(renderable)
    return buffer.getvalue()


def test_piped_output_is_plain_ascii_without_escapes(fixture_series):
    # a Console writing to a file is not a terminal, like stdout piped to another program
    out = render(render_diagram(fixture_series), width=120)
    assert "\x1b" not in out
    assert out.isascii()
    assert out.splitlines() == diagram_lines(fixture_series, plain=True, width=80)


def test_terminal_output_uses_colour_and_blocks(fixture_series):
    out = render(
        render_diagram(fixture_series), width=100, force_terminal=True, color_system="standard"
    )
    assert "\x1b[" in out
    assert {"█", "░", "▓", "·"} <= set(out)
    assert max(len(ESCAPE.sub("", line)) for line in out.splitlines()) <= 80


def test_no_color_keeps_the_gaps_apart_by_character(fixture_series):
    out = render(
        render_diagram(fixture_series),
        width=80,
        force_terminal=True,
        color_system="standard",
        no_color=True,
    )
    codes = {int(c) for seq in ESCAPE.findall(out) for c in seq.split(";") if c}
    assert not codes & (set(range(30, 50)) | set(range(90, 108))), "no colour codes"
    assert "░" in out and "▓" in out  # over- and under-confident gaps
    assert max(len(ESCAPE.sub("", line)) for line in out.splitlines()) <= 80


def test_renderable_follows_a_narrow_console(fixture_series):
    out = render(render_diagram(fixture_series), width=50)
    assert max(len(line) for line in out.splitlines()) <= 50
    out = render(render_diagram(fixture_series, width=40), width=120)
    assert max(len(line) for line in out.splitlines()) <= 40


def test_no_predictions():
    series = series_from_arrays([0, 0, 0], [math.nan] * 3, [math.nan] * 3, label="")
    lines = diagram_lines(series)
    assert lines[0] == "Reliability diagram"
    assert "(no predictions to draw)" in lines


# --- DiagramSeries ------------------------------------------------------------------------------


def test_from_stats_matches_a_plain_python_reference():
    rng = np.random.default_rng(3)
    conf = rng.beta(5, 2, 300)
    conf[:5] = [0.0, 1.0, 0.5, 0.3, 0.3]
    conf = conf[(conf < 0.1) | (conf >= 0.2)]  # leave bin 1 empty
    correct = rng.random(conf.shape[0]) < conf
    series = DiagramSeries.from_stats(BinStats.from_arrays(conf, correct, bins=10), label="m")
    means, accuracies, counts = reference.reliability(conf, correct, 10)
    assert series.label == "m" and series.n == len(conf) == sum(counts)
    assert series.count.tolist() == counts
    assert counts[1] == 0 and math.isnan(series.confidence[1]) and math.isnan(series.accuracy[1])
    populated = [i for i in range(10) if counts[i]]
    np.testing.assert_allclose(
        series.confidence[populated], [means[i] for i in populated], rtol=1e-12
    )
    np.testing.assert_allclose(
        series.accuracy[populated], [accuracies[i] for i in populated], rtol=1e-12
    )
    assert series.ece == pytest.approx(reference.ece(conf, correct, 10)[0], rel=1e-12)
    assert series.brier == pytest.approx(float(reference.brier_exact(conf, correct)), rel=1e-12)
    assert series.mean_confidence == pytest.approx(sum(conf.tolist()) / len(conf), rel=1e-12)
    assert series.accuracy_total == pytest.approx(sum(correct.tolist()) / len(conf), rel=1e-12)
    assert series.bin_lower.tolist() == [k / 10 for k in range(10)]
    assert series.bin_upper.tolist() == [k / 10 for k in range(1, 11)]
    assert series.accuracy_ci is None


def test_merge_adjacent_by_hand():
    series = series_from_arrays(
        [2, 0, 0, 0, 4],
        [0.05, math.nan, math.nan, math.nan, 0.9],
        [0.5, math.nan, math.nan, math.nan, 0.75],
    )
    merged = series.merge_adjacent(2)
    assert merged.count.tolist() == [2, 0, 4]
    assert merged.bin_lower.tolist() == [0.0, 0.4, 0.8]
    assert merged.bin_upper.tolist() == [0.4, 0.8, 1.0]
    assert merged.confidence[0] == pytest.approx(0.05) and math.isnan(merged.confidence[1])
    assert merged.accuracy[2] == pytest.approx(0.75)
    assert series.merge_adjacent(1) is series


def test_series_validates_shapes():
    with pytest.raises(ValueError, match="count has 3"):
        DiagramSeries(
            "x", np.zeros(2), np.ones(2), np.zeros(2), np.zeros(2), np.ones(3), None, 0, 0, 3, 0, 0
        )
