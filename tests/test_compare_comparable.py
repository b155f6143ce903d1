"""compare of sides that are not of one task, and of sides that are though their files differ
in what does not change the questions: runs of two lm-eval tasks, of two HELM scenarios (each
numbering its instances from id0) or of two inspect-ai tasks are said to be, and every gate
check fails closed on them; two runs of one inspect-ai task whose chat messages carry other
random ids are not said to ask other questions, and a message changed still is."""

from __future__ import annotations

import copy
import json
import random
import shutil
import zipfile
from pathlib import Path

import pytest
from harness import run

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LM_EVAL = FIXTURES / "lm_eval"
INSPECT = FIXTURES / "inspect_ai" / "toy_arithmetic.json"
APART = "BASE and NEW are runs of different tasks (see the warning)"
B = "200"


def compare(*args):
    result = run(["compare", *map(str, args), "--json", "-q", "--bootstrap", B])
    assert result.exit_code in (0, 1), result.output
    return result, json.loads(result.stdout)


def apart(report):
    """The warnings saying the sides are runs of different tasks."""
    return [w for w in report["warnings"] if w.startswith("BASE and NEW are runs of different")]


def every_check_closed(report):
    checks = report["gate"]["checks"]
    return bool(checks) and all(c["passed"] is False and c["reason"] == APART for c in checks)


# lm-eval: the task is in the samples file's name


def lm_eval_run(folder, task):
    """The fixture samples file of ``task``, under its own name, in ``folder``."""
    source = next(LM_EVAL.glob(f"samples_{task}_*.jsonl"))
    folder.mkdir(exist_ok=True)
    return Path(shutil.copy(source, folder / source.name))


