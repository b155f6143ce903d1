"""perplexity's optional counts (``--bytes-field``, ``--words-field``) are read on every route:
small files (read line by line) and files past 64 KB (the typed fast path, which first searches
a block's bytes for the key), plain, gzip, stdin and with workers; with non-ASCII names, keys
a file spells with JSON escapes, and dotted paths into nested objects.

Every file repeats the four rows of ``PATTERN`` k times, so the totals are k times the
pattern's, summed by hand: NLL 8.0 nats, 10 tokens, 36 bytes, 7 words. Hence bits per byte =
8 / ln 2 / 36 and word perplexity = exp(8 / 7), whatever k.
"""

from __future__ import annotations

import json
import math

import pytest
from harness import pack, run

from calibcli.errors import InputError
from calibcli.io import read_perplexity

# (nll, tokens, bytes, words) of the four rows each file repeats
PATTERN = [(1.0, 2, 7, 1), (2.5, 3, 11, 2), (0.5, 1, 5, 1), (4.0, 4, 13, 3)]
NLL, TOKENS, BYTES, WORDS = 8.0, 10, 36, 7  # the pattern's column sums
BITS_PER_BYTE = 8.0 / math.log(2) / 36  # 0.32059889797532...
WORD_PERPLEXITY = math.exp(8.0 / 7)  # 3.13571476356982...

SMALL = 5  # 20 rows: well under 64 KB, read line by line
LARGE = 1_500  # 6,000 rows: past 64 KB, read by the typed fast path
BLOCK = 64 * 1024  # the smallest block that takes the typed path


def _lines(k: int, row, *, ensure_ascii: bool = True) -> bytes:
    """k repeats of the pattern, each row as ``row(nll, tokens, bytes, words)`` gives it."""
    rows = [row(*values) for _ in range(k) for values in PATTERN]
    return "".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in rows).encode()


def _route(tmp_path, data: bytes, route: str) -> tuple[list, bytes | None]:
    """The arguments naming the input, and stdin's bytes, for one route."""
    if route == "stdin":
        return ["-"], data
    if route == "gz":
        path = tmp_path / "p.jsonl.gz"
        path.write_bytes(pack(".gz", data))
        return [path], None
    path = tmp_path / "p.jsonl"
    path.write_bytes(data)
    return [path, "--workers", "2"] if route == "workers" else [path], None


def _report(tmp_path, data: bytes, route: str, *options: str) -> dict:
    args, stdin = _route(tmp_path, data, route)
    result = run(["perplexity", *args, *options, "--json", "-q"], input=stdin)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


def _assert_totals(report: dict, k: int, *, words: bool = True) -> None:
    assert report["sequences"] == 4 * k
    assert report["total_tokens"] == TOKENS * k
    assert report["total_nll"] == NLL * k
    assert report["total_bytes"] == BYTES * k
    assert report["bits_per_byte"] == pytest.approx(BITS_PER_BYTE, rel=1e-12)
    assert report["byte_perplexity"] == pytest.approx(math.exp(8.0 / 36), rel=1e-12)
    if words:
        assert report["total_words"] == WORDS * k
        assert report["word_perplexity"] == pytest.approx(WORD_PERPLEXITY, rel=1e-12)


ROUTES = ["file", "gz", "stdin", "workers"]
SIZES = [SMALL, LARGE]


# --------------------------------------------------------------------------- non-ASCII names


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("k", SIZES)
@pytest.mark.parametrize("ensure_ascii", [False, True], ids=["utf8-keys", "escaped-keys"])
def test_non_ascii_count_names_are_read_at_every_size(tmp_path, route, k, ensure_ascii):
    # ensure_ascii=True writes the keys escaped ("gr\u00f6\u00dfe"), False as UTF-8 ("größe")
    def row(nll, tokens, nbytes, words):
        return {"nll": nll, "tokens": tokens, "größe": nbytes, "wörter": words}

    data = _lines(k, row, ensure_ascii=ensure_ascii)
    assert (len(data) > BLOCK) is (k == LARGE)
    report = _report(tmp_path, data, route, "--bytes-field", "größe", "--words-field", "wörter")
    _assert_totals(report, k)


# --------------------------------------------------------------------------- escaped keys


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("k", SIZES)
def test_default_count_keys_spelled_with_escapes_are_read(tmp_path, route, k):
    def row(nll, tokens, nbytes, words):
        return (
            f'{{"nll": {nll}, "tokens": {tokens}, "\\u0062ytes": {nbytes}, "w\\u006frds": {words}}}'
        )

    data = "".join(row(*v) + "\n" for _ in range(k) for v in PATTERN).encode()
    _assert_totals(_report(tmp_path, data, route), k)


