"""Zero bytes where a CSV or TSV table's records were to be (a write cut off by a crash, a
file allocated before it was written) are named as NUL padding at their line, as in JSON
Lines, not as a record of 1 cell where the header names 2 columns, nor, for a file of zeros
alone, as UTF-32 text to re-encode."""

from __future__ import annotations

import gzip
import json

import pytest
from harness import refused, run

PADDING = "line is zero bytes only (NUL padding, as a write cut off by a crash or a preallocated "


@pytest.mark.parametrize("kind,sep", [("csv", ","), ("tsv", "\t")])
@pytest.mark.parametrize("command", ["calibrate", "apply"])
def test_records_cut_off_by_zero_padding(tmp_path, kind, sep, command):
    path = tmp_path / f"crash.{kind}"
    body = "".join(f"0.{i % 9 + 1}{sep}{i % 2}\n" for i in range(40))
    path.write_bytes(f"confidence{sep}correct\n{body}".encode() + bytes(4096))
    args = [command, path]
    if command == "apply":
        fitted = tmp_path / "rows.jsonl"
        fitted.write_text(
            "".join(
                json.dumps({"confidence": (i % 9 + 1) / 10, "correct": i % 3 != 0}) + "\n"
                for i in range(200)
            )
        )
        cal = tmp_path / "cal.json"
        assert run(["fit", fitted, "--method", "platt", "-o", cal]).exit_code == 0
        args = [command, cal, path, "-o", tmp_path / f"out.{kind}"]
    line = refused(*args)
    assert line == f"Error: {path}:42: {PADDING}file leaves), not a {kind.upper()} record"
    assert not (tmp_path / f"out.{kind}").exists()


def test_a_one_column_table_does_not_read_padding_as_a_cell(tmp_path):
    path = tmp_path / "one.csv"
    path.write_bytes(b"confidence\n" + b"\0" * 8 + b"\n0.8\n")
    line = refused("calibrate", path)
    assert line == f"Error: {path}:2: {PADDING}file leaves), not a CSV record"


@pytest.mark.parametrize("name", ["zeros.csv", "zeros.tsv.gz"])
def test_a_table_of_zeros_alone_is_not_called_utf_32(tmp_path, name):
    data = bytes(1 << 14)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    line = refused("calibrate", path)
    assert line == f"Error: {path}:1: {PADDING}file leaves), not a table's header"


def test_utf_16_and_utf_32_tables_are_still_named_by_their_encoding(tmp_path):
    """A guard: text in a wide encoding holds other bytes between its zeros."""
    for encoding, named in (("utf-16-le", "UTF-16"), ("utf-32-le", "UTF-32")):
        path = tmp_path / f"wide_{named}.csv"
        path.write_bytes("confidence,correct\n0.9,1\n".encode(encoding))
        line = refused("calibrate", path)
        assert line.startswith(f"Error: {path}: {named} text; "), line
