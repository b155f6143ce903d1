"""Held-out rows whose confidences repeat some values (four decimals) share some of the fitted
rows' values by chance; that share is not taken for the fitted rows scored again.

Rows here: confidences drawn from Beta(5, 2) and written with four decimals, each right with
chance equal to its confidence (numpy's generator, fixed seeds). Two independent sets of 2,000
such rows share about 20% of their distinct (confidence, outcome) values, counted exactly below
with Python sets, and no row; the fitted rows scored again inside a larger set share all of
theirs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run, write_jsonl

from calibcli.summaries.fingerprint import RowFingerprint, calibration_hashes
from calibcli.summaries.recalibrate import CHANCE_WEIGHT, chance_share

N = 2000


def draw(n, seed, decimals=4):
    rng = np.random.default_rng(seed)
    conf = np.round(rng.beta(5, 2, n), decimals)
    right = rng.random(n) < conf
    return [{"confidence": float(c), "correct": bool(r)} for c, r in zip(conf, right, strict=True)]


def shared(fitted, scored):
    """The exact share of the fitted rows' distinct values found among the scored rows."""
    mine = {(r["confidence"], r["correct"]) for r in fitted}
    theirs = {(r["confidence"], r["correct"]) for r in scored}
    return len(mine & theirs) / len(mine)


def fingerprint(rows):
    f = RowFingerprint()
    conf = np.array([r["confidence"] for r in rows], np.float64)
    f.add(calibration_hashes(conf, np.array([r["correct"] for r in rows], bool)))
    return f


@pytest.fixture
def fitted(tmp_path):
    rows = draw(N, seed=1)
    path = write_jsonl(tmp_path / "fit.jsonl", rows)
    cal = tmp_path / "cal.json"
    result = run(["fit", path, "--method", "temperature", "-o", cal, "-q"])
    assert result.exit_code == 0, result.stderr
    return rows, path, cal


def calibrate(path, cal):
    result = run(["calibrate", path, "--calibrator", cal, "--max-ece", "0.5", "--json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def test_held_out_rows_of_four_decimals_keep_their_gate(tmp_path, fitted):
    rows, fit_path, cal = fitted
    held = draw(N, seed=2)
    assert 0.15 < shared(rows, held) < 0.3  # chance alone, by exact count
    path = write_jsonl(tmp_path / "held.jsonl", held)
    code, body = calibrate(path, cal)
    assert code == 0
    assert not [w for w in body["warnings"] if "fitted on" in w or "are among" in w]
    chosen = run(["threshold", path, "--fit", fit_path, "--target-accuracy", "0.7", "--json"])
    assert not [w for w in json.loads(chosen.stdout)["warnings"] if "are among" in w]


@pytest.mark.parametrize("kept", [N, N // 2], ids=["all", "half"])
def test_fitted_rows_inside_the_scored_rows_are_found(tmp_path, fitted, kept):
    rows, _, cal = fitted
    scored = rows[:kept] + draw(N, seed=3)
    path = write_jsonl(tmp_path / "scored.jsonl", scored)
    code, body = calibrate(path, cal)
    assert code == 1  # the gate on figures after an in-sample calibrator fails closed
    assert any("are among the" in w for w in body["warnings"])
    assert body["gate"]["checks"][0]["passed"] is False


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("decimals", [3, 4])
def test_the_chance_share_is_near_the_share_found_by_chance(seed, decimals):
    fitted, scored = draw(N, seed, decimals), draw(N, seed + 100, decimals)
    expected = shared(fitted, scored)  # counted exactly
    distinct = len({(r["confidence"], r["correct"]) for r in scored})
    estimate = chance_share(distinct, N)
    # as if every value were as likely: a little short of uneven draws' chance where values
    # repeat a little (four decimals), above it where they repeat much (three)
    assert 0.75 * expected <= estimate <= expected + 0.15, (expected, estimate)
    assert CHANCE_WEIGHT * estimate >= expected


def test_the_chance_share_of_values_drawn_evenly_is_exact():
    # n rows of K equally likely values: distinct = K (1 - exp(-n / K)), chance 1 - exp(-n / K)
    for n, k in [(2000, 20000), (2000, 2000), (500, 100)]:
        distinct = k * (1 - math.exp(-n / k))
        assert chance_share(distinct, n) == pytest.approx(1 - math.exp(-n / k), rel=1e-9)


def test_rows_that_never_repeat_have_no_chance_share_and_one_value_all_of_it():
    assert chance_share(N, N) == 0.0
    assert chance_share(0, 0) == 0.0
    assert chance_share(1, 10**9) == pytest.approx(1.0)
