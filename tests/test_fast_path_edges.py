"""Edges of the typed fast path (msgspec over whole blocks): empty lines at block boundaries, and
optional perplexity keys that only some blocks hold or whose letters appear without the key.
Every figure below is counted by hand from how the file is written."""

from __future__ import annotations

import pytest

from calibcli.io import InputError, read_calibration, read_perplexity
from calibcli.io.decode import _contains

BLOCK = 64 * 1024  # the smallest block that takes the typed path (SMALL_BLOCK)
ROW = '{"confidence": 0.75, "correct": true}'  # 37 bytes + newline
WRONG = '{"confidence": 0.75, "correct": false}'


@pytest.mark.parametrize(
    ("data", "key", "found"),
    [
        (b'{"nll": 1.0, "tokens": 2}\n', b'"bytes"', False),  # no "b" at all
        (b'{"nll": 1.0, "tokens": 2, "note": "sty eb"}\n', b'"bytes"', False),  # letters only
        (b'{"nll": 1.0, "tokens": 2, "note": "bytes"}\n', b'"bytes"', True),  # as a value
        (b'{"nll": 1.0, "tokens": 2, "bytes": 9}\n', b'"bytes"', True),
        (b'{"nll": 1.0, "tokens": 2, "\\u0062ytes": 9}\n', b'"bytes"', False),  # escaped
        (b"", b'"bytes"', False),
    ],
)
def test_key_search(data, key, found):
    assert _contains(data, key) is found
    assert _contains(memoryview(bytearray(data)), key) is found


def _rows_with_blanks(path, n, blank_every, bad_at=None):
    """``n`` rows alternating right and wrong (0-based row i right when i is even), an empty
    line after every ``blank_every`` rows; row ``bad_at`` has a confidence of 1.5. Returns the
    1-based line of each row."""
    lines, where = [], []
    for i in range(n):
        if bad_at == i:
            lines.append('{"confidence": 1.5, "correct": true}')
        else:
            lines.append(ROW if i % 2 == 0 else WRONG)
        where.append(len(lines))
        if (i + 1) % blank_every == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return where


@pytest.mark.parametrize("workers", [1, 2])
def test_empty_lines_on_every_block_boundary(tmp_path, workers):
    # rows of 38 or 39 bytes and an empty line after every 7: over 10,000 rows many blocks of
    # 64 KiB start or end right at an empty line, and the rest hold several
    path = tmp_path / "blanks.jsonl"
    _rows_with_blanks(path, 10_000, 7)
    data = read_calibration([str(path)], workers=workers, block_size=BLOCK)
    assert data.rows == 10_000
    assert data.stats.count.sum() == 10_000
    assert data.stats.accuracy[7] == 0.5  # 5,000 right of 10,000, all in the bin [0.7, 0.8)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("bad_at", [1_799, 1_800, 9_000])
def test_bad_row_after_empty_lines_names_its_line(tmp_path, workers, bad_at):
    path = tmp_path / "bad.jsonl"
    where = _rows_with_blanks(path, 10_000, 3, bad_at=bad_at)
    # row i sits on line i + 1 + i // 3 (one empty line after every third row)
    assert where[bad_at] == bad_at + 1 + bad_at // 3
    with pytest.raises(InputError) as info:
        read_calibration([str(path)], workers=workers, block_size=BLOCK)
    assert str(info.value) == f"{path}:{where[bad_at]}: confidence 1.5 is outside [0, 1]"


def _perplexity_file(path, n, row):
    path.write_text("".join(row(i) + "\n" for i in range(n)))


def test_bytes_in_every_row_are_totalled(tmp_path):
    path = tmp_path / "p.jsonl"
    _perplexity_file(path, 6_000, lambda i: f'{{"nll": 1.5, "tokens": 3, "bytes": {i % 5}}}')
    data = read_perplexity([str(path)], block_size=BLOCK, workers=1)
    assert data.sequences == 6_000
    assert data.total_tokens == 18_000
    assert data.total_bytes == 1_200 * (0 + 1 + 2 + 3 + 4)  # 12,000


