"""Each --by task group's rows counted by its own runs' repeats in reliability, fit and threshold.

Re-runs of one task pooled with --all-runs repeat that task's questions, not another task's: a
task run once beside them keeps one question a row in its Wilson intervals and small-bin
warnings (reliability), in its class counts and bin sizes (fit), and in whether its threshold
was chosen on rows that repeat their questions (threshold). The re-run task keeps being
counted in questions, its gate failing closed as before, and so do the pooled rows.

The expected counts are written here from the fixture files' line counts (48 science rows, 40
trivia rows a run) and the number of runs of each task; the intervals and bounds from their
formulas (Wilson's, and Clopper–Pearson's through scipy's beta quantile)."""

from __future__ import annotations

import json
import math
import shutil
from statistics import NormalDist

import pytest
from harness import run
from test_pooled_models import LM_EVAL, STAMP
from test_threshold_groups_models_repeats import reruns

SCIENCE, TRIVIA = "toy_mc_science", "toy_mc_trivia"
REPEATED_COVERAGE = (
    "the threshold was chosen on rows that repeat their questions (see the warning), so its "
    "guarantee is too optimistic; choose it with --fit on a run that scores each question once"
)


def summary_of(folder, rerun, once):
    """A summary file of two runs of the task ``rerun`` and one of ``once``, pooled with
    --all-runs by task (it keeps no question keys)."""
    reruns(folder, rerun)
    shutil.copy(LM_EVAL / f"samples_{once}_{STAMP}.jsonl", folder)
    out = folder / "all.cbs"
    made = run(["summarize", folder, "--all-runs", "--by", "task", "-o", out])
    assert made.exit_code == 0, made.stderr
    return out


def wilson(k, n):
    """The 95% Wilson score interval of k right of n, clipped to [0, 1]."""
    z = NormalDist().inv_cdf(0.975)
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def bins_of(section):
    """Each populated bin's (right, rows, interval) of a reliability section, the right
    answers read off its accuracy."""
    table = section["reliability"]
    out = []
    for n, acc, ci in zip(table["count"], table["accuracy"], table["accuracy_ci"], strict=True):
        if n:
            out.append((round(acc * n), n, ci))
    return out


