"""lm-eval rows across harness versions and task kinds (calibcli.formats.lm_eval_row_kind,
lm_eval_choice_row), and detection of every format.

The realworld tests read real harness output kept beside the checkout in ../shared/realworld
(skipped when that folder is absent) and compare the accuracy calibcli derives with the
harness's results files; the confidence is recomputed as a plain-Python softmax.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from calibcli.formats import (
    GENERATIVE_WARNING,
    ROW_FORMATS,
    detect_format,
    detect_row_format,
    lm_eval_choice_row,
    lm_eval_output_type,
    lm_eval_row_kind,
)
from calibcli.io import documents

REALWORLD = Path(__file__).parents[2] / "shared" / "realworld"
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")


def rows_of(path: Path) -> list[dict]:
    kind = documents.document_kind(path)
    if kind is not None:
        return [row for _, row in documents.iter_document(path)]
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def softmax_max(lls: list[float]) -> float:
    exps = [math.exp(x) for x in lls]
    return max(exps) / sum(exps)


# --------------------------------------------------------------------------- row kinds

MODERN_GEN = {
    "doc_id": 0,
    "arguments": {"gen_args_0": {"arg_0": "Q: 2+2?", "arg_1": {"until": ["\n"]}}},
    "resps": [["4"]],
    "filtered_resps": ["4"],
    "exact_match": 1.0,
}
OLD_GEN = {
    "doc_id": 0,
    "arguments": ["Q: 2+2? A:", {"until": ["\n"], "do_sample": False}],
    "resps": [[" 4"]],
    "filtered_resps": [" 4"],
}
OLD_MC = {
    "doc_id": 0,
    "target": " 38",
    "arguments": ["Question: ...\nAnswer:", " 38"],
    "resps": [[[-5.5, False]], [[-4.0, False]], [[-25.0, False]]],
    "filtered_resps": [[-5.5, False], [-4.0, False], [-25.0, False]],
    "acc": 0.0,
    "acc_norm": 0.0,
}
LAMBADA = {"doc_id": 0, "filtered_resps": [["-2.5", "True"]], "acc": 1.0, "perplexity": -2.5}


@pytest.mark.parametrize(
    ("row", "kind"),
    [
        (MODERN_GEN, "generate_until"),
        (OLD_GEN, "generate_until"),
        ({**MODERN_GEN, "arguments": None, "filtered_resps": [["a", "b"]]}, "generate_until"),
        (OLD_MC, "multiple_choice"),
        (LAMBADA, "loglikelihood"),
        (
            {"doc_id": 0, "filtered_resps": [], "word_perplexity": [-1.0, 2]},
            "loglikelihood_rolling",
        ),
    ],
)
def test_row_kinds(row, kind):
    assert lm_eval_row_kind(row) == kind


def test_rows_calibcli_does_not_read_name_their_kind():
    with pytest.raises(ValueError, match=re.escape(f"generate_until row ({GENERATIVE_WARNING})")):
        lm_eval_output_type(MODERN_GEN)
    with pytest.raises(ValueError, match=r"generate_until row .* not a multiple-choice row"):
        lm_eval_choice_row(OLD_GEN)
    with pytest.raises(ValueError, match="a loglikelihood task such as lambada"):
        lm_eval_choice_row(LAMBADA)
    with pytest.raises(ValueError, match="cannot tell the kind of this lm-eval row"):
        lm_eval_row_kind({"doc_id": 0, "filtered_resps": [{"x": 1}]})


def test_pre_v040_rows_read_and_refuse_length_normalisation():
    confidence, correct = lm_eval_choice_row(OLD_MC)
    assert confidence == pytest.approx(softmax_max([-5.5, -4.0, -25.0]), rel=1e-14)
    assert correct is False
    for norm in ("chars", "bytes"):
        with pytest.raises(ValueError, match=r"one \[context, continuation\] pair, not one per"):
            lm_eval_choice_row(OLD_MC, mc_norm=norm)


def test_v040_array_document(tmp_path):
    # v0.4.0-v0.4.2 wrote json.dumps(samples, indent=2): numbers as numbers, one
    # [context, continuation] list per choice.
    rows = [
        {
            "doc_id": i,
            "doc": {"q": "?"},
            "target": 0,
            "arguments": [["Q:", " yes"], ["Q:", " no way"]],
            "resps": [[[lls[0], True]], [[lls[1], False]]],
            "filtered_resps": [[lls[0], True], [lls[1], False]],
            "acc": acc,
            "acc_norm": acc_norm,
        }
        for i, (lls, acc, acc_norm) in enumerate(
            [((-1.0, -3.0), 1.0, 1.0), ((-2.0, -2.5), 1.0, 0.0)]
        )
    ]
    path = tmp_path / "samples_boolq_2024-01-01T00-00-00.000000.json"
    path.write_text(json.dumps(rows, indent=2))
    read = rows_of(path)
    assert detect_format(read[0]) == "lm-eval"
    got = [lm_eval_choice_row(r, mc_norm="chars") for r in read]
    # " yes" -> 3 characters, " no way" -> 6 after the target delimiter " " is dropped.
    assert got[0][0] == pytest.approx(softmax_max([-1.0 / 3, -3.0 / 6]), rel=1e-14)
    assert got[1][0] == pytest.approx(softmax_max([-2.0 / 3, -2.5 / 6]), rel=1e-14)
    assert [c for _, c in got] == [True, False]


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("row", "fmt"),
    [
        ({"confidence": 0.5, "correct": True}, "jsonl"),
        ({"nll": 1.0, "tokens": 2}, "jsonl"),
        ({"doc_id": 0, "filtered_resps": []}, "lm-eval"),
        ({"logprobs": [None, -1.0]}, "logprobs"),
        ({"custom_id": "a", "response": {}}, "openai"),
        ({"choices": [{"message": {}, "logprobs": None}]}, "openai"),
        ({"prompt_token_ids": [1], "prompt_logprobs": [None]}, "vllm"),
        ({"id": 1, "epoch": 1, "output": {}, "scores": {}}, "inspect-ai"),
        ({"correct": True}, "jsonl"),
    ],
)
def test_detect_row_format(row, fmt):
    assert detect_row_format(row) == fmt
    assert fmt in ROW_FORMATS


def test_unknown_row_is_one_short_line():
    with pytest.raises(ValueError) as info:
        detect_row_format({"text": "hello"})
    message = str(info.value)
    assert "keys: 'text'" in message and len(message) <= 200
    with pytest.raises(ValueError) as info:
        detect_row_format({"instance_id": "id1", "train_trial_index": 0})
    assert str(info.value).startswith(
        "cannot detect the input format: closest is helm, lacking 'stats'"
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"results": {}, "configs": {}}, "an lm-eval results file"),
        ({"version": 2, "eval": {}, "samples": []}, "a whole inspect-ai log"),
    ],
)
def test_files_that_are_not_rows_are_named(row, message):
    with pytest.raises(ValueError, match=message):
        detect_row_format(row)


# --------------------------------------------------------------------------- realworld


def realworld_pairs(folder: str) -> list[tuple[Path, dict]]:
    pairs = []
    for results in sorted((REALWORLD / folder).glob("results_*.json")):
        stamp = results.name.removeprefix("results_").removesuffix(".json")
        pairs.append((results, json.loads(results.read_text(encoding="utf-8"))))
        assert list((REALWORLD / folder).glob(f"samples_*_{stamp}.json*"))
    return pairs


@needs_realworld
@pytest.mark.parametrize(
    "folder",
    [
        "lmeval-pr1974-llama3-8b-bias",
        "lmeval-pr1974-llama3-8b-stereotype",
        "lmeval-pr3936-qwen3-8b-negotiationtom",
    ],
)
def test_realworld_accuracy_matches_results(folder):
    for results_path, results in realworld_pairs(folder):
        stamp = results_path.name.removeprefix("results_").removesuffix(".json")
        for task, figures in results["results"].items():
            found = list((REALWORLD / folder).glob(f"samples_{task}_{stamp}.json*"))
            if not found:  # a group's figures: its tasks have the samples files
                continue
            (samples_path,) = found
            rows = rows_of(samples_path)
            kinds = {lm_eval_row_kind(r) for r in rows}
            if "acc,none" not in figures:
                assert kinds == {"generate_until"}
                continue
            assert kinds == {"multiple_choice"}
            for norm, metric in (("none", "acc,none"), ("chars", "acc_norm,none")):
                if metric not in figures:
                    continue
                got = [lm_eval_choice_row(r, mc_norm=norm) for r in rows]
                accuracy = sum(c for _, c in got) / len(got)
                assert accuracy == pytest.approx(figures[metric], abs=1e-12), (samples_path, metric)
            for row in rows:
                confidence, correct = lm_eval_choice_row(row)
                lls = [float(r[0]) for r in row["filtered_resps"]]
                assert confidence == pytest.approx(softmax_max(lls), rel=1e-12)
                # correct is the argmax (first index on ties) against the gold index.
                # The target is the gold index ("3") or the gold choice ("B").
                gold = row["target"]
                index = int(gold) if gold.isdigit() else row["doc"]["choices"].index(gold)
                assert correct == (lls.index(max(lls)) == index)


@needs_realworld
def test_realworld_pre_v040_rows():
    folder = REALWORLD / "lmeval-2023-bigrefactor-output"
    winogrande = rows_of(folder / "_winogrande.jsonl")
    reported = json.loads((folder / "w.json").read_text())["results"]["winogrande"]["acc,none"]
    got = [lm_eval_choice_row(r) for r in winogrande]
    assert sum(c for _, c in got) / len(got) == reported
    for name in ("_mathqa.jsonl", "_pubmed_qa.jsonl", "_qnli.jsonl"):
        rows = rows_of(folder / name)
        assert {lm_eval_row_kind(r) for r in rows} == {"multiple_choice"}
        for row in rows:
            confidence, correct = lm_eval_choice_row(row)
            lls = [r[0] for r in row["filtered_resps"]]
            assert confidence == pytest.approx(softmax_max(lls), rel=1e-12)
            assert correct == bool(row["acc"])
        with pytest.raises(ValueError, match="the choice lengths that length normalisation"):
            lm_eval_choice_row(rows[0], mc_norm="chars")
    for name in (
        "_boolq-seq2seq.jsonl",
        "pretrained=EleutherAI__pythia-2.8b_trivia_qa_unfiltered.nocontext.jsonl",
    ):
        assert {lm_eval_row_kind(r) for r in rows_of(folder / name)} == {"generate_until"}
    assert rows_of(folder / "_cb.jsonl") == []
