"""``calibcli.threshold(..., fit=...)`` checks where the held-out rows came from against the
evaluated rows as ``threshold --fit`` does: another model's rows warn and fail a
``min_coverage`` gate closed, rows whose confidences were read another way (the command: a
summary file of another confidence field) are an InputError (the command: exit 2), and rows
given as arrays say nothing of where they came from."""

from __future__ import annotations

import json
import random

import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

OPTIONS = {"target_accuracy": 0.5, "min_coverage": 0.05}
FLAGS = ["--target-accuracy", "0.5", "--min-coverage", "0.05"]
MODEL_WARNING = (
    "the threshold was chosen on rows of model 'pretrained__org__model-a' (--fit); the evaluated "
    "rows are of model 'pretrained__org__model-b', as their runs name them: a threshold on one "
    "model's confidences says nothing of another's, so a --min-coverage gate on them fails "
    "closed; choose the threshold on this model's rows"
)


def _lm_eval(path, seed, first_id):
    """An lm-eval samples file of 30 three-choice questions (its model named by the file's
    name, as lm-eval's older runs name it), each with one choice far likelier than the rest,
    right 9 times in 10."""
    rng = random.Random(seed)
    rows = []
    for i in range(30):
        doc_id, gold = first_id + i, rng.randrange(3)
        scores = [-3.0 - rng.random() for _ in range(3)]
        picked = gold if rng.random() < 0.9 else (gold + 1) % 3
        scores[picked] = -0.5 * rng.random()
        pairs = [[s, False] for s in scores]
        rows.append(
            {
                "doc_id": doc_id,
                "doc": {"q": f"q{doc_id}", "gold": gold},
                "target": gold,
                "arguments": [[f"Q{doc_id}", f" {c}"] for c in "abc"],
                "resps": [[p] for p in pairs],
                "filtered_resps": pairs,
                "acc": float(picked == gold),
            }
        )
    return write_jsonl(path, rows)


@pytest.fixture
def two_models(tmp_path):
    """The same task's samples, run by model a (held out) and by model b (evaluated)."""
    fit = _lm_eval(tmp_path / "pretrained__org__model-a_toy_qa.jsonl", 1, 0)
    evaluated = _lm_eval(tmp_path / "pretrained__org__model-b_toy_qa.jsonl", 2, 1000)
    return fit, evaluated


def test_another_models_rows_warn_and_fail_the_gate_as_the_command(two_models):
    fit, evaluated = two_models
    cli = run(["threshold", evaluated, "--fit", fit, *FLAGS, "--json", "-q"])
    assert cli.exit_code == 1
    shown = json.loads(cli.stdout)
    assert MODEL_WARNING in shown["warnings"]

    result = calibcli.threshold(
        calibcli.read_predictions(evaluated), fit=calibcli.read_predictions(fit), **OPTIONS
    )
    assert result.passed is False
    got = json.loads(result.to_json())
    assert MODEL_WARNING in got["warnings"]
    assert got["warnings"] == shown["warnings"]
    assert got["gate"] == shown["gate"]


def test_the_same_models_rows_say_nothing_of_a_model(two_models, tmp_path):
    fit, _ = two_models
    evaluated = _lm_eval(tmp_path / "pretrained__org__model-a_other.jsonl", 3, 2000)
    rows, held_out = calibcli.read_predictions(evaluated), calibcli.read_predictions(fit)
    got = json.loads(calibcli.threshold(rows, fit=held_out, **OPTIONS).to_json())
    assert not [w for w in got["warnings"] if "of model" in w]


def test_rows_given_as_arrays_say_nothing_of_where_they_came_from(two_models):
    fit, evaluated = two_models
    held_out = calibcli.read_predictions(fit)
    rows = calibcli.read_predictions(evaluated)
    # the held-out rows' numbers without their files: nothing names their model
    arrays = (held_out.confidence, held_out.correct)
    result = calibcli.threshold(rows, fit=arrays, **OPTIONS)
    got = json.loads(result.to_json())
    assert not [w for w in got["warnings"] if "of model" in w]
    assert result.passed is True  # the gate is not failed closed on their account


def test_confidences_of_another_field_are_refused_as_the_command_refuses_them(tmp_path):
    rng = random.Random(5)
    rows = []
    for _ in range(40):
        c = round(rng.random(), 3)
        rows.append({"confidence": c, "p": round(1 - c, 3), "correct": rng.random() < c})
    fit = write_jsonl(tmp_path / "fit.jsonl", rows[:20])
    evaluated = write_jsonl(tmp_path / "eval.jsonl", rows[20:])
    said = (
        "the threshold is chosen on the field 'p' (--fit); the evaluated rows were read from "
        "the field 'confidence': a cut on one kind of number accepts other rows held against "
        "another"
    )
    summary = tmp_path / "fit.summary"
    assert run(["summarize", fit, "--confidence-field", "p", "-o", summary, "-q"]).exit_code == 0
    cli = run(["threshold", evaluated, "--fit", summary, "--target-accuracy", "0.5", "-q"])
    assert cli.exit_code == 2
    assert said in cli.stderr

    held_out = calibcli.read_predictions(fit, confidence_field="p")
    with pytest.raises(InputError) as caught:
        calibcli.threshold(calibcli.read_predictions(evaluated), target_accuracy=0.5, fit=held_out)
    assert said in str(caught.value)
    # read from one field, the two sides hold one kind of number
    same = calibcli.read_predictions(evaluated, confidence_field="p")
    calibcli.threshold(same, target_accuracy=0.5, fit=held_out)
