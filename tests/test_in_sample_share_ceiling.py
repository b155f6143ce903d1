"""The share an in-sample warning names never exceeds what the rows allow: of the rows a
calibrator was fitted on, no more can be among the rows scored than those rows hold (rows
scored / rows fitted); and a refusal never names a share far below the fitted rows whose values
the rows scored hold.

Every input below is built here from rows whose membership is known, so the share expected is a
count: the fitted rows a file holds over the rows fitted."""

from __future__ import annotations

import json
import random
import re

import numpy as np
from harness import run, write_jsonl

from calibcli.summaries import in_sample
from calibcli.summaries.fingerprint import RowFingerprint, calibration_hashes

WHAT = "the rows the calibrator was fitted on"


def _percent(message):
    found = re.search(r"about (\d+)% of", message)
    assert found is not None, message
    return int(found.group(1))


def _repeating(seed=3):
    """2,000 fitted rows over 1,500 distinct values (500 values held by two rows each, the rest
    by one), and 1,000 of those rows, one of each of 1,000 values (the 500 doubled ones among
    them): every row of the second set is a fitted row, so 1,000 of the 2,000 fitted rows
    (50%) are among them, while two thirds of the fitted values are."""
    rng = random.Random(seed)
    values = [
        {"confidence": 0.05 + 0.9 * rng.random(), "correct": rng.random() < 0.6}
        for _ in range(1500)
    ]
    fitted = values[:500] * 2 + values[500:]
    scored = values[:1000]
    return fitted, scored


def test_a_share_of_fitted_rows_never_exceeds_rows_scored_over_rows_fitted(tmp_path):
    fitted, scored = _repeating()
    assert len(fitted) == 2000 and len(scored) == 1000
    ceiling = 100 * len(scored) // len(fitted)  # every row scored is a fitted row: 50
    fit = write_jsonl(tmp_path / "fit.jsonl", fitted)
    half = write_jsonl(tmp_path / "half.jsonl", scored)
    cal = tmp_path / "cal.json"
    assert run(["fit", fit, "--method", "isotonic", "-o", cal]).exit_code == 0

    applied = run(["apply", cal, half, "-o", tmp_path / "out.jsonl"])
    assert applied.exit_code == 2
    assert f"of {WHAT} (2,000) are among the 1,000 rows read here" in applied.stderr
    assert _percent(applied.stderr) == ceiling
    assert not (tmp_path / "out.jsonl").exists()

    calibrated = run(["calibrate", half, "--calibrator", cal, "--json"])
    said = [w for w in json.loads(calibrated.stdout)["warnings"] if "are among the" in w]
    assert len(said) == 1 and _percent(said[0]) == ceiling


def test_the_sketch_alone_is_held_to_the_ceiling_too():
    """Without the rows scored at hand only the fingerprints are compared (the share of the
    fitted values found): it is held to rows scored / rows fitted all the same."""
    fitted, scored = _repeating()

    def fingerprint(rows):
        c = np.array([r["confidence"] for r in rows])
        y = np.array([r["correct"] for r in rows])
        print_ = RowFingerprint()
        print_.add(calibration_hashes(c, y))
        return print_

    note = in_sample.in_sample_note(fingerprint(fitted), fingerprint(scored), WHAT, "in-sample")
    assert note is not None and note.endswith("are among the 1,000 rows scored here: in-sample")
    assert _percent(note) <= 100 * len(scored) // len(fitted)


def test_half_of_the_fitted_rows_written_to_four_decimals_is_half(tmp_path):
    """1,000 of 2,000 fitted rows written again to 4 decimals, where some 2,000 confidences
    share their 4-decimal value: half of the fitted rows, said as 50%, not the larger share of
    the fitted 4-decimal values that some of the 1,000 rows hold."""
    rng = np.random.default_rng(2)
    conf = np.round(0.5 + 0.5 * rng.beta(2.0, 2.0, 2000), 6)
    correct = rng.random(2000) < conf
    rows = [
        {"id": f"q{i}", "confidence": float(c), "correct": bool(y)}
        for i, (c, y) in enumerate(zip(conf, correct, strict=True))
    ]
    fourths = np.round(conf, 4)
    assert np.unique(fourths).shape[0] < 1900  # values repeat at 4 decimals
    picked = sorted(rng.choice(2000, 1000, replace=False).tolist())
    lines = ["id,confidence,correct"]
    lines += [f"q{i},{float(fourths[i])!r},{str(bool(correct[i])).lower()}" for i in picked]
    half = tmp_path / "half.csv"
    half.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fit = write_jsonl(tmp_path / "dev.jsonl", rows)
    cal = tmp_path / "cal.json"
    assert run(["fit", fit, "--method", "isotonic", "-o", cal]).exit_code == 0
    applied = run(["apply", cal, half, "-q"])
    assert applied.exit_code == 2
    assert "(their confidences compared to 4 decimals)" in applied.stderr
    assert _percent(applied.stderr) == 100 * len(picked) // len(rows)


def test_a_mix_is_counted_exactly_when_the_sketch_holds_every_fitted_value(tmp_path):
    """400 fitted rows (fewer distinct values than the sketch keeps, so it holds them all) and
    a file of 100 of them among 300 rows drawn apart: exactly 25% of the fitted rows."""
    rng = random.Random(11)

    def draw(n):
        return [
            {"confidence": 0.05 + 0.9 * rng.random(), "correct": rng.random() < 0.5}
            for _ in range(n)
        ]

    fitted, held = draw(400), draw(300)
    fit = write_jsonl(tmp_path / "fit.jsonl", fitted)
    mixed = write_jsonl(tmp_path / "mixed.jsonl", fitted[:100] + held)
    cal = tmp_path / "cal.json"
    assert run(["fit", fit, "--method", "platt", "-o", cal]).exit_code == 0
    applied = run(["apply", cal, mixed, "-q"])
    assert applied.exit_code == 2
    assert f"of {WHAT} (400) are among the 400 rows read here" in applied.stderr
    assert _percent(applied.stderr) == 100 * 100 // 400


def test_fitted_rows_that_repeat_are_not_taken_for_chance(tmp_path):
    """400 fitted rows over 210 values (190 held by two rows each, as an epochs run repeats
    them), and 200 rows scored: 60 of the doubled values and 140 new ones. The 60 values are
    held by 120 of the fitted rows (30%) and are 60 of the 210 fitted values (29%); the refusal
    names about that share, never a share near 0 that would invite --allow-in-sample."""
    rng = random.Random(5)

    def row():
        return {"confidence": round(0.05 + 0.9 * rng.random(), 12), "correct": rng.random() < 0.6}

    values = [row() for _ in range(210)]
    fitted = [v for v in values[:190] for _ in (0, 1)] + values[190:]
    scored = values[:60] + [row() for _ in range(140)]
    assert len(fitted) == 400 and len(scored) == 200
    fit = write_jsonl(tmp_path / "fit.jsonl", fitted)
    mixed = write_jsonl(tmp_path / "mixed.jsonl", scored)
    cal = tmp_path / "cal.json"
    assert run(["fit", fit, "--method", "isotonic", "-o", cal]).exit_code == 0
    applied = run(["apply", cal, mixed, "-o", tmp_path / "out.jsonl"])
    assert applied.exit_code == 2
    assert f"of {WHAT} (400) are among the 200 rows read here" in applied.stderr
    assert round(100 * 60 / 210) <= _percent(applied.stderr) <= 100 * 120 // 400
