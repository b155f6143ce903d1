"""Rows that repeat their questions (an inspect-ai run with several epochs) are counted in
questions wherever a gate counts rows: the bootstrap draws whole questions, so an interval's
upper end needs 30 questions (and 10 with a right answer and 10 with a wrong one for accuracy
and AUROC), and --min-rows N needs N questions. Without the rows' question keys (a summary
file's rows) each question is taken to hold as many rows as the run's epochs, the fewest
questions the rows can be.

The logs are the committed real inspect-ai log as a run of two epochs writes it (see
``epochs_log``): its 20 samples, each twice, and, where more questions are needed, the samples
asked again under other ids. The expected counts are read off the fixture by hand."""

from __future__ import annotations

import json

import numpy as np
from harness import run
from test_epochs import RIGHT_ON_BASE, epochs_log, report_of

from calibcli.metrics import question_counts

UPPER = ("--gate-on", "upper", "--bootstrap", "200", "--json")
WRONG_ON_BASE = sorted(set(range(1, 21)) - RIGHT_ON_BASE)  # 8 samples


def reasons(report):
    return [c.get("reason") for c in report["gate"]["checks"]]


def test_question_counts_are_the_distinct_labels_of_each_class():
    right = np.array([7, 7, 3, 9], np.uint64)
    wrong = np.array([3, 5, 5], np.uint64)
    got = question_counts(right, wrong)
    # by hand: questions {3, 5, 7, 9}; with a right answer {3, 7, 9}; with a wrong one {3, 5}
    assert (got.questions, got.right, got.wrong) == (4, 3, 2)
    assert question_counts(np.array([1, 2]), np.array([], np.int64)).questions == 2
    assert question_counts(np.array([], np.int64), np.array([4, 4])).questions == 1


def test_an_upper_gate_needs_30_questions_not_30_rows(tmp_path):
    # 20 questions, 40 rows: passed before, on intervals drawn from 20 questions
    args = ["calibrate", epochs_log(tmp_path), "--scorer", "match", "--max-brier", "0.99"]
    closed = run([*args, *UPPER])
    assert closed.exit_code == 1
    assert reasons(report_of(closed)) == [
        "only 20 questions (the bootstrap draws each with all its rows): the upper end of a "
        "bootstrap interval needs at least 30 to show how brier varies"
    ]
    # the same 40 rows as a run of one epoch are 40 questions
    once = epochs_log(tmp_path, "once.json", copies=2, epochs=1)
    passed = run(["calibrate", once, "--scorer", "match", "--max-brier", "0.99", *UPPER])
    assert passed.exit_code == 0, passed.stderr


def test_min_rows_counts_questions(tmp_path):
    log = epochs_log(tmp_path)
    args = ["calibrate", log, "--scorer", "match", "--json"]
    closed = run([*args, "--min-rows", "30"])
    assert closed.exit_code == 1
    report = report_of(closed)
    assert report["n"] == 40
    assert reasons(report) == [
        "the 40 rows repeat their questions (see the warning) and hold 20, fewer than 30; each "
        "question counts once"
    ]
    assert "cannot support --min-rows 30" in closed.stderr
    assert run([*args, "--min-rows", "20"]).exit_code == 0
    once = epochs_log(tmp_path, "once.json", copies=2, epochs=1)
    assert run(["calibrate", once, "--scorer", "match", "--min-rows", "30"]).exit_code == 0


def test_min_rows_counts_questions_in_each_group(tmp_path):
    log = epochs_log(tmp_path)
    args = ["calibrate", log, "--scorer", "match", "--by", "model", "--gate-each", "--json"]
    report = report_of(run([*args, "--min-rows", "30"]))
    checks = report["gate"]["checks"]
    assert len(checks) == 2 and all(c["passed"] is False for c in checks)
    assert {c.get("group") for c in checks} == {None, next(iter(report["groups"]))}
    assert all("hold 20, fewer than 30" in c["reason"] for c in checks)


