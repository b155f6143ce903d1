"""vLLM and OpenAI rows take the byte and word counts --bytes-field and --words-field name beside
the response, as logprobs rows do; a count field a format does not read is said as such, not
as absent; standard input is named <stdin> in warnings as in errors; compare's --label message
says how often it must be given."""

from __future__ import annotations

import json
import math

import pytest
from harness import run, write_jsonl

LN2 = math.log(2)


def vllm(logprob=-1.0, **counts):
    """A vLLM LLM.generate output whose one scored prompt token has ``logprob``."""
    scored = [None, {"2": {"logprob": logprob, "rank": 1}}]
    return {"prompt_token_ids": [1, 2], "prompt_logprobs": scored, **counts}


def chat(logprob=-1.0, token_bytes=(97, 98), **counts):
    """An OpenAI chat completion of one token carrying ``token_bytes``."""
    token = {"token": "ab", "logprob": logprob, "bytes": list(token_bytes), "top_logprobs": []}
    choice = {"index": 0, "logprobs": {"content": [token]}}
    return {"id": "x", "object": "chat.completion", "choices": [choice], **counts}


def legacy(**counts):
    """An OpenAI legacy completion echoing a prompt: the first token unscored, then -2.0."""
    choice = {"index": 0, "text": "ab", "logprobs": {"token_logprobs": [None, -2.0]}}
    return {"id": "y", "object": "text_completion", "choices": [choice], **counts}


