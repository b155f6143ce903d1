"""A row that gives its sequence both as per-token logprobs (``--logprobs-field``) and as a total
(native ``nll``/``tokens``, or a sums pair) is refused when the two disagree, whichever format
reads it; a row whose two agree gives the figures of the same row without its list.

Messages are written out in full here; expected sums are those of the rows as written (sums of
a few binary fractions, exact in a double), and the float32 noise is made by numpy's float32 in
the test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from harness import pack, run, write_jsonl

DOC1 = {"id": "doc1", "nll": 2.5, "tokens": 4, "logprobs": [-2.0, -3.0, -2.5, -2.5]}
DOC2 = {"id": "doc2", "nll": 3.0, "tokens": 2, "logprobs": [-2.0, -4.0]}
MEAN = "nll 2.5 and the 4 logprobs (sum -10.0) disagree (expected nll = -sum(logprobs))"


def refused(args, path, line, message, input=None):
    result = run(["perplexity", *map(str, args), "--json", "-q"], input=input)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {path}:{line}: {message}\n"


def report(args, input=None) -> dict:
    result = run(["perplexity", *map(str, args), "--json", "-q"], input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --------------------------------------------------------------------------- the reproductions


@pytest.mark.parametrize("fmt", [[], ["--format", "jsonl"], ["--format", "logprobs"]])
def test_a_mean_nll_beside_its_logprobs_is_refused_whichever_format_reads_it(tmp_path, fmt):
    path = write_jsonl(tmp_path / "rows.jsonl", [DOC1, DOC2])
    refused([path, "--max-perplexity", "5", *fmt], path, 1, MEAN)


@pytest.mark.parametrize("fmt", [[], ["--format", "sums"], ["--format", "logprobs"]])
def test_a_sum_logprob_beside_other_logprobs_is_refused(tmp_path, fmt):
    row = {"sum_logprob": -2.5, "num_tokens": 4, "logprobs": [-2.0, -3.0, -2.5, -2.5]}
    path = write_jsonl(tmp_path / "s.jsonl", [row])
    message = (
        "sum_logprob -2.5 and the 4 logprobs (sum -10.0) disagree "
        "(expected sum_logprob = sum(logprobs))"
    )
    refused([path, "--max-perplexity", "5", *fmt], path, 1, message)


def test_a_token_count_beside_a_shorter_list_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [{"logprobs": [-1.0, -2.0], "tokens": 5}])
    message = "tokens 5 and the 2 logprobs disagree (expected tokens = the number of logprobs)"
    refused([path], path, 1, message)


# --------------------------------------------------------------------------- each disagreement


def _mixed(base):
    """Four logprobs in a log base other than e: their sum, as an NLL in nats would read."""
    return -math.fsum(v / math.log(base) for v in (-2.0, -3.0, -2.5, -2.5))


LIST = [-2.0, -3.0, -2.5, -2.5]  # sum -10.0
CASES = [
    # (row, options, message); the row is the second line of its file
    (
        {"nll": 10.0, "tokens": 5, "logprobs": LIST},
        [],
        "tokens 5 and the 4 logprobs disagree (expected tokens = the number of logprobs)",
    ),
    (
        {"nll": 10.0, "tokens": 4, "logprobs": [None, *LIST], "n_tokens": 5},
        [],
        "n_tokens 5 and the 4 logprobs disagree "
        "(expected n_tokens = the number of logprobs; 1 null not counted)",
    ),
    (
        {"logprobs": LIST, "num_tokens": 3},
        [],
        "num_tokens 3 and the 4 logprobs disagree (expected num_tokens = the number of logprobs)",
    ),
    (
        {"nll": _mixed(2), "tokens": 4, "logprobs": LIST},
        [],
        f"nll {_mixed(2)!r} and the 4 logprobs (sum -10.0) disagree (expected nll = "
        "-sum(logprobs))",
    ),
    (
        {"nll": _mixed(10), "tokens": 4, "logprobs": LIST},
        ["--format", "logprobs"],
        f"nll {_mixed(10)!r} and the 4 logprobs (sum -10.0) disagree (expected nll = "
        "-sum(logprobs))",
    ),
    (
        {"nll": -10.0, "logprobs": LIST},
        [],
        "nll -10.0 and the 4 logprobs (sum -10.0) disagree (expected nll = -sum(logprobs))",
    ),
    (
        {"nll_sum": 2.5, "n_tokens": 4, "logprobs": LIST},
        [],
        "nll_sum 2.5 and the 4 logprobs (sum -10.0) disagree (expected nll_sum = -sum(logprobs))",
    ),
    (
        {"nll_sum": 2.5, "n_tokens": 4, "logprobs": LIST},
        ["--format", "sums"],
        "nll_sum 2.5 and the 4 logprobs (sum -10.0) disagree (expected nll_sum = -sum(logprobs))",
    ),
    (
        {"nll": 5.0, "tokens": 2, "logprobs": [-math.inf, -5.0]},
        [],
        "nll 5.0 and the 2 logprobs (sum -Infinity) disagree (expected nll = -sum(logprobs))",
    ),
    (
        {"nll": math.inf, "tokens": 2, "logprobs": [-1.0, -5.0]},
        [],
        "nll Infinity and the 2 logprobs (sum -6.0) disagree (expected nll = -sum(logprobs))",
    ),
    (
        {"loss": 2.5, "n": 4, "out": {"lp": LIST}},
        ["--nll-field", "loss", "--tokens-field", "n", "--logprobs-field", "out.lp"],
        "loss 2.5 and the 4 out.lp (sum -10.0) disagree (expected loss = -sum(out.lp))",
    ),
    (
        {"nll": 1.5, "tokens": 2, "logprobs": [0.5, -1.0]},
        [],
        "logprobs[0] = 0.5 is greater than 0, not a log-probability",
    ),
]


def _first(row: dict, options: list) -> dict:
    """A row of the same shape as ``row`` that agrees with itself: the file's first row."""
    if "--nll-field" in options:
        return {"loss": 1.0, "n": 1, "out": {"lp": [-1.0]}}
    first = {"logprobs": [-1.0]}
    for name in row:
        if name in ("nll", "nll_sum"):
            first[name] = 1.0
        elif name in ("tokens", "n_tokens", "num_tokens"):
            first[name] = 1
    return first


