"""OpenAI and vLLM per-token logprobs (calibcli.formats.openai_rows / vllm_rows).

Each expected figure is written out by hand from the literal response in the test: the NLL as
the negated sum of the listed logprobs, the byte count as the total length of the byte lists.
"""

from __future__ import annotations

import math
import re

import pytest

from calibcli.formats import (
    PerplexityRow,
    detect_row_format,
    openai_rows,
    perplexity_rows,
    vllm_rows,
)

CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Paris é"},
            "logprobs": {
                "content": [
                    {"token": "Paris", "logprob": -0.25, "bytes": [80, 97, 114, 105, 115]},
                    {"token": " \u00e9", "logprob": -1.5, "bytes": [32, 195, 169]},
                ],
                "refusal": None,
            },
            "finish_reason": "stop",
        },
        {
            "index": 1,
            "message": {"role": "assistant", "content": "Lyon"},
            "logprobs": {
                "content": [{"token": "Lyon", "logprob": -3.0, "bytes": [76, 121, 111, 110]}]
            },
            "finish_reason": "stop",
        },
    ],
}


def test_chat_completion_gives_one_row_per_choice():
    rows = openai_rows(CHAT)
    # choice 0: -(-0.25 + -1.5) = 1.75 nats over 2 tokens, 5 + 3 bytes; choice 1: 3.0, 1, 4.
    assert rows == [PerplexityRow(1.75, 2, 8, None, 0, 0), PerplexityRow(3.0, 1, 4, None, 0, 0)]
    assert detect_row_format(CHAT) == "openai"
    assert perplexity_rows("openai", CHAT) == rows


