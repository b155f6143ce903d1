"""perplexity refuses a row that scores no token yet gives bytes or words (the counts of a
sequence are those of its scored tokens), on every route that reads counts from a row: native,
logprobs, sums, vLLM and OpenAI rows; small files (line by line) and files past 64 KB (the
typed fast path) alike. A native row that also gives a sums pair (``sum_logprob``/
``num_tokens``, ``nll_sum``/``n_tokens``) is refused when the two disagree, as a row giving
two sums pairs is.

Hand values: tokens -1, -2, -3 give NLL 6 nats over 12 bytes and 3 words, so bits per byte =
6 / 12 / ln 2 = 0.72134752... and word perplexity = exp(6 / 3) = 7.3890560989...
"""

from __future__ import annotations

import json
import math

import pytest
from harness import run

BITS_PER_BYTE = 6 / 12 / math.log(2)
WORD_PERPLEXITY = math.exp(2.0)
WHY = "with no scored token: the {} of a sequence must be those of its scored tokens"
FILLER = 20_000  # rows of filler: past 64 KB, so the file takes the typed fast path


def _write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _error(result) -> str:
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.strip().splitlines()
    return line


VLLM_ONE_TOKEN = {
    "request_id": "0",
    "prompt": "Hi",
    "prompt_token_ids": [5],
    "prompt_logprobs": [None],
    "bytes": 200,
    "outputs": [],
}
VLLM_TWO_TOKENS = {
    "request_id": "1",
    "prompt": "The cat",
    "prompt_token_ids": [464, 3797],
    "prompt_logprobs": [None, {"3797": {"logprob": -9.12, "rank": 7, "decoded_token": " cat"}}],
    "bytes": 4,
    "outputs": [],
}

# (first row, the unscored row with counts, its message's field and value)
UNSCORED = {
    "logprobs empty": (
        {"logprobs": [-1.0, -2.0, -3.0], "bytes": 12, "words": 3},
        {"logprobs": [], "bytes": 500, "words": 100},
        "bytes 500",
        "bytes",
    ),
    "logprobs null": (
        {"logprobs": [-1.0, -2.0, -3.0], "bytes": 12, "words": 3},
        {"logprobs": [None], "bytes": 0, "words": 80},
        "words 80",
        "words",
    ),
    "native": (
        {"nll": 6.0, "tokens": 2, "bytes": 10, "words": 2},
        {"nll": 0.0, "tokens": 0, "bytes": 5, "words": 1},
        "bytes 5",
        "bytes",
    ),
    "native words": (
        {"nll": 6.0, "tokens": 2, "words": 2},
        {"nll": 0, "tokens": 0, "words": 1},
        "words 1",
        "words",
    ),
    "sums": (
        {"sum_logprob": -6.0, "num_tokens": 2, "bytes": 10},
        {"sum_logprob": 0.0, "num_tokens": 0, "bytes": 7},
        "bytes 7",
        "bytes",
    ),
    "vllm": (VLLM_TWO_TOKENS, VLLM_ONE_TOKEN, "bytes 200", "bytes"),
    "openai legacy echo": (
        {"choices": [{"logprobs": {"token_logprobs": [None, -1.5]}}], "bytes": 3},
        {"choices": [{"logprobs": {"token_logprobs": [None]}}], "bytes": 4},
        "bytes 4",
        "bytes",
    ),
}


@pytest.mark.parametrize("case", list(UNSCORED))
def test_a_row_of_no_scored_token_with_counts_is_refused(tmp_path, case):
    first, bad, shown, kind = UNSCORED[case]
    path = _write(tmp_path / "zb.jsonl", [first, bad])
    message = _error(run(["perplexity", path, "--json", "-q"]))
    assert message == f"Error: {path}:2: {shown} {WHY.format(kind)}"


@pytest.mark.parametrize("by", [[], ["--by", "g"]])
@pytest.mark.parametrize(
    "bad",
    [
        {"nll": 0.0, "tokens": 0, "bytes": 5, "g": "a"},
        {"nll": 0.0, "tokens": 0, "bytes": 0, "words": 2, "g": "a"},
    ],
)
def test_the_fast_path_refuses_it_on_the_same_line(tmp_path, bad, by):
    filler = [{"nll": 1.5, "tokens": 3, "bytes": 9, "g": "b"}] * FILLER
    if "words" in bad:
        filler = [{**r, "words": 2} for r in filler]
    path = _write(tmp_path / "big.jsonl", [*filler[:15_000], bad, *filler[15_000:]])
    message = _error(run(["perplexity", path, "--json", "-q", *by]))
    shown, kind = ("bytes 5", "bytes") if bad["bytes"] else ("words 2", "words")
    assert message == f"Error: {path}:15001: {shown} {WHY.format(kind)}"


