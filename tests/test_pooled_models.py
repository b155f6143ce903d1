"""Rows of several models read as one sample are said, and no gate passes on them.

Two models' samples files of one task hold the same doc_ids, and calibcli tells their rows
apart by the model their names give, so nothing is read twice and nothing was said: a folder of
two models' runs pooled them into one ECE, and a gate passed on the mix. The model comes from
what lm-evaluation-harness wrote: the model arguments in a file name before v0.4.3
(``pretrained=org__model-b_toy_qa.jsonl``; ``_<task>.jsonl`` for a run without them), the
``model_name`` of the run's results file beside a v0.4.3+ samples file. The expected messages
are written here from those names, never taken from calibcli's output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import run
from test_epochs import epochs_log

HERE = Path(__file__).resolve().parent
OLD = HERE / "fixtures" / "lm_eval_old_names"
LM_EVAL = HERE / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
REALWORLD = HERE.parents[1] / "shared" / "realworld"
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")

MIXED = "the rows are several models' (see the warning); read one model's files at a time"
ADVICE = (
    "as their runs name them: the figures mix the models, and a gate on them fails; read one "
    "model's files at a time (calibcli compare sets two side by side)"
)
OLD_WARNING = (
    "rows of 2 models are pooled: 'pretrained=org__model-b' "
    "(pretrained=org__model-b_toy_qa.jsonl), 'pretrained__org__model-a,dtype__float16' "
    f"(pretrained__org__model-a,dtype__float16_toy_qa.jsonl), {ADVICE}"
)


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def closed_checks(report):
    return [
        (c["metric"], c.get("group")) for c in report["gate"]["checks"] if c.get("reason") == MIXED
    ]


def pooled(result, warning, closed):
    """The report of a run whose gates failed closed (``closed``) on several models' rows,
    its warnings holding ``warning``."""
    assert result.exit_code == 1, result.stderr
    report = report_of(result)
    assert warning in report["warnings"]
    assert closed_checks(report) == closed
    return report


def test_two_models_files_of_one_task_are_said_and_fail_every_gate():
    gates = ["--max-ece", "0.99", "--max-brier", "0.99", "--min-rows", "1"]
    result = run(["calibrate", OLD, "--json", *gates])
    assert result.exit_code == 1
    report = report_of(result)
    assert report["n"] == 8  # four questions of each model
    assert OLD_WARNING in report["warnings"]
    assert f"warning: {OLD_WARNING}" in result.stderr.splitlines()
    assert closed_checks(report) == [("ece", None), ("brier", None), ("n", None)]
    assert report["ece"] < 0.99 and report["brier"] < 0.99  # the values would have passed
    assert f"gate failed: ece: {MIXED}; cannot support --max-ece 0.99" in result.stderr


def test_without_a_gate_the_figures_are_shown_with_the_warning():
    result = run(["calibrate", OLD, "--json"])
    assert result.exit_code == 0, result.stderr
    assert OLD_WARNING in report_of(result)["warnings"]


def test_one_model_s_file_is_not_said():
    one = OLD / "pretrained=org__model-b_toy_qa.jsonl"
    report = report_of(run(["calibrate", one, "--json", "--max-brier", "0.99"]))
    assert report["gate"]["passed"] is True
    assert not [w for w in report["warnings"] if "models are pooled" in w]


def test_by_model_keeps_them_apart_and_gates_each():
    result = run(
        ["calibrate", OLD, "--by", "model", "--gate-each", "--max-brier", "0.99", "--json"]
    )
    report = report_of(result)
    assert sorted(report["groups"]) == ["org/model-a", "org/model-b"]
    assert not [w for w in report["warnings"] if "models are pooled" in w]
    assert closed_checks(report) == []
    assert result.exit_code == 0, result.stderr


def two_runs(tmp_path, first_model, second_model, tasks=("toy_mc_science", "toy_mc_trivia")):
    """Two lm-eval v0.4.3+ run folders, each with one task of the committed real run (``tasks``)
    and the run's results file, its model_name set as given."""
    results = json.loads((LM_EVAL / f"results_{STAMP}.json").read_text())
    files = []
    for folder, task, model in zip("ab", tasks, (first_model, second_model), strict=True):
        (tmp_path / folder).mkdir()
        sample = tmp_path / folder / f"samples_{task}_{STAMP}.jsonl"
        shutil.copy(LM_EVAL / sample.name, sample)
        (tmp_path / folder / f"results_{STAMP}.json").write_text(
            json.dumps({**results, "model_name": model})
        )
        files.append(sample)
    return files


ALPHA_BETA = (
    f"rows of 2 models are pooled: 'org/alpha' (samples_toy_mc_science_{STAMP}.jsonl), "
    f"'org/beta' (samples_toy_mc_trivia_{STAMP}.jsonl), {ADVICE}"
)
"""The warning on the rows of :func:`two_runs` of models org/alpha and org/beta."""


