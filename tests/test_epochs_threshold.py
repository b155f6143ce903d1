"""threshold on rows that repeat their questions (an inspect-ai run with several epochs): the
guaranteed threshold is chosen on one answer per question, drawn at random, so that its
binomial test sees independent answers; the realised figures, the plug-in threshold and the
curve weigh every answer. Without the rows' question keys (a summary file's rows) a
--min-coverage gate still fails closed.

Copies make the expected choice known without calibcli: when a question's epochs are copies of
one answer, any answer drawn is that answer, so the guaranteed block is the one-epoch run's."""

from __future__ import annotations

import json
import math

import numpy as np
from harness import run
from test_epochs import INSPECT, epochs_log, report_of

from calibcli.metrics import one_per_question

TARGET = ("--scorer", "match", "--target-accuracy", "0.7", "--delta", "0.2")
# the guaranteed block's figures of the rows the threshold was chosen on
CHOICE = ("threshold", "accepted", "errors", "coverage", "accuracy", "accuracy_lower_bound")
TESTED = (*CHOICE, "p_value", "test_level", "tests_run")
REPEATED_COVERAGE = (
    "the threshold was chosen on rows that repeat their questions (see the warning), so its "
    "guarantee is too optimistic; choose it with --fit on a run that scores each question once"
)


def threshold(*args):
    return report_of(run(["threshold", *map(str, args), *TARGET, "--json"]))


def test_one_row_of_each_question_is_kept():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 50, size=300).astype(np.uint64)
    right_of = rng.random(300) < 0.6
    right, wrong = one_per_question(labels[right_of], labels[~right_of], seed=3)
    kept = np.concatenate([labels[right_of][right], labels[~right_of][wrong]])
    assert sorted(kept.tolist()) == sorted(set(labels.tolist()))


def test_the_row_kept_is_drawn_whatever_its_answer():
    # question 1 holds one right and two wrong rows, question 2 two right rows and one wrong:
    # over many seeds each row is kept about a third of the time (binomial, 5 sd)
    right_labels = np.array([1, 2, 2], np.uint64)
    wrong_labels = np.array([1, 1, 2], np.uint64)
    seeds = 3000
    kept_right = np.zeros(3)
    for seed in range(seeds):
        right, _ = one_per_question(right_labels, wrong_labels, seed=seed)
        kept_right += right
    sd = math.sqrt(seeds * (1 / 3) * (2 / 3))
    assert np.all(np.abs(kept_right - seeds / 3) < 5 * sd), kept_right


def test_the_guarantee_of_copies_is_the_one_epoch_run_s(tmp_path):
    once = threshold(epochs_log(tmp_path, "once.json", copies=3, epochs=1))  # 60 questions
    twice = threshold(epochs_log(tmp_path, "twice.json", copies=3))  # each answered twice
    chosen, expected = twice["guaranteed"], once["guaranteed"]
    assert 0 < expected["threshold"] < 1  # a threshold was found, and is the same
    assert {k: chosen[k] for k in TESTED} == {k: expected[k] for k in TESTED}
    assert chosen["one_per_question"] == {"questions": 60, "rows": 120, "seed": 0}
    assert "one_per_question" not in expected
    # read on every answer: twice the rows, the same coverage and accuracy
    seen, seen_once = chosen["realised"], expected["realised"]
    assert (seen["accepted"], seen["errors"]) == (
        2 * seen_once["accepted"],
        2 * seen_once["errors"],
    )
    assert (seen["coverage"], seen["accuracy"]) == (seen_once["coverage"], seen_once["accuracy"])
    assert seen["accuracy_lower_bound"] == expected["accuracy_lower_bound"]  # the test's bound
    assert twice["plug_in"]["accepted"] == 2 * once["plug_in"]["accepted"]  # every answer
    assert twice["n"] == 120
    # the curve's bounds, read on one answer per question at the same thresholds
    assert twice["curve"]["threshold"] == once["curve"]["threshold"]
    assert twice["curve"]["accuracy_lower_bound"] == once["curve"]["accuracy_lower_bound"]
    assert any(w.startswith("a run scored each question several times") for w in twice["warnings"])


def test_min_coverage_reads_the_threshold_drawn_by_question(tmp_path):
    log = epochs_log(tmp_path, copies=3)
    args = ["threshold", log, *TARGET, "--json"]
    passed = run([*args, "--min-coverage", "0.1"])
    assert passed.exit_code == 0, passed.stderr
    coverage = report_of(passed)["coverage"]
    assert coverage < 1
    failed = run([*args, "--min-coverage", str(coverage + 0.01)])
    assert failed.exit_code == 1
    assert "reason" not in report_of(failed)["gate"]["checks"][0]  # read, not closed


