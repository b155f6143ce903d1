"""Rows pooled with --all-runs whose ids repeat across the inputs are re-runs of the same
questions, whatever wrote them: native rows identified by --id-field, and inspect-ai logs of
one task (a sample's id, its epoch part dropped). As for lm-eval's re-runs, the figures weigh
every row, but --min-rows counts questions, a warning says the rows repeat them, the bootstrap
and the cross-fitting folds draw a question's rows together, and threshold chooses on one
answer per question.

The counts are known by construction: a native file of 30 rows of ids q0 to q29 and its copy
are 60 rows and 30 questions (a path given twice is refused, --all-runs or not); two one-epoch
runs of the committed inspect-ai log (20 samples) are 40 rows and 20 questions."""

from __future__ import annotations

import json

import numpy as np
from harness import run
from test_epochs import captured, epochs_log, one_question_per_label

QUESTIONS = 30
OPENING = (
    "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
    "several times: "
)
DRAWN = "the figures weigh every answer, and the bootstrap draws each question's answers together"


def native(tmp_path, name="rows.jsonl"):
    """30 native rows, ids q0 to q29, confidences 0.50 to 0.79, every third one wrong."""
    rows = [{"id": f"q{i}", "confidence": 0.5 + i / 100, "correct": i % 3 != 0} for i in range(30)]
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def two_runs(tmp_path):
    """Two one-epoch runs of the committed log: the second scores samples 1 to 5 the other
    way (other answers to the same questions)."""
    first = epochs_log(tmp_path, "run1.json", epochs=1)
    second = epochs_log(tmp_path, "run2.json", flip={1, 2, 3, 4, 5}, epochs=1)
    return first, second


def report(args, code):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def test_id_field_rows_given_twice_count_each_question_once(tmp_path):
    rows, again = native(tmp_path), native(tmp_path, "again.jsonl")
    args = ["calibrate", rows, again, "--all-runs", "--id-field", "id", "--min-rows"]
    failed = report([*args, str(QUESTIONS + 1)], 1)
    assert failed["n"] == 2 * QUESTIONS
    (check,) = failed["gate"]["checks"]
    assert check["reason"] == (
        "the 60 rows repeat their questions (see the warning) and hold 30, fewer than 31; each "
        "question counts once"
    )
    said = f"{OPENING}rows.jsonl and again.jsonl (2 rows a question among them): {DRAWN}"
    assert said in failed["warnings"]
    assert report([*args, str(QUESTIONS)], 0)["gate"]["passed"] is True


def test_a_summary_of_pooled_id_rows_keeps_counting_questions(tmp_path):
    rows, again = native(tmp_path), native(tmp_path, "again.jsonl")
    out = tmp_path / "pooled.cbs"
    made = run(["summarize", rows, again, "--all-runs", "--id-field", "id", "-o", out, "-q"])
    assert made.exit_code == 0, made.stderr
    failed = report(["calibrate", out, "--min-rows", "31"], 1)
    assert failed["n"] == 60
    assert "fewer than 31" in failed["gate"]["checks"][0]["reason"]


def test_inspect_re_runs_count_each_sample_once(tmp_path):
    first, second = two_runs(tmp_path)
    args = ["calibrate", first, second, "--all-runs", "--scorer", "match", "--min-rows"]
    failed = report([*args, "21"], 1)
    assert failed["n"] == 40
    assert "hold 20, fewer than 21" in failed["gate"]["checks"][0]["reason"]
    said = f"{OPENING}run1.json and run2.json (2 rows a question among them): {DRAWN}"
    assert said in failed["warnings"]
    assert report([*args, "20"], 0)["gate"]["passed"] is True


def test_inspect_re_runs_are_drawn_together(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "bootstrap_intervals")
    first, second = two_runs(tmp_path)
    args = ["calibrate", first, second, "--all-runs", "--scorer", "match", "--ci", "0.95"]
    report([*args, "--bootstrap", "200"], 0)
    (columns,), kwargs = calls[0]
    right, wrong = kwargs["clusters"]
    conf = np.concatenate([columns.conf_correct, columns.conf_wrong])
    # 20 labels of two rows each, a sample's two answers sharing its confidence
    one_question_per_label(conf, np.concatenate([right, wrong]))


def test_inspect_re_runs_are_held_out_together(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "cross_fit")
    first, second = two_runs(tmp_path)
    args = ["calibrate", first, second, "--all-runs", "--scorer", "match"]
    report([*args, "--recalibrate", "histogram"], 0)
    ((conf, _correct), kwargs) = calls[0][0], calls[0][1]
    one_question_per_label(conf, np.asarray(kwargs["clusters"]))


def test_threshold_chooses_on_one_answer_per_question(tmp_path):
    first, second = two_runs(tmp_path)
    args = ["threshold", first, second, "--all-runs", "--scorer", "match"]
    chosen = report([*args, "--target-accuracy", "0.6"], 0)
    assert chosen["n"] == 40
    assert chosen["guaranteed"]["one_per_question"] == {"questions": 20, "rows": 40, "seed": 0}
    rows, again = native(tmp_path), native(tmp_path, "again.jsonl")
    args = ["threshold", rows, again, "--all-runs", "--id-field", "id", "--target-accuracy", "0.6"]
    chosen = report(args, 0)
    assert chosen["guaranteed"]["one_per_question"] == {"questions": 30, "rows": 60, "seed": 0}
