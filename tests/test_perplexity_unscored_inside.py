"""Bits per byte and word perplexity never count text whose NLL is not counted, unsaid.

A ``null`` in a per-token logprobs list after the first position is a token left unscored: a
row giving bytes or words beside it is refused (its counts would hold that token's text, its
NLL not), on every route that reads such a list (logprobs rows, native and sums rows carrying
one, JSON Lines small and past 64 KB, Parquet, summarize, the library reader). And with --by,
groups that carry no bytes (or words) but NLL are named in a pooled warning, with their
sequences, tokens and share of the NLL, as the pooled figure counts that NLL against the other
groups' bytes.

Hand values (bits per byte = sum NLL / ln 2 / sum bytes): two scored tokens of -2 over 20
bytes give 4 / ln 2 / 20 = 0.28853900817779...; rows a (NLL 10, 20 bytes), b (NLL 20, 0
bytes), c (NLL 30, 50 bytes) pool to 60 / ln 2 / 70 = 1.23659574933..., and b holds 20 / 60
= 33.3% of the NLL.
"""

from __future__ import annotations

import json
import math

import pytest
from harness import run

LN2 = math.log(2)
FILLER = 20_000  # rows of filler: past 64 KB, so the file takes the typed fast path
WHY = (
    "the {kind} of a sequence must be those of its scored tokens, and a null after the first "
    "position is a token of the text left unscored (its NLL missing, its {kind} counted): if "
    "the {name} field counts none of those tokens, drop their nulls from the list, else leave "
    "{name} out"
)


def _write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _error(result) -> str:
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.strip().splitlines()
    return line


