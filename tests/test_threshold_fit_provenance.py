"""threshold --fit checks where the rows the threshold is chosen on came from against the rows it
is evaluated on, as --calibrator checks a calibrator's fitted_on: rows that hold other numbers
(another confidence field or multiple-choice normalisation, read from a summary file) are
refused; rows of another model, or graded by another field, are named and --min-coverage fails
closed. Files and summary files on either side."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from harness import run, write_jsonl

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
SCIENCE = "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
RESULTS = "results_2026-11-29T18-50-52.260809.json"

OTHER_MODEL = (
    "the threshold was chosen on rows of model 'wxrd1574' (--fit); the evaluated rows are of "
    "model 'other-model-7b', as their runs name them: a threshold on one model's confidences "
    "says nothing of another's, so a --min-coverage gate on them fails closed; choose the "
    "threshold on this model's rows"
)
OTHER_MODEL_GATE = (
    "the threshold was chosen on another model's rows (see the warning): a threshold on one "
    "model's confidences says nothing of another's"
)
GRADED_GATE = (
    "the threshold was chosen on rows graded another way (see the warning): its guarantee is "
    "of another notion of a right answer"
)
SAID = ("the threshold was chosen on rows", "the threshold is chosen on")  # this check's words


def threshold(*args):
    return run(["threshold", *args, "--json", "-q"])


def summarize(source, out, *args):
    result = run(["summarize", source, *args, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


def said(body):
    return [w for w in body["warnings"] if w.startswith(SAID)]


@pytest.fixture
def runs(tmp_path):
    """The lm-eval fixture's science rows in three runs: ``a`` its first 24 rows, ``same`` the
    other 24 of the same model (wxrd1574), ``other`` those 24 as a run of other-model-7b (its
    results file names it)."""
    science = (LM_EVAL / SCIENCE).read_text().splitlines(keepends=True)
    found = {}
    for name, model, rows in (
        ("a", None, science[:24]),
        ("same", None, science[24:]),
        ("other", "other-model-7b", science[24:]),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / SCIENCE).write_text("".join(rows))
        results = json.loads((LM_EVAL / RESULTS).read_text())
        if model is not None:
            results["model_name"] = model
        (folder / RESULTS).write_text(json.dumps(results))
        found[name] = folder / SCIENCE
    return found


GATED = ["--method", "sgr", "--target-accuracy", "0.5", "--delta", "0.5", "--min-coverage", "0.01"]


@pytest.mark.parametrize("side", ["files", "fit summary", "evaluated summary"])
def test_a_threshold_chosen_on_another_models_rows_fails_closed(runs, tmp_path, side):
    """(a) Chosen on wxrd1574's rows, evaluated on other-model-7b's: named, and the gate fails
    closed though the coverage alone passes; the figures are those of the same rows of the
    same model, which pass."""
    fit, evaluated = runs["a"], runs["other"]
    if side == "fit summary":
        fit = summarize(fit, tmp_path / "fit.cbs")
    elif side == "evaluated summary":
        evaluated = summarize(evaluated, tmp_path / "eval.cbs")
    result = threshold(evaluated, "--fit", fit, *GATED)
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert said(body) == [OTHER_MODEL]
    assert f"warning: {OTHER_MODEL}" in result.stderr.splitlines()
    (check,) = body["gate"]["checks"]
    assert check["reason"] == OTHER_MODEL_GATE
    assert check["value"] >= 0.01  # the coverage alone would pass
    honest = threshold(runs["same"], "--fit", runs["a"], *GATED)
    assert honest.exit_code == 0, honest.stderr
    plain = json.loads(honest.stdout)
    assert said(plain) == []
    assert plain["gate"]["passed"] is True
    drop = ("warnings", "gate", "fit")  # "fit" names the --fit files as given
    assert {k: v for k, v in body.items() if k not in drop} == {
        k: v for k, v in plain.items() if k not in drop
    }


def test_lm_eval_scores_of_another_mc_norm_are_refused(runs, tmp_path):
    """(d) A summary made with --mc-norm chars on one side, files read with none on the other:
    a cut on one normalisation's scores, refused (exit 2, one line), either way round; with
    --mc-norm chars both sides are read one way."""
    chars = summarize(runs["a"], tmp_path / "chars.cbs", "--mc-norm", "chars")
    cut = (
        "a cut on one kind of number accepts other rows held against another, and a summary "
        "file's rows cannot be read again another way"
    )
    result = threshold(runs["same"], "--fit", chars, *GATED)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"Error: {chars}: the threshold is chosen on --mc-norm chars scores (--fit); the "
        f"evaluated rows are read with --mc-norm none: {cut}: give --mc-norm chars to read the "
        "evaluated files so too, or summarize the --fit inputs again with --mc-norm none"
    ]
    result = threshold(chars, "--fit", runs["same"], *GATED)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"Error: {chars}: the threshold is chosen on --mc-norm none scores (--fit); the "
        f"evaluated rows are read with --mc-norm chars: {cut}: give --mc-norm chars to read "
        "the --fit files so too, or summarize the evaluated inputs again with --mc-norm none"
    ]
    result = threshold(
        runs["same"], "--fit", chars, "--target-accuracy", "0.5", "--mc-norm", "chars"
    )
    assert result.exit_code == 0, result.stderr
    assert said(json.loads(result.stdout)) == []


def two_fields(path, n, seed):
    """Rows of ``confidence`` and ``score2`` = confidence ** 0.3 (the same order, other
    numbers), right with probability ``confidence``."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        c = rng.random()
        rows.append({"confidence": c, "score2": c**0.3, "correct": rng.random() < c})
    return write_jsonl(path, rows)


