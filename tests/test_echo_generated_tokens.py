"""A legacy completion with ``echo=True`` logs its prompt's tokens and then the tokens the model
generated after it (lm-evaluation-harness's ``local-completions`` and ``openai-completions``
send ``echo=True, max_tokens=1, logprobs=1`` and drop the generated token). Its perplexity is
the prompt's: the generated tokens are left out, cut where ``usage.prompt_tokens`` says the
prompt ends, and a response whose cut is not known is refused. A completion without echo is
still read whole, its generated text being what it scores. Every expected figure is computed
here by a loop over the raw JSON written in the test."""

from __future__ import annotations

import json
import math
import random

import pytest
from harness import run, write_jsonl

from calibcli.formats import openai_rows


def echoed(prompt, *completions, vllm=False, usage=True):
    """A completion echoing ``prompt`` (its logprobs, the first None) into one choice per
    completion (the logprobs of the tokens generated after it; none: max_tokens=0)."""
    completions = completions or ([],)
    choices = []
    for i, completion in enumerate(completions):
        values = list(prompt) + list(completion)
        tokens = [f" t{j}" for j in range(len(prompt))] + [f" g{i}"] * len(completion)
        choice = {
            "index": i,
            "text": "".join(tokens),
            "logprobs": {
                "tokens": tokens,
                "token_logprobs": values,
                "top_logprobs": [None]
                + [{t: v} for t, v in zip(tokens[1:], values[1:], strict=True)],
                "text_offset": [3 * j for j in range(len(values))],
            },
            "finish_reason": "length",
        }
        if vllm:  # the server writes its own fields into every choice, null when not asked for
            choice.update({"stop_reason": None, "prompt_logprobs": None})
        choices.append(choice)
    body = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m"}
    body["choices"] = choices
    if usage:
        made = sum(len(c) for c in completions)
        body["usage"] = {
            "prompt_tokens": len(prompt),
            "completion_tokens": made,
            "total_tokens": len(prompt) + made,
        }
    return body


def batch(*responses):
    """One response holding the choices of ``responses`` (a request of several prompts), its
    usage their sum."""
    body = dict(responses[0])
    body["choices"] = [c for r in responses for c in r["choices"]]
    for i, choice in enumerate(body["choices"]):
        choice["index"] = i
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    body["usage"] = {key: sum(r["usage"][key] for r in responses) for key in keys}
    return body


def prompt_reference(responses):
    """(nll, tokens) of the prompts alone: each response's first choice at positions 1 up to
    usage.prompt_tokens, the generated token after them left out (lm-eval's ``[ctxlen:-1]``
    drops it the same way)."""
    nll, tokens = 0.0, 0
    for response in responses:
        body = response.get("response", {}).get("body", response)
        end = body["usage"]["prompt_tokens"]
        values = body["choices"][0]["logprobs"]["token_logprobs"]
        for value in values[1:end]:
            nll -= value
            tokens += 1
    return nll, tokens


def lm_eval_payload_responses(count, seed):
    """``count`` responses to echo=True, max_tokens=1: prompts of 2 to 30 tokens, each followed
    by a likely generated token (logprob log 0.97), as a model's greedy token is."""
    rng = random.Random(seed)
    responses = []
    for k in range(count):
        size = rng.randint(2, 30)
        prompt = [None] + [math.log(rng.uniform(0.01, 0.5)) for _ in range(size - 1)]
        response = echoed(prompt, [math.log(0.97)])
        response["id"] = f"cmpl-{k}"
        responses.append(response)
    return responses


def perplexity(path, *args, code=0):
    result = run(["perplexity", path, "--json", "-q", *args])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout) if result.stdout else None, result


def refused(path, *needles):
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {path}:")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in line, line
    return line


# --------------------------------------------------------------------------- cut at usage


def test_lm_eval_loglikelihood_payload_scores_the_prompt_alone(tmp_path):
    """30 responses to echo=True, max_tokens=1: the report is the prompts' tokens and NLL, not
    the prompts' and the generated tokens' (which lowered the perplexity unsaid)."""
    responses = lm_eval_payload_responses(30, seed=3)
    nll, tokens = prompt_reference(responses)
    body, _ = perplexity(write_jsonl(tmp_path / "echo.jsonl", responses))
    assert (body["format"], body["sequences"], body["total_tokens"]) == ("openai", 30, tokens)
    assert body["null_logprobs"] == 30
    assert body["total_nll"] == pytest.approx(nll, rel=1e-12)
    assert body["perplexity"] == pytest.approx(math.exp(nll / tokens), rel=1e-12)


