"""inspect-ai: the answer-token confidence of multiple_choice samples (the default where it
applies) and the prompt logprobs of perplexity evals, on logs written from inspect-ai's schema
(tests/fixtures/inspect_ai_schema/README.md). Expected figures come from the raw JSON here."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from harness import run

HERE = Path(__file__).resolve().parent / "fixtures"
MC = HERE / "inspect_ai_schema" / "toy_mc.json"
PPL = HERE / "inspect_ai_schema" / "toy_perplexity.json"
ARITHMETIC = HERE / "inspect_ai" / "toy_arithmetic.json"


def samples(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["samples"]


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def letter_token(sample: dict) -> dict:
    """The token after 'ANSWER' and ':' whose text is the chosen letter."""
    content = sample["output"]["choices"][0]["logprobs"]["content"]
    completion = sample["output"]["completion"]
    letter = re.fullmatch(r"ANSWER: ([A-Z])", completion)[1]
    (token,) = [t for t in content if t["token"].strip() == letter]
    return token


def test_answer_token_is_the_default_for_multiple_choice_answers():
    rows = samples(MC)
    confidences = [math.exp(letter_token(s)["logprob"]) for s in rows]
    correct = [s["scores"]["choice"]["value"] == "C" for s in rows]
    for rule in ("auto", "answer-token"):
        body = report(["calibrate", str(MC), "--inspect-confidence", rule])
        assert body["n"] == 4 and body["accuracy"] == sum(correct) / 4
        assert body["mean_confidence"] == pytest.approx(math.fsum(confidences) / 4, rel=1e-15)
        brier = math.fsum((c - y) ** 2 for c, y in zip(confidences, correct, strict=True)) / 4
        assert body["brier"] == pytest.approx(brier, rel=1e-12)
    # the first token ("ANSWER") says nothing about the choice: near 0.99 on every sample
    first = report(["calibrate", str(MC), "--inspect-confidence", "first-token"])
    assert first["mean_confidence"] == pytest.approx(math.exp(-0.01005), rel=1e-12)
    sequence = report(["calibrate", str(MC), "--inspect-confidence", "sequence"])
    expected = [
        math.exp(math.fsum(t["logprob"] for t in s["output"]["choices"][0]["logprobs"]["content"]))
        for s in rows
    ]
    assert sequence["mean_confidence"] == pytest.approx(math.fsum(expected) / 4, rel=1e-12)


def test_auto_keeps_the_sequence_rule_without_an_answer_line():
    """toy_arithmetic's samples answer with a number and have no choices: auto is sequence."""
    auto = report(["calibrate", str(ARITHMETIC), "--scorer", "match"])
    sequence = report(
        ["calibrate", str(ARITHMETIC), "--scorer", "match", "--inspect-confidence", "sequence"]
    )
    assert auto["mean_confidence"] == sequence["mean_confidence"]


def test_answer_token_without_an_answer_line_is_an_error():
    result = run(
        ["calibrate", str(ARITHMETIC), "--scorer", "match", "--inspect-confidence", "answer-token"]
    )
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "no 'ANSWER: X' line" in result.stderr


def test_perplexity_from_prompt_logprobs():
    rows = samples(PPL)
    logprobs = [
        t["logprob"]
        for s in rows
        for t in s["output"]["choices"][0]["prompt_logprobs"]["content"]
        if t["logprob"] is not None
    ]
    nbytes = sum(
        len(t["bytes"])
        for s in rows
        for t in s["output"]["choices"][0]["prompt_logprobs"]["content"]
        if t["logprob"] is not None
    )
    body = report(["perplexity", str(PPL)])
    assert body["format"] == "inspect-ai"
    assert (body["sequences"], body["total_tokens"], body["null_logprobs"]) == (3, 9, 3)
    assert body["total_nll"] == -math.fsum(logprobs)
    assert body["perplexity"] == pytest.approx(math.exp(-math.fsum(logprobs) / 9), rel=1e-15)
    assert body["total_bytes"] == nbytes
    # the pooled figure is not the mean of the per-sample perplexities the scorer logged
    per_sample = [s["scores"]["perplexity"]["value"] for s in rows]
    assert body["perplexity"] != pytest.approx(sum(per_sample) / 3)


def test_a_calibration_log_has_no_prompt_logprobs_for_perplexity():
    result = run(["perplexity", str(MC)])
    assert result.exit_code == 2
    assert "has no output.choices[0].prompt_logprobs" in result.stderr
