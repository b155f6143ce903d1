"""Rows written again through a float32 column, or rounded to four decimals, are still the rows
a calibrator (or a threshold) was fitted on.

Rows here: 400 confidences drawn uniformly from [0.3, 0.99) at full precision by numpy's
generator (fixed seeds), each right with chance equal to its confidence. The float32 copy holds
``float(np.float32(c))`` of each (the double nearest the float32 nearest: within 1e-7 of c, never
c itself), the rounded copy ``round(c, 4)`` (Python's rounding). Neither copy holds a double of
the original rows, so only a comparison that rounds them tells them; held-out draws written the
same ways share no row and must say nothing.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import run, write_jsonl

N = 400
IN_SAMPLE = (
    "the calibrator was fitted on rows scored here, so the figures after it are in-sample "
    "(score held-out rows)"
)
FITTED = f"the {N} rows scored here are the rows the calibrator was fitted on"
CHOSEN = f"the {N} rows scored here are the rows the threshold was chosen on"
AS_FLOAT32 = "(their confidences compared as float32)"
TO_4 = "(their confidences compared to 4 decimals)"


def draw(seed, n=N, low=0.3, high=0.99):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(low, high, n)
    right = rng.random(n) < conf
    return [{"confidence": float(c), "correct": bool(r)} for c, r in zip(conf, right, strict=True)]


def as_float32(rows):
    return [{**r, "confidence": float(np.float32(r["confidence"]))} for r in rows]


def to_4(rows):
    return [{**r, "confidence": round(r["confidence"], 4)} for r in rows]


ROUNDINGS = {"float32": (as_float32, AS_FLOAT32), "4 decimals": (to_4, TO_4)}


def test_the_copies_hold_no_double_of_the_rows():
    # what makes the exact comparison blind to them: every value differs, within the rounding
    rows = draw(1)
    for change, bound in ((as_float32, 1e-7), (to_4, 5e-5)):
        pairs = [
            (r["confidence"], c["confidence"]) for r, c in zip(rows, change(rows), strict=True)
        ]
        assert all(a != b and abs(a - b) <= bound for a, b in pairs)


@pytest.fixture
def fitted(tmp_path):
    rows = draw(1)
    path = write_jsonl(tmp_path / "dev.jsonl", rows)
    cal = tmp_path / "histogram.json"
    result = run(["fit", path, "--method", "histogram", "-o", cal, "-q"])
    assert result.exit_code == 0, result.stderr
    return rows, path, cal


def calibrate(path, cal):
    result = run(["calibrate", path, "--calibrator", cal, "--max-ece", "0.5", "--json", "-q"])
    body = json.loads(result.stdout)
    closed = [c["metric"] for c in body["gate"]["checks"] if c.get("reason") == IN_SAMPLE]
    return result.exit_code, closed, body["warnings"]


@pytest.mark.parametrize("rounding", list(ROUNDINGS))
def test_fitted_rows_written_again_rounded_fail_closed(tmp_path, fitted, rounding):
    rows, _, cal = fitted
    change, said = ROUNDINGS[rounding]
    path = write_jsonl(tmp_path / "again.jsonl", change(rows))
    code, closed, warnings = calibrate(path, cal)
    assert (code, closed) == (1, ["ece"])
    assert [w for w in warnings if w.startswith(f"{FITTED} {said}:")]


@pytest.mark.parametrize("rounding", list(ROUNDINGS))
def test_fitted_rows_rounded_inside_more_rows_are_found(tmp_path, fitted, rounding):
    # dev + test, written rounded: all 400 fitted rows are among the 800 scored
    rows, _, cal = fitted
    change, said = ROUNDINGS[rounding]
    path = write_jsonl(tmp_path / "both.jsonl", change(rows + draw(2)))
    code, closed, warnings = calibrate(path, cal)
    assert (code, closed) == (1, ["ece"])
    head = f"about 100% of the rows the calibrator was fitted on ({N}) are among the 800 rows"
    assert [w for w in warnings if w.startswith(head) and said in w]


@pytest.mark.parametrize("rounding", list(ROUNDINGS))
def test_held_out_rows_written_rounded_keep_their_gate(tmp_path, fitted, rounding):
    change, _ = ROUNDINGS[rounding]
    path = write_jsonl(tmp_path / "test.jsonl", change(draw(2)))
    code, closed, warnings = calibrate(path, cal=fitted[2])
    assert (code, closed) == (0, [])
    assert not [w for w in warnings if "fitted on" in w]


def test_crowded_held_out_rows_share_rounded_values_by_chance_and_say_nothing(tmp_path):
    # 3,000 rows in [0.6, 1.0): 4,000 four-decimal levels, so two such sets share a third of
    # their rounded values (counted with Python sets below) and no row
    fit_rows, held = draw(3, 3000, 0.6, 1.0), draw(4, 3000, 0.6, 1.0)
    mine = {(round(r["confidence"], 4), r["correct"]) for r in fit_rows}
    theirs = {(round(r["confidence"], 4), r["correct"]) for r in held}
    assert 0.3 < len(mine & theirs) / len(mine) < 0.5
    assert len(mine) > 1500  # the rounded values still tell rows apart: the share is weighed
    cal = tmp_path / "platt.json"
    fit_path = write_jsonl(tmp_path / "dev.jsonl", fit_rows)
    assert run(["fit", fit_path, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    for change in (as_float32, to_4):
        code, closed, warnings = calibrate(write_jsonl(tmp_path / "t.jsonl", change(held)), cal)
        assert (code, closed) == (0, [])
        assert not [w for w in warnings if "fitted on" in w]


def test_the_calibrator_records_its_rows_rounded(fitted):
    # the float32 fingerprint is that of the float32 copy's own values, so a file fitted on
    # the copy records as its exact fingerprint what one fitted on the rows records rounded
    rows, _, cal = fitted
    recorded = json.loads(cal.read_text(encoding="utf-8"))["fingerprint"]
    assert sorted(recorded["rounded"]) == ["decimals4", "float32"]
    assert {v["rows"] for v in recorded["rounded"].values()} == {N}
    copy = write_jsonl(cal.parent / "copy32.jsonl", as_float32(rows))
    other = cal.parent / "copy32.json"
    assert run(["fit", copy, "--method", "histogram", "-o", other, "-q"]).exit_code == 0
    exact = json.loads(other.read_text(encoding="utf-8"))["fingerprint"]
    assert recorded["rounded"]["float32"] == {k: exact[k] for k in ("rows", "total", "sample")}


def test_a_calibrator_written_before_rounded_fingerprints_keeps_its_check(tmp_path, fitted):
    rows, dev, cal = fitted
    body = json.loads(cal.read_text(encoding="utf-8"))
    del body["fingerprint"]["rounded"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(body) + "\n", encoding="utf-8")
    code, closed, warnings = calibrate(dev, old)  # the exact rows: found as before
    assert (code, closed) == (1, ["ece"])
    assert [w for w in warnings if w.startswith(f"{FITTED}:")]
    path = write_jsonl(tmp_path / "again.jsonl", as_float32(rows))  # rounded: nothing new
    code, closed, warnings = calibrate(path, old)
    assert (code, closed) == (0, [])
    assert not [w for w in warnings if "fitted on" in w]


@pytest.mark.parametrize("rounding", list(ROUNDINGS))
def test_threshold_fit_rows_evaluated_again_rounded_are_named(tmp_path, rounding):
    rows = draw(5)
    change, said = ROUNDINGS[rounding]
    dev = write_jsonl(tmp_path / "dev.jsonl", rows)
    again = write_jsonl(tmp_path / "again.jsonl", change(rows))
    args = ["threshold", again, "--fit", dev, "--target-accuracy", "0.7", "--json", "-q"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert [w for w in warnings if w.startswith(f"{CHOSEN} {said}:") and "optimistic" in w]


@pytest.mark.parametrize("rounding", list(ROUNDINGS))
def test_threshold_held_out_rows_written_rounded_carry_no_overlap(tmp_path, rounding):
    change, _ = ROUNDINGS[rounding]
    dev = write_jsonl(tmp_path / "dev.jsonl", draw(5))
    test = write_jsonl(tmp_path / "test.jsonl", change(draw(6)))
    args = ["threshold", test, "--fit", dev, "--target-accuracy", "0.7", "--json", "-q"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    assert not [w for w in json.loads(result.stdout)["warnings"] if "chosen on" in w]
