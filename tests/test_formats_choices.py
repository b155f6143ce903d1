"""Multiple-choice answers scored from token logprobs: OpenAI chat completions with a gold
label (--gold-field, --choices) and OpenAI evals record logs (match events joined to their
sampling events). Expected figures are computed here from the raw files: the answer token's
top_logprobs renormalised over the options."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run, write_jsonl

HERE = Path(__file__).resolve().parent / "fixtures"
CHAT = HERE / "openai_choices" / "chat_mc.jsonl"
EVALS = HERE / "openai_evals" / "toy-mc.jsonl"
LETTERS = ("A", "B", "C", "D", "E")


def renormalised(token: dict, options=LETTERS) -> float:
    best: dict[str, float] = {token["token"].strip(): token["logprob"]}
    for top in token["top_logprobs"]:
        if top["token"].strip() in options:
            best[top["token"].strip()] = max(best.get(top["token"].strip(), -1e300), top["logprob"])
    total = math.fsum(math.exp(v) for v in best.values())
    return math.exp(token["logprob"]) / total


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_chat_completions_with_a_gold_field():
    rows = lines(CHAT)
    tokens = [r["response"]["body"]["choices"][0]["logprobs"]["content"][0] for r in rows]
    conf = [renormalised(t) for t in tokens]
    correct = [t["token"] == r["answer"] for t, r in zip(tokens, rows, strict=True)]
    body = report(["calibrate", str(CHAT), "--gold-field", "answer"])
    assert body["format"] == "openai" and body["n"] == 5
    assert body["accuracy"] == sum(correct) / 5
    assert body["mean_confidence"] == pytest.approx(math.fsum(conf) / 5, rel=1e-12)
    brier = math.fsum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / 5
    assert body["brier"] == pytest.approx(brier, rel=1e-12)


def test_a_plain_completion_with_a_nested_gold_index_and_named_choices(tmp_path):
    """--choices names the options (here yes/no); a gold label may be an option's index."""
    token = {
        "token": " yes",
        "logprob": -0.4,
        "top_logprobs": [
            {"token": " yes", "logprob": -0.4},
            {"token": " no", "logprob": -1.2},
            {"token": " maybe", "logprob": -3.0},
        ],
    }
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant"}, "logprobs": {"content": [token]}}
        ],
        "meta": {"gold": 0},
    }
    path = write_jsonl(tmp_path / "c.jsonl", [completion])
    body = report(["calibrate", str(path), "--gold-field", "meta.gold", "--choices", "yes,no"])
    expected = math.exp(-0.4) / (math.exp(-0.4) + math.exp(-1.2))
    assert body["mean_confidence"] == pytest.approx(expected, rel=1e-15)
    assert body["accuracy"] == 1.0


def test_without_a_gold_field_or_with_a_bad_label(tmp_path):
    result = run(["calibrate", str(CHAT)])
    assert result.exit_code == 2 and "pass --gold-field PATH" in result.stderr
    result = run(["calibrate", str(CHAT), "--gold-field", "custom_id"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {CHAT}:1: gold label 'custom_id' is a string ('q1')")
    result = run(["calibrate", str(CHAT), "--gold-field", "answer", "--choices", "yes,no"])
    assert result.exit_code == 2 and "not one of the options (yes, no)" in result.stderr


def test_perplexity_still_reads_the_completions():
    rows = lines(CHAT)
    logprobs = [
        r["response"]["body"]["choices"][0]["logprobs"]["content"][0]["logprob"] for r in rows
    ]
    body = report(["perplexity", str(CHAT)])
    assert body["total_tokens"] == 5 and body["total_nll"] == -math.fsum(logprobs)


def test_openai_evals_log_joins_match_and_sampling_events():
    events = lines(EVALS)
    sampling = {e["sample_id"]: e["data"] for e in events if e.get("type") == "sampling"}
    matches = [e for e in events if e.get("type") == "match"]
    conf = [renormalised(sampling[m["sample_id"]]["logprobs"]["content"][0]) for m in matches]
    correct = [m["data"]["correct"] for m in matches]
    body = report(["calibrate", str(EVALS)])
    assert body["format"] == "openai-evals" and body["n"] == len(matches) == 4
    # the run's own accuracy, from its final report
    (final,) = [e["final_report"] for e in events if "final_report" in e]
    assert body["accuracy"] == final["accuracy"] == sum(correct) / 4
    assert body["mean_confidence"] == pytest.approx(math.fsum(conf) / 4, rel=1e-12)
    paired = report(["compare", str(EVALS), str(EVALS)])
    assert paired["id_field"] == "sample_id" and paired["matched"] == 4


def test_openai_evals_log_errors(tmp_path):
    events = lines(EVALS)
    no_logprobs = [
        {**e, "data": {k: v for k, v in e["data"].items() if k != "logprobs"}}
        if e.get("type") == "sampling"
        else e
        for e in events
    ]
    path = write_jsonl(tmp_path / "log.jsonl", no_logprobs)
    result = run(["calibrate", str(path)])
    first_match = next(i for i, e in enumerate(events, 1) if e.get("type") == "match")
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {path}:{first_match}: the sampling event logs no logprobs (data.logprobs): a "
        "confidence needs them\n"
    )
    result = run(["calibrate", "-"], input=EVALS.read_text())
    assert result.exit_code == 2 and "an OpenAI evals record log: give it as a file" in (
        result.stderr
    )


def test_summarize_reads_the_gold_label_as_calibrate_does(tmp_path):
    """summarize takes every reading option: a part of chat rows read with --gold-field gives
    the figures calibrate gives on the file."""
    part = tmp_path / "chat.cbs"
    result = run(["summarize", str(CHAT), "--gold-field", "answer", "-o", str(part), "-q"])
    assert result.exit_code == 0, result.stderr
    direct = report(["calibrate", str(CHAT), "--gold-field", "answer"])
    merged = report(["calibrate", str(part)])
    for key in ("n", "accuracy", "ece", "brier", "auroc", "nll"):
        assert merged[key] == direct[key], key
