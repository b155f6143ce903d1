"""Legacy completions with ``echo=True``: the prompt echoed into each of a request's choices is
scored once, as a vLLM server response's ``prompt_logprobs`` copied into its ``n`` choices are;
the tokens generated after it are left out. ``usage.prompt_tokens`` (each prompt counted once)
says where the prompts end. The responses are laid out as OpenAI and
vLLM's ``/v1/completions`` lay them out (a prompt's choices next to each other), and every
expected count and NLL is summed here by hand from the logprobs written in the test."""

from __future__ import annotations

import json
import math

import pytest
from harness import run, write_jsonl

from calibcli.formats import detect_row_format, openai_rows

# A prompt of three tokens: the first unscored (null), then -5.25 and -2.5.
PROMPT = (["The", " cat", " sat"], [None, -5.25, -2.5])
# Another of four tokens: -1.0, -0.5, -0.25 after the null.
OTHER = (["A", " dog", " ran", " far"], [None, -1.0, -0.5, -0.25])


def choice(index, tokens, logprobs, *, vllm=False):
    body = {
        "index": index,
        "text": "".join(tokens),
        "finish_reason": "length",
        "logprobs": {
            "tokens": list(tokens),
            "token_logprobs": list(logprobs),
            "top_logprobs": None,
            "text_offset": list(range(len(tokens))),
        },
    }
    if vllm:  # the server writes its own fields into every choice, null when not asked for
        body.update({"stop_reason": None, "prompt_logprobs": None, "prompt_token_ids": None})
    return body


def completion(choices, usage=None, *, vllm=False):
    """A response whose choices are ``(tokens, logprobs)`` pairs, in order."""
    body = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m"}
    body["choices"] = [choice(i, t, lp, vllm=vllm) for i, (t, lp) in enumerate(choices)]
    if usage is not None:
        body["usage"] = usage
    return body


def generated(prompt, tokens, logprobs):
    """A choice echoing ``prompt`` then generating ``tokens`` at ``logprobs``."""
    return (prompt[0] + tokens, prompt[1] + logprobs)


def totals(rows):
    return [(r.nll, r.tokens, r.nulls) for r in rows]


def perplexity(path, *args, code=0):
    result = run(["perplexity", path, "--json", "-q", *args])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def test_a_prompt_echoed_into_two_choices_is_one_sequence(tmp_path):
    """max_tokens=0, n=2: both choices are the prompt; it is scored once, so a floor of two
    sequences and four tokens fails (the prompt holds one sequence of two scored tokens)."""
    response = completion([PROMPT, PROMPT], {"prompt_tokens": 3, "completion_tokens": 0})
    assert totals(openai_rows(response)) == [(7.75, 2, 1)]
    path = tmp_path / "echo.json"
    path.write_text(json.dumps(response, indent=1), encoding="utf-8")
    body = perplexity(path, "--min-rows", "2", "--min-tokens", "4", code=1)
    assert (body["format"], body["sequences"], body["total_tokens"]) == ("openai", 1, 2)
    assert (body["total_nll"], body["null_logprobs"]) == (7.75, 1)
    assert not body["gate"]["passed"]


