"""Per --by model group facts that were taken from every file read instead of the group's own.

Under --by model each group is the rows of the model it is named for (where every file's run
records its model as the group names it), so a group whose --fit rows are that same model's is
gated on its own figures, though the evaluated rows hold another model's in another group; the
pooled figures, chosen on one model's rows and held against two models', fail closed, and so
does a group whose --fit or evaluated rows include rows whose model is not known (a JSON Lines
file's), or a run that spells its model otherwise than its group (lm-eval model arguments).

The figures before a calibrator (``calibrate_figures``) count a group's rows by its own runs'
repeats: a task run once beside a task run twice (pooled with --all-runs) is not taken to hold
half as many questions as rows.

The expected counts are written here from the fixture files' line counts (48 science rows, 40
trivia rows) and the number of runs of each task."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from harness import run
from test_pooled_models import LM_EVAL, STAMP, two_runs
from test_threshold_groups_models_repeats import LATER, OTHER_MODEL, reruns

EMPTY_FIT = "the --fit input holds no rows of this group"
SCIENCE, TRIVIA = 48, 40  # rows of the committed run's two multiple-choice tasks


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def checks_of(report):
    return [(c.get("group"), c["passed"], c.get("reason")) for c in report["gate"]["checks"]]


def threshold(files, fit, minimum=0.01):
    args = ["threshold", *files, "--by", "model", "--gate-each", "--target-accuracy", "0.2"]
    args += ["--min-coverage", str(minimum), "--json"]
    for path in fit:
        args += ["--fit", path]
    return report_of(run(args))


def runs(tmp_path, name, first="org/alpha", second="org/beta"):
    """:func:`two_runs` in a folder of its own: ``first``'s science, ``second``'s trivia."""
    (tmp_path / name).mkdir()
    return two_runs(tmp_path / name, first, second)


def unnamed_rows(path, model):
    """A JSON Lines file of 30 rows whose ``model`` field says ``model``: its file names none."""
    rows = [{"confidence": 0.5 + i / 100, "correct": i % 3 > 0, "model": model} for i in range(30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_model_s_group_chosen_on_its_own_rows_is_gated_on_its_figures(tmp_path):
    evaluated = runs(tmp_path, "evaluated")
    fit, _ = runs(tmp_path, "fit")  # org/alpha's science rows only
    report = threshold(evaluated, [fit])
    # org/alpha's group: its threshold chosen on org/alpha's rows, so its gate is its coverage's;
    # the pooled threshold, chosen on org/alpha's rows, is held against org/beta's too
    assert checks_of(report) == [
        (None, False, OTHER_MODEL),
        ("org/alpha", True, None),
        ("org/beta", False, EMPTY_FIT),
    ]
    assert (report["groups"]["org/alpha"]["n"], report["groups"]["org/beta"]["n"]) == (
        SCIENCE,
        TRIVIA,
    )
    # its value is that of org/alpha's rows read alone, with nothing of another model's
    alone = threshold(evaluated[:1], [fit])
    assert checks_of(alone) == [(None, True, None), ("org/alpha", True, None)]
    alpha = report["gate"]["checks"][1]
    assert alpha["value"] == alone["gate"]["checks"][1]["value"] > 0
    # and it fails on its number where the coverage is not reached (no row is accepted below
    # the lowest science confidence, so a coverage of 1 is never reached)
    assert checks_of(threshold(evaluated, [fit], 1))[1] == ("org/alpha", False, None)


def test_a_summary_file_of_the_fit_rows_keeps_its_model(tmp_path):
    evaluated = runs(tmp_path, "evaluated")
    fit, _ = runs(tmp_path, "fit")
    summary = tmp_path / "fit.cbs"
    made = run(["summarize", fit, "--by", "model", "-o", summary])
    assert made.exit_code == 0, made.stderr
    assert checks_of(threshold(evaluated, [summary]))[1:] == [
        ("org/alpha", True, None),
        ("org/beta", False, EMPTY_FIT),
    ]


def test_fit_rows_of_two_models_choose_each_model_s_threshold_on_its_own_rows(tmp_path):
    evaluated = runs(tmp_path, "evaluated")  # org/alpha's science, org/beta's trivia
    fit = runs(tmp_path, "fit", "org/alpha", "org/gamma")  # org/gamma: no evaluated rows
    report = threshold(evaluated, fit)
    assert checks_of(report) == [
        (None, False, OTHER_MODEL),
        ("org/alpha", True, None),
        ("org/beta", False, EMPTY_FIT),
    ]


def test_fit_rows_whose_model_is_not_known_fail_the_group_closed(tmp_path):
    # the JSON Lines rows say org/alpha in a field, but their file names no model: the
    # threshold of org/alpha's group is chosen on them too
    evaluated = runs(tmp_path, "evaluated")
    fit, _ = runs(tmp_path, "fit")
    unnamed = unnamed_rows(tmp_path / "unnamed.jsonl", "org/alpha")
    report = threshold(evaluated, [fit, unnamed])
    assert report["groups"]["org/alpha"]["fit_n"] == SCIENCE + 30
    assert checks_of(report) == [
        (None, False, OTHER_MODEL),
        ("org/alpha", False, OTHER_MODEL),
        ("org/beta", False, EMPTY_FIT),
    ]


def test_evaluated_rows_whose_model_is_not_known_fail_the_group_closed(tmp_path):
    evaluated = runs(tmp_path, "evaluated")
    fit, _ = runs(tmp_path, "fit")
    unnamed = unnamed_rows(tmp_path / "unnamed.jsonl", "org/alpha")
    report = threshold([*evaluated, unnamed], [fit])
    assert report["groups"]["org/alpha"]["n"] == SCIENCE + 30
    assert checks_of(report)[:2] == [(None, False, OTHER_MODEL), ("org/alpha", False, OTHER_MODEL)]


def test_a_run_that_spells_its_model_otherwise_fails_the_group_closed(tmp_path):
    # a file named the pre-v0.4.3 way is grouped as org/alpha, but its run records the model
    # arguments: a run of org/alpha loaded another way, which the warning names apart
    evaluated = runs(tmp_path, "evaluated")
    (tmp_path / "old").mkdir()
    fit = tmp_path / "old" / "pretrained=org__alpha_toy_mc_science.jsonl"
    shutil.copy(LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl", fit)
    report = threshold(evaluated, [fit])
    assert report["groups"]["org/alpha"]["fit_n"] == SCIENCE
    assert checks_of(report)[:2] == [(None, False, OTHER_MODEL), ("org/alpha", False, OTHER_MODEL)]


def test_the_group_of_another_model_never_passes(tmp_path):
    # org/beta's science, chosen on nothing of org/beta's: no --fit rows of its group; org/alpha's
    # trivia, chosen on org/alpha's science, is judged on its figures (another task: a warning)
    evaluated = runs(tmp_path, "evaluated", "org/beta", "org/alpha")
    fit, _ = runs(tmp_path, "fit")
    report = threshold(evaluated, [fit])
    assert checks_of(report)[0] == (None, False, OTHER_MODEL)
    assert checks_of(report)[2] == ("org/beta", False, EMPTY_FIT)
    assert report["gate"]["checks"][1].get("reason") is None
    # org/beta's group chosen on rows that only a field says are org/beta's
    unnamed = unnamed_rows(tmp_path / "unnamed.jsonl", "org/beta")
    report = threshold(evaluated, [fit, unnamed])
    assert report["groups"]["org/beta"]["fit_n"] == 30
    assert checks_of(report) == [
        (None, False, OTHER_MODEL),
        ("org/alpha", False, OTHER_MODEL),
        ("org/beta", False, OTHER_MODEL),
    ]


# ----- the figures before a calibrator, per --by task group


def wilson(right, n, z=1.959963984540054):
    """The 95% Wilson score interval of ``right`` of ``n``, by its formula."""
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_the_figures_before_a_calibrator_count_a_task_run_once_by_its_rows(tmp_path):
    from calibcli.io import read_calibration
    from calibcli.reports.calibrate import calibrate_figures

    reruns(tmp_path, "toy_mc_science")  # 2 runs of 48 rows: each question answered twice
    shutil.copy(LM_EVAL / f"samples_toy_mc_trivia_{STAMP}.jsonl", tmp_path)  # 40, run once
    files = sorted(str(p) for p in tmp_path.glob("samples_*.jsonl"))
    assert any(LATER in f for f in files)
    summary = read_calibration(files, by="task", all_runs=True, keep_columns=True)
    groups = calibrate_figures(summary)["groups"]
    for task, rows, times in (("toy_mc_trivia", TRIVIA, 1), ("toy_mc_science", 2 * SCIENCE, 2)):
        bins = groups[task]["reliability"]
        assert sum(bins["count"]) == rows
        for count, accuracy, interval in zip(
            bins["count"], bins["accuracy"], bins["accuracy_ci"], strict=True
        ):
            if not count:
                assert interval is None
                continue
            # a bin of a task run once holds as many answers as rows; of one run twice, half
            expected = wilson(round(accuracy * count) / times, count / times)
            assert interval == pytest.approx(list(expected), abs=1e-12)
