"""A key given twice in one JSON object is read as its last value, as Python's json module
reads it, on every route (plain, gzip, standard input, a JSON array, the block decoder of a
large file), so a file's verdict does not depend on how it reached calibcli."""

from __future__ import annotations

import gzip
import json

import pytest
from harness import run

ROW = '{"confidence": 0.1, "confidence": 0.9, "correct": true}'
ESCAPED = '{"confidence": 0.1, "confid\\u0065nce": 0.9, "correct": false, "correct": true}'


def body(args, stdin=None):
    result = run([*args, "--json", "-q"], input=stdin)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("row", [ROW, ESCAPED])
def test_the_last_value_is_read_on_every_route(tmp_path, row):
    assert json.loads(row) == {"confidence": 0.9, "correct": True}  # the reference reading
    many = 3000  # over 64 KiB: the block decoder, and two workers
    plain = tmp_path / "rows.jsonl"
    plain.write_text((row + "\n") * many)
    packed = tmp_path / "rows.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    array = tmp_path / "rows.json"
    array.write_text("[" + ",".join([row] * many) + "]")
    small = tmp_path / "small.jsonl"
    small.write_text(row + "\n" + row + "\n")
    routes = [
        ["calibrate", str(plain), "--workers", "1"],
        ["calibrate", str(plain), "--workers", "2"],
        ["calibrate", str(packed)],
        ["calibrate", str(array)],
        ["calibrate", str(small)],
    ]
    for args in routes:
        found = body(args)
        assert (found["mean_confidence"], found["accuracy"]) == (0.9, 1.0), args
    found = body(["calibrate", "-"], stdin=plain.read_text())
    assert (found["mean_confidence"], found["accuracy"]) == (0.9, 1.0)