def perplexity(path, *args):
    result = run(["perplexity", path, *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# --------------------------------------------------------------------------- vLLM counts


@pytest.mark.parametrize(
    ("names", "args"),
    [
        (("bytes", "words"), []),
        (("bytes", "words"), ["--bytes-field", "bytes", "--words-field", "words"]),
        (("nbytes", "nwords"), ["--bytes-field", "nbytes", "--words-field", "nwords"]),
        (
            ("doc.nbytes", "doc.nwords"),
            ["--bytes-field", "doc.nbytes", "--words-field", "doc.nwords"],
        ),
    ],
)
def test_vllm_rows_take_the_named_counts(tmp_path, names, args):
    # two outputs: NLL 1 + 3 = 4 nats over 2 tokens, 7 + 9 = 16 bytes, 2 + 3 = 5 words
    rows = []
    for logprob, nbytes, words in ((-1.0, 7, 2), (-3.0, 9, 3)):
        counts = {names[0]: nbytes, names[1]: words}
        if "." in names[0]:
            counts = {"doc": {k.split(".")[1]: v for k, v in counts.items()}}
        rows.append(vllm(logprob, **counts))
    body = perplexity(write_jsonl(tmp_path / "v.jsonl", rows), *args)
    assert body["format"] == "vllm"
    assert body["total_bytes"] == 16 and body["total_words"] == 5
    assert body["bits_per_byte"] == pytest.approx(4 / (16 * LN2))
    assert body["word_perplexity"] == pytest.approx(math.exp(4 / 5))
    assert not [w for w in body["warnings"] if "-field" in w]


def test_vllm_counts_are_checked_as_logprobs_rows_check_them(tmp_path):
    said = []
    for name, row in (("v", vllm(bytes=-4)), ("l", {"logprobs": [-1.0], "bytes": -4})):
        result = run(["perplexity", write_jsonl(tmp_path / f"{name}.jsonl", [row])])
        assert result.exit_code == 2
        said.append(result.stderr.strip().split(":", 2)[2])
    assert said[0] == said[1] and "bytes -4" in said[0]


def test_a_count_beside_several_choices_is_an_error(tmp_path):
    # two prompts of a batch request (n samples of one prompt would be one sequence)
    row = {"choices": [vllm(), vllm(logprob=-2.0)], "bytes": 4}
    result = run(["perplexity", write_jsonl(tmp_path / "v.jsonl", [row])])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert ":1: bytes is given beside 2 scored sequences" in result.stderr


def test_vllm_rows_some_with_counts_some_without_are_an_error(tmp_path):
    path = write_jsonl(tmp_path / "v.jsonl", [vllm(bytes=7), vllm()])
    result = run(["perplexity", path])
    assert result.exit_code == 2 and ":2:" in result.stderr and "bytes" in result.stderr


# --------------------------------------------------------------------------- OpenAI counts


def test_openai_legacy_rows_take_the_named_counts(tmp_path):
    path = write_jsonl(tmp_path / "o.jsonl", [legacy(nwords=1, nbytes=8)])
    body = perplexity(path, "--words-field", "nwords", "--bytes-field", "nbytes")
    # NLL 2 nats over 1 token, 8 bytes, 1 word
    assert body["total_words"] == 1 and body["word_perplexity"] == pytest.approx(math.exp(2))
    assert body["total_bytes"] == 8 and body["bits_per_byte"] == pytest.approx(2 / (8 * LN2))


def test_openai_chat_bytes_and_a_named_count_must_agree(tmp_path):
    # the token's bytes [97, 98] are 2 bytes: a count of 2 agrees, and words come from the row
    body = perplexity(write_jsonl(tmp_path / "a.jsonl", [chat(bytes=2, words=1)]))
    assert body["total_bytes"] == 2 and body["total_words"] == 1
    assert body["bits_per_byte"] == pytest.approx(1 / (2 * LN2))
    result = run(["perplexity", write_jsonl(tmp_path / "d.jsonl", [chat(bytes=3)])])
    assert result.exit_code == 2
    assert "d.jsonl:1: bytes 3 and the 2 bytes of the scored tokens disagree" in result.stderr


# --------------------------------------------------------------------------- the warning


def test_no_row_holds_it_is_said_of_vllm_rows_only_when_true(tmp_path):
    path = write_jsonl(tmp_path / "v.jsonl", [vllm(nbytes=7)])
    body = perplexity(path, "--bytes-field", "nbytes", "--words-field", "nwords")
    assert body["total_bytes"] == 7
    assert body["warnings"] == [
        "--words-field nwords: no row holds it, so the figures per word are not given"
    ]


def test_a_format_with_its_own_counts_says_the_field_is_not_read(tmp_path):
    # lm-eval rolling rows: each metric holds [loglikelihood, count]; 3 words, 11 bytes each
    lines = [
        {
            "doc_id": i,
            "doc": {"page": "one two three"},
            "filtered_resps": ["-3.0"],
            "metrics": ["word_perplexity", "byte_perplexity", "bits_per_byte"],
            "word_perplexity": [-3.0, 3],
            "byte_perplexity": [-3.0, 11],
            "bits_per_byte": [-3.0, 11],
            "nbytes": 99,
        }
        for i in range(2)
    ]
    path = write_jsonl(tmp_path / "samples_wikitext_2025-01-01T00-00-00.jsonl", lines)
    body = perplexity(path, "--bytes-field", "nbytes")
    assert body["format"] == "lm-eval"
    said = [w for w in body["warnings"] if w.startswith("--bytes-field nbytes")]
    assert said == [
        "--bytes-field nbytes: the lm-eval format takes no count fields, so it is not read "
        "(the bytes are the format's own)"
    ]
    assert not [w for w in body["warnings"] if "no row holds it" in w]
    assert body["total_bytes"] == 22  # the harness's counts, not the 2 * 99 of the field


# --------------------------------------------------------------------------- <stdin>


def test_standard_input_of_no_rows_is_named_as_errors_name_it(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"confidence": 0.75, "correct": True}] * 4)
    result = run(["calibrate", path, "-", "--json"], input="")
    assert result.exit_code == 0, result.stderr
    said = "<stdin>: holds no rows: the figures are the other files'"
    assert said in json.loads(result.stdout)["warnings"]
    assert f"warning: {said}" in result.stderr and "-: holds" not in result.stderr
    error = run(["calibrate", "-"], input='{"confidence": 2, "correct": true}\n')
    assert error.exit_code == 2 and error.stderr.startswith("Error: <stdin>:1: ")


# --------------------------------------------------------------------------- compare --label


@pytest.mark.parametrize(("labels", "shown"), [(["base"], "once"), (["a", "b", "c"], "3 times")])
def test_compare_label_message_says_it_must_be_given_twice(tmp_path, labels, shown):
    base = write_jsonl(tmp_path / "b.jsonl", [{"id": 1, "confidence": 0.5, "correct": True}])
    new = write_jsonl(tmp_path / "n.jsonl", [{"id": 1, "confidence": 0.6, "correct": True}])
    args = [x for label in labels for x in ("--label", label)]
    result = run(["compare", base, new, "--plot", tmp_path / "c.svg", *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: --label is given {shown}; compare takes it twice, the names of BASE and NEW, "
        "in order"
    )