def test_confidences_of_another_field_are_refused(tmp_path):
    """(b) A --fit summary read from ``score2`` held against rows read from ``confidence``: the
    threshold on score2's scale would accept other rows of confidence's. Refused, either way
    round and between two summaries; giving --confidence-field score2 reads both one way, and
    a summary of the same field is read as files are."""
    fit, evaluated = (
        two_fields(tmp_path / "fit.jsonl", 800, 1),
        two_fields(tmp_path / "e.jsonl", 800, 2),
    )
    score2 = summarize(fit, tmp_path / "s2.cbs", "--confidence-field", "score2")
    plain = summarize(evaluated, tmp_path / "plain.cbs")
    cut = (
        "a cut on one kind of number accepts other rows held against another, and a summary "
        "file's rows cannot be read again another way"
    )
    args = ["--target-accuracy", "0.8", "--min-coverage", "0.1"]
    cases = [
        (
            [evaluated, "--fit", score2],
            f"Error: {score2}: the threshold is chosen on the field 'score2' (--fit); the "
            f"evaluated rows were read from the field 'confidence': {cut}: give "
            "--confidence-field score2 to read the evaluated files so too, or summarize the "
            "--fit inputs again with --confidence-field confidence",
        ),
        (
            [score2, "--fit", fit],
            f"Error: {score2}: the threshold is chosen on the field 'confidence' (--fit); the "
            f"evaluated rows were read from the field 'score2': {cut}: give --confidence-field "
            "score2 to read the --fit files so too, or summarize the evaluated inputs again with "
            "--confidence-field confidence",
        ),
        (
            [plain, "--fit", score2],
            f"Error: {score2}: the threshold is chosen on the field 'score2' (--fit); the "
            f"evaluated rows were read from the field 'confidence': {cut}: summarize the --fit "
            "inputs again with --confidence-field confidence, or the evaluated ones with "
            "--confidence-field score2",
        ),
    ]
    for sides, error in cases:
        result = threshold(*sides, *args)
        assert result.exit_code == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr.splitlines() == [error]
    result = threshold(evaluated, "--fit", score2, *args, "--confidence-field", "score2")
    assert result.exit_code == 0, result.stderr
    assert said(json.loads(result.stdout)) == []
    result = threshold(plain, "--fit", fit, *args)
    assert result.exit_code == 0, result.stderr
    assert said(json.loads(result.stdout)) == []


def graded(path, n, seed):
    """Rows graded two ways: ``correct``, and ``lenient``, which also takes one wrong answer in
    ten as right."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        c = rng.random()
        right = rng.random() < c
        rows.append({"confidence": c, "correct": right, "lenient": right or rng.random() < 0.1})
    return write_jsonl(path, rows)


@pytest.mark.parametrize("side", ["fit summary", "evaluated summary"])
def test_a_threshold_chosen_on_rows_graded_another_way_fails_closed(tmp_path, side):
    """(c) Chosen on rows graded by --correct-field lenient, evaluated on rows graded by
    correct (or the other way round): named, and the gate fails closed though the coverage
    passes and the accuracy on the evaluated rows reaches the target; the same grading on
    both sides passes."""
    fit, evaluated = graded(tmp_path / "fit.jsonl", 2000, 3), graded(tmp_path / "e.jsonl", 2000, 4)
    target = 0.7
    args = ["--target-accuracy", str(target), "--min-coverage", "0.1"]
    if side == "fit summary":
        fit = summarize(fit, tmp_path / "fit.cbs", "--correct-field", "lenient")
        ways = ("lenient", "correct")
    else:
        evaluated = summarize(evaluated, tmp_path / "e.cbs", "--correct-field", "lenient")
        ways = ("correct", "lenient")
    text = (
        f"the threshold was chosen on rows graded by --correct-field {ways[0]} (--fit); the "
        f"evaluated rows are graded by --correct-field {ways[1]}: its guarantee is of the "
        "accuracy by another notion of a right answer, so a --min-coverage gate fails closed; "
        "grade both sides alike"
    )
    result = threshold(evaluated, "--fit", fit, *args)
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert said(body) == [text]
    assert f"warning: {text}" in result.stderr.splitlines()
    (check,) = body["gate"]["checks"]
    assert check["reason"] == GRADED_GATE
    assert check["value"] >= 0.1
    realised = body["guaranteed"]["realised"]
    assert (realised["accepted"] - realised["errors"]) / realised["accepted"] >= target
    same = graded(tmp_path / "e.jsonl", 2000, 4)
    honest = threshold(same, "--fit", graded(tmp_path / "fit.jsonl", 2000, 3), *args)
    assert honest.exit_code == 0, honest.stderr
    assert said(json.loads(honest.stdout)) == []


def test_summaries_grouped_by_other_fields_are_refused(tmp_path):
    """Two summaries made with --by x and --by y: a group's threshold would be chosen on the
    rows of the other field's group of the same name. Refused, as a calibrator fitted per
    another --by field is."""
    rng = random.Random(5)
    rows = []
    for i in range(400):
        c = rng.random()
        rows.append({"confidence": c, "correct": rng.random() < c, "x": "ab"[i % 2]})
        rows[-1]["y"] = "ab"[i % 3 == 0]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    by_x = summarize(path, tmp_path / "x.cbs", "--by", "x")
    by_y = summarize(path, tmp_path / "y.cbs", "--by", "y")
    result = threshold(by_x, "--fit", by_y, "--target-accuracy", "0.7")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"Error: {by_y}: the --fit rows are grouped by --by y, the evaluated rows by --by x: "
        "each group's threshold would be chosen on the rows of another field's group of the "
        "same name; summarize both with one --by"
    ]
    result = threshold(by_x, "--fit", by_x, "--target-accuracy", "0.7")
    assert result.exit_code == 0, result.stderr
