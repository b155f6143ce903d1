"""compare of two runs that ask the same questions though their runs name their tasks
otherwise: an inspect-ai task run from its package (``inspect_evals/toy_arithmetic``) and from
its file (``toy_arithmetic``), a HELM scenario run 0-shot and 5-shot, and, paired, runs whose
every matched row asks, as its document says, the question its partner asks. None is said to be
of different tasks, and no gate fails closed for it; runs of different questions still are."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from harness import run

FIXTURES = Path(__file__).resolve().parent / "fixtures"
INSPECT = FIXTURES / "inspect_ai" / "toy_arithmetic.json"
LM_EVAL = FIXTURES / "lm_eval"
APART = "BASE and NEW are runs of different tasks (see the warning)"
GATE = ["--max-increase", "brier=1", "--max-decrease", "accuracy=1", "--gate-on", "estimate"]


def compare(*args):
    result = run(["compare", *map(str, args), "--json", "-q", "--bootstrap", "200", *GATE])
    assert result.exit_code in (0, 1), result.output
    return result, json.loads(result.stdout)


def apart(report):
    return [w for w in report["warnings"] if w.startswith("BASE and NEW are runs of different")]


def every_check_closed(report):
    checks = report["gate"]["checks"]
    return bool(checks) and all(c["passed"] is False and c["reason"] == APART for c in checks)


def passes_unsaid(result, report):
    """The gate passed, and no warning says the sides are of different tasks."""
    checks = report["gate"]["checks"]
    return (
        result.exit_code == 0
        and not apart(report)
        and len(checks) == 2
        and all(c["passed"] for c in checks)
    )


# inspect-ai: a task run from its package is named package/name, from its file name


def inspect_log(path, task, *, changed=()):
    """The fixture log with ``eval.task`` ``task``; the samples of ids ``changed`` ask
    another question."""
    log = copy.deepcopy(json.loads(INSPECT.read_text(encoding="utf-8")))
    log["eval"]["task"] = task
    for s in log["samples"]:
        if s["id"] in changed:
            s["input"] = f"{s['input']} Show no work."
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


@pytest.mark.parametrize("paired", [True, False])
def test_an_inspect_task_from_its_package_and_from_its_file_is_one_task(tmp_path, paired):
    base = inspect_log(tmp_path / "base.json", "toy_arithmetic")
    # sample 3 asks another question: the documents do not say the questions are all alike,
    # the names do
    new = inspect_log(tmp_path / "new.json", "inspect_evals/toy_arithmetic", changed=(3,))
    flags = ["--scorer", "match"] + ([] if paired else ["--unpaired"])
    result, report = compare(base, new, *flags)
    assert passes_unsaid(result, report), report["warnings"]
    if paired:  # the changed sample is still named, as any matched row asking another
        assert any("holds another sample" in w for w in report["warnings"])


def test_two_packages_tasks_of_one_name_are_two_tasks(tmp_path):
    base = inspect_log(tmp_path / "base.json", "pkg_a/toy_arithmetic")
    new = inspect_log(tmp_path / "new.json", "pkg_b/toy_arithmetic")
    result, report = compare(base, new, "--scorer", "match", "--unpaired")
    assert result.exit_code == 1 and every_check_closed(report)
    (said,) = apart(report)
    assert (
        "(BASE's inspect-ai task 'pkg_a/toy_arithmetic'; NEW's inspect-ai task "
        "'pkg_b/toy_arithmetic', as their logs' eval.task says)"
    ) in said


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("toy_arithmetic", "inspect_evals/toy_arithmetic", True),
        ("inspect_evals/toy_arithmetic", "toy_arithmetic", True),
        ("gpqa", "inspect_evals/gsm8k", False),
        ("pkg_a/gpqa", "pkg_b/gpqa", False),
        ("a/b/gpqa", "gpqa", True),
    ],
)
def test_inspect_task_names_are_compared_by_their_last_part_against_a_bare_name(one, other, same):
    from calibcli.reports.compare_matching import same_task

    assert same_task("inspect-ai", one, other) is same
    # lm-eval names no package: a name is its task
    assert same_task("lm-eval", one, other) is False


# HELM: a run folder's arguments name the scenario's questions and how they were put


def helm_run(folder, n=30, seed=0):
    """A HELM run folder holding a per_instance_stats.json of ``n`` instances id0.."""
    rng = random.Random(seed)
    entries = []
    for i in range(n):
        p = round(0.3 + 0.65 * rng.random(), 6)
        right = int(rng.random() < p)
        stats = [
            {"name": {"name": "max_prob", "split": "test"}, "count": 1, "sum": p},
            {"name": {"name": "exact_match", "split": "test"}, "count": 1, "sum": right},
        ]
        entries.append({"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats})
    folder.mkdir(parents=True)
    path = folder / "per_instance_stats.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


RUN = "mmlu:subject={},method=multiple_choice_joint,model=openai_gpt2,max_train_instances={}"


@pytest.mark.parametrize("paired", [True, False])
def test_one_helm_scenario_0_shot_and_5_shot_asks_the_same_questions(tmp_path, paired):
    base = helm_run(tmp_path / "a" / RUN.format("anatomy", 0), seed=1)
    new = helm_run(tmp_path / "b" / RUN.format("anatomy", 5), seed=2)
    result, report = compare(base, new, *([] if paired else ["--unpaired"]))
    assert passes_unsaid(result, report), report["warnings"]


def test_two_helm_subjects_prompted_alike_or_not_are_two_scenarios(tmp_path):
    base = helm_run(tmp_path / "a" / RUN.format("anatomy", 0), seed=1)
    new = helm_run(tmp_path / "b" / RUN.format("astronomy", 5), seed=2)
    result, report = compare(base, new)
    assert report["matched"] == 30
    assert result.exit_code == 1 and every_check_closed(report)
    (said,) = apart(report)
    # named as the run folders name them, the model left out
    assert said.startswith(
        "BASE and NEW are runs of different tasks (BASE's HELM scenario 'mmlu:subject=anatomy,"
        "method=multiple_choice_joint,max_train_instances=0'; NEW's HELM scenario "
        "'mmlu:subject=astronomy,method=multiple_choice_joint,max_train_instances=5', "
    )


@pytest.mark.parametrize(
    ("scenario", "questions"),
    [
        ("mmlu:subject=anatomy,method=multiple_choice_joint", "mmlu:subject=anatomy"),
        ("mmlu:subject=anatomy,max_train_instances=5,num_train_trials=3", "mmlu:subject=anatomy"),
        ("boolq:data_augmentation=canonical,instructions=expert", "boolq"),
        ("boolq:prompt=qa,stop=hash,temperature=0.7,max_tokens=5,num_outputs=2", "boolq"),
        ("mmlu:subject=law,eval_split=valid,method=x", "mmlu:subject=law,eval_split=valid"),
        ("wmt_14:language_pair=cs-en,max_train_instances=1", "wmt_14:language_pair=cs-en"),
        ("boolq", "boolq"),
    ],
)
def test_a_helm_scenarios_questions_leave_out_how_they_were_prompted(scenario, questions):
    from calibcli.io.helm_run import helm_questions

    assert helm_questions(scenario) == questions


# paired: the documents of the matched rows say whether they ask the same questions


def test_inspect_runs_named_apart_whose_samples_all_agree_are_not_said_apart(tmp_path):
    # a task variant (another solver: a chain of thought) over the same samples
    base = inspect_log(tmp_path / "base.json", "toy_arithmetic")
    new = inspect_log(tmp_path / "new.json", "toy_arithmetic_cot")
    result, report = compare(base, new, "--scorer", "match")
    assert report["matched"] == 20
    assert passes_unsaid(result, report), report["warnings"]
    # unpaired, each side's figures are of its own rows: the names still decide
    result, report = compare(base, new, "--scorer", "match", "--unpaired")
    assert result.exit_code == 1 and every_check_closed(report)
    # one sample asking another question: the runs are said to be of different tasks
    other = inspect_log(tmp_path / "other.json", "toy_arithmetic_cot", changed=(7,))
    result, report = compare(base, other, "--scorer", "match")
    assert result.exit_code == 1 and every_check_closed(report)
    assert len(apart(report)) == 1


def lm_eval_copy(folder, task, edit=None):
    """The toy_mc_science fixture run, written as a run of ``task``; ``edit`` changes rows."""
    source = next(LM_EVAL.glob("samples_toy_mc_science_*.jsonl"))
    stamp = source.name.removeprefix("samples_toy_mc_science_")
    folder.mkdir()
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    if edit is not None:
        edit(rows)
    path = folder / f"samples_{task}_{stamp}"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_lm_eval_runs_named_apart_whose_documents_all_agree_are_not_said_apart(tmp_path):
    base = lm_eval_copy(tmp_path / "base", "toy_mc_science")
    new = lm_eval_copy(tmp_path / "new", "toy_mc_science_cot")
    result, report = compare(base, new, "--id-field", "doc_id")
    assert report["matched"] == 48
    assert passes_unsaid(result, report), report["warnings"]

    def unhashed(rows):  # a row whose document is not known
        del rows[5]["doc_hash"]

    def rehashed(rows):  # a row asking another question
        rows[5]["doc_hash"] = "0" * 64

    for name, edit in (("unhashed", unhashed), ("rehashed", rehashed)):
        other = lm_eval_copy(tmp_path / name, "toy_mc_science_cot", edit)
        result, report = compare(base, other, "--id-field", "doc_id")
        assert result.exit_code == 1 and every_check_closed(report), name
        (said,) = apart(report)
        assert (
            "(BASE's lm-eval task 'toy_mc_science'; NEW's lm-eval task 'toy_mc_science_cot', "
            "as their files' names say): both number their questions alike"
        ) in said
