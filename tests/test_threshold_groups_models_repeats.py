"""Per --by task group facts that were taken from every file read instead of the group's own.

A group of one model's rows (its lm-eval files name one model) whose --fit rows are that same
model's is gated on its own figures, though the evaluated rows hold another model's in another
group; a group whose --fit rows are another model's fails closed with the words that say so.
Re-runs of one task pooled with --all-runs repeat that task's questions, not another task's:
a group of a task run once counts each of its rows as a question under --min-rows.

The expected counts are written here from the fixture files' line counts (48 science rows,
40 trivia rows, 20 wikitext sequences per run) and the number of runs of each task."""

from __future__ import annotations

import json
import shutil

from harness import run
from test_pooled_models import LM_EVAL, STAMP, two_runs

MIXED = "the rows are several models' (see the warning); read one model's files at a time"
OTHER_MODEL = (
    "the threshold was chosen on another model's rows (see the warning): a threshold on one "
    "model's confidences says nothing of another's"
)
EMPTY_FIT = "the --fit input holds no rows of this group"
LATER = "2026-11-30T10-00-00.000000"  # a re-run's time stamp


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def checks_of(report):
    return [(c.get("group"), c["passed"], c.get("reason")) for c in report["gate"]["checks"]]


def threshold(files, fit, minimum):
    args = ["threshold", *files, "--by", "task", "--gate-each", "--target-accuracy", "0.2"]
    args += ["--min-coverage", str(minimum), "--json"]
    for path in fit:
        args += ["--fit", path]
    return report_of(run(args))


def test_a_group_chosen_on_its_own_model_s_rows_is_gated_on_its_figures(tmp_path):
    (tmp_path / "evaluated").mkdir(), (tmp_path / "fit").mkdir()
    evaluated = two_runs(tmp_path / "evaluated", "org/alpha", "org/beta")
    fit, _ = two_runs(tmp_path / "fit", "org/alpha", "org/beta")  # org/alpha's science only
    report = threshold(evaluated, [fit], 0.01)
    # science: org/alpha's rows, its threshold chosen on org/alpha's rows: nothing of another
    # model's, so its gate is its coverage's; the pooled rows mix the models
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_mc_science", True, None),
        ("toy_mc_trivia", False, EMPTY_FIT),
    ]
    # and it fails on its number where the coverage is not reached (no row is accepted
    # below the lowest science confidence, so a coverage of 1 is never reached here)
    report = threshold(evaluated, [fit], 1)
    assert checks_of(report)[1] == ("toy_mc_science", False, None)


def test_a_group_chosen_on_another_model_s_rows_says_so(tmp_path):
    (tmp_path / "evaluated").mkdir(), (tmp_path / "fit").mkdir()
    evaluated = two_runs(tmp_path / "evaluated", "org/beta", "org/alpha")
    fit, _ = two_runs(tmp_path / "fit", "org/alpha", "org/alpha")  # org/alpha's science only
    report = threshold(evaluated, [fit], 0.01)
    # science: org/beta's rows, its threshold chosen on org/alpha's: another model's
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_mc_science", False, OTHER_MODEL),
        ("toy_mc_trivia", False, EMPTY_FIT),
    ]


def reruns(folder, task):
    """Two runs of ``task`` (the committed run, and the same file under a later time stamp)."""
    first = folder / f"samples_{task}_{STAMP}.jsonl"
    shutil.copy(LM_EVAL / first.name, first)
    shutil.copy(first, folder / f"samples_{task}_{LATER}.jsonl")


def test_min_rows_counts_a_group_run_once_by_its_rows(tmp_path):
    reruns(tmp_path, "toy_mc_science")  # 2 runs of 48 rows: as few as 96 / 2 = 48 questions
    shutil.copy(LM_EVAL / f"samples_toy_mc_trivia_{STAMP}.jsonl", tmp_path)  # 40, run once
    summary = tmp_path / "all.cbs"  # a summary file keeps no question keys
    made = run(["summarize", tmp_path, "--all-runs", "--by", "task", "-o", summary])
    assert made.exit_code == 0, made.stderr
    report = report_of(run(["calibrate", summary, "--gate-each", "--min-rows", "25", "--json"]))
    trivia = report["gate"]["checks"][2]
    assert (trivia["group"], trivia["value"], trivia["passed"]) == ("toy_mc_trivia", 40, True)
    assert "questions" not in trivia
    result = run(["calibrate", summary, "--gate-each", "--min-rows", "49", "--json"])
    science = report_of(result)["gate"]["checks"][1]
    assert (science["group"], science["questions"], science["passed"]) == (
        "toy_mc_science",
        48,
        False,
    )
    assert science["reason"] == (
        "the 96 rows repeat their questions (see the warning) and hold as few as 48, fewer "
        "than 49; each question counts once"
    )
    # the trivia group's 40 rows fall short of 49 by their own count, not a halved one
    trivia = report_of(result)["gate"]["checks"][2]
    assert (trivia["value"], trivia["passed"], trivia.get("reason")) == (40, False, None)


def test_perplexity_min_rows_counts_a_group_run_once_by_its_sequences(tmp_path):
    reruns(tmp_path, "toy_wikitext")  # 2 runs of 20 sequences: as few as 20 questions
    once = tmp_path / f"samples_toy_wikitext_b_{STAMP}.jsonl"  # another task, run once
    shutil.copy(LM_EVAL / f"samples_toy_wikitext_{STAMP}.jsonl", once)
    summary = tmp_path / "all.cbs"
    args = ["summarize", "--kind", "perplexity", tmp_path, "--all-runs", "--by", "task"]
    made = run([*args, "-o", summary])
    assert made.exit_code == 0, made.stderr
    gate = ["--gate-each", "--min-rows", "15", "--json"]
    report = report_of(run(["perplexity", summary, *gate]))
    assert [(c.get("group"), c["value"], c["passed"]) for c in report["gate"]["checks"]] == [
        (None, 60, True),
        ("toy_wikitext", 40, True),  # 20 questions
        ("toy_wikitext_b", 20, True),  # 20 sequences, each its own question
    ]
    report = report_of(run(["perplexity", summary, "--gate-each", "--min-rows", "21", "--json"]))
    rerun = report["gate"]["checks"][1]
    assert (rerun["group"], rerun["questions"], rerun["passed"]) == ("toy_wikitext", 20, False)


def test_a_group_chosen_on_two_models_rows_of_its_task_fails_closed(tmp_path):
    # the --fit rows of science are org/alpha's and org/beta's (two runs of the task): the
    # threshold of org/alpha's science group was chosen partly on another model's rows
    for folder in ("evaluated", "fit_a", "fit_b"):
        (tmp_path / folder).mkdir()
    evaluated = two_runs(tmp_path / "evaluated", "org/alpha", "org/beta")
    fit_a, _ = two_runs(tmp_path / "fit_a", "org/alpha", "org/alpha")
    fit_b, _ = two_runs(tmp_path / "fit_b", "org/beta", "org/beta")
    later = fit_b.with_name(f"samples_toy_mc_science_{LATER}.jsonl")
    fit_b.rename(later)  # a re-run of the task by the other model
    args = ["threshold", *evaluated, "--by", "task", "--gate-each", "--target-accuracy", "0.2"]
    args += ["--min-coverage", "0.01", "--json", "--all-runs", "--fit", fit_a, "--fit", later]
    report = report_of(run(args))
    science = [c for c in checks_of(report) if c[0] == "toy_mc_science"]
    assert science == [("toy_mc_science", False, OTHER_MODEL)], checks_of(report)