def test_reliability_intervals_of_a_task_run_once_count_its_rows(tmp_path):
    summary = summary_of(tmp_path, SCIENCE, TRIVIA)
    result = run(["reliability", summary, "--all-runs", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    trivia, science = report["groups"][TRIVIA], report["groups"][SCIENCE]
    assert trivia["n"] == 40 and science["n"] == 96 and report["n"] == 136
    # trivia, run once: each row an answer of its own; its 19-row bin holds 6 right
    assert (6, 19) in [(k, n) for k, n, _ in bins_of(trivia)]
    for k, n, ci in bins_of(trivia):
        assert ci == pytest.approx(wilson(k, n), abs=1e-12), (k, n)
    lone = next(ci for k, n, ci in bins_of(trivia) if n == 19)
    assert lone == pytest.approx([0.1536, 0.5399], abs=1e-4)
    # science, run twice, and the pooled rows: a bin's rows as half as many answers
    for section in (science, report):
        for k, n, ci in bins_of(section):
            assert ci == pytest.approx(wilson(k / 2, n / 2), abs=1e-12), (k, n)
    # the median populated bin: science 10 rows of 5 questions, trivia 7 rows of 7
    assert any("toy_mc_science (5), toy_mc_trivia (7):" in w for w in report["warnings"]), report[
        "warnings"
    ]


def fit_warnings(summary, tmp_path, *options):
    args = ["fit", summary, "--all-runs", "--by", "task", *options, "-o", tmp_path / "map.json"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("warning: ")]


def test_fit_counts_a_task_run_once_by_its_rows(tmp_path):
    summary = summary_of(tmp_path, SCIENCE, TRIVIA)
    # one histogram bin: trivia's 40 rows (11 right) are 40 questions, more than the 30 rows
    # of a bin and the 10 answers of a class a map of one parameter asks; counted as 2 runs'
    # rows they would be as few as 20 questions, and 6 with a right answer
    said = fit_warnings(summary, tmp_path, "--method", "histogram", "--bins", "1")
    assert not [w for w in said if TRIVIA in w], said
    # platt (2 parameters: 20 answers of each class): science's 96 rows of 2 runs hold as few
    # as 15 questions with a wrong answer (30 wrong rows); trivia's 40 hold 11 right answers
    said = fit_warnings(summary, tmp_path, "--method", "platt")
    few = [w for w in said if "have a right answer, or fewer than 20 a wrong one" in w]
    assert len(few) == 1 and "toy_mc_science (15 wrong), toy_mc_trivia (11 right):" in few[0]


def threshold_checks(summary, *options, fit=None):
    args = ["threshold", *summary, "--all-runs", "--by", "task", "--gate-each", "--json"]
    args += ["--min-coverage", "0.01", "--delta", "0.3", *options]
    if fit is not None:
        args += ["--fit", fit]
    result = run(args)
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    checks = [
        (c.get("group"), c["value"], c["passed"], c.get("reason")) for c in report["gate"]["checks"]
    ]
    return report, checks


def test_threshold_gates_a_task_run_once_on_its_own_figures(tmp_path):
    summary = summary_of(tmp_path, TRIVIA, SCIENCE)  # science once, trivia twice
    _, checks = threshold_checks([summary], "--target-accuracy", "0.5")
    # science's guaranteed threshold accepts 3 of its 48 rows; chosen on rows of one answer
    # each, its gate reads its coverage; the pooled rows repeat trivia's questions
    assert checks[:2] == [
        (None, checks[0][1], False, REPEATED_COVERAGE),
        (SCIENCE, 3 / 48, True, None),
    ]
    assert (checks[2][0], checks[2][2]) == (TRIVIA, False)
    # a group whose runs repeat fails closed though its coverage is reached
    _, checks = threshold_checks([summary], "--method", "sgr", "--target-accuracy", "0.1")
    assert [c[0] for c in checks] == [None, SCIENCE, TRIVIA]
    assert checks[1] == (SCIENCE, 1.0, True, None)
    assert checks[2] == (TRIVIA, 1.0, False, REPEATED_COVERAGE)
    assert checks[0][2:] == (False, REPEATED_COVERAGE)


def test_threshold_bounds_on_a_task_run_once_are_read(tmp_path):
    from scipy.stats import beta

    summary = summary_of(tmp_path, TRIVIA, SCIENCE)
    report, _ = threshold_checks([summary], "--target-accuracy", "0.5")
    # science's rows are one answer a question: each bound of its table is Clopper-Pearson's
    curve = report["groups"][SCIENCE]["curve"]
    rows = zip(curve["accepted"], curve["errors"], curve["accuracy_lower_bound"], strict=True)
    for accepted, errors, bound in rows:
        right = accepted - errors
        expected = 0.0 if right == 0 else float(beta.ppf(0.3, right, accepted - right + 1))
        assert bound == pytest.approx(expected, abs=1e-9), (accepted, errors)
    # trivia's repeat questions its rows do not name: no bound is read on them
    assert set(report["groups"][TRIVIA]["curve"]["accuracy_lower_bound"]) == {None}


def test_threshold_chosen_on_a_summary_gates_the_task_run_once_there(tmp_path):
    (tmp_path / "fit").mkdir()
    fit = summary_of(tmp_path / "fit", TRIVIA, SCIENCE)  # science once, trivia twice
    files = [LM_EVAL / f"samples_{task}_{STAMP}.jsonl" for task in (SCIENCE, TRIVIA)]
    options = ("--method", "sgr", "--target-accuracy", "0.1")
    _, checks = threshold_checks(files, *options, fit=fit)
    assert checks[1] == (SCIENCE, 1.0, True, None)  # chosen on science's 48 rows, one run
    assert checks[0][2:] == (False, REPEATED_COVERAGE)
    assert checks[2][0] == TRIVIA and checks[2][2] is False  # chosen on trivia's repeats