def test_batch_api_line_is_unwrapped():
    line = {
        "id": "batch_req_1",
        "custom_id": "q-17",
        "response": {"status_code": 200, "request_id": "r", "body": CHAT},
        "error": None,
    }
    assert detect_row_format(line) == "openai"
    assert [r.nll for r in openai_rows(line)] == [1.75, 3.0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            {"custom_id": "q-1", "response": None, "error": {"message": "rate limited"}},
            "batch request 'q-1' failed: rate limited",
        ),
        (
            {"custom_id": "q-2", "response": {"status_code": 400, "body": {}}, "error": None},
            "batch request 'q-2' has status_code 400, not 200",
        ),
    ],
)
def test_failed_batch_lines_are_errors(line, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        openai_rows(line)


def test_missing_byte_list_leaves_bytes_unknown():
    response = {
        "choices": [
            {"logprobs": {"content": [{"token": "a", "logprob": -1.0}]}},
        ]
    }
    assert openai_rows(response) == [PerplexityRow(1.0, 1, None, None, 0, 0)]


def test_legacy_completion_with_echo_counts_the_leading_null():
    response = {
        "object": "text_completion",
        "choices": [
            {
                "text": "The cat sat",
                "logprobs": {
                    "tokens": ["The", " cat", " sat"],
                    "token_logprobs": [None, -4.0, -0.5],
                    "top_logprobs": None,
                    "text_offset": [0, 3, 7],
                },
            }
        ],
    }
    assert detect_row_format(response) == "openai"
    assert openai_rows(response) == [PerplexityRow(4.5, 2, None, None, 1, 0)]


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"choices": []}, "'choices' is a list, expected a non-empty list"),
        ({"choices": [{"message": {}, "logprobs": None}]}, "choices[0].logprobs is null"),
        (
            {"choices": [{"logprobs": {"content": [{"token": "x", "logprob": 0.5}]}}]},
            "choices[0].logprobs.content[0].logprob = 0.5 is greater than 0",
        ),
        (
            {"choices": [{"logprobs": {"token_logprobs": [None, "x"]}}]},
            "choices[0].logprobs.token_logprobs[1] is a string ('x'), expected a number or null",
        ),
        ({"choices": [{"logprobs": {"tokens": []}}]}, "has neither 'content'"),
    ],
)
def test_openai_errors_name_the_position(response, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        openai_rows(response)


# --------------------------------------------------------------------------- vLLM

# Position 2's rank-1 token (id 11, -0.1) is not the prompt's token (id 42, -2.3): the scored
# one is looked up by id. Position 3 holds only the prompt token.
VLLM = {
    "request_id": "0",
    "prompt": "a b c d",
    "prompt_token_ids": [7, 9, 42, 5],
    "prompt_logprobs": [
        None,
        {"9": {"logprob": -1.25, "rank": 1, "decoded_token": " b"}},
        {
            "11": {"logprob": -0.1, "rank": 1, "decoded_token": " x"},
            "42": {"logprob": -2.3, "rank": 4, "decoded_token": " c"},
        },
        {"5": {"logprob": -0.75, "rank": 2, "decoded_token": " d"}},
    ],
    "outputs": [
        {
            "index": 0,
            "text": " e",
            "token_ids": [8, 3],
            "cumulative_logprob": -0.6,
            "logprobs": [
                {"8": {"logprob": -0.5, "rank": 1, "decoded_token": " e"}},
                {
                    "2": {"logprob": -0.05, "rank": 1, "decoded_token": "!"},
                    "3": {"logprob": -0.1, "rank": 2, "decoded_token": "."},
                },
            ],
        }
    ],
}


def test_vllm_prompt_scores_the_prompt_token_not_rank_one():
    (row,) = vllm_rows(VLLM)
    assert row.nll == pytest.approx(1.25 + 2.3 + 0.75, abs=1e-15)
    assert (row.tokens, row.bytes, row.nulls, row.sentinels) == (3, None, 1, 0)
    assert detect_row_format(VLLM) == "vllm"


def test_vllm_generated_outputs():
    (row,) = vllm_rows(VLLM, part="outputs")
    assert row.nll == pytest.approx(0.5 + 0.1, abs=1e-15)
    assert row.tokens == 2 and row.nulls == 0


def test_vllm_server_response_reads_each_choice():
    response = {
        "choices": [
            {
                "text": "",
                "prompt_token_ids": [1, 2],
                "prompt_logprobs": [None, {"2": {"logprob": -0.5, "rank": 1}}],
            }
        ]
    }
    assert detect_row_format(response) == "vllm"
    assert vllm_rows(response) == [PerplexityRow(0.5, 1, None, None, 1, 0)]


def test_vllm_without_ids_needs_one_entry_per_position():
    single = {"prompt_logprobs": [None, {"9": {"logprob": -1.0}}]}
    assert vllm_rows(single)[0].nll == 1.0
    several = {"prompt_logprobs": [None, {"9": {"logprob": -1.0}, "3": {"logprob": -2.0}}]}
    with pytest.raises(ValueError, match="holds 2 candidate tokens and there is no"):
        vllm_rows(several)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"prompt_token_ids": [7, 9, 43, 5]}, "prompt_logprobs[2] has no entry for the scored"),
        ({"prompt_token_ids": [7, 9]}, "prompt_token_ids has 2 ids for 4 prompt_logprobs"),
        ({"prompt_logprobs": None}, "prompt_logprobs is null, expected a list"),
    ],
)
def test_vllm_errors(change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        vllm_rows({**VLLM, **change})


def test_vllm_null_after_the_first_position_is_a_missing_score():
    # vLLM leaves only the prompt's first token unscored; a null at position 2 is a missing
    # token, which was skipped and counted: the perplexity was of 2 tokens instead of 3
    prompt = {
        **VLLM,
        "prompt_logprobs": [*VLLM["prompt_logprobs"][:2], None, *VLLM["prompt_logprobs"][3:]],
    }
    with pytest.raises(ValueError, match=re.escape("prompt_logprobs[2] is null: vLLM scores")):
        vllm_rows(prompt)
    out = VLLM["outputs"][0]
    generated = {**VLLM, "outputs": [{**out, "logprobs": [None, *out["logprobs"][1:]]}]}
    with pytest.raises(ValueError, match=re.escape("outputs[0].logprobs[0] is null: vLLM")):
        vllm_rows(generated, part="outputs")


def test_vllm_minus_inf_and_sentinels():
    row = vllm_rows(
        {
            "prompt_token_ids": [1, 2, 3],
            "prompt_logprobs": [None, {"2": {"logprob": -9999.0}}, {"3": {"logprob": -math.inf}}],
        }
    )[0]
    assert row.nll == math.inf and row.sentinels == 1 and row.tokens == 2
