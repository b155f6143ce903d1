"""vLLM server responses of n > 1 samples: the server copies a prompt's ``prompt_logprobs`` into
each of its ``n`` choices, so the prompt is one scored sequence, not n; a batch request's
different prompts stay a sequence each, and LLM.generate outputs a row each. Expected counts
and NLLs are sums of the logprobs written here."""

from __future__ import annotations

import json
import math

import pytest
from harness import run, write_jsonl

from calibcli.formats import vllm_rows


def prompt(ids, logprobs):
    """The ``prompt_logprobs`` of a prompt of token ``ids``: the first unscored, then each id at
    its logprob (another candidate beside it, so the id must be looked up)."""
    scored = [
        {str(i): {"logprob": lp, "rank": 1, "decoded_token": "x"}, "99999": {"logprob": -20.0}}
        for i, lp in zip(ids[1:], logprobs, strict=True)
    ]
    return [None, *scored]


def choice(index, ids, logprobs, text="t"):
    return {
        "index": index,
        "text": text,
        "logprobs": None,
        "finish_reason": "length",
        "prompt_logprobs": prompt(ids, logprobs),
        "prompt_token_ids": ids,
    }


def response(k, prompts, n, *, usage=True):
    """A completion response to a batch of ``prompts`` ((ids, logprobs) pairs), ``n`` choices
    of each, the way the server lays them out: a prompt's choices next to each other."""
    choices = []
    for ids, lps in prompts:
        for _ in range(n):
            choices.append(choice(len(choices), ids, lps, text=f"s{len(choices)}"))
    body = {"id": f"cmpl-{k}", "object": "text_completion", "created": 1, "model": "org/m"}
    body["choices"] = choices
    if usage:
        # the server counts each prompt's tokens once, however many samples it drew
        body["usage"] = {"prompt_tokens": sum(len(ids) for ids, _ in prompts)}
    return body


def perplexity(path, *args, code=0):
    result = run(["perplexity", path, "--json", "-q", *args])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


EASY = ([1, 2, 3, 4], [-0.5, -0.5, -0.5])
HARD = ([1, 5, 6, 7], [-4.0, -4.0, -4.0])


@pytest.mark.parametrize("usage", [True, False])
def test_n_samples_of_one_prompt_score_the_prompt_once(usage):
    (row,) = vllm_rows(response(0, [EASY], 3, usage=usage))
    assert (row.tokens, row.nulls) == (3, 1)
    assert row.nll == pytest.approx(1.5, abs=1e-12)


def test_gates_count_each_prompt_once(tmp_path):
    """40 responses of n = 2: 40 prompts of 3 scored tokens, not 80 of them."""
    path = write_jsonl(tmp_path / "n2.jsonl", [response(k, [HARD], 2) for k in range(40)])
    body = perplexity(path, "--min-tokens", "200", "--min-rows", "80", code=1)
    assert (body["sequences"], body["total_tokens"], body["null_logprobs"]) == (40, 120, 40)
    assert body["total_nll"] == pytest.approx(40 * 12.0, abs=1e-9)
    assert not body["gate"]["passed"]


def test_a_varying_n_does_not_weight_prompts_by_their_samples(tmp_path):
    """20 easy prompts sampled 4 times, 20 hard ones once: each prompt counts once, so the
    perplexity is exp((20 * 1.5 + 20 * 12) / 120), above the gate's 5."""
    rows = [response(k, [EASY], 4, usage=False) for k in range(20)]
    rows += [response(k, [HARD], 1, usage=False) for k in range(20, 40)]
    body = perplexity(write_jsonl(tmp_path / "mix.jsonl", rows), "--max-perplexity", "5", code=1)
    assert (body["sequences"], body["total_tokens"]) == (40, 120)
    assert body["perplexity"] == pytest.approx(math.exp((20 * 1.5 + 20 * 12.0) / 120), rel=1e-12)


def test_a_batch_of_different_prompts_gives_a_row_each():
    rows = vllm_rows(response(0, [EASY, HARD, EASY], 2))
    assert [r.tokens for r in rows] == [3, 3, 3]
    assert [r.nll for r in rows] == pytest.approx([1.5, 12.0, 1.5], abs=1e-12)


def test_one_prompt_sent_twice_at_n_1_is_two_requests_by_its_usage():
    """usage.prompt_tokens counts both copies (8 = 4 + 4): two rows; without usage the two
    equal choices cannot be told from two samples of one prompt, and give one."""
    twice = response(0, [EASY, EASY], 1)
    assert twice["usage"]["prompt_tokens"] == 8
    assert [r.tokens for r in vllm_rows(twice)] == [3, 3]
    del twice["usage"]
    assert [r.tokens for r in vllm_rows(twice)] == [3]


def test_a_count_beside_one_prompt_of_n_choices_is_the_prompts(tmp_path):
    """--bytes-field counts a one-sequence line; n choices of one prompt are one sequence."""
    row = {**response(0, [HARD], 3), "bytes": 12}
    body = perplexity(write_jsonl(tmp_path / "b.jsonl", [row]))
    assert body["sequences"] == 1
    assert body["bits_per_byte"] == pytest.approx(12.0 / 12 / math.log(2), rel=1e-12)


def test_llm_generate_outputs_are_a_row_each():
    """Each sampled output is its own completion: n outputs give n rows."""
    out = [
        {"token_ids": [7, 8], "logprobs": [{"7": {"logprob": -1.0}}, {"8": {"logprob": -2.0}}]},
        {"token_ids": [9], "logprobs": [{"9": {"logprob": -0.25}}]},
    ]
    generated = {"prompt_token_ids": EASY[0], "prompt_logprobs": prompt(*EASY), "outputs": out}
    assert [r.nll for r in vllm_rows(generated, part="outputs")] == [3.0, 0.25]
    assert [r.tokens for r in vllm_rows(generated)] == [3]