def test_a_perplexity_gate_is_judged_on_the_prompt(tmp_path):
    """A ceiling between the prompts' perplexity and the one the generated tokens pull down
    fails: the generated tokens are not the text scored."""
    responses = lm_eval_payload_responses(20, seed=11)
    nll, tokens = prompt_reference(responses)
    prompts = math.exp(nll / tokens)
    made = sum(r["choices"][0]["logprobs"]["token_logprobs"][-1] for r in responses)
    with_generated = math.exp((nll - made) / (tokens + len(responses)))
    assert with_generated < prompts
    ceiling = (with_generated + prompts) / 2
    path = write_jsonl(tmp_path / "echo.jsonl", responses)
    body, _ = perplexity(path, "--max-perplexity", f"{ceiling:.6f}", code=1)
    assert body["perplexity"] == pytest.approx(prompts, rel=1e-12)
    assert not body["gate"]["passed"]


def test_a_single_choice_is_cut_where_usage_says(tmp_path):
    """A prompt of four tokens (the first unscored) and three generated tokens."""
    response = echoed([None, -2.5, -1.25, -0.5], [-0.125, -0.25, -0.0625])
    (row,) = openai_rows(response)
    assert (row.nll, row.tokens, row.nulls, row.sentinels) == (2.5 + 1.25 + 0.5, 3, 1, 0)


def test_a_vllm_completions_echo_is_cut_the_same_way(tmp_path):
    """vLLM's /v1/completions writes its own null fields into each choice; echo with
    max_tokens=1 logs one generated token after the prompt."""
    response = echoed([None, -3.0, -1.5], [-0.03125], vllm=True)
    body, _ = perplexity(write_jsonl(tmp_path / "v.jsonl", [response]))
    assert (body["format"], body["total_tokens"], body["total_nll"]) == ("openai", 2, 4.5)


def test_a_batch_api_line_is_cut_by_its_bodys_usage(tmp_path):
    completion = echoed([None, -2.0, -0.75], [-0.5])
    line = {
        "id": "batch_req_1",
        "custom_id": "doc-1",
        "response": {"status_code": 200, "request_id": "r", "body": completion},
        "error": None,
    }
    nll, tokens = prompt_reference([line])
    body, _ = perplexity(write_jsonl(tmp_path / "batch.jsonl", [line]))
    assert (body["total_nll"], body["total_tokens"]) == (nll, tokens) == (2.75, 2)


def test_one_prompts_samples_give_the_prompt_once_without_their_completions():
    """n=3 with completions: one row, the prompt's three scored tokens."""
    prompt = [None, -4.0, -1.0, -0.25]
    response = echoed(prompt, [-1.0, -0.5], [-3.0], [-0.25, -0.125])
    assert response["usage"]["prompt_tokens"] == 4
    rows = openai_rows(response)
    assert [(r.nll, r.tokens, r.nulls) for r in rows] == [(5.25, 3, 1)]


def test_a_batch_of_prompts_sampled_twice_gives_each_prompt_once():
    """Two prompts at n=2 whose samples differ from the first generated token: the runs share
    3 and 4 tokens, which usage's 7 confirms; the completions are left out."""
    first = echoed([None, -5.25, -2.5], [-1.0], [-2.0])
    other = echoed([None, -1.0, -0.5, -0.25], [-0.5], [-4.0])
    for choice in other["choices"]:
        choice["logprobs"]["tokens"][:4] = ["A", " dog", " ran", " far"]
    response = batch(first, other)
    assert response["usage"]["prompt_tokens"] == 7
    rows = openai_rows(response)
    assert [(r.nll, r.tokens, r.nulls) for r in rows] == [(7.75, 2, 1), (1.75, 3, 1)]


# --------------------------------------------------------------------------- nothing generated


@pytest.mark.parametrize("vllm", [False, True])
def test_max_tokens_0_is_the_prompt_whole(tmp_path, vllm):
    """The response holds the prompt alone (usage.prompt_tokens equals its positions; vLLM
    counts the token it generated and dropped in completion_tokens): read as before."""
    response = echoed([None, -0.5, -2.25, -1.0], vllm=vllm)
    if vllm:
        response["usage"]["completion_tokens"] = 1
    again = {**response, "id": "cmpl-2"}
    body, _ = perplexity(write_jsonl(tmp_path / "zero.jsonl", [response, again]))
    assert (body["sequences"], body["total_tokens"], body["null_logprobs"]) == (2, 6, 2)
    assert body["total_nll"] == 2 * (0.5 + 2.25 + 1.0)


def test_a_batch_of_prompts_with_nothing_generated_keeps_a_row_each():
    response = batch(echoed([None, -1.0, -2.0]), echoed([None, -0.5]))
    assert response["usage"]["prompt_tokens"] == 5
    rows = openai_rows(response)
    assert [(r.nll, r.tokens) for r in rows] == [(3.0, 2), (0.5, 1)]


