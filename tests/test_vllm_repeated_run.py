"""A vLLM run appended to its file again is refused as a native or OpenAI run is: vLLM names each
request by ``request_id`` (it writes no ``id``), and every later row of the file is watched for
the first row's. The rows are built here: request k scores tokens k + 1, k + 2 and k + 3 of its
prompt with log-probabilities -(k + 1) / 4 each, the first token unscored (null), as vLLM writes
its prompt log-probabilities.
"""

from __future__ import annotations

import json
import math

import pytest
from harness import run


def request(k, ident=None):
    scored = [
        {str(k + j): {"logprob": -(k + 1) / 4, "rank": 1, "decoded_token": " t"}} for j in (1, 2, 3)
    ]
    return {
        "request_id": str(k) if ident is None else ident,
        "prompt": "padding " * 20,
        "prompt_token_ids": [k, k + 1, k + 2, k + 3],
        "prompt_logprobs": [None, *scored],
        "outputs": [],
    }


def write(path, requests):
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    return path


@pytest.mark.parametrize("n", [3, 600])  # one block, and many (the byte search of each block)
def test_a_run_appended_again_is_refused(tmp_path, n):
    path = write(tmp_path / "vllm.jsonl", [request(k) for k in range(n)] * 2)
    result = run(["perplexity", path])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: {path}:{n + 1}: the row of id '0' repeats the id of the file's first row (line "
        "1): a run appended to its file again would count twice (pass --all-runs to pool the "
        "rows on purpose, or --id-field to name the field that identifies a row)"
    )
    assert result.stdout == ""


def test_all_runs_pools_them_on_purpose(tmp_path):
    path = write(tmp_path / "vllm.jsonl", [request(k) for k in range(3)] * 2)
    result = run(["perplexity", path, "--all-runs", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    nll = 2 * sum(3 * (k + 1) / 4 for k in range(3))
    assert got["sequences"] == 6 and got["total_tokens"] == 18
    assert got["total_nll"] == pytest.approx(nll, rel=1e-15)
    assert got["perplexity"] == pytest.approx(math.exp(nll / 18), rel=1e-14)


def test_other_requests_are_read(tmp_path):
    """A request id that is only a prefix of the first's, or the same text nested in another
    key, is not a repeat."""
    rows = [request(0, "7"), request(1, "77"), {**request(2), "meta": {"request_id": "7"}}]
    path = write(tmp_path / "vllm.jsonl", rows)
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sequences"] == 3
