"""lm-eval v0.4.0-v0.4.2 samples files are named ``<model_args>_<task>.jsonl`` with the model
arguments in the order the user gave them: the model key may come after ``dtype`` or
``trust_remote_code``. The task and model come out of such a name, so two models' files of one
task are known for two models (the gate fails closed) and ``--by model`` tells them apart.

Expected figures are counted here from the raw rows (the harness's ``acc``, the softmax of the
logged loglikelihoods), never from calibcli's output."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from harness import run

from calibcli.formats import model_args_from_filename, model_from_filename, task_from_filename

OLD = Path(__file__).resolve().parent / "fixtures" / "lm_eval_old_names"
MODEL_A = OLD / "pretrained__org__model-a,dtype__float16_toy_qa.jsonl"
MODEL_B = OLD / "pretrained=org__model-b_toy_qa.jsonl"


@pytest.mark.parametrize(
    ("name", "task", "model"),
    [
        (
            "dtype__float16,pretrained__org__modelA_toy_mc_science.jsonl",
            "toy_mc_science",
            "org/modelA",
        ),
        (
            "trust_remote_code__True,pretrained__org__modelB_toy_mc_science.jsonl",
            "toy_mc_science",
            "org/modelB",
        ),
        # an adapter on a base model: the two adapters' runs are two models'
        (
            "peft=org__loraA,pretrained=org__base_arc_easy.jsonl",
            "arc_easy",
            "org/base + peft org/loraA",
        ),
        (
            "pretrained__org__base,peft__org__loraB,dtype__float16_arc_easy.jsonl",
            "arc_easy",
            "org/base + peft org/loraB",
        ),
        (
            "pretrained=org__base,delta=org__d1_arc_easy.jsonl",
            "arc_easy",
            "org/base + delta org/d1",
        ),
        (
            "tensor_parallel_size=2,pretrained=org__Llama-3.1-8B_arc_easy.jsonl",
            "arc_easy",
            "org/Llama-3.1-8B",
        ),
        (
            "dtype=bfloat16,trust_remote_code=True,pretrained=org__Llama-3.1-8B_mmlu_high_school_math"
            ".jsonl",
            "mmlu_high_school_math",
            "org/Llama-3.1-8B",
        ),
        (
            "pretrained__org__Llama-3.1-8B,dtype__float16,trust_remote_code__True_mmlu_anatomy.jsonl",
            "mmlu_anatomy",
            "org/Llama-3.1-8B",
        ),
        ("dtype__float16,pretrained__gpt2_hellaswag.json.gz", "hellaswag", "gpt2"),
        ("max_length=2048,model=gpt-4o_arc_challenge.json", "arc_challenge", "gpt-4o"),
        # names with the model key first keep their task and model
        (
            "pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl",
            "winogrande",
            "EleutherAI/pythia-2.8b",
        ),
        (
            "pretrained__EleutherAI__pythia-160m,dtype__float16_arc_easy.jsonl",
            "arc_easy",
            "EleutherAI/pythia-160m",
        ),
        ("model=gpt-4o_arc_challenge.json", "arc_challenge", "gpt-4o"),
        ("_boolq-seq2seq.jsonl", "boolq-seq2seq", None),
        ("samples_arc_easy_2024-06-01T12-30-05.123456.jsonl", "arc_easy", None),
        # no model key among the arguments: a custom name, not taken apart
        ("my_task__v2_preds.jsonl", "my_task__v2_preds", None),
        ("dtype__float16_my_task.jsonl", "dtype__float16_my_task", None),
        ("model_revision__v2_preds.jsonl", "model_revision__v2_preds", None),
    ],
)
def test_the_model_key_at_any_place_among_the_arguments(name, task, model):
    assert task_from_filename(name) == task
    assert model_from_filename(name) == model


def test_the_model_arguments_are_the_name_s_as_written():
    name = "dtype__float16,pretrained__org__modelA_toy_mc_science.jsonl"
    assert model_args_from_filename(name) == "dtype__float16,pretrained__org__modelA"


def rows_of(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def max_softmax(lls: list[float]) -> float:
    top = max(lls)
    return 1 / math.fsum(math.exp(x - top) for x in lls)


def arg_order_folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two models' files of task toy_qa, each named with the model key second."""
    folder = tmp_path / "v2"
    folder.mkdir()
    a = folder / "trust_remote_code__True,pretrained__org__model-a_toy_qa.jsonl"
    b = folder / "dtype__float16,pretrained__org__model-b_toy_qa.jsonl"
    shutil.copy(MODEL_A, a)
    shutil.copy(MODEL_B, b)
    return folder, a, b


def test_two_models_named_after_other_arguments_fail_the_gate_closed(tmp_path):
    folder, a, b = arg_order_folder(tmp_path)
    result = run(["calibrate", folder, "--max-ece", "0.99", "--json"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["gate"]["passed"] is False
    assert (
        "rows of 2 models are pooled: 'dtype__float16,pretrained__org__model-b' "
        f"({b.name}), 'trust_remote_code__True,pretrained__org__model-a' ({a.name}), "
        "as their runs name them" in "\n".join(report["warnings"])
    )
    rows = rows_of(a) + rows_of(b)
    assert report["n"] == len(rows) == 8
    assert report["accuracy"] == sum(r["acc"] for r in rows) / 8


def test_by_model_and_by_task_on_names_with_the_model_key_second(tmp_path):
    folder, a, b = arg_order_folder(tmp_path)
    result = run(["calibrate", folder, "--by", "model", "--json"])
    assert result.exit_code == 0, result.stderr
    groups = json.loads(result.stdout)["groups"]
    assert sorted(groups) == ["org/model-a", "org/model-b"]
    for model, path in (("org/model-a", a), ("org/model-b", b)):
        rows = rows_of(path)
        assert groups[model]["n"] == len(rows) == 4
        assert groups[model]["accuracy"] == sum(r["acc"] for r in rows) / 4
        confidence = [max_softmax([float(r[0]) for r in row["filtered_resps"]]) for row in rows]
        assert groups[model]["mean_confidence"] == pytest.approx(math.fsum(confidence) / 4)
    by_task = run(["calibrate", folder, "--by", "task", "--json"])
    assert by_task.exit_code == 0, by_task.stderr
    assert list(json.loads(by_task.stdout)["groups"]) == ["toy_qa"]
