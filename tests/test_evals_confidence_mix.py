"""One definition of confidence per OpenAI evals log: a sample whose ``ideal`` lists several
spellings of its answer keeps ``expected`` a list in its match event (evals' ``record_match``
unwraps a list of one only). An option among them makes the sample multiple-choice as a string
``expected`` does, so its confidence is the answer option's renormalised probability like every
other sample's, never the whole completion's. Expected figures are computed here with numpy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run, write_jsonl

LETTERS = "ABCD"


def mixed_log(n, expected_of, tail=(")", " because", " it")):
    """An evals log whose completions are ``"<letter>) because it"``; ``expected_of(i, gold)``
    gives each match event's ``expected``. Returns (events, option probability, whole
    completion probability, outcomes) of each sample."""
    rng = np.random.default_rng(4)
    events = [{"spec": {"completion_fns": ["gpt-4o-mini"], "run_id": "RUN", "eval_name": "q"}}]
    option, whole, right = [], [], []
    for i in range(n):
        sid, gold = f"q.dev.{i}", LETTERS[i % 4]
        p = float(rng.uniform(0.4, 0.99))
        correct = bool(rng.random() < p)
        answer = gold if correct else LETTERS[(i + 1) % 4]
        tops = [{"token": answer, "logprob": math.log(p)}] + [
            {"token": o, "logprob": math.log((1 - p) / 3)} for o in LETTERS if o != answer
        ]
        rest = [-0.3, -1.2, -0.9]
        content = [{"token": answer, "logprob": math.log(p), "top_logprobs": tops}] + [
            {"token": t, "logprob": lp, "top_logprobs": []}
            for t, lp in zip(tail, rest, strict=True)
        ]
        sampled = answer + "".join(tail)
        events.append(
            {
                "run_id": "RUN",
                "event_id": 2 * i,
                "sample_id": sid,
                "type": "sampling",
                "data": {"prompt": "Q", "sampled": [sampled], "logprobs": {"content": content}},
            }
        )
        events.append(
            {
                "run_id": "RUN",
                "event_id": 2 * i + 1,
                "sample_id": sid,
                "type": "match",
                "data": {"correct": correct, "expected": expected_of(i, gold), "sampled": sampled},
            }
        )
        top = np.array([t["logprob"] for t in tops])
        option.append(np.exp(math.log(p)) / np.exp(top).sum())
        whole.append(np.exp(math.log(p) + np.sum(rest)))
        right.append(correct)
    events.append({"final_report": {"accuracy": float(np.mean(right))}})
    return events, np.array(option), np.array(whole), np.array(right, dtype=float)


def report(path):
    result = run(["calibrate", path, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_list_of_spellings_naming_an_option_takes_the_options_probability(tmp_path):
    events, option, _, right = mixed_log(
        40, lambda i, gold: gold if i % 2 == 0 else [gold, gold + ")"]
    )
    body = report(write_jsonl(tmp_path / "mix.jsonl", events))
    assert body["n"] == 40
    assert body["mean_confidence"] == pytest.approx(option.mean(), rel=1e-12)
    assert body["brier"] == pytest.approx(np.mean((option - right) ** 2), rel=1e-12)
    # the same log with every expected a string gives the same figures
    plain, *_ = mixed_log(40, lambda i, gold: gold)
    same = report(write_jsonl(tmp_path / "plain.jsonl", plain))
    assert same["mean_confidence"] == body["mean_confidence"] and same["ece"] == body["ece"]


def test_a_list_naming_no_option_takes_the_whole_completions_probability(tmp_path):
    events, _, whole, right = mixed_log(20, lambda i, gold: [f"answer {gold}", f"Answer {gold}"])
    body = report(write_jsonl(tmp_path / "free.jsonl", events))
    assert body["mean_confidence"] == pytest.approx(whole.mean(), rel=1e-12)
    assert body["brier"] == pytest.approx(np.mean((whole - right) ** 2), rel=1e-12)