def test_zero_counts_of_an_unscored_row_are_kept(tmp_path):
    rows = [
        {"logprobs": [-1.0, -2.0, -3.0], "bytes": 12, "words": 3},
        {"logprobs": [None], "bytes": 0, "words": 0},
        {"logprobs": [], "bytes": 0, "words": 0},
    ]
    result = run(["perplexity", _write(tmp_path / "z.jsonl", rows), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["total_bytes"], report["total_words"], report["total_tokens"]) == (12, 3, 3)
    assert report["bits_per_byte"] == pytest.approx(BITS_PER_BYTE, rel=1e-12)
    assert report["word_perplexity"] == pytest.approx(WORD_PERPLEXITY, rel=1e-12)


# --------------------------------------------------------------------------- sums beside native

SUMS_BESIDE = {
    "total": (
        {"sum_logprob": -4.0, "num_tokens": 2, "nll": 3.0, "tokens": 2},
        "nll 3.0 and sum_logprob -4.0 disagree (expected sum_logprob = -nll)",
    ),
    "count": (
        {"nll_sum": 3.0, "n_tokens": 5, "nll": 3.0, "tokens": 2},
        "tokens 2 and n_tokens 5 disagree",
    ),
    "escaped key": (
        {"nll": 3.0, "tokens": 2, "sum_logpro\\u0062": -4.0},
        "nll 3.0 and sum_logprob -4.0 disagree (expected sum_logprob = -nll)",
    ),
}


def _raw(row: dict) -> str:
    """A row as JSON, its escaped key spelled as given (json.dumps would escape the backslash)."""
    return json.dumps(row).replace("\\\\u", "\\u")


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("case", list(SUMS_BESIDE))
def test_a_native_row_disagreeing_with_its_sums_is_refused(tmp_path, case, size):
    row, why = SUMS_BESIDE[case]
    filler = [json.dumps({"nll": 1.5, "tokens": 3})] * (FILLER if size == "large" else 2)
    lines = [*filler[:2], _raw(row), *filler[2:]]
    path = tmp_path / "su9.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    message = _error(run(["perplexity", str(path), "--json", "-q"]))
    assert message == f"Error: {path}:3: {why}"


@pytest.mark.parametrize("n", [3, FILLER])
def test_a_native_row_agreeing_with_its_sums_is_read_once(tmp_path, n):
    rows = [{"nll": 3.0, "tokens": 2, "sum_logprob": -3.0, "num_tokens": 2, "nll_sum": 3.0}] * n
    result = run(["perplexity", _write(tmp_path / "a.jsonl", rows), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["sequences"], report["total_tokens"]) == (n, 2 * n)
    assert report["total_nll"] == pytest.approx(3.0 * n, rel=1e-12)
    assert report["perplexity"] == pytest.approx(math.exp(1.5), rel=1e-12)


def test_a_lone_count_beside_a_native_row_is_not_read(tmp_path):
    rows = [{"nll": 3.0, "tokens": 2, "num_tokens": 9}]
    result = run(["perplexity", _write(tmp_path / "c.jsonl", rows), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["total_tokens"] == 2


def test_a_block_without_the_sums_bytes_keeps_the_narrow_decoder():
    from calibcli.io.decode import _may_hold

    plain = b'{"nll": 1.5, "tokens": 3}\n' * 100
    assert not _may_hold(plain, b'"sum_logprob"')
    assert _may_hold(plain + b'{"sum_logprob": -1}\n', b'"sum_logprob"')
    assert _may_hold(plain + b'{"x": "\\u0041"}\n', b'"sum_logprob"')  # an escape may spell it


def test_dataframe_rows_of_no_scored_token_with_bytes_are_counted_as_bad():
    pa = pytest.importorskip("pyarrow")
    from calibcli.io.frames import FrameSpec, frame_summary

    batch = pa.record_batch(
        {"nll": [6.0, 0.0, 0.0], "tokens": [2, 0, 0], "bytes": [10, 5, 0]},
    )
    spec = FrameSpec("perplexity", ("nll", "tokens", "bytes", None))
    summary, problems = frame_summary([batch], spec, 0)
    assert summary is None
    assert problems.message() == (
        "column 'bytes': 1 bad value; the first is 5 (row 2 of partition 0): with no scored "
        "token: a sequence's counts are those of its scored tokens"
    )
