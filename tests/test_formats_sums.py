"""Per-sequence sums under other tools' names (``sums``), HF evaluate's per-text perplexities
(refused), and the one short line for input of no known format.

Expected figures are computed here from the rows as written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run, write_jsonl

HF = Path(__file__).resolve().parent / "fixtures" / "hf_evaluate" / "perplexity.json"


def perplexity(path):
    result = run(["perplexity", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


@pytest.mark.parametrize(
    ("rows", "nll"),
    [
        ([{"nll_sum": 4.5, "n_tokens": 3}, {"nll_sum": 1.25, "n_tokens": 2}], 5.75),
        ([{"sum_logprob": -4.5, "num_tokens": 3}, {"sum_logprob": -1.25, "num_tokens": 2}], 5.75),
    ],
)
def test_common_sum_names_are_read_without_flags(tmp_path, rows, nll):
    body, stderr = perplexity(write_jsonl(tmp_path / "s.jsonl", rows))
    assert body["format"] == "sums"
    assert (body["total_nll"], body["total_tokens"], body["sequences"]) == (nll, 5, 2)
    assert body["perplexity"] == pytest.approx(math.exp(nll / 5), rel=1e-15)
    assert "detected format: sums" in stderr


def test_sums_keep_bytes_and_words(tmp_path):
    rows = [
        {"nll_sum": 4.5, "n_tokens": 3, "bytes": 10, "words": 2},
        {"nll_sum": 1.5, "n_tokens": 2, "bytes": 6, "words": 1},
    ]
    body, _ = perplexity(write_jsonl(tmp_path / "s.jsonl", rows))
    assert body["total_bytes"] == 16
    assert body["bits_per_byte"] == pytest.approx(6.0 / 16 / math.log(2), rel=1e-15)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"sum_logprob": 0.5, "num_tokens": 2}, "sum_logprob 0.5 is positive"),
        ({"nll_sum": -1.0, "n_tokens": 2}, "nll_sum -1.0 is negative"),
        ({"nll_sum": 1.0, "n_tokens": 1.5}, "n_tokens 1.5 is not a non-negative integer"),
        ({"nll_sum": 1.0, "n_tokens": 0}, "nll_sum 1.0 > 0 with 0 n_tokens"),
        ({"sum_logprob": -3, "num_tokens": 0}, "sum_logprob -3 < 0 with 0 num_tokens"),
    ],
)
def test_sums_errors_name_the_field(tmp_path, row, message):
    path = write_jsonl(tmp_path / "s.jsonl", [{"nll_sum": 1.0, "n_tokens": 1}, row])
    if "sum_logprob" in row:
        path = write_jsonl(tmp_path / "s.jsonl", [{"sum_logprob": -1.0, "num_tokens": 1}, row])
    result = run(["perplexity", str(path)])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:2: {message}" + result.stderr.split(message, 1)[1]
    assert result.stderr.count("\n") == 1


def test_sums_are_not_calibration_rows(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [{"nll_sum": 1.0, "n_tokens": 1}])
    result = run(["calibrate", str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {path}:1: sums rows hold per-sequence sums (input for perplexity), not "
        "'confidence'/'correct'\n"
    )


def test_hf_evaluate_perplexities_are_refused():
    result = run(["perplexity", str(HF)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {HF}:1: HF evaluate perplexity output cannot give a corpus perplexity "
        "(per-text perplexities without token counts)\n"
    )


@pytest.mark.parametrize(
    "row",
    [
        {"nll_sum": 4.5, "n_tokens": 3, "sum_logprob": -4.5, "num_tokens": 3},
        {"nll_sum": 4.5, "n_tokens": 3, "sum_logprob": -4.5},
        {"nll_sum": 0, "n_tokens": 0, "sum_logprob": 0.0, "num_tokens": 0},
    ],
)
def test_a_row_giving_both_names_that_agree_is_read_once(tmp_path, row):
    path = write_jsonl(tmp_path / "s.jsonl", [row, {"nll_sum": 1.5, "n_tokens": 2}])
    body, _ = perplexity(path)
    assert (body["total_nll"], body["total_tokens"], body["sequences"]) == (
        row["nll_sum"] + 1.5,
        row["n_tokens"] + 2,
        2,
    )


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"nll_sum": 4.5, "n_tokens": 3, "sum_logprob": -2.0, "num_tokens": 3},
            "nll_sum 4.5 and sum_logprob -2.0 disagree (expected sum_logprob = -nll_sum)",
        ),
        (
            {"nll_sum": 4.5, "n_tokens": 3, "sum_logprob": 4.5, "num_tokens": 3},
            "nll_sum 4.5 and sum_logprob 4.5 disagree (expected sum_logprob = -nll_sum)",
        ),
        (
            {"nll_sum": 4.5, "n_tokens": 3, "sum_logprob": "-4.5", "num_tokens": 3},
            'nll_sum 4.5 and sum_logprob "-4.5" disagree (expected sum_logprob = -nll_sum)',
        ),
        (
            {"nll_sum": 4.5, "n_tokens": 3, "sum_logprob": -4.5, "num_tokens": 4},
            "n_tokens 3 and num_tokens 4 disagree",
        ),
    ],
)
def test_a_row_giving_both_names_that_disagree_is_refused(tmp_path, row, message):
    # which of the two a tool meant cannot be told: neither is read
    path = write_jsonl(tmp_path / "s.jsonl", [{"nll_sum": 1.0, "n_tokens": 1}, row])
    result = run(["perplexity", str(path)])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:2: {message}\n"
