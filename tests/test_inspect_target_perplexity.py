"""inspect-ai perplexity evals read the prompt tokens their scorer scored: the last N for
``target_perplexity`` (N its ``metadata.num_tokens``), every one for ``perplexity``, so that the
figure and its gate are inspect-ai's ``perplexity_per_token``; a sample scored both ways, or
whose N was not logged, is refused naming it. The logs are inspect-ai's own
(tests/fixtures/inspect_ai_scorers/README.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run

from calibcli.formats import inspect_prompt_row

HERE = Path(__file__).parent / "fixtures" / "inspect_ai_scorers"
TARGET = ("target_perplexity.eval", "target_perplexity.json")
# results.scores[0].metrics.perplexity_per_token.value as inspect-ai 0.3.285 logged it in
# target_perplexity.json (and .eval) and perplexity.json
INSPECT_TARGET = 15.528805783972233
INSPECT_WHOLE = 3.9467179442463474


def samples(name: str) -> list[dict]:
    return json.loads((HERE / name).read_text(encoding="utf-8"))["samples"]


def prompt_tokens(sample: dict) -> list[dict]:
    return sample["output"]["choices"][0]["prompt_logprobs"]["content"]


def report(*args, code=0):
    result = run(["perplexity", *args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return result, json.loads(result.stdout)


def scored_tail():
    """(target logprobs, their bytes) of target_perplexity.json by a hand loop: the last
    metadata.num_tokens prompt tokens of each sample."""
    logprobs, nbytes = [], 0
    for sample in samples("target_perplexity.json"):
        n = sample["scores"]["target_perplexity"]["metadata"]["num_tokens"]
        tail = prompt_tokens(sample)[-n:]
        logprobs += [t["logprob"] for t in tail]
        nbytes += sum(len(t["bytes"]) for t in tail)
    return logprobs, nbytes


@pytest.mark.parametrize("name", TARGET)
def test_target_perplexity_reads_the_tokens_the_scorer_scored(name):
    logprobs, nbytes = scored_tail()
    assert len(logprobs) == 19  # N = 1, 2, 3, 1, 2, 3, 1, 2, 3 and the default 1
    _, body = report(HERE / name)
    assert (body["sequences"], body["total_tokens"], body["total_bytes"]) == (10, 19, nbytes)
    assert body["total_nll"] == -math.fsum(logprobs)
    assert body["perplexity"] == math.exp(-math.fsum(logprobs) / 19)
    # inspect-ai adds the samples' sums left to right, calibcli exactly: the two differ by
    # 4 units in the last place (15.528805783972226 here)
    assert body["perplexity"] == pytest.approx(INSPECT_TARGET, rel=1e-15, abs=0)


@pytest.mark.parametrize("name", TARGET)
def test_the_gate_reads_inspects_figure(name):
    # every prompt token read gave 3.43 over 84 tokens, and this gate passed
    result = run(["perplexity", HERE / name, "--max-perplexity", "5", "-q"])
    assert result.exit_code == 1, result.stderr
    assert "15.5288" in result.stdout
    result = run(["perplexity", HERE / name, "--max-perplexity", "16", "-q"])
    assert result.exit_code == 0, result.stderr


def test_the_perplexity_scorer_reads_every_prompt_token():
    logprobs = [t["logprob"] for s in samples("perplexity.json") for t in prompt_tokens(s)]
    _, body = report(HERE / "perplexity.json")
    assert body["total_tokens"] == len(logprobs) == 30
    assert body["perplexity"] == INSPECT_WHOLE == math.exp(-math.fsum(logprobs) / 30)


def test_a_sample_scored_both_ways_is_refused():
    result = run(["perplexity", HERE / "perplexity_and_target.json", "-q"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    where = f"Error: {HERE / 'perplexity_and_target.json'}:samples[0] (id 1, epoch 1): "
    assert result.stderr.startswith(where)
    assert "scored by 'perplexity' (every prompt token) and by 'target_perplexity'" in result.stderr


def test_a_sample_the_scorer_left_unscored_is_refused():
    # sample 2 asked for 50 target tokens of a 7-token prompt: inspect-ai logged NaN, no N
    result = run(["perplexity", HERE / "target_unscored.json", "--max-perplexity", "100", "-q"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    where = f"Error: {HERE / 'target_unscored.json'}:samples[1] (id 2, epoch 1): "
    assert result.stderr.startswith(where)
    assert "scores.target_perplexity.metadata.num_tokens is missing" in result.stderr


def test_the_row_function_reads_the_last_n_tokens():
    sample = samples("target_perplexity.json")[2]
    n = sample["scores"]["target_perplexity"]["metadata"]["num_tokens"]
    tail = [t["logprob"] for t in prompt_tokens(sample)[-n:]]
    row = inspect_prompt_row(sample)
    assert (row.nll, row.tokens) == (-math.fsum(tail), n) == (-math.fsum(tail), 3)


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ({"num_tokens": 0}, "num_tokens is a number (0)"),
        ({"num_tokens": "2"}, "num_tokens is a string ('2')"),
        ({"num_tokens": True}, "num_tokens is a boolean (true)"),
        ({"num_tokens": 99}, "num_tokens is 99, more than the 6 tokens"),
        (None, "num_tokens is missing"),
    ],
)
def test_a_count_that_cannot_be_the_tokens_scored_is_refused(metadata, said):
    sample = samples("target_perplexity.json")[0]
    sample["scores"]["target_perplexity"]["metadata"] = metadata
    assert len(prompt_tokens(sample)) == 6
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        inspect_prompt_row(sample)


def test_two_target_scorers_of_different_counts_are_refused():
    sample = samples("target_perplexity.json")[1]
    second = json.loads(json.dumps(sample["scores"]["target_perplexity"]))
    second["metadata"]["num_tokens"] = 1
    sample["scores"]["target_perplexity1"] = second
    with pytest.raises(ValueError, match="scored different numbers"):
        inspect_prompt_row(sample)
    second["metadata"]["num_tokens"] = 2  # the same tokens: read once
    assert inspect_prompt_row(sample).tokens == 2
