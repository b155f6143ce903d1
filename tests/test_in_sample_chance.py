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

from calibcli.summaries import chance_share, in_sample_note
from calibcli.summaries.fingerprint import RowFingerprint, calibration_hashes
from calibcli.summaries.in_sample import CHANCE_WEIGHT

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


# --------------------------------------------------------------------------- a slice scored


@pytest.mark.parametrize("size", [100, 1000])
def test_a_slice_of_the_fitting_rows_scored_as_a_test_is_found(tmp_path, fitted, size):
    # 1,000 rows hold half the fitted rows' values: found as the fitted rows among them; 100
    # hold a twentieth, found only as rows scored that are all among the fitted ones
    rows, fit_path, cal = fitted
    path = write_jsonl(tmp_path / "slice.jsonl", rows[-size:])
    code, body = calibrate(path, cal)
    assert code == 1
    assert body["gate"]["checks"][0]["passed"] is False
    said = [w for w in body["warnings"] if "are among" in w]
    assert said
    if size == 100:
        assert said[0].startswith("about 100% of the 100 rows scored here are among the rows")
    chosen = run(["threshold", path, "--fit", fit_path, "--target-accuracy", "0.7", "--json"])
    assert any("are among" in w for w in json.loads(chosen.stdout)["warnings"])


def test_held_out_rows_as_few_as_a_slice_keep_their_gate(tmp_path, fitted):
    _, _, cal = fitted
    for n, seed in [(100, 4), (300, 8)]:
        code, body = calibrate(write_jsonl(tmp_path / "held.jsonl", draw(n, seed=seed)), cal)
        assert code == 0
        assert not [w for w in body["warnings"] if "are among" in w]


def make_fit(tmp_path, rows):
    fit_path = write_jsonl(tmp_path / "fit.jsonl", rows)
    cal = tmp_path / "cal.json"
    assert run(["fit", fit_path, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    return cal


def test_a_slice_of_exact_values_is_found_by_its_rows(tmp_path):
    # 600 fitted rows of distinct values; 30 of them scored are a twentieth of the fitted
    # rows, but every row scored is a fitted one
    rows = [{"confidence": (i + 0.5) / 600, "correct": i % 3 != 0} for i in range(600)]
    cal = make_fit(tmp_path, rows)
    code, body = calibrate(write_jsonl(tmp_path / "s.jsonl", rows[::20]), cal)
    assert code == 1
    assert any(
        w.startswith("about 100% of the 30 rows scored here are among") for w in body["warnings"]
    )


def test_too_few_rows_scored_to_look_up_say_nothing_by_content(tmp_path):
    # 200 fitted rows: the sketch holds them all and each row scored is looked up; 19 rows
    # are too few to judge, and are under a tenth of the fitted rows
    rows = [{"confidence": (i + 0.5) / 200, "correct": i % 3 != 0} for i in range(200)]
    cal = make_fit(tmp_path, rows)
    _, body = calibrate(write_jsonl(tmp_path / "t.jsonl", rows[:19]), cal)
    assert not [w for w in body["warnings"] if "are among" in w]
    _, body = calibrate(write_jsonl(tmp_path / "u.jsonl", rows[:20]), cal)
    assert any("of the 20 rows scored here are among" in w for w in body["warnings"])


# --------------------------------------------------------------------------- sketches alone


def beta_rows(rng, n, decimals=4):
    conf = np.round(rng.beta(5, 2, n), decimals)
    return conf, rng.random(n) < conf


@pytest.mark.parametrize("seed", range(6))
def test_from_the_sketches_alone_a_few_shared_values_are_not_taken_for_overlap(seed):
    # 300 fitted rows beside 2,000 held-out ones: the scored sketch knows whether a fitted
    # value is among the scored rows for only a few dozen fitted values
    rng = np.random.default_rng(1000 * seed + 2304)
    fitted, scored = beta_rows(rng, 300), beta_rows(rng, 2000)
    note = in_sample_note(fingerprint_of(*fitted), fingerprint_of(*scored), "fitted", "x")
    assert note is None
    # the fitted rows inside the scored ones are found all the same
    inside = (np.concatenate([fitted[0], scored[0]]), np.concatenate([fitted[1], scored[1]]))
    note = in_sample_note(fingerprint_of(*fitted), fingerprint_of(*inside), "fitted", "x")
    assert note is not None and note.startswith("about 100% of fitted (300)")


def fingerprint_of(conf, correct):
    f = RowFingerprint()
    f.add(calibration_hashes(np.asarray(conf, np.float64), np.asarray(correct, bool)))
    return f