@pytest.mark.parametrize(("row", "options", "message"), CASES)
def test_each_disagreement_is_refused_naming_its_line(tmp_path, row, options, message):
    path = write_jsonl(tmp_path / "d.jsonl", [_first(row, options), row])
    refused([path, *options], path, 2, message)


@pytest.mark.parametrize(
    ("nll", "logprobs"),
    [
        # a relative tolerance of 2^-6 of the larger: 10 - 10/64 = 9.84375 is at it
        (9.84375, LIST),
        # 64 beside a sum of -63: 1 apart, 1/64 of 64
        (64.0, [-31.5, -31.5]),
    ],
    ids=["nll-below", "nll-above"],
)
def test_a_sum_at_the_tolerance_agrees_and_one_past_it_is_refused(tmp_path, nll, logprobs):
    listed = -math.fsum(logprobs)
    assert abs(nll - listed) == max(nll, listed) / 64  # exactly at the tolerance
    inside = {"nll": nll, "tokens": len(logprobs), "logprobs": logprobs}
    got = report([write_jsonl(tmp_path / "in.jsonl", [inside])])
    assert (got["total_nll"], got["total_tokens"]) == (nll, len(logprobs))
    past = nll + (2.0**-30 if nll > listed else -(2.0**-30))
    path = write_jsonl(tmp_path / "out.jsonl", [{**inside, "nll": past}])
    message = (
        f"nll {past!r} and the {len(logprobs)} logprobs (sum {-listed!r}) disagree "
        "(expected nll = -sum(logprobs))"
    )
    refused([path], path, 1, message)


# --------------------------------------------------------------------------- agreeing rows


def _float32_rows(n_rows: int, seed: int, length: int = 400) -> tuple[list, list]:
    """Rows whose logprobs are float32 values and whose NLL is their float32 sum taken left to
    right, as a model's per-token scores accumulated in float32 give them; and the same rows
    without the list."""
    rng = np.random.default_rng(seed)
    with_list, plain = [], []
    for i in range(n_rows):
        values = (-rng.exponential(2.5, int(rng.integers(1, length)))).astype(np.float32)
        total = np.float32(0.0)
        for v in values:  # left to right, rounding to float32 at every step
            total = np.float32(total + v)
        row = {"id": f"q{i}", "nll": -float(total), "tokens": int(values.shape[0])}
        plain.append(row)
        with_list.append({**row, "logprobs": [float(v) for v in values]})
    return with_list, plain