def test_a_vllm_completions_echo_is_read_as_a_completion_and_counted_once(tmp_path):
    """vLLM's /v1/completions writes ``prompt_logprobs: null`` in each choice when they were not
    asked for, and counts a token per choice it generated and dropped (max_tokens=0): the
    choices' echoed logprobs are read, the prompt once."""
    usage = {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
    response = completion([PROMPT, PROMPT, PROMPT], usage, vllm=True)
    assert detect_row_format(response) == "openai"
    path = write_jsonl(tmp_path / "v.jsonl", [{**response, "id": f"cmpl-{k}"} for k in range(4)])
    body = perplexity(path)
    assert (body["format"], body["sequences"], body["total_tokens"]) == ("openai", 4, 8)
    assert body["total_nll"] == pytest.approx(4 * 7.75, abs=1e-12)


def test_a_vllm_choice_without_any_logprobs_still_asks_for_prompt_logprobs():
    response = completion([PROMPT], vllm=True)
    response["choices"][0]["logprobs"] = None
    assert detect_row_format(response) == "vllm"


def test_generated_tokens_are_left_out_and_the_prompt_counts_once():
    """n=3 with generated tokens: one row, the prompt's."""
    choices = [
        generated(PROMPT, [" on", " it"], [-1.0, -0.5]),
        generated(PROMPT, [" by"], [-3.0]),
        generated(PROMPT, [" down", "."], [-0.25, -0.125]),
    ]
    response = completion(choices, {"prompt_tokens": 3, "completion_tokens": 5})
    assert totals(openai_rows(response)) == [(7.75, 2, 1)]


def test_completions_that_open_alike_are_cut_where_the_prompt_ends():
    """Two samples whose completions share their first token: usage says the prompt is three
    tokens, so the shared " on" is generated, left out."""
    choices = [
        generated(PROMPT, [" on", " it"], [-1.0, -0.5]),
        generated(PROMPT, [" on", " top"], [-1.0, -2.0]),
    ]
    response = completion(choices, {"prompt_tokens": 3})
    assert totals(openai_rows(response)) == [(7.75, 2, 1)]


def test_a_batch_of_prompts_sampled_twice_counts_each_prompt_once():
    """Two prompts, n=2, nothing generated: usage counts 3 + 4 prompt tokens."""
    response = completion([PROMPT, PROMPT, OTHER, OTHER], {"prompt_tokens": 7})
    assert totals(openai_rows(response)) == [(7.75, 2, 1), (1.75, 3, 1)]


def test_a_batch_of_prompts_sampled_twice_with_completions():
    choices = [
        generated(PROMPT, [" on"], [-1.0]),
        generated(PROMPT, [" by"], [-2.0]),
        generated(OTHER, [" away"], [-0.5]),
        generated(OTHER, ["."], [-4.0]),
    ]
    response = completion(choices, {"prompt_tokens": 7, "completion_tokens": 4})
    assert totals(openai_rows(response)) == [(7.75, 2, 1), (1.75, 3, 1)]


def test_one_prompt_sent_twice_at_n_1_is_two_requests_by_its_usage():
    """usage counts both copies (6 = 3 + 3): two sequences. Without usage or finish_reason two
    equal choices cannot be told from two samples of one prompt and give one, as vLLM's
    prompt_logprobs do."""
    twice = completion([PROMPT, PROMPT], {"prompt_tokens": 6})
    assert totals(openai_rows(twice)) == [(7.75, 2, 1), (7.75, 2, 1)]
    del twice["usage"]
    for choice in twice["choices"]:
        del choice["finish_reason"]
    assert totals(openai_rows(twice)) == [(7.75, 2, 1)]
    # each copy generating a token: 3 shared tokens cannot hold the 6 usage counts, so two
    # prompts; both stopped at max_tokens, so each generated half of completion_tokens
    sampled = [generated(PROMPT, [" on"], [-1.0]), generated(PROMPT, [" by"], [-2.0])]
    response = completion(sampled, {"prompt_tokens": 6, "completion_tokens": 2})
    assert totals(openai_rows(response)) == [(7.75, 2, 1), (7.75, 2, 1)]
    response["choices"][1]["finish_reason"] = "stop"  # it may have generated fewer
    with pytest.raises(ValueError, match="counts 6 prompt tokens for 2 choices"):
        openai_rows(response)


def test_a_batch_of_different_prompts_with_a_token_each_is_cut_when_each_stopped_at_max_tokens():
    """One sample per prompt (lm-eval's echo with max_tokens=1, batch_size 2): usage sums the
    prompts, but every choice stopped at max_tokens ("length"), so each generated
    completion_tokens / 2 = 1 token, left out. A choice that stopped otherwise may have
    generated fewer, and where each prompt ends is then not known."""
    choices = [generated(PROMPT, ["."], [-2.0]), generated(OTHER, ["."], [-3.0])]
    response = completion(choices, {"prompt_tokens": 7, "completion_tokens": 2})
    assert totals(openai_rows(response)) == [(7.75, 2, 1), (1.75, 3, 1)]
    response["choices"][0]["finish_reason"] = "stop"
    with pytest.raises(ValueError, match="one prompt per request"):
        openai_rows(response)
    response["choices"][0]["finish_reason"] = "length"
    response["usage"]["completion_tokens"] = 3  # not an even split: unequal counts
    with pytest.raises(ValueError, match="one prompt per request"):
        openai_rows(response)


def test_without_usage_finished_choices_are_refused_and_bare_ones_kept_whole():
    """Where the prompt ends in each choice is not known without usage.prompt_tokens: choices
    the API finished are refused; logprobs without finish_reason keep their rows as logged."""
    choices = [generated(PROMPT, [" on"], [-1.0]), generated(PROMPT, [" by"], [-2.0])]
    response = completion(choices)
    with pytest.raises(ValueError, match=r"no usage\.prompt_tokens"):
        openai_rows(response)
    for choice in response["choices"]:
        del choice["finish_reason"]
    assert totals(openai_rows(response)) == [(8.75, 3, 1), (9.75, 3, 1)]


def test_samples_that_do_not_echo_stay_a_sequence_each():
    """Without echo (no leading null) equal choices are two equal samples: two sequences."""
    sampled = ([" on", " it"], [-1.0, -0.5])
    response = completion([sampled, sampled], {"prompt_tokens": 3, "completion_tokens": 4})
    assert totals(openai_rows(response)) == [(1.5, 2, 0), (1.5, 2, 0)]


def test_a_count_beside_a_prompt_echoed_into_its_choices_is_the_prompts(tmp_path):
    """--bytes-field counts a one-sequence line; a prompt's n echoed choices are one sequence."""
    row = {**completion([PROMPT, PROMPT], {"prompt_tokens": 3}), "bytes": 8}
    body = perplexity(write_jsonl(tmp_path / "b.jsonl", [row]))
    assert body["sequences"] == 1
    assert body["bits_per_byte"] == pytest.approx(7.75 / 8 / math.log(2), rel=1e-12)


def test_a_sentinel_in_the_prompt_is_counted_once():
    prompt = (["x", "y"], [None, -9999.0])
    (row,) = openai_rows(completion([prompt, prompt], {"prompt_tokens": 2}))
    assert (row.nll, row.tokens, row.sentinels) == (9999.0, 1, 1)


# Two prompts at n=2 whose samples share generated tokens: the runs share 3 + 1 and 4 + 1
# leading tokens, 9, where usage counts 3 + 4 = 7; whether a prompt ends before or after the
# shared generated token cannot be told, and whole rows would count each prompt twice.
GREEDY = [
    generated(PROMPT, [" on"], [-0.125]),
    generated(PROMPT, [" on"], [-0.125]),
    generated(OTHER, [" away"], [-0.25]),
    generated(OTHER, [" away"], [-0.25]),
]


@pytest.mark.parametrize("vllm", [False, True])
def test_prompts_whose_samples_share_generated_tokens_are_refused(vllm):
    response = completion(GREEDY, {"prompt_tokens": 7, "completion_tokens": 4}, vllm=vllm)
    with pytest.raises(ValueError, match="share generated tokens") as raised:
        openai_rows(response)
    message = str(raised.value)
    assert "n=2 choices of 2 prompts" in message
    assert "one prompt per request" in message and "without echo" in message


def test_one_prompts_samples_sharing_a_token_are_enough_to_refuse():
    """Only the first prompt's samples open alike (3 + 1 shared), the second's differ (4):
    8 shared tokens for 7 counted, still two places the first prompt could end."""
    choices = [*GREEDY[:2], generated(OTHER, [" away"], [-0.25]), generated(OTHER, ["."], [-4.0])]
    with pytest.raises(ValueError, match="share generated tokens"):
        openai_rows(completion(choices, {"prompt_tokens": 7, "completion_tokens": 4}))


def test_fewer_prompt_tokens_than_choices_is_refused():
    """usage counts 3 prompt tokens for 4 choices that share no prompt of 3: whole rows would
    hold four prompts of at least one token each."""
    choices = [
        generated(PROMPT, [" on"], [-1.0]),
        generated(OTHER, [" by"], [-2.0]),
        generated(PROMPT, [" in"], [-3.0]),
        generated(OTHER, ["."], [-4.0]),
    ]
    with pytest.raises(ValueError, match="counts 3 prompt tokens for 4 choices"):
        openai_rows(completion(choices, {"prompt_tokens": 3, "completion_tokens": 4}))


def test_a_refused_response_is_one_line_naming_its_file_and_line(tmp_path):
    """The floor the prompts counted twice would pass (14 tokens; 3 + 4 + 2 scored tokens are
    right) is never reached: exit 2, nothing on stdout."""
    good = completion([PROMPT, PROMPT], {"prompt_tokens": 3})
    bad = completion(GREEDY, {"prompt_tokens": 7, "completion_tokens": 4})
    path = write_jsonl(tmp_path / "greedy.jsonl", [good, bad])
    result = run(["perplexity", path, "--json", "-q", "--min-tokens", "10"])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {path}:2: ")
    assert "share generated tokens" in line and "Traceback" not in result.stderr
