"""``Predictions.with_values``: read rows with other confidences, correctness or groups keep
what the reading knew of them, so a report of the new rows acts on it as it does on the read
rows: a gate on a run of several epochs counts its questions, a gate on several models' rows
fails closed, and the reading's warnings stay.

The logs are the committed real inspect-ai log (20 samples) as inspect-ai writes a run of three
epochs, a run of another model and a run that stopped with an error. The references are counted
from the logs as written (their samples' ids and models, their scores) and the expected
calibration error by a plain loop over ten equal-width bins."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import calibcli
from calibcli.errors import InputError

LOG = json.loads(
    (
        Path(__file__).resolve().parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
    ).read_text()
)


def write_log(path: Path, *, epochs=1, model=None, eval_id=None, created=None, error=False):
    """The committed log as a run of ``epochs`` epochs (each sample once per epoch), of
    ``model``, with its own eval id, or stopped with an error."""
    log = copy.deepcopy(LOG)
    log["eval"]["config"]["epochs"] = epochs
    if model is not None:
        log["eval"]["model"] = model
    if eval_id is not None:
        log["eval"]["eval_id"], log["eval"]["run_id"] = eval_id, eval_id + "r"
    if created is not None:
        log["eval"]["created"] = created
    samples = []
    for e in range(1, epochs + 1):
        for s in LOG["samples"]:
            sample = {**copy.deepcopy(s), "epoch": e}
            if model is not None:
                sample["output"]["model"] = model
            samples.append(sample)
    log["samples"] = samples
    if error:
        log["status"] = "error"
        log["error"] = {"message": "RuntimeError: boom", "traceback": "x", "traceback_ansi": "x"}
        log["results"] = None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(log))
    return log


def hand_ece(confidence, correct, bins=10):
    """sum over equal-width bins of (rows in the bin / rows) * |mean confidence - accuracy|,
    for confidences away from the bins' edges."""
    total, n = 0.0, len(confidence)
    for b in range(bins):
        inside = [i for i in range(n) if b / bins < confidence[i] < (b + 1) / bins]
        if inside:
            mean = sum(confidence[i] for i in inside) / len(inside)
            accuracy = sum(bool(correct[i]) for i in inside) / len(inside)
            total += len(inside) / n * abs(mean - accuracy)
    return total


def spread(n):
    """Confidences in three bins, away from their edges."""
    return np.array([(0.15, 0.55, 0.85)[i % 3] for i in range(n)])


@pytest.fixture
def three_epochs(tmp_path):
    log = write_log(tmp_path / "logs" / "2026-12-01T02-52-44+00-00_toy-arithmetic_A.json", epochs=3)
    return tmp_path / "logs", log


def test_a_run_of_three_epochs_is_gated_on_its_questions(three_epochs):
    folder, log = three_epochs
    answers = len(log["samples"])
    questions = len({s["id"] for s in log["samples"]})
    assert (answers, questions) == (60, 20)
    rows = calibcli.read_predictions(folder, scorer="match")
    new = rows.with_values(confidence=spread(len(rows)))
    right = sum(s["scores"]["match"]["value"] == "C" for s in log["samples"])
    assert int(new.correct.sum()) == right
    result = calibcli.calibrate(new, min_rows=questions + 1)
    assert result["n"] == answers
    assert result["ece"] == pytest.approx(hand_ece(new.confidence, new.correct), abs=1e-12)
    assert not result.passed
    assert f"hold {questions}, fewer than {questions + 1}" in result.failures[0]
    assert not calibcli.calibrate(new, min_rows=answers).passed
    assert calibcli.calibrate(new, min_rows=questions).passed


def test_several_models_fail_every_gate_closed(tmp_path):
    folder = tmp_path / "logs"
    logs = [
        write_log(
            folder / f"2026-12-01T02-52-4{k}+00-00_toy-arithmetic_M{k}.json",
            model=m,
            eval_id=f"M{k}",
            created=f"2026-12-01T02:52:4{k}+00:00",
        )
        for k, m in enumerate(("openai/gpt-4o", "anthropic/claude"))
    ]
    models = sorted({log["eval"]["model"] for log in logs})
    assert len(models) == 2
    rows = calibcli.read_predictions(folder, scorer="match", all_runs=True)
    new = rows.with_values(confidence=spread(len(rows)))
    assert len(new) == sum(len(log["samples"]) for log in logs)
    ece = hand_ece(new.confidence, new.correct)
    assert ece < 0.9
    result = calibcli.calibrate(new, max_ece=0.9)
    assert result["ece"] == pytest.approx(ece, abs=1e-12)
    assert not result.passed
    assert "several models'" in result.failures[0]
    pooled = [w for w in result.warnings if w.startswith("rows of 2 models are pooled")]
    assert len(pooled) == 1 and all(repr(m) in pooled[0] for m in models)


def test_the_readings_warnings_stay(tmp_path):
    path = tmp_path / "2026-12-01T02-52-44+00-00_toy-arithmetic_E.json"
    write_log(path, error=True)
    rows = calibcli.read_predictions(path, scorer="match")
    said = [w for w in rows.warnings if w.startswith(str(path))]
    assert said
    new = rows.with_values(correct=~rows.correct)
    assert all(w in calibcli.calibrate(new).warnings for w in said)


@pytest.mark.parametrize("change", ["confidence", "correct"])
def test_the_same_values_give_the_read_rows_report(three_epochs, change):
    rows = calibcli.read_predictions(three_epochs[0], scorer="match")
    same = rows.with_values(**{change: getattr(rows, change).copy()})
    options = {"ci": 0.9, "bootstrap": 200, "seed": 3, "min_rows": 21}
    assert (
        calibcli.calibrate(same, **options).to_json()
        == calibcli.calibrate(rows, **options).to_json()
    )


def test_values_are_checked_and_groups_named(three_epochs):
    rows = calibcli.read_predictions(three_epochs[0], scorer="match")
    n = len(rows)
    with pytest.raises(InputError, match=f"confidence: expected one value for each of the {n} "):
        rows.with_values(confidence=[0.5])
    with pytest.raises(InputError, match=r"index 2: confidence 1\.5 is outside"):
        rows.with_values(confidence=[0.5, 0.5, 1.5] + [0.5] * (n - 3))
    with pytest.raises(InputError, match="by='half' names the groups given as group="):
        rows.with_values(by="half")
    halves = rows.with_values(group=[i < n // 2 for i in range(n)], by="half")
    assert (halves.by, halves.groups[0], halves.groups[-1]) == ("half", "true", "false")
    assert not halves.group.flags.writeable
    assert np.array_equal(halves.questions, rows.questions)
    assert rows.by is None and rows.with_values(group=["a"] * n).by == "group"
