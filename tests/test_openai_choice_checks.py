"""OpenAI multiple-choice rows that cannot give the figure they seem to: an answer token whose
top_logprobs lists no other token (every confidence would be 1), and an integer gold whose
digits are themselves an option (the option's text or its index?). Both are exit 2 naming the
line, in the CLI and the Python API alike; expected confidences are math.exp of the logprobs
written here and accuracies are counted by hand."""

from __future__ import annotations

import json
import math

import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

_IDS = iter(range(10**6))


def chat(answer, logprob, tops, gold):
    """A chat completion answering ``answer`` at ``logprob``; ``tops`` the (token, logprob) of
    its top_logprobs (None: the key absent), ``gold`` beside it under ``answer``."""
    token = {"token": answer, "logprob": logprob, "bytes": list(answer.encode())}
    if tops is not None:
        token["top_logprobs"] = [
            {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in tops
        ]
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": answer},
        "logprobs": {"content": [token]},
        "finish_reason": "stop",
    }
    return {
        "id": f"c{next(_IDS)}",
        "object": "chat.completion",
        "model": "m",
        "choices": [choice],
        "answer": gold,
    }


def calibrate(path, *args):
    return run(["calibrate", path, "--gold-field", "answer", "--json", "-q", *args])


# --------------------------------------------------------------------------- top_logprobs


@pytest.mark.parametrize(
    "tops",
    [[], None, [("A", math.log(0.6))]],
    ids=["empty", "absent", "only-the-answer"],
)
def test_an_answer_token_with_no_other_token_listed_is_refused(tmp_path, tops):
    good = chat("B", math.log(0.7), [("B", math.log(0.7)), ("C", math.log(0.2))], "B")
    rows = [good, chat("A", math.log(0.6), tops, "A")]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    result = calibrate(path, "--max-brier", "0.45")
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {path}:2: content[0].top_logprobs lists no token but")
    assert "top_logprobs (e.g. 5 or more)" in line
    with pytest.raises(InputError, match=r"r\.jsonl:2: .*lists no token but the answer 'A'"):
        calibcli.read_predictions(str(path), gold_field="answer")


def test_other_tokens_listed_bound_the_options_left_out(tmp_path):
    """Tokens listed beside the answer, none of them an option: the options left out are each
    below them and count 0, so the confidence is 1 as documented; an option listed beside it
    is renormalised over."""
    rows = [
        chat("A", math.log(0.6), [("A", math.log(0.6)), ("Sure", math.log(0.3))], "A"),
        chat("C", math.log(0.5), [("C", math.log(0.5)), ("D", math.log(0.25))], "D"),
    ]
    body = json.loads(calibrate(write_jsonl(tmp_path / "r.jsonl", rows)).stdout)
    assert body["n"] == 2 and body["accuracy"] == 0.5
    assert body["mean_confidence"] == pytest.approx((1.0 + 0.5 / 0.75) / 2, rel=1e-12)


# --------------------------------------------------------------------------- numeric golds


def likert(answer, gold):
    tops = [(answer, math.log(0.7))] + [(o, math.log(0.075)) for o in "12345" if o != answer]
    return chat(answer, math.log(0.7), tops, gold)


def test_an_integer_gold_that_is_also_an_option_is_refused(tmp_path):
    rows = [likert("2", "2"), likert("3", 2)]  # line 2: option "2", or "3" at index 2?
    path = write_jsonl(tmp_path / "l.jsonl", rows)
    result = calibrate(path, "--choices", "1,2,3,4,5")
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {path}:2: gold label 'answer' is the number 2")
    assert "'3' at index 2" in line and 'as a string for the option\'s text ("2")' in line
    with pytest.raises(InputError, match=r"l\.jsonl:2: gold label 'answer' is the number 2"):
        calibcli.read_predictions(str(path), gold_field="answer", choices="1,2,3,4,5")


def test_an_integer_gold_beyond_the_indexes_is_refused_too(tmp_path):
    """Gold 5 among options 1 to 5 is no index, but its digits are an option: written as a
    number it is refused like the others, to be written as the string "5"."""
    path = write_jsonl(tmp_path / "l.jsonl", [likert("5", 5)])
    result = calibrate(path, "--choices", "1,2,3,4,5")
    assert (
        result.exit_code == 2 and f"{path}:1: gold label 'answer' is the number 5" in result.stderr
    )


def test_string_golds_of_digit_options_read_as_the_text(tmp_path):
    """Gold "2" is the option 2: of these four answers, the two whose gold is their own text
    are right (accuracy 2/4 by hand)."""
    rows = [likert("2", "2"), likert("3", "2"), likert("4", "4"), likert("1", "5")]
    body = json.loads(
        calibrate(write_jsonl(tmp_path / "l.jsonl", rows), "--choices", "1,2,3,4,5").stdout
    )
    assert body["accuracy"] == 0.5
    assert body["mean_confidence"] == pytest.approx(0.7 / (0.7 + 4 * 0.075), rel=1e-12)


def test_an_integer_gold_whose_two_readings_agree_is_read(tmp_path):
    """Options 0 to 3: gold 2 is the option "2" and the option at index 2 alike."""
    rows = [likert("2", 2), likert("3", 1)]
    body = json.loads(
        calibrate(write_jsonl(tmp_path / "z.jsonl", rows), "--choices", "0,1,2,3").stdout
    )
    assert body["accuracy"] == 0.5


def test_an_integer_gold_among_letter_options_stays_an_index(tmp_path):
    rows = [chat("C", math.log(0.8), [("C", math.log(0.8)), ("A", math.log(0.2))], 2)]
    body = json.loads(calibrate(write_jsonl(tmp_path / "i.jsonl", rows)).stdout)
    assert body["accuracy"] == 1.0 and body["mean_confidence"] == pytest.approx(0.8, rel=1e-12)
