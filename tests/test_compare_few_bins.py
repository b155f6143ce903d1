"""``compare`` closes its binned checks (ECE, MCE, RMSCE) when a side populates too few bins,
as ``calibrate`` does: a difference of estimates resting on one bin says nothing of calibration.

BASE: 100 rows, confidence (i + 0.5) / 100 (i = 0 .. 99), spread over all 10 bins of width 0.1.
NEW: the same questions and outcomes, confidence 0.5 + (i + 0.5) / 1000, all in [0.5, 0.6):
one populated bin. NEW's ECE is then |mean confidence - accuracy| over one bin, by hand.
"""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl

import calibcli

N = 100
RIGHT = [i % 3 != 0 for i in range(N)]  # 66 of 100 right


@pytest.fixture
def sides(tmp_path):
    base = [{"id": i, "confidence": (i + 0.5) / N, "correct": RIGHT[i]} for i in range(N)]
    new = [{"id": i, "confidence": 0.5 + (i + 0.5) / 1000, "correct": RIGHT[i]} for i in range(N)]
    return write_jsonl(tmp_path / "base.jsonl", base), write_jsonl(tmp_path / "new.jsonl", new)


def test_a_side_of_one_bin_fails_the_binned_checks_closed(sides):
    base, new = sides
    args = ["compare", base, new, "--gate-on", "estimate", "--json"]
    margins = ["--max-increase", "ece=0.5", "--max-increase", "mce=0.5"]
    margins += ["--max-increase", "rmsce_debiased=0.5", "--max-increase", "ece_1bin=0.5"]
    result = run([*args, *margins, "--max-increase", "brier=0.5"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    # by hand: NEW's one bin holds mean confidence 0.55 against accuracy 0.66
    assert body["figures"]["ece"]["new"] == pytest.approx(0.11, abs=1e-12)
    why = "only 1 of 10 bins are populated on NEW (minimum 3)"
    checks = {c["metric"]: c for c in body["gate"]["checks"]}
    assert checks["ece_increase"]["reason"] == why
    assert checks["mce_increase"]["reason"] == why
    assert checks["ece_increase"]["passed"] is checks["mce_increase"]["passed"] is False
    assert checks["rmsce_debiased_increase"]["reason"] == why
    assert checks["ece_1bin_increase"]["passed"] is True  # one bin by definition
    assert checks["brier_increase"]["passed"] is True  # not a binned figure
    assert f"{why}; its binned figures (ECE, MCE, RMSCE) rest on too few bins" in body["warnings"]


def test_the_minimum_is_an_option_and_capped_at_the_bins(sides):
    base, new = sides
    args = ["compare", base, new, "--gate-on", "estimate", "--max-increase", "ece=0.5", "-q"]
    assert run([*args, "--min-populated-bins", "1"]).exit_code == 0
    assert run([*args, "--bins", "1"]).exit_code == 0  # one bin of one: nothing is too few
    assert run([*args, "--min-populated-bins", "4"]).exit_code == 1


def test_base_is_judged_too_and_the_api_says_the_same(sides):
    base, new = sides
    result = run(["compare", new, base, "--max-increase", "rmsce=0.5", "--json"])
    assert result.exit_code == 1
    [check] = json.loads(result.stdout)["gate"]["checks"]
    assert check["reason"] == "only 1 of 10 bins are populated on BASE (minimum 3)"
    api = calibcli.compare(
        str(base), str(new), id_field="id", max_increase={"ece": 0.5}, gate_on="estimate"
    )
    assert api.passed is False
    relaxed = calibcli.compare(
        str(base),
        str(new),
        id_field="id",
        max_increase={"ece": 0.5},
        gate_on="estimate",
        min_populated_bins=1,
    )
    assert relaxed.passed is True