def test_two_lm_eval_tasks_paired_are_refused_naming_the_tasks(tmp_path):
    base = lm_eval_run(tmp_path / "base", "toy_mc_science")
    new = lm_eval_run(tmp_path / "new", "toy_mc_trivia")
    result = run(["compare", base, new, "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: no row of {base} matches a row of {new} by id: they are runs of different "
        "tasks (BASE's lm-eval task 'toy_mc_science'; NEW's lm-eval task 'toy_mc_trivia'), "
        "which ask different questions; compare runs of one task\n"
    )
    # files named otherwise name no task: the refusal is the one it was
    plain = tmp_path / "plain"
    plain.mkdir()
    other = Path(shutil.copy(new, plain / "preds.jsonl"))
    result = run(["compare", base, other, "-q"])
    assert result.exit_code == 2 and "use --unpaired" in result.stderr


GATE = ["--max-increase", "brier=1", "--max-decrease", "accuracy=1", "--gate-on", "estimate"]


def test_two_lm_eval_tasks_unpaired_fail_every_gate_closed(tmp_path):
    base = lm_eval_run(tmp_path / "base", "toy_mc_science")
    new = lm_eval_run(tmp_path / "new", "toy_mc_trivia")
    result, report = compare(base, new, "--unpaired", *GATE, "--min-rows", "1")
    assert result.exit_code == 1
    assert every_check_closed(report) and len(report["gate"]["checks"]) == 3
    (said,) = apart(report)
    assert said == (
        "BASE and NEW are runs of different tasks (BASE's lm-eval task 'toy_mc_science'; "
        "NEW's lm-eval task 'toy_mc_trivia', as their files' names say): each side's figures "
        "are of its own questions; the differences compare the tasks as well as the models, "
        "and a gate on them fails; compare runs of one task"
    )
    assert f"warning: {said}" in result.stderr
    # the figures are still each side's own: 48 and 40 documents
    assert (report["n_base"], report["n_new"]) == (48, 40)
    # two runs of one task pass the same gate, unsaid
    again = lm_eval_run(tmp_path / "again", "toy_mc_science")
    result, report = compare(base, again, "--unpaired", *GATE)
    assert result.exit_code == 0 and not apart(report)


def test_the_python_api_of_two_paths_says_it_too(tmp_path):
    import calibcli

    base = lm_eval_run(tmp_path / "base", "toy_mc_science")
    new = lm_eval_run(tmp_path / "new", "toy_mc_trivia")
    report = calibcli.compare(
        str(base), str(new), unpaired=True, max_increase={"brier": 1.0}, gate_on="estimate"
    )
    assert report.passed is False
    assert apart(json.loads(report.to_json()))


# HELM: the scenario is the run folder's name, the model left out


def helm_run(folder, n=40, seed=0):
    """A HELM run folder holding a per_instance_stats.json of ``n`` instances id0.. with
    max_prob and exact_match, as HELM writes them."""
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


ANATOMY = "mmlu:subject=anatomy,method=multiple_choice_joint"
ASTRONOMY = "mmlu:subject=astronomy,method=multiple_choice_joint"


def test_two_helm_scenarios_paired_fail_every_gate_closed(tmp_path):
    base = helm_run(tmp_path / "base" / f"{ANATOMY},model=openai_gpt2", seed=1)
    new = helm_run(tmp_path / "new" / f"{ASTRONOMY},model=meta_llama-3-8b", seed=2)
    result, report = compare(base, new, *GATE)
    # instance id7 of one scenario is paired with id7 of the other: every id matches
    assert report["matched"] == 40
    assert result.exit_code == 1 and every_check_closed(report)
    (said,) = apart(report)
    assert said.startswith(
        f"BASE and NEW are runs of different tasks (BASE's HELM scenario '{ANATOMY}'; NEW's "
        f"HELM scenario '{ASTRONOMY}', as their run folders' names say, the model left out): "
        "both number their questions alike, so the matched rows pair one task's questions "
        "with the other's"
    )
    # two models' runs of one scenario are what compare compares
    other = helm_run(tmp_path / "other" / f"{ANATOMY},model=meta_llama-3-8b", seed=2)
    result, report = compare(base, other, *GATE)
    assert result.exit_code == 0 and not apart(report)


@pytest.mark.parametrize(
    ("folder", "scenario"),
    [
        ("mmlu:subject=anatomy,model=a", "mmlu:subject=anatomy"),
        ("boolq:model=openai_gpt2", "boolq"),
        (
            "mmlu:subject=anatomy,model=a,model_deployment=b,eval_split=test",
            "mmlu:subject=anatomy,eval_split=test",
        ),
        ("mmlu", None),
        ("run:notanargument", None),
    ],
)
def test_a_helm_scenario_is_its_run_folders_name_without_the_model(tmp_path, folder, scenario):
    from calibcli.io.helm_run import helm_scenario

    assert helm_scenario(str(tmp_path / folder / "per_instance_stats.json")) == scenario


# inspect-ai: the task is the log's eval.task; chat messages carry random ids


def uid(rng):
    """An id like inspect-ai's shortuuid: 22 random letters and digits."""
    letters = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    return "".join(rng.choice(letters) for _ in range(22))


def chat_log(path, *, seed, task="toy_arithmetic", source=False, changed=()):
    """The fixture run's log with each sample's input as inspect-ai logs chat messages, each
    message with a random id drawn from ``seed`` (``source``: each also marked as an input
    message, and given a null metadata, as other inspect-ai versions write it); the samples
    of ids ``changed`` ask another question. A ``.eval`` path is written as an archive."""
    rng = random.Random(seed)
    log = copy.deepcopy(json.loads(INSPECT.read_text(encoding="utf-8")))
    log["eval"]["task"] = task
    for s in log["samples"]:
        question = f"{s['input']} Show no work." if s["id"] in changed else s["input"]
        messages = [
            {"id": uid(rng), "content": "You are a calculator.", "role": "system"},
            {"id": uid(rng), "content": question, "role": "user"},
        ]
        if source:
            messages = [{**m, "source": "input", "metadata": None} for m in messages]
        s["input"] = messages
    if path.suffix == ".json":
        path.write_text(json.dumps(log), encoding="utf-8")
        return path
    header = {k: v for k, v in log.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(header))
        for s in log["samples"]:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


def other_samples(report):
    return [w for w in report["warnings"] if "holds another sample" in w]


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_two_runs_of_one_chat_task_ask_the_same_questions(tmp_path, suffix):
    base = chat_log(tmp_path / f"base{suffix}", seed=1)
    new = chat_log(tmp_path / f"new{suffix}", seed=2, source=True)
    result, report = compare(base, new, "--scorer", "match", *GATE)
    assert result.exit_code == 0, report["gate"]
    assert report["matched"] == 20
    assert not other_samples(report) and not apart(report)
    assert "another sample" not in result.stderr
    # a message changed is another question, whatever the ids
    changed = chat_log(tmp_path / f"changed{suffix}", seed=3, changed=(4, 9))
    result, report = compare(base, changed, "--scorer", "match", *GATE)
    (said,) = other_samples(report)
    assert "id 4 (epoch 1) holds another sample here than in" in said
    assert "(its input or target differs), as do 1 more of the 20 matched ids" in said


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_two_inspect_tasks_paired_fail_every_gate_closed(tmp_path, suffix):
    base = chat_log(tmp_path / f"base{suffix}", seed=1, task="toy_arithmetic")
    new = chat_log(
        tmp_path / f"new{suffix}", seed=1, task="inspect_evals/gsm8k", changed=range(1, 11)
    )
    result, report = compare(base, new, "--scorer", "match", *GATE)
    assert result.exit_code == 1 and every_check_closed(report)
    (said,) = apart(report)
    assert (
        "(BASE's inspect-ai task 'toy_arithmetic'; NEW's inspect-ai task 'inspect_evals/gsm8k', "
        "as their logs' eval.task says)"
    ) in said
