"""--plot with more series than one picture can tell apart: the largest few are drawn, in the
report's order, and one warning line names them; the report itself keeps every group."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from harness import run, write_jsonl

pytest.importorskip("matplotlib")

# nine groups; sizes chosen so that the seven largest are not the first seven in the report
SIZES = {"a": 5, "b": 40, "c": 30, "d": 6, "e": 25, "f": 20, "g": 35, "h": 15, "i": 10}
LARGEST = ["b", "c", "e", "f", "g", "h", "i"]  # report order (groups sort by name)


def grouped_rows():
    rows, i = [], 0
    for group, size in SIZES.items():
        for k in range(size):
            c = (k + 0.5) / size
            rows.append({"id": i, "task": group, "confidence": c, "correct": k % 3 != 0})
            i += 1
    return rows


def drawn_series(path):
    """How many series the SVG draws: the ids accuracy-bar-{series}-{bin}."""
    ids = [el.get("id") for el in ET.parse(path).iter() if el.get("id")]
    return {int(i.split("-")[2]) for i in ids if i.startswith("accuracy-bar-")}


def legend_texts(path):
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.parse(path, parser).getroot()
    legend = next(el for el in root.iter() if el.get("id") == "legend")
    return [el.text.strip() for el in legend.iter() if el.tag is ET.Comment]


def test_calibrate_by_draws_the_seven_largest_groups_and_says_so(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", grouped_rows())
    svg = tmp_path / "r.svg"
    result = run(["calibrate", rows, "--by", "task", "--plot", svg, "--json"])
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(result.stdout)["groups"]) == sorted(SIZES)  # the report: all nine
    assert drawn_series(svg) == set(range(7))
    assert legend_texts(svg)[:7] == LARGEST
    lines = [ln for ln in result.stderr.splitlines() if "--plot" in ln]
    assert lines == [
        "warning: --plot draws the 7 series with the most rows of 9 "
        f"({', '.join(LARGEST)}); the report holds them all"
    ]


def test_labels_follow_their_groups_when_some_are_left_out(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", grouped_rows())
    svg = tmp_path / "r.svg"
    labels = [f"L{name}" for name in sorted(SIZES)]
    args = ["calibrate", rows, "--by", "task", "--plot", svg, "--json"]
    for label in labels:
        args += ["--label", label]
    result = run(args)
    assert result.exit_code == 0, result.output
    assert legend_texts(svg)[:7] == [f"L{name}" for name in LARGEST]
    assert f"({', '.join(f'L{n}' for n in LARGEST)})" in result.stderr


def test_seven_groups_are_all_drawn_without_a_warning(tmp_path):
    rows = [r for r in grouped_rows() if r["task"] in LARGEST]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    svg = tmp_path / "r.svg"
    result = run(["calibrate", path, "--by", "task", "--plot", svg, "--json"])
    assert result.exit_code == 0, result.output
    assert drawn_series(svg) == set(range(7))
    assert "--plot draws" not in result.stderr


def test_threshold_curves_are_capped_the_same_way(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", grouped_rows())
    png = tmp_path / "t.png"
    result = run(
        ["threshold", rows, "--by", "task", "--target-accuracy", "0.5", "--plot", png, "--json"]
    )
    assert result.exit_code in (0, 1), result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        f"warning: --plot draws the 7 series with the most rows of 9 ({', '.join(LARGEST)}); "
        "the report holds them all"
    ) in result.stderr.splitlines()
