"""Rows of several models read together and split by a --by field other than model: the pooled
figures mix the models and every gate on them fails closed, a group that holds rows of two
models fails closed too, and a group whose rows all come from one model's files is that model's
sample, gated on its own figures (passing or failing on the numbers).

An lm-eval file's rows all fall in the --by task group its name gives, so a task group's files,
and the models their runs name, are known; a group under any other field may hold any file's
rows, and every group keeps failing closed. The expected groups and models are written here
from the files' names and their runs' model names; a group's figures are checked against those
of its model's file read alone."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import require_engine
from harness import run
from test_pooled_models import OLD, REALWORLD, two_runs

MIXED = "the rows are several models' (see the warning); read one model's files at a time"
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def checks_of(report):
    """Each gate check as (group, passed, reason): None for the pooled figures' group, None
    for the reason of a check decided on its number."""
    return [(c.get("group"), c["passed"], c.get("reason")) for c in report["gate"]["checks"]]


def alone(path, figure="ece"):
    """A figure of one file's rows read alone (one model's sample)."""
    return report_of(run(["calibrate", path, "--json"]))[figure]


def test_each_task_group_of_one_model_s_file_is_gated_on_its_figures(tmp_path):
    science, trivia = two_runs(tmp_path, "org/alpha", "org/beta")
    args = ["calibrate", science, trivia, "--by", "task", "--gate-each", "--max-ece", "0.99"]
    result = run([*args, "--json"])
    report = report_of(result)
    # the pooled figures mix org/alpha's and org/beta's rows: they still fail closed
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_mc_science", True, None),
        ("toy_mc_trivia", True, None),
    ]
    assert result.exit_code == 1
    # each group's figures are its model's file's alone
    assert report["groups"]["toy_mc_science"]["ece"] == pytest.approx(alone(science), abs=1e-12)
    assert report["groups"]["toy_mc_trivia"]["ece"] == pytest.approx(alone(trivia), abs=1e-12)
    assert "gate failed: ece in group" not in result.stderr


def test_a_group_of_one_model_fails_on_its_number(tmp_path):
    science, trivia = two_runs(tmp_path, "org/alpha", "org/beta")
    low, high = sorted([alone(science), alone(trivia)])
    limit = (low + high) / 2  # the lower group passes it, the higher one does not
    args = ["calibrate", science, trivia, "--by", "task", "--gate-each", "--json"]
    report = report_of(run([*args, "--max-ece", f"{limit:.6f}"]))
    worse = "toy_mc_science" if alone(science) == high else "toy_mc_trivia"
    better = "toy_mc_trivia" if worse == "toy_mc_science" else "toy_mc_science"
    assert sorted(checks_of(report), key=lambda c: c[0] or "") == [
        (None, False, MIXED),
        (better, True, None),
        (worse, False, None),
    ]
    assert report["gate"]["failed_groups"] == [worse]


def test_without_gate_each_only_the_pooled_figures_are_gated_and_fail_closed(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/beta")
    report = report_of(run(["calibrate", *files, "--by", "task", "--max-ece", "0.99", "--json"]))
    assert checks_of(report) == [(None, False, MIXED)]


def one_model_and_two(tmp_path):
    """The two committed pre-v0.4.3 files of task toy_qa (models org__model-a and
    org__model-b, as their names' model arguments say) and a third file of org__model-b, task
    toy_other: the first file's rows with every loglikelihood doubled (other confidences)."""
    for f in OLD.glob("*.jsonl"):
        shutil.copy(f, tmp_path / f.name)
    b = OLD / "pretrained=org__model-b_toy_qa.jsonl"
    lines = []
    for line in b.read_text().splitlines():
        row = json.loads(line)
        row["resps"] = [[[2 * ll, hit]] for [[ll, hit]] in row["resps"]]
        row["filtered_resps"] = [[2 * ll, hit] for ll, hit in row["filtered_resps"]]
        lines.append(json.dumps(row))
    other = tmp_path / "pretrained=org__model-b_toy_other.jsonl"
    other.write_text("\n".join(lines) + "\n")
    return other


def test_a_group_holding_two_models_rows_keeps_failing_closed(tmp_path):
    other = one_model_and_two(tmp_path)
    args = ["calibrate", tmp_path, "--by", "task", "--gate-each", "--max-brier", "0.99", "--json"]
    report = report_of(run(args))
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_other", True, None),  # org__model-b's file alone
        ("toy_qa", False, MIXED),  # org__model-a's and org__model-b's files
    ]
    assert report["groups"]["toy_other"]["brier"] == pytest.approx(alone(other, "brier"), abs=1e-12)


