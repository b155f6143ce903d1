"""Rows scored with a calibrator (or a threshold) chosen on them are found with coarse
confidences too.

Coarse confidences (two decimals, a few verbal levels) repeat their values, so held-out rows
share them: shared values then say nothing, and only the same rows exactly (in any order, under
any name) or the file names tell. Full-precision fitted rows inside a larger file are found by
the share of them among the rows scored, written here from how each file is built.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl

from calibcli.summaries import in_sample_note
from calibcli.summaries.fingerprint import RowFingerprint, calibration_hashes

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
IN_SAMPLE = (
    "the calibrator was fitted on rows scored here, so the figures after it are in-sample "
    "(score held-out rows)"
)


def strict_json(text):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def sample_rows():
    lines = (SAMPLE / "overconfident.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def coarse(rows):
    """The rows with their confidences rounded to two decimals."""
    return [{**r, "confidence": round(r["confidence"], 2)} for r in rows]


def fresh_rows(n, seed):
    """Rows no sample file holds: confidences drawn at full precision."""
    rng = random.Random(seed)
    return [{"confidence": rng.random(), "correct": rng.random() < 0.6} for _ in range(n)]


def gate(args):
    result = run([*args, "--json"])
    report = strict_json(result.stdout)
    closed = [c["metric"] for c in report["gate"]["checks"] if c.get("reason") == IN_SAMPLE]
    return result.exit_code, closed, report["warnings"]


def fit(tmp_path, rows_path, method="histogram"):
    out = tmp_path / f"{method}.json"
    result = run(["fit", rows_path, "--method", method, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


# --------------------------------------------------------------------------- coarse values


def test_coarse_rows_scored_where_they_were_fitted_fail_closed(tmp_path):
    # histogram binning scored on its own two-decimal rows: ECE 0 whatever the model
    rows = write_jsonl(tmp_path / "r2.jsonl", coarse(sample_rows()))
    cal = fit(tmp_path, rows)
    code, closed, warnings = gate(["calibrate", rows, "--calibrator", cal, "--max-ece", "0.02"])
    assert (code, closed) == (1, ["ece"])
    assert any(
        "2,000 rows scored here are the rows the calibrator was fitted on" in w for w in warnings
    )


def test_coarse_rows_under_another_name_and_order_are_the_same_rows(tmp_path):
    rows = coarse(sample_rows())
    cal = fit(tmp_path, write_jsonl(tmp_path / "dev.jsonl", rows))
    shuffled = list(rows)
    random.Random(3).shuffle(shuffled)
    copy = write_jsonl(tmp_path / "copy.jsonl", shuffled)
    code, closed, _ = gate(["calibrate", copy, "--calibrator", cal, "--max-ece", "0.5"])
    assert (code, closed) == (1, ["ece"])


def test_coarse_held_out_rows_are_not_in_sample(tmp_path):
    # the two halves share nearly every two-decimal value, and no row: no warning
    rows = coarse(sample_rows())
    cal = fit(tmp_path, write_jsonl(tmp_path / "dev.jsonl", rows[:1000]), "platt")
    test = write_jsonl(tmp_path / "test.jsonl", rows[1000:])
    code, closed, warnings = gate(["calibrate", test, "--calibrator", cal, "--max-ece", "0.5"])
    assert (code, closed) == (0, [])
    assert not any("in-sample" in w for w in warnings)


def test_coarse_rows_are_judged_by_the_files_named(tmp_path):
    # a slice of coarse rows cannot be told by content; the fitted file given again can
    rows = coarse(sample_rows())
    dev = write_jsonl(tmp_path / "dev.jsonl", rows[:1000])
    cal = fit(tmp_path, dev, "platt")
    test = write_jsonl(tmp_path / "test.jsonl", rows[1000:])
    args = ["calibrate", test, dev, "--calibrator", cal, "--max-ece", "0.5"]
    code, closed, warnings = gate(args)
    assert (code, closed) == (1, ["ece"])
    assert any(f"the calibrator was fitted on {dev}" in w for w in warnings)


def test_coarse_threshold_fit_rows_evaluated_again_are_named(tmp_path):
    rng = random.Random(5)
    levels = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0]
    rows = []
    for i in range(1000):
        c = rng.choice(levels)
        rows.append({"id": f"q{i}", "confidence": c, "correct": rng.random() < min(0.97, c - 0.15)})
    dev = write_jsonl(tmp_path / "verbal.jsonl", rows)
    result = run(["threshold", dev, "--fit", dev, "--target-accuracy", "0.8", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    warnings = strict_json(result.stdout)["warnings"]
    assert any(
        "1,000 rows scored here are the rows the threshold was chosen on" in w for w in warnings
    )


# --------------------------------------------------------------------------- held-out rows


def test_new_rows_keep_their_gate(tmp_path):
    cal = fit(tmp_path, SAMPLE / "overconfident.jsonl", "platt")
    new = write_jsonl(tmp_path / "new.jsonl", fresh_rows(450, seed=12))
    code, closed, warnings = gate(["calibrate", new, "--calibrator", cal, "--max-ece", "0.9"])
    assert (code, closed) == (0, [])
    assert not any("in-sample" in w for w in warnings)


def test_a_few_held_out_rows_of_three_decimals_keep_their_gate(tmp_path):
    # 150 new rows of three decimals share most of their values with 2,000 fitted rows of three
    # decimals by chance, and no row: the fitted rows are not among them
    rows = [{**r, "confidence": round(r["confidence"], 3)} for r in sample_rows()]
    cal = fit(tmp_path, write_jsonl(tmp_path / "dev.jsonl", rows), "platt")
    new = [{**r, "confidence": round(r["confidence"], 3)} for r in fresh_rows(150, seed=13)]
    test = write_jsonl(tmp_path / "test.jsonl", new)
    code, closed, warnings = gate(["calibrate", test, "--calibrator", cal, "--max-ece", "0.9"])
    assert (code, closed) == (0, [])
    assert not any("in-sample" in w for w in warnings)


# --------------------------------------------------------------------------- the note itself


def fingerprint(conf, correct):
    f = RowFingerprint()
    f.add(calibration_hashes(np.asarray(conf, np.float64), np.asarray(correct, bool)))
    return f


NOTE = ("the fitted rows", "in-sample")


@pytest.mark.parametrize(
    ("fitted", "scored", "expected"),
    [
        # 6 rows of 2 values each way: coarse, and not the same rows
        (([0.5] * 3 + [0.9] * 3, [1] * 6), ([0.5] + [0.9] * 5, [1] * 6), None),
        # the same coarse rows in another order
        (
            ([0.5, 0.5, 0.9, 0.9], [1, 0, 1, 1]),
            ([0.9, 0.5, 0.9, 0.5], [1, 1, 1, 0]),
            "the 4 rows scored here are the fitted rows: in-sample",
        ),
        # 10 distinct fitted rows inside 40 scored
        (
            ([i / 10 + 0.01 for i in range(10)], [1] * 10),
            ([i / 40 + 0.001 for i in range(30)] + [i / 10 + 0.01 for i in range(10)], [1] * 40),
            "about 100% of the fitted rows (10) are among the 40 rows scored here: in-sample",
        ),
        # 1 of 20 fitted rows among the 20 scored: 5%
        (
            ([i / 20 + 0.002 for i in range(20)], [0] * 20),
            ([0.002] + [i / 20 + 0.003 for i in range(19)], [0] * 20),
            None,
        ),
    ],
)
def test_in_sample_note(fitted, scored, expected):
    assert in_sample_note(fingerprint(*fitted), fingerprint(*scored), *NOTE) == expected
