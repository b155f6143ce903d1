"""Bytes written onto a compressed file after it was compressed (``echo >> rows.jsonl.gz``,
a log line appended by a second writer) are refused and named, with their count, not in the
decompressors' words (a truncated stream, a bad magic number), which would send a user
looking for a cut-off download. Each file is compressed by a library other than calibcli's reader
where one exists (harness.pack), and the byte counts are those written here."""

from __future__ import annotations

import pytest
from harness import make_rows, pack, refused, run, write_jsonl

NAMES = {".gz": "gzip", ".zst": "Zstandard", ".xz": "xz", ".bz2": "bzip2"}
JUNK = b"this is not compressed data"  # 27 bytes


def appended(count, name):
    what, start = ("byte comes", "starts") if count == 1 else (f"{count} bytes come", "start")
    return (
        f"cannot decompress: its last {what} after the end of the {name} data and {start} no "
        f"{name} stream (written to the file after it was compressed?)"
    )


@pytest.fixture
def plain(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", make_rows(3000, seed=5))


@pytest.mark.parametrize("suffix", list(NAMES))
@pytest.mark.parametrize("workers", ["1", "2"])
def test_text_written_after_the_stream_is_named(tmp_path, plain, suffix, workers):
    damaged = tmp_path / f"damaged.jsonl{suffix}"
    damaged.write_bytes(pack(suffix, plain.read_bytes()) + JUNK)
    line = refused("calibrate", damaged, "--workers", workers, "--max-ece", "0.99")
    assert line == f"Error: {damaged}: {appended(27, NAMES[suffix])}"


@pytest.mark.parametrize("suffix", list(NAMES))
def test_one_newline_echoed_onto_the_file_is_not_called_a_cut_stream(tmp_path, plain, suffix):
    damaged = tmp_path / f"echoed.jsonl{suffix}"
    damaged.write_bytes(pack(suffix, plain.read_bytes()) + b"\n")
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(1, NAMES[suffix])}"


def test_the_count_starts_after_nul_padding_and_spans_a_second_stream(tmp_path, plain):
    """Two streams, NUL padding, then text: the count is of the bytes from the text on."""
    lines = plain.read_bytes().splitlines(keepends=True)
    first, second = pack(".gz", b"".join(lines[:10])), pack(".gz", b"".join(lines[10:]))
    damaged = tmp_path / "padded.jsonl.gz"
    damaged.write_bytes(first + second + b"\0" * 100 + JUNK)
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(27, 'gzip')}"


def test_apply_and_perplexity_name_it_too(tmp_path, plain):
    damaged = tmp_path / "damaged.jsonl.xz"
    damaged.write_bytes(pack(".xz", plain.read_bytes()) + JUNK)
    fitted = tmp_path / "cal.json"
    assert run(["fit", str(plain), "--method", "temperature", "-o", str(fitted)]).exit_code == 0
    out = tmp_path / "out.jsonl"
    assert refused("apply", fitted, damaged, "-o", out) == f"Error: {damaged}: {appended(27, 'xz')}"
    assert not out.exists()
    nll = write_jsonl(tmp_path / "nll.jsonl", [{"nll": 1.5, "tokens": 3}] * 40)
    cut = tmp_path / "nll.jsonl.bz2"
    cut.write_bytes(pack(".bz2", nll.read_bytes()) + JUNK)
    assert refused("perplexity", cut) == f"Error: {cut}: {appended(27, 'bzip2')}"


@pytest.mark.parametrize("suffix", list(NAMES))
def test_a_truncated_stream_is_still_called_one(tmp_path, plain, suffix):
    """A cut stream, and a stream followed by the first byte of a magic number, are not text
    written after the data (guards: these held before)."""
    whole = pack(suffix, plain.read_bytes())
    cut = tmp_path / f"cut.jsonl{suffix}"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    assert refused("calibrate", cut).endswith(
        "cannot decompress: Compressed file ended before the end-of-stream marker was reached"
    )
    started = tmp_path / f"started.jsonl{suffix}"
    started.write_bytes(whole + whole[:1])
    assert "written to the file after" not in refused("calibrate", started)


def test_standard_input_keeps_the_decompressor_s_words(plain):
    """A pipe cannot be read twice to count the bytes: the decompressor's own words stay."""
    line = refused("calibrate", "-", input=pack(".gz", plain.read_bytes()) + JUNK)
    assert line.startswith("Error: <stdin>: cannot decompress: ")
    assert "written to the file after" not in line