def test_a_summary_file_gives_the_same_verdicts(tmp_path):
    one_model_and_two(tmp_path)
    summary = tmp_path / "x.cbs"
    made = run(["summarize", tmp_path, "--by", "task", "-o", summary])
    assert made.exit_code == 0, made.stderr
    gate = ["--gate-each", "--max-brier", "0.99", "--json"]
    direct = report_of(run(["calibrate", *sorted(tmp_path.glob("*.jsonl")), "--by", "task", *gate]))
    from_summary = report_of(run(["calibrate", summary, *gate]))
    assert checks_of(from_summary) == checks_of(direct)
    assert ("toy_other", True, None) in checks_of(from_summary)
    assert ("toy_qa", False, MIXED) in checks_of(from_summary)


def test_a_field_of_the_rows_leaves_every_group_failing_closed(tmp_path):
    # a group of a row's field may hold rows of any file, so no group is known to be one
    # model's: not even doc_ids 40 to 47, which only the 48 science rows hold (trivia's 40
    # rows have doc_ids 0 to 39)
    files = two_runs(tmp_path, "org/alpha", "org/beta")
    args = ["calibrate", *files, "--by", "doc_id", "--gate-each", "--max-ece", "0.99"]
    args += ["--min-populated-bins", "1"]  # one row or two to a group: its bins can pass
    report = report_of(run([*args, "--json"]))
    assert len(report["groups"]) == 48
    assert {reason for _, _, reason in checks_of(report)} == {MIXED}


