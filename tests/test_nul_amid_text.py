"""Zero bytes amid a row's text (a write cut off by a crash, the rest of the block left as it
was) break its JSON wherever they fall; json names what it expected first, often a character
before them. The refusal names the NUL byte and its column too, on every reading path: line by
line, a block decoded at once, standard input, a compressed file, a JSON array, a document."""

from __future__ import annotations

import gzip
import json

import pytest
from harness import refused

NOTE = "zero bytes amid the text, as a write cut off by a crash leaves"
GOOD = b'{"confidence": 0.5, "correct": true}\n'
# past 64 KiB: msgspec decodes the block at once, which then goes line by line
MANY = 3000


def broken(column: int) -> bytes:
    """A row whose text holds a NUL byte at ``column`` (1-based), the rest of it intact."""
    text = b'{"confidence": 0.25, "correct": true}'
    return text[: column - 1] + b"\0" + text[column:] + b"\n"


@pytest.mark.parametrize("before", [1, MANY])
@pytest.mark.parametrize("column", [17, 18, 30, 37])
def test_a_nul_in_a_row_is_named_with_its_column(tmp_path, before, column):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(GOOD * before + broken(column) + GOOD)
    line = refused("calibrate", path)
    assert line.startswith(f"Error: {path}:{before + 1}: line is not a JSON object ("), line
    assert line.endswith(f"; the line holds a NUL byte at column {column}: {NOTE})"), line


def test_standard_input_and_compressed_files_alike(tmp_path):
    data = GOOD + broken(18)
    said = f"the line holds a NUL byte at column 18: {NOTE})"
    assert refused("calibrate", "-", input=data).endswith(said)
    path = tmp_path / "rows.jsonl.gz"
    path.write_bytes(gzip.compress(data))
    assert refused("reliability", path).endswith(said)


def test_a_json_array_and_a_document_name_it(tmp_path):
    array = tmp_path / "rows.json"
    array.write_bytes(b"[\n" + GOOD.strip() + b",\n" + broken(18).strip() + b"\n]")
    line = refused("calibrate", array)
    assert line.startswith(f"Error: {array}:3: invalid JSON in the array: "), line
    assert line.endswith(f"; the line holds a NUL byte at column 18: {NOTE}"), line
    one = tmp_path / "one.jsonl"  # one line, its NUL inside a string
    one.write_bytes(b'{"confidence": 0.5, "correct": true, "note": "a\0b"}\n')
    line = refused("calibrate", one)
    assert line.endswith(f"; the line holds a NUL byte at column 48: {NOTE}"), line


def test_a_line_without_a_nul_says_nothing_of_one(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(GOOD + b'{"confidence": 0.5,, "correct": true}\n')
    assert "NUL" not in refused("calibrate", path)
    assert json.loads(GOOD)  # the good row is JSON