def _report(args) -> tuple[dict, str]:
    result = run([*args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


FULL = {"logprobs": [-2.0, -2.0, -2.0, -2.0, -2.0], "bytes": 20}

# (the row, the options, what the message opens with, its count kind and field name)
INSIDE = {
    "logprobs bytes": (
        {"logprobs": [-2.0, None, None, None, -2.0], "bytes": 20},
        [],
        "bytes 20 with logprobs[1] null",
        ("bytes", "bytes"),
    ),
    "logprobs trailing null": (
        {"logprobs": [None, -2.0, -2.0, None], "bytes": 20},
        [],
        "bytes 20 with logprobs[3] null",
        ("bytes", "bytes"),
    ),
    "logprobs words": (
        {"logprobs": [-2.0, None, -2.0], "words": 4},
        [],
        "words 4 with logprobs[1] null",
        ("words", "words"),
    ),
    "logprobs zero bytes, words": (
        {"logprobs": [-2.0, None, -2.0], "bytes": 0, "words": 4},
        [],
        "words 4 with logprobs[1] null",
        ("words", "words"),
    ),
    "renamed fields": (
        {"lp": [-2.0, None, -2.0], "n_bytes": 9},
        ["--logprobs-field", "lp", "--bytes-field", "n_bytes"],
        "n_bytes 9 with lp[1] null",
        ("bytes", "n_bytes"),
    ),
    "native beside": (
        {"nll": 4.0, "tokens": 2, "logprobs": [-2.0, None, -2.0], "bytes": 20},
        [],
        "bytes 20 with logprobs[1] null",
        ("bytes", "bytes"),
    ),
    "sums beside": (
        {"sum_logprob": -4.0, "num_tokens": 2, "logprobs": [-2.0, None, -2.0], "bytes": 20},
        [],
        "bytes 20 with logprobs[1] null",
        ("bytes", "bytes"),
    ),
}


def _first(case: str) -> dict:
    """A first row like the case's, its list without nulls (the same fields, so the count
    pattern holds and the format is the case's)."""
    row, *_ = INSIDE[case]
    field = "lp" if "lp" in row else "logprobs"
    out = {**row, field: [-1.0, -1.0]}
    if "nll" in out:
        out.update(nll=2.0)
    if "sum_logprob" in out:
        out.update(sum_logprob=-2.0)
    return out


@pytest.mark.parametrize("case", list(INSIDE))
def test_counts_beside_a_null_inside_the_list_are_refused(tmp_path, case):
    row, options, opening, (kind, name) = INSIDE[case]
    path = _write(tmp_path / "in.jsonl", [_first(case), row])
    message = _error(run(["perplexity", path, "--json", "-q", *options]))
    assert message == f"Error: {path}:2: {opening}: {WHY.format(kind=kind, name=name)}"


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("case", ["logprobs bytes", "native beside"])
def test_a_large_file_refuses_it_on_the_same_line(tmp_path, case, workers):
    row, _, opening, (kind, name) = INSIDE[case]
    filler = [_first(case)] * FILLER
    path = _write(tmp_path / "big.jsonl", [*filler[:15_000], row, *filler[15_000:]])
    message = _error(run(["perplexity", path, "--json", "-q", "--workers", workers]))
    assert message == f"Error: {path}:15001: {opening}: {WHY.format(kind=kind, name=name)}"


def test_summarize_refuses_it_and_writes_nothing(tmp_path):
    row, _, opening, _ = INSIDE["logprobs bytes"]
    path = _write(tmp_path / "in.jsonl", [FULL, row])
    out = tmp_path / "s.cbs"
    message = _error(run(["summarize", path, "-o", str(out), "-q"]))
    assert message.startswith(f"Error: {path}:2: {opening}: ")
    assert not out.exists()


def test_parquet_rows_refuse_it_by_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "lp.parquet"
    table = pa.table({"logprobs": [[-2.0] * 5, [-2.0, None, None, None, -2.0]], "bytes": [20, 20]})
    pq.write_table(table, path)
    message = _error(run(["perplexity", str(path), "--json", "-q"]))
    assert message.startswith(f"Error: {path}: row 2: bytes 20 with logprobs[1] null: ")


def test_the_library_reader_refuses_it(tmp_path):
    from calibcli.errors import InputError
    from calibcli.io import read_perplexity

    path = _write(tmp_path / "in.jsonl", [FULL, INSIDE["logprobs bytes"][0]])
    with pytest.raises(InputError, match=r"in\.jsonl:2: bytes 20 with logprobs\[1\] null"):
        read_perplexity([path])


@pytest.mark.parametrize(
    "row",
    [
        {"logprobs": [None, -2.0, -2.0], "bytes": 20},  # the first token unscored
        {"logprobs": [-2.0, None, -2.0]},  # no counts
        {"logprobs": [-2.0, -2.0], "bytes": 20},  # no null
    ],
)
def test_a_leading_null_or_a_row_without_counts_is_read(tmp_path, row):
    report, _ = _report(["perplexity", _write(tmp_path / "ok.jsonl", [row]), "-q"])
    assert (report["total_tokens"], report["total_nll"]) == (2, 4.0)
    if "bytes" in row:
        assert report["bits_per_byte"] == pytest.approx(4 / LN2 / 20, rel=1e-12)


def test_zero_bytes_beside_a_null_inside_are_kept(tmp_path):
    # no text counted, so none is counted without its NLL: the zero-units warning says the rest
    path = _write(tmp_path / "z.jsonl", [{"logprobs": [-2.0, None, -2.0], "bytes": 0}])
    report, _ = _report(["perplexity", path, "-q"])
    assert (report["total_bytes"], report["bits_per_byte"]) == (0, None)


# --------------------------------------------------------------------------- groups of no bytes

GROUPS = [
    {"nll": 10.0, "tokens": 5, "bytes": 20, "words": 4, "g": "a"},
    {"nll": 20.0, "tokens": 10, "bytes": 0, "words": 0, "g": "b"},
    {"nll": 30.0, "tokens": 10, "bytes": 50, "words": 10, "g": "c"},
]
POOLED_BYTES = (
    "group 'b' carries no bytes, yet 1 sequence of 10 tokens and 33.3% of the total NLL: the "
    "pooled bits_per_byte and byte_perplexity count that NLL against the other groups' bytes, "
    "which is right only for tokens of no text (an end-of-text token)"
)
POOLED_WORDS = (
    "group 'b' carries no words, yet 1 sequence of 10 tokens and 33.3% of the total NLL: the "
    "pooled word_perplexity counts that NLL against the other groups' words, which is right "
    "only for tokens of no text (an end-of-text token)"
)


def test_a_group_of_no_bytes_is_named_at_the_pooled_figures(tmp_path):
    path = _write(tmp_path / "g.jsonl", GROUPS)
    report, stderr = _report(["perplexity", path, "--by", "g"])
    assert report["bits_per_byte"] == pytest.approx(60 / LN2 / 70, rel=1e-12)
    assert report["word_perplexity"] == pytest.approx(math.exp(60 / 14), rel=1e-12)
    assert report["groups"]["a"]["bits_per_byte"] == pytest.approx(10 / LN2 / 20, rel=1e-12)
    assert report["groups"]["b"]["bits_per_byte"] is None
    assert POOLED_BYTES in report["warnings"]
    assert POOLED_WORDS in report["warnings"]
    assert f"warning: {POOLED_BYTES}" in stderr
    assert f"warning: {POOLED_WORDS}" in stderr


def test_several_groups_of_no_bytes_are_counted_together(tmp_path):
    rows = [
        *GROUPS[:2],
        {"nll": 5.0, "tokens": 1, "bytes": 0, "g": "d"},
        {"nll": 5.0, "tokens": 2, "bytes": 0, "g": "d"},
        GROUPS[2],
    ]
    rows = [{k: v for k, v in r.items() if k != "words"} for r in rows]
    report, _ = _report(["perplexity", _write(tmp_path / "g.jsonl", rows), "--by", "g", "-q"])
    # b and d: 3 sequences, 13 tokens, NLL 30 of 70 = 42.857...%
    assert report["warnings"][-1] == (
        "2 groups (b, d) carry no bytes, yet 3 sequences of 13 tokens and 42.9% of the total "
        "NLL: the pooled bits_per_byte and byte_perplexity count that NLL against the other "
        "groups' bytes, which is right only for tokens of no text (an end-of-text token)"
    )


def test_a_group_of_no_bytes_and_no_nll_says_nothing_pooled(tmp_path):
    rows = [GROUPS[0], {"nll": 0.0, "tokens": 0, "bytes": 0, "words": 0, "g": "e"}]
    report, _ = _report(["perplexity", _write(tmp_path / "g.jsonl", rows), "--by", "g", "-q"])
    assert not [w for w in report["warnings"] if "carries no" in w]