def test_bytes_only_in_the_last_block_are_refused_on_their_line(tmp_path):
    # the key occurs in the last block only; the others are ruled out without the key search
    path = tmp_path / "p.jsonl"

    def row(i):
        return (
            '{"nll": 2.0, "tokens": 4, "bytes": 7}' if i == 5_999 else '{"nll": 2.0, "tokens": 4}'
        )

    _perplexity_file(path, 6_000, row)
    with pytest.raises(InputError) as info:
        read_perplexity([str(path)], block_size=BLOCK, workers=1)
    assert str(info.value) == (f'{path}:6000: field "bytes" is given here but not on earlier rows')


def test_letters_of_the_key_without_the_key(tmp_path):
    path = tmp_path / "p.jsonl"
    _perplexity_file(path, 6_000, lambda i: '{"nll": 0.5, "tokens": 1, "note": "sty eb"}')
    data = read_perplexity([str(path)], block_size=BLOCK, workers=1)
    assert (data.sequences, data.total_tokens, data.total_nll) == (6_000, 6_000, 3_000.0)
    assert data.total_bytes is None
    assert data.total_words is None


@pytest.mark.parametrize("workers", [1, 2])
def test_bad_count_in_a_late_block_names_its_line(tmp_path, workers):
    path = tmp_path / "p.jsonl"

    def row(i):
        if i == 5_500:
            return '{"nll": 1.0, "tokens": 2, "words": -3}'
        return '{"nll": 1.0, "tokens": 2}'

    _perplexity_file(path, 6_000, row)
    with pytest.raises(InputError) as info:
        read_perplexity([str(path)], block_size=BLOCK, workers=workers)
    assert str(info.value).startswith(f"{path}:5501: ")


# A block decodes in pieces of PIECE bytes cut at line ends; a small PIECE puts many piece ends
# in each block, next to every kind of row.


@pytest.mark.parametrize("piece", [1, 100, 4096])
def test_pieces_give_every_row_once(tmp_path, monkeypatch, piece):
    import calibcli.io.decode

    monkeypatch.setattr(calibcli.io.decode, "PIECE", piece)
    path = tmp_path / "p.jsonl"
    # row i: an NLL of i + 0.5, i % 7 + 1 tokens and twice as many bytes: totals in closed form
    n = 6_000
    _perplexity_file(
        path, n, lambda i: f'{{"nll": {i}.5, "tokens": {i % 7 + 1}, "bytes": {2 * (i % 7 + 1)}}}'
    )
    data = read_perplexity([str(path)], workers=1, block_size=BLOCK)
    tokens = sum(i % 7 + 1 for i in range(n))
    assert data.sequences == n
    assert data.total_tokens == tokens
    assert data.total_bytes == 2 * tokens
    assert data.total_nll == n * (n - 1) / 2 + n / 2  # Σ (i + 0.5), exact in doubles


@pytest.mark.parametrize("piece", [1, 100, 4096])
@pytest.mark.parametrize("bad_at", [0, 2_999, 5_999])
def test_bad_row_in_a_later_piece_names_its_line(tmp_path, monkeypatch, piece, bad_at):
    import calibcli.io.decode

    monkeypatch.setattr(calibcli.io.decode, "PIECE", piece)
    path = tmp_path / "bad.jsonl"
    where = _rows_with_blanks(path, 6_000, 5, bad_at=bad_at)
    with pytest.raises(InputError) as info:
        read_calibration([str(path)], workers=1, block_size=BLOCK)
    assert str(info.value) == f"{path}:{where[bad_at]}: confidence 1.5 is outside [0, 1]"


def test_rows_counted_in_pieces_keep_their_bins(tmp_path, monkeypatch):
    import calibcli.io.decode

    monkeypatch.setattr(calibcli.io.decode, "PIECE", 1000)
    path = tmp_path / "c.jsonl"
    # row i: confidence 0.05 + 0.1 * (i % 10), right when i % 3 == 0; 9,000 rows
    lines = [
        f'{{"confidence": {0.05 + 0.1 * (i % 10)!r}, "correct": {str(i % 3 == 0).lower()}}}'
        for i in range(9_000)
    ]
    path.write_text("\n".join(lines) + "\n")
    data = read_calibration([str(path)], workers=1, block_size=BLOCK)
    assert data.stats.count.tolist() == [900] * 10
    # bin k holds rows i = k (mod 10); right when i = 0 (mod 3): 300 of each 900
    assert data.stats.sum_correct.tolist() == [300] * 10
