"""calibrate --calibrator / --recalibrate with --bootstrap-scheme poisson: a recalibration maps
each row to a new confidence and keeps its answer, so the Poisson weights (drawn from a hash of
the row's id) are those of the same row rescored. The reference is `calibcli apply`'s rewritten
file read by calibrate with the same --id-field: its intervals must be the same numbers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from harness import run

LM_EVAL = Path(__file__).parent / "fixtures" / "lm_eval"


def rows(n, seed, prefix):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = round(0.5 + 0.5 * rng.random(), 4)
        out.append(
            {
                "id": f"{prefix}-{i}",
                "subject": ("alpha", "beta", "gamma")[i % 3],
                "confidence": c,
                "correct": rng.random() < c - 0.15,
            }
        )
    return out


def write(path, data):
    path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    return path


POISSON = ["--ci", "0.9", "--bootstrap", "300", "--bootstrap-scheme", "poisson"]


def report(args):
    result = run(["calibrate", *args, *POISSON, "--id-field", "id", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("by", [[], ["--by", "subject"]], ids=["pooled", "by-subject"])
def test_intervals_are_those_of_the_applied_rows(tmp_path, by):
    fit = write(tmp_path / "fit.jsonl", rows(600, 1, "fit"))
    scored = write(tmp_path / "eval.jsonl", rows(450, 2, "eval"))
    cal = tmp_path / "cal.json"
    assert run(["fit", fit, "--method", "platt", *by, "-o", cal, "-q"]).exit_code == 0
    applied = tmp_path / "applied.jsonl"
    assert run(["apply", cal, scored, *by, "-o", applied]).exit_code == 0

    recalibrated = report([scored, "--calibrator", cal, *by])
    reference = report([applied, *by])
    assert recalibrated["ci"] == reference["ci"]
    assert all(lo is not None and hi is not None for lo, hi in recalibrated["ci"].values())
    if by:
        for name, group in recalibrated["groups"].items():
            assert group.get("ci") == reference["groups"][name].get("ci")


def test_cross_fitted_rows_keep_their_keys(tmp_path):
    scored = write(tmp_path / "eval.jsonl", rows(450, 2, "eval"))
    out = report([scored, "--recalibrate", "platt", "--folds", "3"])
    # the row figures need the keys: without them they would be null
    assert out["ci"]["auroc"][0] is not None
    assert out["ci"]["smece"][0] is not None
    assert out["recalibration"]["mode"] == "cross-fitted"


def test_temperature_over_choices_is_refused_in_one_line():
    samples = sorted(LM_EVAL.glob("samples_toy_mc_science_*.jsonl"))[0]
    result = run(["calibrate", samples, "--recalibrate", "temperature", "--folds", "3", *POISSON])
    assert result.exit_code == 2
    assert "--bootstrap-scheme multinomial" in result.stderr
    assert "Traceback" not in result.output