@pytest.mark.parametrize("workers", [1, 2])
def test_blocks_of_plain_and_of_escaped_keys_agree(tmp_path, workers):
    # the first half spells "bytes", the second "\u0062ytes": with 64 KB blocks some blocks
    # hold only the escaped spelling, and their rows still carry the field
    k = 4_000
    plain = '{{"nll": {}, "tokens": {}, "bytes": {}}}'
    escaped = '{{"nll": {}, "tokens": {}, "\\u0062ytes": {}}}'
    lines = [
        (plain if i < k // 2 else escaped).format(*PATTERN[j][:3]) + "\n"
        for i in range(k)
        for j in range(4)
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    assert path.stat().st_size > 4 * BLOCK
    data = read_perplexity([str(path)], block_size=BLOCK, workers=workers)
    assert (data.sequences, data.total_tokens, data.total_nll) == (4 * k, TOKENS * k, NLL * k)
    assert data.total_bytes == BYTES * k
    assert data.total_words is None


def test_mixed_spellings_on_the_command_line(tmp_path):
    # one 1 MB block of plain keys, then blocks of escaped ones
    k = 8_000
    plain = _lines(k, lambda n, t, b, w: {"nll": n, "tokens": t, "bytes": b})
    escaped = plain.replace(b'"bytes"', b'"\\u0062ytes"')
    report = _report(tmp_path, plain + escaped, "file")
    _assert_totals(report, 2 * k, words=False)
    assert "total_words" not in report


def test_escapes_elsewhere_keep_a_missing_count_missing(tmp_path):
    # text with \u escapes but no bytes key: the count stays absent, with no warning
    k = LARGE
    data = _lines(k, lambda n, t, b, w: {"nll": n, "tokens": t, "text": "naïve"})
    assert b"\\u00ef" in data
    report = _report(tmp_path, data, "file")
    assert report["sequences"] == 4 * k
    assert report["total_tokens"] == TOKENS * k
    assert "total_bytes" not in report
    assert "bits_per_byte" not in report


def test_a_count_first_given_in_a_late_block_is_refused_on_its_line(tmp_path):
    # the blocks before hold \u escapes, so their bytes column is read (all absent): the row
    # that first carries bytes is still named
    path = tmp_path / "p.jsonl"
    rows = ['{"nll": 1.0, "tokens": 2, "text": "caf\\u00e9"}'] * 5_999
    rows.append('{"nll": 1.0, "tokens": 2, "\\u0062ytes": 4}')
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_perplexity([str(path)], block_size=BLOCK, workers=1)
    assert str(info.value) == f'{path}:6000: field "bytes" is given here but not on earlier rows'


# --------------------------------------------------------------------------- dotted paths

DOTTED = ["--bytes-field", "m.bytes", "--words-field", "m.words"]


def _nested(nll, tokens, nbytes, words):
    return {"m": {"nll": nll, "tokens": tokens, "bytes": nbytes, "words": words}, "g": "a"}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("k", SIZES)
def test_dotted_count_fields_reach_into_nested_objects(tmp_path, route, k):
    data = _lines(k, _nested)
    options = ["--nll-field", "m.nll", "--tokens-field", "m.tokens", *DOTTED]
    _assert_totals(_report(tmp_path, data, route, *options), k)


@pytest.mark.parametrize("by", [[], ["--by", "g"]])
@pytest.mark.parametrize("k", SIZES)
def test_dotted_counts_beside_top_level_nll(tmp_path, k, by):
    def row(nll, tokens, nbytes, words):
        return {"nll": nll, "tokens": tokens, "g": "a", "m": {"bytes": nbytes, "words": words}}

    report = _report(tmp_path, _lines(k, row), "file", *DOTTED, *by)
    _assert_totals(report, k)
    if by:
        assert report["groups"]["a"]["total_bytes"] == BYTES * k


def test_a_key_written_whole_wins_over_the_path(tmp_path):
    # as for --nll-field: a top-level key "m.bytes" is read before the path m -> bytes
    def row(nll, tokens, nbytes, words):
        return {"nll": nll, "tokens": tokens, "m.bytes": nbytes, "m": {"bytes": 1}}

    report = _report(tmp_path, _lines(LARGE, row), "file", "--bytes-field", "m.bytes")
    _assert_totals(report, LARGE, words=False)


@pytest.mark.parametrize("k", SIZES)
def test_a_dotted_count_missing_on_a_later_row_names_it(tmp_path, k):
    lines = _lines(k, _nested).splitlines(keepends=True)
    lines[-1] = b'{"m": {"nll": 1.0, "tokens": 2, "words": 1}}\n'
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"".join(lines))
    args = ["perplexity", path, "--nll-field", "m.nll", "--tokens-field", "m.tokens", *DOTTED]
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == (
        f'Error: {path}:{4 * k}: missing field "m.bytes" (earlier rows have it)\n'
    )


@pytest.mark.parametrize("k", SIZES)
def test_a_bad_dotted_count_is_named(tmp_path, k):
    lines = _lines(k, _nested).splitlines(keepends=True)
    lines[2] = b'{"m": {"nll": 1.0, "tokens": 2, "bytes": -3, "words": 1}}\n'
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"".join(lines))
    result = run(
        ["perplexity", path, "--nll-field", "m.nll", "--tokens-field", "m.tokens", *DOTTED]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: {path}:3: m.bytes -3 is not a non-negative integer\n"


def test_dotted_counts_in_a_parquet_struct_column(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [_nested(*values) for _ in range(SMALL) for values in PATTERN]
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    options = ["--nll-field", "m.nll", "--tokens-field", "m.tokens", *DOTTED]
    result = run(["perplexity", path, *options, "--json", "-q"])
    assert result.exit_code == 0, result.output
    _assert_totals(json.loads(result.stdout), SMALL)


def test_a_dotted_csv_header_is_matched_whole(tmp_path):
    path = tmp_path / "p.csv"
    body = "".join(f"{n},{t},{b},{w}\n" for _ in range(SMALL) for n, t, b, w in PATTERN)
    path.write_text("nll,tokens,m.bytes,m.words\n" + body, encoding="utf-8")
    result = run(["perplexity", path, *DOTTED, "--json", "-q"])
    assert result.exit_code == 0, result.output
    _assert_totals(json.loads(result.stdout), SMALL)
