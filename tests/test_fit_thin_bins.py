"""`calibcli fit --method histogram` warns when the map's bins are too thin to carry it, by the
rule of calibrate's small-bins warning: the median populated bin holds fewer than 30 rows.
Each bin's value is then the accuracy of a few rows, and the map follows the rows it was fitted
on. The warning names the bins, the median, and the most bins whose median holds 30.

The rows here sit at a few confidences chosen so that every bin count is counted by hand."""

from __future__ import annotations

import json
import re

import pytest
from harness import run, write_jsonl

import calibcli


def _at(*values, each):
    """``each`` rows at each confidence of ``values``, half of them right (the first half)."""
    rows = []
    for c in values:
        rows += [{"confidence": c, "correct": k < each // 2} for k in range(each)]
    return rows


# 60 rows, 12 at each of 0.55, 0.65, 0.75, 0.85, 0.95. Bins of width 1/M:
#   10 bins: 5 populated bins of 12, median 12                   -> thin
#    5 bins: 0.55 | 0.65 0.75 | 0.85 0.95: 12, 24, 24, median 24 -> thin
#    4 bins: 0.55 0.65 (< 0.75) | 0.75 0.85 0.95: 24, 36, median 30 -> holds 30
FIVE = _at(0.55, 0.65, 0.75, 0.85, 0.95, each=12)
THIN = (
    "the histogram map has 10 bins and its median populated bin holds 12 predictions (fewer "
    "than 30): each bin's value is the accuracy of a few rows, so the map follows the rows it "
    "was fitted on: its in-sample figures flatter it, and it may not hold on other rows; fit "
    "with fewer bins (with --bins 4 the median populated bin holds 30 predictions)"
)


def test_fit_names_thin_bins_on_stderr_in_the_report_and_in_the_file(tmp_path):
    path = write_jsonl(tmp_path / "dev.jsonl", FIVE)
    cal = tmp_path / "cal.json"
    result = run(["fit", path, "--method", "histogram", "--bins", "10", "--json", "-o", cal])
    assert result.exit_code == 0, result.stderr
    assert f"warning: {THIN}" in result.stderr.splitlines()
    assert THIN in json.loads(result.stdout)["warnings"]
    recorded = json.loads(cal.read_text(encoding="utf-8"))
    assert THIN in recorded["warnings"]  # as the file records the fit's other warnings


def test_the_api_report_says_it_too():
    conf = [r["confidence"] for r in FIVE]
    correct = [r["correct"] for r in FIVE]
    fitted = calibcli.fit(conf, correct, method="histogram", bins=10)
    assert THIN in fitted.report.warnings
    assert THIN in json.loads(fitted.to_json())["warnings"]


def _median_of_populated(conf, bins):
    """The median count of the populated bins, by a plain loop over k / bins edges."""
    counts = [0] * bins
    for c in conf:
        k = 0
        while k < bins - 1 and c >= (k + 1) / bins:
            k += 1
        counts[k] += 1
    held = sorted(n for n in counts if n)
    mid = len(held) // 2
    return held[mid] if len(held) % 2 else (held[mid - 1] + held[mid]) / 2


def test_one_row_per_bin():
    # 300 rows, one in each of bins 100..399 of 500 (confidence (k + 0.5) / 500): median 1
    conf = [(k + 0.5) / 500 for k in range(100, 400)]
    correct = [k % 3 == 0 for k in range(300)]
    fitted = calibcli.fit(conf, correct, method="histogram", bins=500)
    said = [w for w in fitted.report.warnings if w.startswith("the histogram map has 500 bins")]
    assert len(said) == 1
    assert "its median populated bin holds 1 prediction (fewer than 30)" in said[0]
    # the bins it names hold 30 or more in the median, one bin more holds fewer
    found = re.search(
        r"with --bins (\d+) the median populated bin holds (\d+) predictions\)$", said[0]
    )
    assert found is not None, said[0]
    bins, median = int(found.group(1)), int(found.group(2))
    assert _median_of_populated(conf, bins) == median >= 30
    assert _median_of_populated(conf, bins + 1) < 30


def test_bins_of_30_or_more_say_nothing():
    # 60 rows at 0.55 and 0.95 alike: two populated bins of 30, median 30, not fewer than 30
    rows = _at(0.55, 0.95, each=30)
    fitted = calibcli.fit(
        [r["confidence"] for r in rows], [r["correct"] for r in rows], method="histogram"
    )
    assert not [w for w in fitted.report.warnings if "median populated bin" in w]


def test_too_few_rows_for_any_bins():
    rows = _at(0.55, 0.95, each=10)  # 20 rows: even one bin holds fewer than 30
    fitted = calibcli.fit(
        [r["confidence"] for r in rows], [r["correct"] for r in rows], method="histogram"
    )
    said = [w for w in fitted.report.warnings if "median populated bin" in w]
    assert len(said) == 1 and "holds 10 predictions (fewer than 30)" in said[0]
    assert said[0].endswith(
        "the rows are too few for any bins to hold that many: fit a map of fewer parameters "
        "(platt, temperature)"
    )


@pytest.mark.parametrize("method", ["isotonic", "platt", "temperature", "beta"])
def test_maps_not_built_from_bins_say_nothing(method):
    conf = [r["confidence"] for r in FIVE]
    correct = [r["correct"] for r in FIVE]
    fitted = calibcli.fit(conf, correct, method=method, bins=10)
    assert not [w for w in fitted.report.warnings if "median populated bin" in w]


def test_groups_are_judged_each_on_its_rows(tmp_path):
    # group a: FIVE (thin at 10 bins); group b: 60 rows at 0.55 and 0.95 (two bins of 30)
    rows = [{**r, "g": "a"} for r in FIVE] + [{**r, "g": "b"} for r in _at(0.55, 0.95, each=30)]
    path = write_jsonl(tmp_path / "dev.jsonl", rows)
    result = run(["fit", path, "--method", "histogram", "--by", "g", "--json"])
    assert result.exit_code == 0, result.stderr
    said = [w for w in json.loads(result.stdout)["warnings"] if "median populated bin" in w]
    # the pooled rows: 0.55 holds 42, 0.65 12, 0.75 12, 0.85 12, 0.95 42: median 12
    assert len(said) == 2
    assert said[0].startswith("the histogram map of the pooled rows has 10 bins")
    assert "holds 12 predictions" in said[0]
    assert said[1].startswith("group 'a': the histogram map has 10 bins")  # not group b
