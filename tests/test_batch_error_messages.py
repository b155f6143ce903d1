"""A Batch API output line of a failed request (``"response": null`` with its ``error``, or a
status other than 200) is named by its failure under calibrate as under perplexity, never by
the gold label the failed request's line holds no answer for."""

from __future__ import annotations

import math

import pytest
from harness import refused, write_jsonl


def answered(i):
    tops = [{"token": "A", "logprob": math.log(0.7)}, {"token": "B", "logprob": math.log(0.3)}]
    token = {"token": "A", "logprob": math.log(0.7), "bytes": [65], "top_logprobs": tops}
    body = {
        "id": f"chatcmpl-{i}",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "A"},
                "logprobs": {"content": [token], "refusal": None},
                "finish_reason": "stop",
            }
        ],
    }
    return {
        "id": f"batch_req_{i}",
        "custom_id": f"q{i}",
        "response": {"status_code": 200, "request_id": f"req_{i}", "body": body},
        "error": None,
        "gold": "A",
    }


EXPIRED = {
    "id": "batch_req_x",
    "custom_id": "q5",
    "response": None,
    "error": {
        "code": "batch_expired",
        "message": "This request could not be executed before the completion window expired.",
    },
}
EXPIRED_SAID = (
    "batch request 'q5' failed: This request could not be executed before the completion "
    "window expired."
)
SERVER_ERROR = {
    "id": "batch_req_y",
    "custom_id": "q6",
    "response": {
        "status_code": 500,
        "request_id": "req_y",
        "body": {"error": {"message": "The server had an error", "type": "server_error"}},
    },
    "error": None,
}
SERVER_SAID = "batch request 'q6' has status_code 500, not 200"


@pytest.mark.parametrize(
    ("line", "message"), [(EXPIRED, EXPIRED_SAID), (SERVER_ERROR, SERVER_SAID)]
)
@pytest.mark.parametrize("before", [0, 3])
def test_calibrate_names_the_failed_request(tmp_path, line, message, before):
    path = write_jsonl(tmp_path / "out.jsonl", [*(answered(i) for i in range(before)), line])
    said = f"Error: {path}:{before + 1}: {message}"
    assert refused("calibrate", path, "--gold-field", "gold", "-q") == said
    assert refused("perplexity", path, "-q") == said


def test_a_failed_request_s_line_is_named_by_its_failure_whatever_its_gold(tmp_path):
    # the failed line holds no gold at all, and one holds a gold that is no option
    path = write_jsonl(tmp_path / "out.jsonl", [answered(0), {**EXPIRED, "gold": "Z"}])
    assert refused("calibrate", path, "--gold-field", "gold", "-q") == (
        f"Error: {path}:2: {EXPIRED_SAID}"
    )


def test_a_missing_gold_is_still_named_on_a_line_that_answered(tmp_path):
    line = answered(0)
    del line["gold"]
    path = write_jsonl(tmp_path / "out.jsonl", [line])
    assert refused("calibrate", path, "--gold-field", "gold", "-q") == (
        f"Error: {path}:1: missing field 'gold': no 'gold'"
    )