HALF = Path(__file__).resolve().parent / "fixtures" / "half_precision_logprobs"


@pytest.mark.parametrize("name", ["float16.jsonl", "bfloat16.jsonl"])
def test_a_float32_loss_beside_a_half_precision_list_agrees(tmp_path, name):
    """A float32 NLL beside the list of a log-softmax in float16 or bfloat16 (the fixture's
    README): the rows read as their NLLs without the lists."""
    rows = [json.loads(line) for line in (HALF / name).read_text().splitlines()]
    listed = [-math.fsum(r["logprobs"]) for r in rows]
    apart = [abs(r["nll"] - s) / max(r["nll"], s) for r, s in zip(rows, listed, strict=True)]
    # past float32 noise, (n + 1) * 2^-24, in the short rows; within 2^-6 in all
    assert all(a > (r["tokens"] + 1) * 2.0**-24 for a, r in zip(apart[:2], rows[:2], strict=True))
    assert max(apart) < 2.0**-6
    plain = [{k: v for k, v in r.items() if k != "logprobs"} for r in rows]
    got = report([HALF / name])
    assert got == report([write_jsonl(tmp_path / "p.jsonl", plain)])
    assert got["total_nll"] == math.fsum(r["nll"] for r in rows)
    assert got["total_tokens"] == 1110


