"""Reliability diagram images (calibcli.render.image), on matplotlib's Agg/SVG/PDF canvases."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pytest

from calibcli.render.diagram import DiagramSeries
from calibcli.render.image import PlotUnavailable, plot_reliability, reliability_figure

pytest.importorskip("matplotlib")

SVG = "{http://www.w3.org/2000/svg}"


def series(label="", *, ci=False, shift=0.0) -> DiagramSeries:
    """Ten equal-width bins written by hand: bins 1 and 4 empty, bin 0 populated with accuracy 0,
    bins 2 and 3 under-confident, bin 5 calibrated, bins 6-9 over-confident."""
    count = np.array([4, 0, 5, 10, 0, 20, 40, 50, 80, 160], dtype=float)
    conf = np.array([0.06, np.nan, 0.25, 0.35, np.nan, 0.55, 0.66, 0.75, 0.85, 0.95])
    acc = np.array([0.0, np.nan, 0.6, 0.5, np.nan, 0.55, 0.5, 0.6, 0.7, 0.8]) + shift
    lower = upper = None
    if ci:
        lower, upper = acc - 0.05, acc + 0.05
    return DiagramSeries(
        label=label,
        bin_lower=np.arange(10) / 10,
        bin_upper=np.arange(1, 11) / 10,
        confidence=conf,
        accuracy=acc,
        count=count,
        accuracy_ci=None if lower is None else (lower, upper),
        ece=0.1447,
        brier=0.1875,
        n=369,
        mean_confidence=0.8127,
        accuracy_total=0.6856,
    )


POPULATED = [0, 2, 3, 5, 6, 7, 8, 9]
OVER = [0, 6, 7, 8, 9]  # confidence above accuracy
UNDER = [2, 3]  # accuracy above confidence; bin 5 has no gap


def svg_ids(path: Path) -> list[str]:
    return [el.get("id") for el in ET.parse(path).iter() if el.get("id")]


def with_prefix(ids: list[str], prefix: str) -> list[str]:
    return sorted(i for i in ids if i.startswith(prefix))


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        chunks.append((kind, body))
        pos += 12 + length
    return chunks


def test_svg_has_one_bar_per_populated_bin_and_the_diagonal(tmp_path):
    path = tmp_path / "r.svg"
    plot_reliability([series("model")], path)
    ids = svg_ids(path)
    assert with_prefix(ids, "accuracy-bar-") == sorted(f"accuracy-bar-0-{i}" for i in POPULATED)
    assert with_prefix(ids, "count-bar-") == sorted(f"count-bar-0-{i}" for i in POPULATED)
    assert with_prefix(ids, "gap-over-") == sorted(f"gap-over-0-{i}" for i in OVER)
    assert with_prefix(ids, "gap-under-") == sorted(f"gap-under-0-{i}" for i in UNDER)
    assert {"diagonal", "legend", "metrics", "mean-confidence-0", "accuracy-line-0"} <= set(ids)
    root = ET.parse(path).getroot()
    diagonal = next(el for el in root.iter() if el.get("id") == "diagonal")
    assert diagonal.find(f"{SVG}path") is not None


def test_figure_axes_are_exactly_the_unit_square_and_empty_bins_have_no_bars():
    figure = reliability_figure([series()])
    top, bottom = figure.axes
    assert top.get_xlim() == (0.0, 1.0)
    assert top.get_ylim() == (0.0, 1.0)
    assert bottom.get_xlim() == (0.0, 1.0)
    assert bottom.get_ylim()[0] == 0.0
    (diagonal,) = (line for line in top.get_lines() if line.get_gid() == "diagonal")
    assert list(diagonal.get_xdata()) == [0, 1] and list(diagonal.get_ydata()) == [0, 1]
    bars = {p.get_gid(): p for p in top.patches + bottom.patches if p.get_gid()}
    for i in (1, 4):
        assert not any(gid.endswith(f"-0-{i}") for gid in bars), f"empty bin {i} drawn"
    # bin 0: zero accuracy is a zero-height bar under a gap reaching the bin's confidence
    assert bars["accuracy-bar-0-0"].get_height() == 0.0
    assert bars["gap-over-0-0"].get_y() == 0.0
    assert bars["gap-over-0-0"].get_height() == pytest.approx(0.06)
    # bars span their bin and reach the accuracy; counts are the bin counts
    assert bars["accuracy-bar-0-9"].get_x() == pytest.approx(0.9)
    assert bars["accuracy-bar-0-9"].get_width() == pytest.approx(0.1)
    assert bars["accuracy-bar-0-9"].get_height() == pytest.approx(0.8)
    assert bars["gap-under-0-2"].get_y() == pytest.approx(0.25)
    assert bars["gap-under-0-2"].get_height() == pytest.approx(0.35)
    assert bars["count-bar-0-8"].get_height() == 80


@pytest.mark.parametrize(("size", "dpi"), [((6.4, 6.4), 150), ((4.0, 3.0), 50)])
def test_png_has_the_requested_pixel_size_and_no_stamps(tmp_path, size, dpi):
    path = tmp_path / "r.png"
    plot_reliability([series()], path, size=size, dpi=dpi)
    chunks = png_chunks(path.read_bytes())
    kind, header = chunks[0]
    assert kind == b"IHDR"
    width, height = struct.unpack(">II", header[:8])
    assert (width, height) == (round(size[0] * dpi), round(size[1] * dpi))
    kinds = {k for k, _ in chunks}
    assert b"tIME" not in kinds
    texts = b"".join(body for k, body in chunks if k in (b"tEXt", b"iTXt", b"zTXt"))
    assert b"Software" not in texts


def test_same_input_gives_byte_identical_files(tmp_path):
    data = [series("base"), series("tuned", shift=0.1, ci=True)]
    for suffix in (".svg", ".pdf", ".png"):
        a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
        plot_reliability(data, a, title="Comparison", dpi=40)
        plot_reliability(data, b, title="Comparison", dpi=40)
        assert a.read_bytes() == b.read_bytes(), suffix
    svg = (tmp_path / "a.svg").read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg


def test_several_series_overlay_with_a_legend(tmp_path):
    path = tmp_path / "cmp.svg"
    plot_reliability([series("base"), series("tuned", shift=0.05)], path)
    ids = svg_ids(path)
    for k in (0, 1):
        assert len(with_prefix(ids, f"accuracy-bar-{k}-")) == len(POPULATED)
        assert f"mean-confidence-{k}" in ids
    # legend text is drawn as glyph paths; matplotlib keeps each string as an XML comment
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.parse(path, parser).getroot()
    legend = next(el for el in root.iter() if el.get("id") == "legend")
    comments = {el.text.strip() for el in legend.iter() if el.tag is ET.Comment}
    assert {"base", "tuned", "Perfect calibration"} <= comments

    figure = reliability_figure([series("base"), series("tuned", shift=0.05)])
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["base", "tuned"]
    bars = {p.get_gid(): p for p in figure.axes[0].patches if p.get_gid()}
    # side by side inside each bin: half the bin width each, the second one offset
    assert bars["accuracy-bar-0-9"].get_x() == pytest.approx(0.9)
    assert bars["accuracy-bar-1-9"].get_x() == pytest.approx(0.95)
    assert bars["accuracy-bar-1-9"].get_width() == pytest.approx(0.05)
    assert bars["accuracy-bar-0-9"].get_facecolor() != bars["accuracy-bar-1-9"].get_facecolor()


def test_intervals_draw_points_instead_of_bars():
    figure = reliability_figure([series("m", ci=True)])
    top = figure.axes[0]
    assert not [p for p in top.patches if (p.get_gid() or "").startswith("accuracy-bar-")]
    (points,) = (line for line in top.get_lines() if line.get_gid() == "accuracy-points-0")
    # one point per populated bin, at the bin centre, at the accuracy
    np.testing.assert_allclose(points.get_xdata(), [(i + 0.5) / 10 for i in POPULATED])
    np.testing.assert_allclose(points.get_ydata(), [series().accuracy[i] for i in POPULATED])


def test_metrics_in_the_corner():
    figure = reliability_figure([series("m")])
    (text,) = (t for t in figure.axes[0].texts if t.get_gid() == "metrics")
    assert text.get_text() == "ECE 0.1447   Brier 0.1875   N 369"


@pytest.mark.parametrize("name", ["r.jpg", "r", "r.svgz", "r.png.txt"])
def test_unknown_extension_is_a_clear_value_error(tmp_path, name):
    with pytest.raises(ValueError, match=r"\.png, \.svg or \.pdf"):
        plot_reliability([series()], tmp_path / name)
    assert not (tmp_path / name).exists()


def test_extension_is_case_insensitive(tmp_path):
    plot_reliability([series()], tmp_path / "R.SVG")
    assert (tmp_path / "R.SVG").read_bytes().startswith(b"<?xml")


def test_empty_series_list_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        plot_reliability([], tmp_path / "r.png")


def test_no_predictions_still_draws_the_axes(tmp_path):
    nothing = DiagramSeries(
        "", np.arange(10) / 10, np.arange(1, 11) / 10, np.full(10, math.nan),
        np.full(10, math.nan), np.zeros(10), None, 0.0, 0.0, 0, 0.0, 0.0,
    )  # fmt: skip
    path = tmp_path / "r.svg"
    plot_reliability([nothing], path)
    ids = svg_ids(path)
    assert "diagonal" in ids and not with_prefix(ids, "accuracy-bar-")


def test_missing_matplotlib_raises_plot_unavailable(monkeypatch, tmp_path):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)  # "import matplotlib" now raises ImportError
    with pytest.raises(PlotUnavailable, match=r"-m pip install matplotlib") as info:
        plot_reliability([series()], tmp_path / "r.png")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "r.png").exists()


def test_importing_the_modules_does_not_import_matplotlib_or_rich():
    code = (
        "import sys, calibcli.render.image, calibcli.render.diagram; "
        "print([m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'rich')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plot_with_json_output_never_imports_rich(tmp_path):
    """--plot draws from the report with matplotlib alone: with --json nothing imports rich."""
    import subprocess
    import sys

    pytest.importorskip("matplotlib")
    code = (
        "import sys\n"
        "from calibcli.cli import main\n"
        f"sys.argv = ['calibcli', 'reliability', 'sample_data/overconfident.jsonl', '--plot', "
        f"{str(tmp_path / 'r.png')!r}, '--json', '-q']\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print(code, 'rich' in sys.modules, 'matplotlib' in sys.modules, file=sys.stderr)\n"
    )
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert result.stderr.split()[-3:] == ["0", "False", "True"], result.stderr
    assert (tmp_path / "r.png").stat().st_size > 0
