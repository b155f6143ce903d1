"""The answer-token confidence of an inspect-ai multiple-choice sample is the probability of the
letter inspect-ai's ``multiple_choice`` solver grades (its ``parse_answers``): the last line
opening with ``ANSWER:``, so a note after it naming another letter does not take the
confidence; with no such line, the last ``ANSWER:`` anywhere; ``$B$``, ``**B**``, ``(B)`` read
as ``B``; forms it does not read (``\\boxed{B}``, ``[B]``) graded as no answer. References:
the letters inspect-ai 0.3.285 graded (its ``parse_answers`` on each text, and the ``answer``
its ``choice`` scorer logged in tests/fixtures/inspect_ai_scorers/answer_lines.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run

from calibcli.formats import inspect_sample_taken
from calibcli.formats.inspect_ai import answer_index, graded_answer

LOG = Path(__file__).parent / "fixtures" / "inspect_ai_scorers" / "answer_lines.json"

# (completion, the letter inspect-ai 0.3.285's parse_answers(state, multiple_correct=False)
# returned for it with four options, and where that letter stands in the text: the position
# found by hand, None where it graded none)
GRADED = [
    ("ANSWER: A\n\n(If the question meant kg, the answer: D)", "A", 8),
    ("ANSWER: B\nso: ANSWER: (c)", "B", 8),
    ("ANSWER: A\nANSWER: C", "C", 18),
    ("The answer: C (I think)", "C", 12),
    ("I think the answer: B. Final.\nanswer: d", "D", 38),
    ("ANSWER: **B**", "B", 10),
    ("ANSWER: $d$", "D", 9),
    ("ANSWER: (C)", "C", 9),
    ("ANSWER: (C), (A)", None, None),
    ("answer: b.", "B", 8),
    ("ANSWER: A, C", None, None),
    ("ANSWER: A,", "A", 8),
    ("ANSWER: ,B", "B", 9),
    ("ANSWER: A and C", None, None),
    ("ANSWER: \\boxed{B}", None, None),
    ("ANSWER: $$b$$", None, None),
    ("ANSWER: [c]", None, None),
    ("ANSWER: **(c)**", None, None),
    ("ANSWER: $A", None, None),
    ("ANSWER: d)", "D", 8),
    ("ANSWER: E", None, None),
    ("Answer: a bit of both", None, None),
    ("  ANSWER: B", "B", 10),
    ("Reasoning...\nANSWER:B\n", "B", 20),
    ("ANSWER: B because", None, None),
    ("ANSWER: A\r\nB is wrong", "A", 8),
    ("ANSWER: A é", "A", 8),
]


@pytest.mark.parametrize(("text", "letter", "at"), GRADED)
def test_the_letter_graded_is_inspects(text, letter, at):
    found = graded_answer(text, 4)
    if letter is None:
        assert found is None
        assert answer_index(4, list(text)) is None
    else:
        assert found == (at, at + 1) and text[at].upper() == letter
        # one character a token: the answer token is the letter's
        assert answer_index(4, list(text)) == at


def test_the_answer_token_is_the_one_holding_the_graded_letter():
    tokens = ["ANSWER", ":", " A", "\n\n", "(If", " the", " answer", ":", " D", ")"]
    assert answer_index(4, tokens) == 2
    assert answer_index(4, ["ANSWER", ": (", "C", ")"]) == 2
    assert answer_index(4, ["ANSWER:", " **B", "**"]) == 1


def test_options_past_26_are_numbers():
    assert graded_answer("ANSWER: 3", 30) == (8, 9)  # the 29th option
    assert graded_answer("ANSWER: 3", 4) is None
    assert graded_answer("ANSWER: 12", 40) == (8, 10)
    assert answer_index(40, ["ANSWER", ":", " 12"]) == 2
    assert answer_index(40, ["ANSWER", ":", " 1", "2"]) is None  # no one token holds it


def wanted(sample):
    """(confidence, mode) of a sample by a hand loop: the token whose letter (blanks and
    wrappers aside) is the one inspect-ai's choice scorer logged as the answer, else the whole
    completion's probability."""
    content = sample["output"]["choices"][0]["logprobs"]["content"]
    graded = sample["scores"]["choice"]["answer"]
    if not graded:
        return math.exp(math.fsum(t["logprob"] for t in content)), "sequence"
    (token,) = [t for t in content if t["token"].strip(" $*()[]{}.").upper() == graded]
    return math.exp(token["logprob"]), "answer-token"


def test_each_samples_confidence_is_that_of_the_letter_graded():
    samples = json.loads(LOG.read_text(encoding="utf-8"))["samples"]
    # the answers inspect-ai graded: sample 2 wrote "ANSWER: A" and a note naming D
    graded = ["A", "A", "B", "C", "B", "D", "", "", "C", "C", "", "", "D"]
    assert [s["scores"]["choice"]["answer"] for s in samples] == graded
    for sample in samples:
        row, mode = inspect_sample_taken(sample)
        confidence, how = wanted(sample)
        assert (row.confidence, mode) == (confidence, how), sample["id"]
        assert row.correct == (sample["scores"]["choice"]["value"] == "C")
    second = samples[1]["output"]["choices"][0]["logprobs"]["content"]
    assert inspect_sample_taken(samples[1])[0].confidence == math.exp(second[2]["logprob"])
    assert second[2]["token"] == " A" and second[12]["token"] == " D"


def test_the_report_reads_the_letters_graded():
    # the samples after the first are read through the typed structs: the same rows
    samples = json.loads(LOG.read_text(encoding="utf-8"))["samples"]
    pairs = [(wanted(s)[0], s["scores"]["choice"]["value"] == "C") for s in samples]
    result = run(["calibrate", LOG, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["n"] == 13 and body["accuracy"] == 7 / 13
    assert body["mean_confidence"] == pytest.approx(math.fsum(p for p, _ in pairs) / 13)
    brier = math.fsum((p - y) ** 2 for p, y in pairs) / 13
    assert body["brier"] == pytest.approx(brier, rel=1e-12)
    counted = "answer_lines.json: 9 of 13 samples answer-token, 4 sequence"
    assert any(counted in w for w in body["warnings"])