def test_one_model_s_task_groups_are_not_said_to_mix(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/alpha")
    args = ["calibrate", *files, "--by", "task", "--gate-each", "--max-ece", "0.99", "--json"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    assert all(reason is None for _, _, reason in checks_of(report_of(result)))


@needs_realworld
def test_realworld_development_folder_gates_each_model_s_tasks():
    # the 2023 development output: a run without model arguments (_mathqa.jsonl, _pubmed_qa,
    # _qnli, _winogrande) beside pythia-2.8b's winogrande file; the other files hold no rows
    folder = REALWORLD / "lmeval-2023-bigrefactor-output"
    args = ["calibrate", folder, "--by", "task", "--gate-each", "--max-ece", "0.99", "--json"]
    report = report_of(run(args))
    assert checks_of(report) == [
        (None, False, MIXED),
        ("mathqa", True, None),
        ("pubmed_qa", True, None),
        ("qnli", True, None),
        ("winogrande", False, MIXED),  # both runs' winogrande files
    ]


def test_dask_gives_the_command_line_s_verdicts(tmp_path):
    dask = require_engine("dask", "dask")
    from calibcli.dask import summarize_files

    one_model_and_two(tmp_path)
    files = [str(f) for f in sorted(tmp_path.glob("*.jsonl"))]
    (summary,) = dask.compute(summarize_files(files, by="task"), scheduler="synchronous")
    report = summary.report(limits={"brier": 0.99}, gate_each=True)
    gate = ["--by", "task", "--gate-each", "--max-brier", "0.99", "--json"]
    assert checks_of(report) == checks_of(report_of(run(["calibrate", *files, *gate])))


def test_the_api_s_rows_do_not_know_their_groups_files_and_fail_closed(tmp_path):
    # Predictions keep each row's group, not the file it came from: no group is known to be
    # one model's, so every gate on them fails closed
    import calibcli

    rows = calibcli.read_predictions(two_runs(tmp_path, "org/alpha", "org/beta"), by="task")
    report = json.loads(calibcli.calibrate(rows, max_ece=0.99, gate_each=True).to_json())
    assert {reason for _, _, reason in checks_of(report)} == {MIXED}


def test_perplexity_task_groups_of_one_model_are_gated_on_their_figures(tmp_path):
    a, b = two_runs(tmp_path, "org/alpha", "org/beta", tasks=("toy_wikitext",) * 2)
    # the second model's run of another task name (the same documents: read with --all-runs)
    renamed = b.with_name(b.name.replace("toy_wikitext", "toy_wikitext_b"))
    b.rename(renamed)
    gate = ["--by", "task", "--gate-each", "--all-runs", "--min-rows", "1", "--json"]
    report = report_of(run(["perplexity", a, renamed, *gate]))
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_wikitext", True, None),
        ("toy_wikitext_b", True, None),
    ]


def test_a_threshold_chosen_on_several_models_rows_fails_closed_in_every_group(tmp_path):
    # each task group of the evaluated rows is one model's, but the threshold they are gated
    # with was chosen on both models' rows pooled
    files = two_runs(tmp_path, "org/alpha", "org/beta")
    fit = tmp_path / "fit.cbs"
    assert run(["summarize", *files, "--by", "task", "-o", fit]).exit_code == 0
    args = ["threshold", *files, "--by", "task", "--gate-each", "--target-accuracy", "0.2"]
    report = report_of(run([*args, "--min-coverage", "0.01", "--fit", fit, "--json"]))
    assert [(c.get("group"), c["passed"]) for c in report["gate"]["checks"]] == [
        (None, False),
        ("toy_mc_science", False),
        ("toy_mc_trivia", False),
    ]
    assert report["gate"]["checks"][1]["reason"] == MIXED


def test_rows_naming_no_model_close_every_group_they_may_fall_in(tmp_path):
    """Native rows name no model calibcli reads for the gate, and under --by task their group
    is a field of theirs: they may be any model's, in any group, so no group is one model's
    (here they fall in org/alpha's task and would pass its gate by their numbers)."""
    science, trivia = two_runs(tmp_path, "org/alpha", "org/beta")
    native = tmp_path / "native.jsonl"
    rows = [
        {"task": "toy_mc_science", "confidence": 0.7, "correct": i % 10 < 7} for i in range(300)
    ]
    native.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["calibrate", science, trivia, native, "--by", "task", "--gate-each"]
    report = report_of(run([*args, "--max-ece", "0.99", "--json"]))
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_mc_science", False, MIXED),
        ("toy_mc_trivia", False, MIXED),
    ]


def test_an_lm_eval_file_naming_no_model_closes_its_task_group(tmp_path):
    """A run of another model beside org/alpha's, in a folder that names no model (no results
    file, no org__name folder), falls in org/alpha's task group: the group is not known to be
    one model's, while the other task's group, of org/beta's file alone, is."""
    science, trivia = two_runs(tmp_path, "org/alpha", "org/beta")
    (tmp_path / "c").mkdir()
    lines = []
    for line in science.read_text().splitlines():
        row = json.loads(line)
        row["doc_id"] += 1000  # other documents, other answers: not org/alpha's rows again
        row["filtered_resps"] = [[2 * float(ll), hit] for ll, hit in row["filtered_resps"]]
        lines.append(json.dumps(row))
    unnamed = tmp_path / "c" / science.name
    unnamed.write_text("\n".join(lines) + "\n")
    args = ["calibrate", science, trivia, unnamed, "--by", "task", "--gate-each"]
    report = report_of(run([*args, "--max-ece", "0.99", "--json"]))
    assert checks_of(report) == [
        (None, False, MIXED),
        ("toy_mc_science", False, MIXED),
        ("toy_mc_trivia", True, None),
    ]