# --------------------------------------------------------------------------- not known: refused


def test_an_echo_finished_without_usage_is_refused(tmp_path):
    """finish_reason "length" without usage: max_tokens=1 cannot be told from max_tokens=0, so
    where the prompt ends is not known. One line naming file and line, exit 2."""
    good = echoed([None, -1.0], [-0.5])
    bad = echoed([None, -1.0, -2.0], [-0.5], usage=False)
    path = write_jsonl(tmp_path / "nousage.jsonl", [good, bad])
    line = refused(
        path, "no usage.prompt_tokens", "finish_reason 'length'", "keep the response's usage"
    )
    assert line.startswith(f"Error: {path}:2: choices[0]")


def test_logprobs_without_finish_reason_or_usage_are_read_as_the_prompt(tmp_path):
    """Logprobs taken out of a response, with neither usage nor finish_reason, are read whole,
    as the README's rule for echoed choices without usage says."""
    bare = {"choices": [{"logprobs": {"token_logprobs": [None, -1.5, -0.25]}}]}
    body, _ = perplexity(write_jsonl(tmp_path / "bare.jsonl", [bare]))
    assert (body["total_tokens"], body["total_nll"]) == (2, 1.75)


def test_a_batch_of_prompts_that_each_stopped_at_max_tokens_is_cut(tmp_path):
    """lm-eval with batch_size > 1: two prompts at n=1, a generated token each, both stopped at
    max_tokens; usage sums the prompts (3 + 4) and the completions (1 + 1), so each choice
    generated 2 / 2 = 1 token: the prompts are their first 3 and 4 positions."""
    response = batch(echoed([None, -1.0, -2.0], [-0.5]), echoed([None, -3.0, -1.0, -2.0], [-0.25]))
    assert response["usage"]["prompt_tokens"] == 7
    body, _ = perplexity(write_jsonl(tmp_path / "batch.jsonl", [response]))
    assert (body["sequences"], body["total_tokens"], body["total_nll"]) == (2, 5, 3.0 + 6.0)


def test_a_batch_of_prompts_that_may_have_generated_unequally_is_refused(tmp_path):
    """One choice stopped at its stop sequence: it may have generated fewer tokens than the
    other, so usage's sums do not say where each prompt ends."""
    response = batch(echoed([None, -1.0, -2.0], [-0.5]), echoed([None, -3.0, -1.0, -2.0], [-0.25]))
    response["choices"][1]["finish_reason"] = "stop"
    path = write_jsonl(tmp_path / "batch.jsonl", [response])
    refused(
        path, "counts 7 prompt tokens for 2 choices that echo 9 positions", "one prompt per request"
    )


def test_more_prompt_tokens_counted_than_echoed_is_refused(tmp_path):
    response = echoed([None, -1.0, -2.0])
    response["usage"]["prompt_tokens"] = 5
    refused(write_jsonl(tmp_path / "over.jsonl", [response]), "counts 5 prompt tokens", "3")


def test_choices_that_echo_beside_ones_that_do_not_are_refused(tmp_path):
    response = echoed([None, -1.0], [-0.5], [-0.25])
    response["choices"][1]["logprobs"]["token_logprobs"] = [-0.5, -0.25]
    refused(write_jsonl(tmp_path / "mixed.jsonl", [response]), "choices[1] does not")


# --------------------------------------------------------------------------- no echo: unchanged


def test_a_completion_without_echo_is_its_generated_text(tmp_path):
    """No leading null: the logprobs are the generated text's own, every one scored, however
    many tokens usage says the prompt had (legacy and chat alike)."""
    legacy = {
        "id": "cmpl-2",
        "object": "text_completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "text": " on it",
                "finish_reason": "length",
                "logprobs": {"tokens": [" on", " it"], "token_logprobs": [-1.0, -0.5]},
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }
    chat = {
        "id": "chat-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Hi."},
                "logprobs": {
                    "content": [
                        {"token": "Hi", "logprob": -0.25, "top_logprobs": []},
                        {"token": ".", "logprob": -0.75, "top_logprobs": []},
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    }
    nll = -sum(legacy["choices"][0]["logprobs"]["token_logprobs"]) - sum(
        t["logprob"] for t in chat["choices"][0]["logprobs"]["content"]
    )
    body, _ = perplexity(write_jsonl(tmp_path / "plain.jsonl", [legacy, chat]))
    assert (body["sequences"], body["total_tokens"], body["null_logprobs"]) == (2, 4, 0)
    assert body["total_nll"] == nll == 2.5