def _bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = values.astype(np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(
        0xFFFF0000
    )
    return bits.view(np.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_lists_beside_float32_sums_agree(tmp_path, dtype):
    """The float32 sum of a sequence's scores beside the same scores rounded to float16 or
    bfloat16: every row agrees and reads as its NLL without the list."""
    rng = np.random.default_rng(7)
    rows, plain = [], []
    for i in range(200):
        values = (-rng.exponential(1.5, int(rng.integers(1, 600)))).astype(np.float32)
        total = np.float32(0.0)
        for v in values:
            total = np.float32(total + v)
        half = values.astype(np.float16) if dtype == "float16" else _bfloat16(values)
        plain.append({"id": i, "nll": -float(total), "tokens": int(values.shape[0])})
        rows.append({**plain[-1], "logprobs": [float(v) for v in half]})
    got = report([write_jsonl(tmp_path / "l.jsonl", rows)])
    assert got == report([write_jsonl(tmp_path / "p.jsonl", plain)])
    assert got["total_nll"] == math.fsum(r["nll"] for r in plain)


def test_float32_sums_agree_and_read_as_without_the_list(tmp_path):
    with_list, plain = _float32_rows(300, seed=4)
    # the float32 sums do differ from the exact sums of their terms
    assert any(r["nll"] != -math.fsum(r["logprobs"]) for r in with_list)
    got = report([write_jsonl(tmp_path / "l.jsonl", with_list)])
    assert got == report([write_jsonl(tmp_path / "p.jsonl", plain)])
    assert got["total_nll"] == math.fsum(r["nll"] for r in plain)
    assert got["total_tokens"] == sum(r["tokens"] for r in plain)


def test_a_long_float32_sum_agrees(tmp_path):
    with_list, plain = _float32_rows(2, seed=5, length=60_000)
    got = report([write_jsonl(tmp_path / "l.jsonl", with_list)])
    assert got == report([write_jsonl(tmp_path / "p.jsonl", plain)])


def test_a_list_summed_left_to_right_agrees_with_its_fsum(tmp_path):
    rng = np.random.default_rng(6)
    rows, plain = [], []
    for i in range(200):
        values = (-rng.uniform(0.0, 9.0, 50)).tolist()
        total = 0.0
        for v in values:
            total += v
        plain.append({"id": i, "nll": -total, "tokens": 50})
        rows.append({**plain[-1], "logprobs": values})
    assert any(-r["nll"] != math.fsum(r["logprobs"]) for r in rows)
    assert report([write_jsonl(tmp_path / "l.jsonl", rows)]) == report(
        [write_jsonl(tmp_path / "p.jsonl", plain)]
    )


@pytest.mark.parametrize(
    "rows",
    [
        [
            {"logprobs": LIST, "sum_logprob": -10.0},
            {"logprobs": [-1.0, None, -0.5], "sum_logprob": -1.5},
        ],
        [
            {"logprobs": LIST, "nll": 10.0, "tokens": 4},
            {"logprobs": [-1.0, None, -0.5], "nll": 1.5, "tokens": 2},
        ],
    ],
    ids=["sum_logprob", "nll-tokens"],
)
def test_logprobs_rows_with_an_agreeing_total_read_their_logprobs(tmp_path, rows):
    got = report([write_jsonl(tmp_path / "l.jsonl", rows), "--format", "logprobs"])
    assert (got["total_nll"], got["total_tokens"], got["null_logprobs"]) == (11.5, 6, 1)


def test_both_infinite_agree(tmp_path):
    rows = [{"nll": math.inf, "tokens": 2, "logprobs": [-math.inf, -1.0]}, {"nll": 1, "tokens": 1}]
    got = report([write_jsonl(tmp_path / "i.jsonl", rows)])
    assert got["non_finite"]["total_nll"] == "inf"
    assert got["total_tokens"] == 3


def test_a_list_of_other_things_is_left_unread(tmp_path):
    rows = [{"nll": 2.5, "tokens": 2, "logprobs": [{"token": "a", "logprob": -1.0}]}]
    got = report([write_jsonl(tmp_path / "o.jsonl", rows)])
    assert (got["total_nll"], got["total_tokens"]) == (2.5, 2)


# --------------------------------------------------------------------------- every route

N = 3_000  # rows of a large file: past 64 KB, read by the typed fast path


def _large(bad_at: int | None, blank: bool = False) -> tuple[bytes, int]:
    """N native rows, the row at index ``bad_at`` DOC1 (a mean NLL beside its logprobs);
    with ``blank``, an empty line after every 100th row. Returns the bytes and DOC1's line."""
    lines, where = [], 0
    for i in range(N):
        row = {"id": f"group-prompt-{i}", "nll": 2.0 * (i % 7 + 1), "tokens": i % 7 + 1}
        if i == bad_at:
            row = DOC1
            where = len(lines) + 1
        lines.append(json.dumps(row))
        if blank and i % 100 == 99:
            lines.append("")
    return ("\n".join(lines) + "\n").encode(), where


@pytest.mark.parametrize("route", ["file", "gz", "stdin", "workers", "by", "id-field"])
@pytest.mark.parametrize("blank", [False, True], ids=["dense", "blank-lines"])
def test_a_disagreeing_row_deep_in_a_large_file_is_refused(tmp_path, route, blank):
    data, line = _large(2_500, blank)
    assert len(data) > 64 * 1024
    path = tmp_path / ("p.jsonl.gz" if route == "gz" else "p.jsonl")
    path.write_bytes(pack(".gz", data) if route == "gz" else data)
    args = {"workers": ["--workers", "2"], "by": ["--by", "id"], "id-field": ["--id-field", "id"]}
    if route == "stdin":
        refused(["-"], "<stdin>", line, MEAN, input=data)
    else:
        refused([path, *args.get(route, [])], path, line, MEAN)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_large_file_of_agreeing_rows_reads_as_without_the_lists(tmp_path, workers):
    data, _ = _large(None)
    rows = [json.loads(line) for line in data.splitlines()]
    listed = [
        {**r, "logprobs": [-2.0] * r["tokens"]} if i % 10 == 0 else r for i, r in enumerate(rows)
    ]
    a = write_jsonl(tmp_path / "l.jsonl", listed)
    b = write_jsonl(tmp_path / "p.jsonl", rows)
    got = report([a, "--workers", workers])
    assert got == report([b, "--workers", workers])
    assert got["total_nll"] == math.fsum(r["nll"] for r in rows)


def test_a_summary_part_refuses_the_row(tmp_path):
    data, line = _large(2_500)
    path = tmp_path / "p.jsonl"
    path.write_bytes(data)
    out = tmp_path / "s.sum"
    result = run(["summarize", path, "--part", "2/2", "-o", out, "-q"])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: {path}:{line}: {MEAN}\n"
    assert not out.exists()