def test_fit_on_epochs_is_drawn_by_question(tmp_path):
    evaluated = INSPECT / "toy_arithmetic.json"
    fit_once = epochs_log(tmp_path, "fit_once.json", copies=3, epochs=1)
    fit_twice = epochs_log(tmp_path, "fit_twice.json", copies=3)
    once = threshold(evaluated, "--fit", fit_once)
    twice = threshold(evaluated, "--fit", fit_twice)
    chosen, expected = twice["guaranteed"], once["guaranteed"]
    assert {k: chosen[k] for k in TESTED} == {k: expected[k] for k in TESTED}
    assert chosen["realised"] == expected["realised"]  # the evaluated rows are one run's
    assert chosen["one_per_question"] == {"questions": 60, "rows": 120, "seed": 0}


def test_each_group_is_drawn_by_question(tmp_path):
    report = threshold(epochs_log(tmp_path, copies=3), "--by", "model")
    (group,) = report["groups"].values()
    pooled = report["guaranteed"]
    assert {k: group["guaranteed"][k] for k in TESTED} == {k: pooled[k] for k in TESTED}
    assert group["guaranteed"]["one_per_question"] == pooled["one_per_question"]


def summary_away(tmp_path):
    """A summary of a run of 60 questions at 2 epochs, read where the log is not: its rows do
    not say their questions."""
    log = epochs_log(tmp_path, copies=3)
    summary = tmp_path / "epochs.cbs"
    made = run(["summarize", log, "--scorer", "match", "-o", summary])
    assert made.exit_code == 0, made.stderr
    log.unlink()
    return summary


def test_a_summary_s_rows_without_keys_still_close_min_coverage(tmp_path):
    summary = summary_away(tmp_path)
    args = ["threshold", summary, "--target-accuracy", "0.5", "--min-coverage", "0.1", "--json"]
    result = run(args)
    assert result.exit_code == 1
    report = report_of(result)
    assert [c.get("reason") for c in report["gate"]["checks"]] == [REPEATED_COVERAGE]
    assert "one_per_question" not in report["guaranteed"]
    assert any(w.startswith("the guarantee counts each row") for w in report["warnings"])


def test_one_epoch_is_chosen_on_every_row(tmp_path):
    report = threshold(INSPECT / "toy_arithmetic.json")
    assert "one_per_question" not in report["guaranteed"]
    assert json.dumps(report).count("one answer per question") == 0


def test_the_bounds_on_evaluated_epochs_read_one_answer_per_question(tmp_path):
    fit = epochs_log(tmp_path, "fit.json", copies=3, epochs=1)
    once = threshold(epochs_log(tmp_path, "once.json", copies=3, epochs=1), "--fit", fit)
    twice = threshold(epochs_log(tmp_path, "twice.json", copies=3), "--fit", fit)
    seen, seen_once = twice["guaranteed"]["realised"], once["guaranteed"]["realised"]
    assert seen["accepted"] == 2 * seen_once["accepted"]
    assert seen_once["accuracy_lower_bound"] is not None
    assert seen["accuracy_lower_bound"] == seen_once["accuracy_lower_bound"]
    assert twice["curve"]["accuracy_lower_bound"] == once["curve"]["accuracy_lower_bound"]
    assert "one_per_question" not in twice["guaranteed"]  # chosen on a run of one epoch
    assert (
        "the evaluated rows repeat their questions (see the warning), so the accuracy lower "
        "bounds of the realised figures and of the curve are read on one answer per question, "
        "drawn at random (seed 0); the other figures weigh every answer"
    ) in twice["warnings"]


def test_the_bounds_on_evaluated_rows_without_keys_are_null(tmp_path):
    summary = summary_away(tmp_path)
    fit = epochs_log(tmp_path, "fit.json", copies=3, epochs=1)
    args = ["threshold", summary, "--fit", fit, "--scorer", "match", "--target-accuracy", "0.7"]
    report = report_of(run([*args, "--delta", "0.2", "--json"]))
    assert report["guaranteed"]["realised"]["accuracy_lower_bound"] is None
    assert set(report["curve"]["accuracy_lower_bound"]) == {None}
    assert report["guaranteed"]["accuracy_lower_bound"] is not None  # the --fit rows' bound
    assert any("do not say which" in w for w in report["warnings"])
