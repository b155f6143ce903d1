"""A calibrator is applied to the score it was fitted on: its field by default, the same
multiple-choice normalisation and --by field, and rows it was fitted on are named as in-sample
by their content, not by the path typed."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from harness import run, write_jsonl

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"


def rows(n: int, seed: int) -> list[dict]:
    """Rows with two scores: ``p`` (what the model said) and ``confidence`` (another one)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p = rng.random()
        out.append(
            {"id": f"{seed}-{i}", "p": p, "confidence": 0.5 + p / 2, "correct": rng.random() < p}
        )
    return out


@pytest.fixture
def files(tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", rows(600, 1))
    test = write_jsonl(tmp_path / "test.jsonl", rows(600, 2))
    cal = tmp_path / "cal.json"
    fitted = run(["fit", dev, "--method", "platt", "--confidence-field", "p", "-o", cal, "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    return tmp_path, dev, test, cal


def calibrate(*args):
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_field_the_calibrator_was_fitted_on_is_the_default(files):
    _, _, test, cal = files
    default = calibrate(test, "--calibrator", cal)
    named = calibrate(test, "--calibrator", cal, "--confidence-field", "p")
    assert default["recalibration"]["after"] == named["recalibration"]["after"]
    assert default["recalibration"]["before"]["mean_confidence"] == pytest.approx(
        sum(r["p"] for r in rows(600, 2)) / 600, abs=1e-12
    )
    other = calibrate(test, "--calibrator", cal, "--confidence-field", "confidence")
    assert any("fitted on the field 'p'; it maps 'confidence'" in w for w in other["warnings"])
    assert other["recalibration"]["after"]["ece"] != default["recalibration"]["after"]["ece"]


def test_apply_takes_the_field_the_calibrator_was_fitted_on(files):
    _, _, test, cal = files
    out = run(["apply", cal, test, "-q"])
    assert out.exit_code == 0, out.stderr
    first = json.loads(out.stdout.splitlines()[0])
    original = rows(600, 2)[0]
    assert first["confidence"] == original["confidence"]  # untouched
    assert first["p"] != original["p"]  # recalibrated


def test_another_mc_norm_is_refused(tmp_path):
    mc = sorted(str(p) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    cal = tmp_path / "chars.json"
    assert (
        run(["fit", *mc, "--method", "platt", "--mc-norm", "chars", "-o", cal, "-q"]).exit_code == 0
    )
    result = run(["calibrate", *mc, "--calibrator", cal, "-q"])
    assert result.exit_code == 2
    assert "fitted on --mc-norm chars scores" in result.stderr
    assert "give --mc-norm chars" in result.stderr
    assert run(["calibrate", *mc, "--calibrator", cal, "--mc-norm", "chars", "-q"]).exit_code == 0


def test_another_by_field_is_refused(tmp_path):
    data = [dict(r, subject="ab"[i % 2], topic="xy"[i % 2]) for i, r in enumerate(rows(400, 3))]
    path = write_jsonl(tmp_path / "d.jsonl", data)
    cal = tmp_path / "by.json"
    assert (
        run(["fit", path, "--method", "platt", "--by", "subject", "-o", cal, "-q"]).exit_code == 0
    )
    result = run(["calibrate", path, "--calibrator", cal, "--by", "topic", "-q"])
    assert result.exit_code == 2
    assert "fitted per --by subject group, not per --by topic" in result.stderr
    assert run(["apply", cal, path, "--by", "topic", "-q"]).exit_code == 2
    assert run(["calibrate", path, "--calibrator", cal, "--by", "subject", "-q"]).exit_code == 0


def in_sample(report) -> list[str]:
    return [w for w in report["warnings"] if "the rows the calibrator was fitted on" in w]


def test_in_sample_is_decided_by_content_not_by_path(files, monkeypatch):
    folder, dev, test, cal = files
    assert in_sample(calibrate(test, "--calibrator", cal)) == []
    # the same rows under another relative path, from another working folder
    sub = folder / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert in_sample(calibrate(os.path.relpath(dev), "--calibrator", "../cal.json"))
    # dev and test concatenated: partly in-sample, caught
    both = folder / "both.jsonl"
    both.write_text(Path(dev).read_text() + Path(test).read_text())
    (warning,) = in_sample(calibrate(str(both), "--calibrator", str(cal)))
    assert "about 100% of the rows the calibrator was fitted on (600)" in warning
    assert "1,200 rows scored here" in warning
    # a different file that happens to share the name dev.jsonl is not in-sample
    other = sub / "dev.jsonl"
    write_jsonl(other, rows(600, 9))
    assert in_sample(calibrate("dev.jsonl", "--calibrator", "../cal.json")) == []


def test_coarse_confidences_are_not_called_in_sample(tmp_path):
    """Two-decimal confidences repeat: a shared value says nothing about shared rows."""
    rng = random.Random(4)

    def coarse(n):
        return [
            {"confidence": round(rng.random(), 2), "correct": rng.random() < 0.6} for _ in range(n)
        ]

    dev = write_jsonl(tmp_path / "dev.jsonl", coarse(2000))
    test = write_jsonl(tmp_path / "test.jsonl", coarse(2000))
    cal = tmp_path / "cal.json"
    assert run(["fit", dev, "--method", "histogram", "-o", cal, "-q"]).exit_code == 0
    assert in_sample(calibrate(test, "--calibrator", cal)) == []