def test_the_results_files_model_names_tell_two_models_apart(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/beta")
    pooled(run(["calibrate", *files, "--json", "--max-ece", "0.99"]), ALPHA_BETA, [("ece", None)])


def test_one_model_s_two_runs_are_not_said(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/alpha")
    report = report_of(run(["calibrate", *files, "--json", "--max-ece", "0.99"]))
    assert report["gate"]["passed"] is True
    assert not [w for w in report["warnings"] if "models are pooled" in w]


def test_shards_summarized_apart_and_read_away_from_their_runs_are_said(tmp_path):
    # each machine summarizes its own model's run; read together where the runs' folders are
    # not, the summaries still know each run's model (they record it)
    parts = []
    for f in two_runs(tmp_path, "org/alpha", "org/beta"):
        part = tmp_path / f"{f.parent.name}.cbs"
        made = run(["summarize", f, "-o", part])
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    for folder in "ab":
        shutil.rmtree(tmp_path / folder)
    pooled(run(["calibrate", *parts, "--json", "--max-ece", "0.99"]), ALPHA_BETA, [("ece", None)])


def test_a_run_without_a_results_file_names_no_model(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/beta")
    (tmp_path / "b" / f"results_{STAMP}.json").unlink()
    report = report_of(run(["calibrate", *files, "--json"]))
    assert not [w for w in report["warnings"] if "models are pooled" in w]


def test_perplexity_gates_fail_closed_on_two_models(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/beta", tasks=("toy_wikitext",) * 2)
    # the folders name no model, so the two files' ids would be one task's: read them anyway
    result = run(["perplexity", *files, "--all-runs", "--min-rows", "1", "--json"])
    assert result.exit_code == 1
    report = report_of(result)
    assert closed_checks(report) == [("sequences", None)]
    assert [w for w in report["warnings"] if w.startswith("rows of 2 models are pooled")]


def test_compare_fails_closed_when_a_side_mixes_models(tmp_path):
    base = tmp_path / "base"
    new = tmp_path / "new"
    base.mkdir()
    new.mkdir()
    shutil.copy(OLD / "pretrained=org__model-b_toy_qa.jsonl", base)
    shutil.copy(OLD / "pretrained=org__model-b_toy_qa.jsonl", new)
    # another model's rows of another task in NEW's folder
    shutil.copy(
        OLD / "pretrained__org__model-a,dtype__float16_toy_qa.jsonl",
        new / "pretrained__org__model-a,dtype__float16_toy_qb.jsonl",
    )
    # the toy rows populate few bins, whose own reason would close the check first
    args = ["compare", base, new, "--max-increase", "ece=0.9", "--gate-on", "estimate"]
    args += ["--min-populated-bins", "1"]
    result = run([*args, "--allow-unmatched", "--json"])
    assert result.exit_code == 1
    report = report_of(result)
    assert closed_checks(report) == [("ece_increase", None)]
    assert [w for w in report["warnings"] if w.startswith("rows of 2 models are pooled")]
    # each side one model's: the gate reads the comparison
    alone = run(["compare", base, base / "pretrained=org__model-b_toy_qa.jsonl", *args[3:]])
    assert "models are pooled" not in alone.stderr


def test_threshold_chosen_on_two_models_rows_fails_closed(tmp_path):
    one = OLD / "pretrained=org__model-b_toy_qa.jsonl"
    args = ["threshold", one, "--fit", OLD, "--target-accuracy", "0.1", "--min-coverage", "0.01"]
    result = run([*args, "--json"])
    assert result.exit_code == 1
    assert closed_checks(report_of(result)) == [("coverage", None)]


def test_a_summary_file_keeps_telling_it(tmp_path):
    part = tmp_path / "two.cbs"
    made = run(["summarize", OLD, "-o", part])
    assert made.exit_code == 0, made.stderr
    assert f"warning: {OLD_WARNING}" in made.stderr.splitlines()
    result = run(["calibrate", part, "--json", "--max-ece", "0.99"])
    assert result.exit_code == 1
    report = report_of(result)
    assert report["warnings"].count(OLD_WARNING) == 1
    assert closed_checks(report) == [("ece", None)]


@needs_realworld
def test_realworld_development_folder_mixes_two_runs():
    # the 2023 development output: pythia-2.8b's files beside a run without model arguments
    folder = REALWORLD / "lmeval-2023-bigrefactor-output"
    result = run(["calibrate", folder, "--json", "--max-ece", "0.99"])
    assert result.exit_code == 1
    report = report_of(result)
    assert (
        "rows of 2 models are pooled: a run without model arguments (_mathqa.jsonl and 3 more), "
        "'pretrained=EleutherAI__pythia-2.8b' "
        f"(pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl), {ADVICE}"
    ) in report["warnings"]
    assert closed_checks(report) == [("ece", None)]


@needs_realworld
def test_realworld_re_runs_of_one_model_are_not_said():
    folder = REALWORLD / "lmeval-pr3936-qwen3-8b-negotiationtom"
    report = report_of(run(["calibrate", folder, "--all-runs", "--json"]))
    assert not [w for w in report["warnings"] if "models are pooled" in w]


INSPECT = HERE / "fixtures" / "inspect_ai"


def inspect_log_of(tmp_path, name, model):
    """The committed real inspect-ai .json log, its run's model set as given."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text())
    log["eval"]["model"] = model
    log["eval"]["eval_id"] = name  # a run of its own, not the .eval log's conversion
    path = tmp_path / name
    path.write_text(json.dumps(log))
    return path


def test_inspect_logs_of_two_models_are_said(tmp_path):
    # the .eval log's own header names its model: the .json log beside it says the same
    recorded = json.loads((INSPECT / "toy_arithmetic.json").read_text())["eval"]["model"]
    other = inspect_log_of(tmp_path, "other.json", "mockllm/other")
    args = ["calibrate", INSPECT / "toy_arithmetic.eval", other, "--scorer", "match"]
    # the two logs hold the same sample ids: pooling them is asked for with --all-runs
    warning = (
        f"rows of 2 models are pooled: {recorded!r} (toy_arithmetic.eval), 'mockllm/other' "
        f"(other.json), {ADVICE}"
    )
    result = run([*args, "--all-runs", "--max-brier", "0.99", "--json"])
    pooled(result, warning, [("brier", None)])


def test_inspect_logs_of_one_model_are_not_said(tmp_path):
    same = inspect_log_of(tmp_path, "same.json", "mockllm/model")
    args = ["calibrate", INSPECT / "toy_arithmetic.eval", same, "--scorer", "match"]
    report = report_of(run([*args, "--all-runs", "--max-brier", "0.99", "--json"]))
    assert not [w for w in report["warnings"] if "models are pooled" in w]
    assert report["gate"]["passed"] is True


def test_by_model_groups_inspect_logs_by_their_runs_model(tmp_path):
    other = inspect_log_of(tmp_path, "other.json", "mockllm/other")
    args = ["calibrate", INSPECT / "toy_arithmetic.eval", other, "--scorer", "match", "--all-runs"]
    result = run([*args, "--by", "model", "--gate-each", "--max-brier", "0.99", "--json"])
    report = report_of(result)
    assert sorted(report["groups"]) == ["mockllm/model", "mockllm/other"]
    assert [g["n"] for g in report["groups"].values()] == [20, 20]  # each log's 20 samples
    assert not [w for w in report["warnings"] if "models are pooled" in w]
    assert result.exit_code == 0, result.stderr


def test_by_model_reads_the_results_files_model_name(tmp_path):
    files = two_runs(tmp_path, "org/alpha", "org/beta")
    report = report_of(run(["calibrate", *files, "--by", "model", "--json"]))
    assert {name: g["n"] for name, g in report["groups"].items()} == {
        "org/alpha": 48,  # toy_mc_science's rows
        "org/beta": 40,  # toy_mc_trivia's
    }
    # a run that names its model nowhere cannot be grouped by it
    (tmp_path / "b" / f"results_{STAMP}.json").unlink()
    result = run(["calibrate", *files, "--by", "model"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {files[1]}:1: the file's run names no model (lm-eval: model_args in a name "
        "before v0.4.3, an org__name folder or the model_name of the results file beside it; "
        "inspect-ai: the log's eval.model); use --by FIELD"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["reliability", OLD, "--json"],
        ["threshold", OLD, "--target-accuracy", "0.5", "--json"],
        ["fit", OLD, "--method", "platt", "--json"],
    ],
)
def test_commands_without_a_gate_say_it_and_exit_0(args):
    result = run(args)
    assert result.exit_code == 0, result.stderr
    assert f"warning: {OLD_WARNING}" in result.stderr.splitlines()


def test_a_json_log_s_eval_is_read_from_its_head_or_else_whole(tmp_path, monkeypatch):
    # inspect-ai writes eval before the samples: the head of the file holds it, and the
    # samples are not read again; a log whose eval ends past the head is read whole
    from calibcli.io import inspect_log

    log = str(epochs_log(tmp_path))

    def whole(data):
        raise AssertionError("read whole")

    monkeypatch.setattr(inspect_log, "_whole_eval", whole)
    inspect_log.forget_runs()
    assert (inspect_log.log_model(log), inspect_log.log_epochs(log)) == ("mockllm/model", 2)
    monkeypatch.undo()
    monkeypatch.setattr(inspect_log, "HEAD_BYTES", 64)
    inspect_log.forget_runs()
    assert (inspect_log.log_model(log), inspect_log.log_epochs(log)) == ("mockllm/model", 2)
    inspect_log.forget_runs()


def test_the_api_closes_the_gates_on_two_models_rows(tmp_path):
    import calibcli

    rows = calibcli.read_predictions(two_runs(tmp_path, "org/alpha", "org/beta"))
    report = json.loads(calibcli.calibrate(rows, max_ece=0.99).to_json())
    assert [c.get("reason") for c in report["gate"]["checks"]] == [MIXED]
    chosen = json.loads(calibcli.threshold(rows, target_accuracy=0.2, min_coverage=0.1).to_json())
    assert [c.get("reason") for c in chosen["gate"]["checks"]] == [MIXED]
