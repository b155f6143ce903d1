"""The answer-token rule reads one letter: after ``ANSWER:`` the letter (with its closing
wrappers) is followed, after blanks, by no other letter, digit or comma, as inspect-ai's solver
reads the run of letters, blanks and commas after ``ANSWER:``. A list of
letters, the answer of inspect-ai's ``multiple_choice(multiple_correct=True)`` solver
(``ANSWER: A, C``), names no one answer: ``auto`` reads such samples by their whole completion and
``answer-token`` refuses them."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from harness import run

from calibcli.formats.inspect_ai import answer_index

BASE = Path(__file__).parent / "fixtures" / "inspect_ai_schema" / "toy_mc.json"


@pytest.mark.parametrize(
    ("text", "letter_at"),
    [
        ("ANSWER: A", 8),
        ("ANSWER: A.", 8),
        ("ANSWER: A. ", 8),
        ("ANSWER: A)", 8),
        ("ANSWER: (A)", 9),
        ("ANSWER: $A", None),  # inspect-ai's solver grades no answer
        ("ANSWER: $A$", 9),
        ("ANSWER: A\nThe other options, B and C, are wrong.", 8),
        ("ANSWER: A\r\nB is wrong", 8),
        ("ANSWER: a", 8),
        ("answer: a.", 8),
        ("ANSWER: A, C", None),
        ("ANSWER: A,C", None),
        ("ANSWER: A and C", None),
        ("ANSWER: AC", None),
        ("ANSWER: A C", None),
        ("ANSWER: A 2", None),
        ("ANSWER: A. Because B is wrong", 8),
        ("ANSWER: A (because it is)", 8),
        ("ANSWER: A; I think", 8),
        ("ANSWER: $A$, $C$", None),
        ("ANSWER: (A), (C)", None),
        ("ANSWER: a, c", None),
        ("ANSWER: a and c", None),
        ("ANSWER: a c", None),
        ("ANSWER: A é", 8),
        ("ANSWER: A and", None),
    ],
)
def test_one_letter_not_followed_by_another(text, letter_at):
    # one character a token: the answer token's index is the letter's position
    assert answer_index(4, list(text)) == letter_at


def test_tokens_as_a_model_writes_them():
    # "ANSWER", ":", " A", ",", " C": two letters, no answer token; " A" alone is one
    assert answer_index(4, ["ANSWER", ":", " A", ",", " C"]) is None
    assert answer_index(4, ["ANSWER", ":", " A", " and", " C"]) is None
    assert answer_index(4, ["ANSWER", ":", " A", "\n", "Because", " C"]) == 2


def multi_sample(ident, first, second, right):
    """A multiple_choice(multiple_correct=True) sample answering ``ANSWER: A, C`` with the
    letters' probabilities ``first`` and ``second``."""
    tokens = [
        ("ANSWER", -0.001),
        (":", -0.001),
        (" A", math.log(first)),
        (",", -0.01),
        (" C", math.log(second)),
    ]
    text = "".join(t for t, _ in tokens)
    content = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in tokens]
    return {
        "id": ident,
        "epoch": 1,
        "input": f"question {ident}",
        "choices": ["w", "x", "y", "z"],
        "target": ["A", "C"],
        "messages": [],
        "output": {
            "model": "org/model",
            "choices": [
                {
                    "message": {"role": "assistant", "content": text},
                    "stop_reason": "stop",
                    "logprobs": {"content": content},
                }
            ],
            "completion": text,
        },
        "scores": {"choice": {"value": "C" if right else "I"}},
        "metadata": {},
    }


def multi_log(tmp_path):
    """200 samples whose first letter's probability matches their accuracy (0.56 .. 0.86, 50
    each), the second letter's spread over 0.2 .. 0.83: by the first letter alone they look
    well calibrated. Returns the log's path and the samples."""
    samples = []
    for group, first in enumerate((0.56, 0.66, 0.76, 0.86)):
        rights = round(first * 50)
        for k in range(50):
            ident = group * 50 + k + 1
            second = 0.2 + 0.07 * (k % 10)
            samples.append(multi_sample(ident, first, second, k < rights))
    log = copy.deepcopy(json.loads(BASE.read_text()))
    log["samples"] = samples
    log["eval"]["dataset"]["samples"] = len(samples)
    log["eval"]["dataset"]["sample_ids"] = [s["id"] for s in samples]
    log["results"]["total_samples"] = log["results"]["completed_samples"] = len(samples)
    path = tmp_path / "multi.json"
    path.write_text(json.dumps(log))
    return path, samples


def sequence_ece(samples, bins=10):
    """ECE of exp(sum of the completion's logprobs), equal-width bins [lo, hi), by a loop."""
    conf, right = [], []
    for s in samples:
        content = s["output"]["choices"][0]["logprobs"]["content"]
        conf.append(math.exp(sum(t["logprob"] for t in content)))
        right.append(1.0 if s["scores"]["choice"]["value"] == "C" else 0.0)
    total = 0.0
    for b in range(bins):
        members = [i for i, c in enumerate(conf) if b / bins <= c < (b + 1) / bins]
        if members:
            gap = np.mean([conf[i] for i in members]) - np.mean([right[i] for i in members])
            total += abs(gap) * len(members)
    return total / len(conf)


def test_letter_lists_fail_the_gate_by_their_sequence(tmp_path):
    path, samples = multi_log(tmp_path)
    result = run(["calibrate", path, "--max-ece", "0.1", "--json"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 200
    expected = sequence_ece(samples)
    assert expected > 0.3
    assert report["ece"] == pytest.approx(expected, abs=1e-12)
    assert report["gate"]["passed"] is False
    # every sample was read by its whole completion: no mix of two definitions
    assert "answer-token" not in result.stderr


def test_answer_token_refuses_a_list_of_letters(tmp_path):
    path, _ = multi_log(tmp_path)
    result = run(["calibrate", path, "--inspect-confidence", "answer-token"])
    assert result.exit_code == 2
    assert "no 'ANSWER: X' line" in result.stderr
    assert "Traceback" not in result.stderr