def test_a_summary_s_rows_count_as_few_questions_as_they_can_be(tmp_path):
    log = epochs_log(tmp_path)
    summary = tmp_path / "epochs.cbs"
    made = run(["summarize", log, "--scorer", "match", "-o", summary])
    assert made.exit_code == 0, made.stderr
    log.unlink()  # read where the log is not: the summary's record says 2 epochs
    closed = run(["calibrate", summary, "--min-rows", "21", "--json"])
    assert closed.exit_code == 1
    assert reasons(report_of(closed)) == [
        "the 40 rows repeat their questions (see the warning) and hold as few as 20, fewer than "
        "21; each question counts once"
    ]
    assert run(["calibrate", summary, "--min-rows", "20"]).exit_code == 0


def test_compare_counts_questions(tmp_path):
    base = epochs_log(tmp_path, "base.json", copies=2)  # 40 questions: 24 right, 16 wrong
    # NEW gets 4 of BASE's 8 wrong samples right (and their copies): 8 wrong questions, 16 rows
    new = epochs_log(tmp_path, "new.json", flip=set(WRONG_ON_BASE[:4]), copies=2)
    args = ["compare", base, new, "--scorer", "match", "--bootstrap", "200", "--json"]
    accuracy = report_of(run([*args, "--max-decrease", "accuracy=0.9"]))
    assert reasons(accuracy) == [
        "NEW has only 32 questions with a right answer and 8 with a wrong one: the upper end of "
        "a bootstrap interval of accuracy needs at least 10 of each"
    ]
    brier = run([*args, "--max-increase", "brier=0.5"])  # 40 questions: read
    assert brier.exit_code == 0, brier.stderr
    floor = run([*args, "--min-rows", "41"])
    assert floor.exit_code == 1
    assert reasons(report_of(floor)) == [
        "the 80 rows repeat their questions (see the warning) and hold 40, fewer than 41; each "
        "question counts once"
    ]
    assert run([*args, "--min-rows", "40"]).exit_code == 0


def test_compare_of_few_questions_closes_an_upper_gate(tmp_path):
    base, new = epochs_log(tmp_path, "base.json"), epochs_log(tmp_path, "new.json")
    args = ["compare", base, new, "--scorer", "match", "--max-increase", "brier=0.5"]
    report = report_of(run([*args, "--bootstrap", "200", "--json"]))
    assert reasons(report) == [
        "only 20 questions (the bootstrap draws each with all its rows): the upper end of a "
        "bootstrap interval needs at least 30 to show how brier varies"
    ]


def test_the_api_counts_questions_as_the_command_does(tmp_path):
    import calibcli

    rows = calibcli.read_predictions(epochs_log(tmp_path), scorer="match")
    upper = calibcli.calibrate(rows, ci=0.95, bootstrap=200, gate_on="upper", max_brier=0.99)
    assert "only 20 questions" in reasons(json.loads(upper.to_json()))[0]
    floor = calibcli.calibrate(rows, min_rows=21)
    assert "hold 20, fewer than 21" in reasons(json.loads(floor.to_json()))[0]


def test_fit_counts_the_rarer_class_in_questions(tmp_path):
    # 40 questions at 2 epochs: 16 questions answered wrong, 32 wrong answers; platt fits two
    # parameters, so it needs 20 of each class: enough answers, too few questions
    log = epochs_log(tmp_path, copies=2)
    fitted = run(["fit", log, "--scorer", "match", "--method", "platt", "-o", tmp_path / "c.json"])
    assert fitted.exit_code == 0, fitted.stderr
    assert (
        "warning: only 16 of the 40 questions have a wrong answer, fewer than 20 (10 per "
        "parameter the map fits): the platt map rests on them and may not hold on other rows"
    ) in fitted.stderr
    once = epochs_log(tmp_path, "once.json", copies=4, epochs=1)  # 32 wrong questions
    quiet = run(["fit", once, "--scorer", "match", "--method", "platt", "-o", tmp_path / "d.json"])
    assert "fewer than 20" not in quiet.stderr
