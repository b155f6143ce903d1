"""Zero bytes where rows were to be, and text in UTF-16 or UTF-32, are each named for what they
are: a write cut off by a crash, or a file allocated before it was written, leaves a run of zero
bytes that is no text in any encoding, while text in UTF-16 or UTF-32 holds other bytes between
its zeros. Each is one error line naming the file and the line, with exit 2, and ``--part``
names the encoding of a file as a whole reading does before saying what it cannot cut.
"""

from __future__ import annotations

import json

import pytest
from harness import run

ZEROS = (
    "line is zero bytes only (NUL padding, as a write cut off by a crash or a preallocated "
    "file leaves), not JSON text"
)
# past SMALL_BLOCK (64 KiB): msgspec decodes the block, which then goes line by line
MANY = 3000


def one_error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def rows(n: int) -> bytes:
    return b"".join(
        json.dumps({"confidence": (i % 97) / 97, "correct": i % 3 != 0}).encode() + b"\n"
        for i in range(n)
    )


@pytest.mark.parametrize("rows_before", [40, MANY])
def test_rows_cut_off_by_zero_padding(tmp_path, rows_before):
    path = tmp_path / "crash.jsonl"
    path.write_bytes(rows(rows_before) + bytes(4096))
    line = one_error_line(run(["calibrate", path, "--json"]))
    assert line == f"Error: {path}:{rows_before + 1}: {ZEROS}"


@pytest.mark.parametrize(
    "padding", [b"\0", b"\0\0", b"\0\0\0", b"\0" * 8, b"\0\0\0\0\r", b"  \0\0\0\0\t"]
)
def test_a_line_of_zero_bytes_between_rows(tmp_path, padding):
    path = tmp_path / "padded.jsonl"
    path.write_bytes(rows(3) + padding + b"\n" + rows(2))
    assert one_error_line(run(["calibrate", path, "--json"])) == f"Error: {path}:4: {ZEROS}"


def test_a_file_allocated_and_never_written(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(bytes(1 << 16))
    assert one_error_line(run(["calibrate", path, "--json"])) == f"Error: {path}:1: {ZEROS}"


def test_a_perplexity_file_cut_off_by_zero_padding(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"nll": 1.0, "tokens": 2}\n' * 5 + bytes(100))
    assert one_error_line(run(["perplexity", path, "--json"])) == f"Error: {path}:6: {ZEROS}"


def test_part_of_a_file_cut_off_by_zero_padding(tmp_path):
    path = tmp_path / "crash.jsonl"
    path.write_bytes(rows(40) + bytes(4096))
    out = tmp_path / "part.cbs"
    line = one_error_line(run(["summarize", path, "--part", "1/2", "-o", out, "-q"]))
    assert line == f"Error: {path}:41: {ZEROS}"
    assert not out.exists()


# ---------------------------------------------------- text in UTF-16 or UTF-32 is still named


@pytest.mark.parametrize(
    ("encoding", "named"),
    [("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32-le", "UTF-32")],
)
@pytest.mark.parametrize("text", ['{"confidence": 0.9, "correct": false}', "{}", "  1"])
def test_a_wide_line_after_rows_is_named_by_its_encoding(tmp_path, encoding, named, text):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(rows(3) + text.encode(encoding) + b"\n" + rows(1))
    line = one_error_line(run(["calibrate", path, "--json"]))
    assert line == f"Error: {path}:4: line is {named} text; calibcli reads UTF-8"


@pytest.mark.parametrize(("encoding", "named"), [("utf-16-le", "UTF-16"), ("utf-32-le", "UTF-32")])
def test_part_names_the_encoding_of_wide_json_lines(tmp_path, encoding, named):
    text = "".join(
        json.dumps({"confidence": i / 10, "correct": i % 2 == 0}) + "\n" for i in range(10)
    )
    path = tmp_path / "wide.jsonl"
    path.write_bytes(text.encode(encoding))  # no byte-order mark
    out = tmp_path / "part.cbs"
    want = f"Error: {path}: {named} text; calibcli reads UTF-8"
    assert one_error_line(run(["summarize", path, "-o", out, "-q"])) == want
    for part in ("1/2", "2/2"):
        assert one_error_line(run(["summarize", path, "--part", part, "-o", out, "-q"])) == want
    assert not out.exists()


def test_part_still_refuses_a_json_document_in_utf8(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"confidence": 0.5, "correct": True}], indent=2))
    out = tmp_path / "part.cbs"
    line = one_error_line(run(["summarize", path, "--part", "1/2", "-o", out, "-q"]))
    cuts = "--part cuts plain JSON Lines at line starts; this is a whole JSON document"
    assert line == f"Error: {path}: {cuts}"
