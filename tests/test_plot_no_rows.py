"""--plot on reports of no rows: every command draws its empty chart (the axes, and N 0 or "no
rows"), so the picture never stops the other outputs nor changes the gate's exit code."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from harness import make_rows, run, write_jsonl

from calibcli.render import image

pytest.importorskip("matplotlib")


def svg_ids(path: Path) -> set[str]:
    return {el.get("id") for el in ET.parse(path).iter() if el.get("id")}


def no_rows_text(figure) -> str:
    (box,) = (t for t in figure.axes[0].texts if t.get_gid() == "no-rows")
    return box.get_text()


@pytest.fixture
def empty(tmp_path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path


@pytest.fixture
def rows(tmp_path) -> Path:
    data = make_rows(400, seed=3)
    for k, row in enumerate(data):
        row["task"] = f"t{k % 2}"
    return write_jsonl(tmp_path / "rows.jsonl", data)


def test_threshold_gate_on_no_rows_writes_every_output_with_the_plot(tmp_path, empty):
    out = {name: tmp_path / f"t.{name}" for name in ("json", "html", "md", "svg")}
    result = run(
        [
            "threshold",
            empty,
            "--target-accuracy",
            "0.8",
            "--min-coverage",
            "0.1",
            "-o",
            out["json"],
            "--html",
            out["html"],
            "--summary",
            out["md"],
            "--plot",
            out["svg"],
            "-q",
        ]
    )
    assert result.exit_code == 1, result.stderr
    assert "gate failed: coverage: no rows were read" in result.stderr
    assert "Traceback" not in result.stderr
    for path in out.values():
        assert path.stat().st_size > 0, path
    assert "no-rows" in svg_ids(out["svg"])


@pytest.mark.parametrize(
    "args",
    [
        ["calibrate"],
        ["calibrate", "--by", "task"],
        ["reliability"],
        ["reliability", "--by", "task"],
        ["threshold", "--target-accuracy", "0.8"],
        ["threshold", "--target-accuracy", "0.8", "--by", "task"],
        ["threshold", "--target-accuracy", "0.8", "--fit", "ROWS"],
        ["threshold", "--target-accuracy", "0.8", "--fit", "ROWS", "--by", "task"],
    ],
    ids=lambda a: " ".join(a).replace("ROWS", "rows"),
)
def test_every_plot_of_no_rows_is_drawn_with_the_report(tmp_path, empty, rows, args):
    """A report of no rows, with --by too (no group at all), draws its empty chart: exit 0,
    the picture and the -o report both written."""
    command, *options = [str(rows) if a == "ROWS" else a for a in args]
    picture, report = tmp_path / "p.svg", tmp_path / "r.json"
    result = run([command, empty, *options, "--plot", picture, "-o", report, "-q"])
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert report.stat().st_size > 0
    ids = svg_ids(picture)
    if command == "threshold":
        assert "no-rows" in ids
    else:  # the reliability diagram of no rows: its axes, the diagonal and N 0, no bar
        assert {"diagonal", "metrics"} <= ids
        assert not [i for i in ids if i.startswith(("accuracy-bar-", "count-bar-", "gap-"))]


@pytest.mark.parametrize("command", ["calibrate", "threshold"])
def test_a_by_summary_of_no_rows_is_drawn_too(tmp_path, empty, command):
    summary = tmp_path / "e.cbs"
    assert run(["summarize", empty, "--by", "task", "-o", summary, "-q"]).exit_code == 0
    picture = tmp_path / "p.png"
    target = ["--target-accuracy", "0.8"] if command == "threshold" else []
    result = run([command, summary, *target, "--plot", picture, "-q"])
    assert result.exit_code == 0, result.stderr
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def threshold_body(groups: dict | None) -> dict:
    """A threshold report body written by hand: the pooled rows, or these --by groups."""
    body = {"command": "threshold", "n": 3, "target_accuracy": 0.75, "guaranteed": None}
    if groups is not None:
        body["by"] = "task"
        body["groups"] = groups
    return body


CURVE = {"coverage": [0.25, 0.5, 1.0], "accuracy": [1.0, 1.0, 0.75]}


def test_coverage_sections_keep_a_group_of_no_rows_and_fall_back_to_the_pooled_rows():
    groups = {"a": {"n": 4, "coverage_curve": CURVE}, "b": {"n": 0}}
    sections = image.coverage_sections(threshold_body(groups))
    assert list(sections) == ["a", "b"]
    assert sections["a"]["coverage"] == [0.25, 0.5, 1.0]
    assert sections["b"]["coverage"] == [] and sections["b"]["accuracy"] == []
    assert sections["b"]["target_accuracy"] == 0.75
    # a --by report of no rows has no group: its pooled rows, of no rows, are drawn
    (pooled,) = image.coverage_sections(threshold_body({})).values()
    assert pooled["coverage"] == [] and pooled["target_accuracy"] == 0.75


def test_coverage_figure_of_no_rows_draws_the_target_on_the_whole_axis():
    figure = image.coverage_figure(image.coverage_sections(threshold_body({})))
    (ax,) = figure.axes
    assert no_rows_text(figure) == "no rows"
    assert ax.get_ylim() == (0.0, 1.0) and ax.get_xlim() == (0.0, 1.0)
    (target,) = ax.get_lines()  # the target's horizontal line alone: no curve
    assert list(target.get_ydata()) == [0.75, 0.75]


def test_coverage_figure_names_the_groups_of_no_rows_beside_the_curves():
    groups = {"a": {"n": 4, "coverage_curve": CURVE}, "b": {"n": 0}, "c": {"n": 0}}
    figure = image.coverage_figure(image.coverage_sections(threshold_body(groups)))
    assert no_rows_text(figure) == "b: no rows\nc: no rows"
    (ax,) = figure.axes
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(curves) == 1
    assert ax.get_legend() is None  # one curve drawn: no legend to tell curves apart
