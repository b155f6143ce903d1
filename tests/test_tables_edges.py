"""Edges of table input: an Arrow IPC stream cut short is refused on every route, never read as
fewer rows; Parquet decimals read as the numbers their digits spell; a table value of a type
JSON lacks (a timestamp, a date, binary) is named by its type, not by a Python repr; a CSV of
bare carriage-return line ends, and a table piped into standard input, get a user's message."""

from __future__ import annotations

import decimal
import gzip
import json

import pytest
from harness import run, write_jsonl

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (calibcli[parquet])")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")

CUT = "the Arrow stream ends without its end-of-stream marker: the file is cut short"
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"

# 40 rows: confidences 0.05, 0.15, ..., 0.95 four times; every other row correct
CONFIDENCES = [f"0.{i}5" for i in range(10)] * 4
CORRECT = [i % 2 == 0 for i in range(40)]


def stream_bytes(batches: int) -> bytes:
    """An Arrow IPC stream of ``batches`` record batches of 50 rows each, closed (so ended by
    the end-of-stream marker)."""
    schema = pa.schema([("confidence", pa.float64()), ("correct", pa.bool_())])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for b in range(batches):
            confidence = [(b * 50 + i) % 100 / 100 for i in range(50)]
            writer.write_batch(
                pa.record_batch([confidence, [i % 3 == 0 for i in range(50)]], schema=schema)
            )
    return sink.getvalue().to_pybytes()


def calibrate(*args, input=None):
    return run(["calibrate", *map(str, args), "--json", "-q"], input=input)


def test_a_closed_stream_ends_with_the_marker_and_reads_whole(tmp_path):
    full = stream_bytes(4)
    assert full.endswith(EOS)
    path = tmp_path / "full.arrow"
    path.write_bytes(full)
    result = calibrate(path)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 200


def test_the_legacy_four_byte_marker_ends_a_stream_too(tmp_path):
    # writers before Arrow 0.15 ended a stream with a message length of 0 alone
    path = tmp_path / "legacy.arrow"
    path.write_bytes(stream_bytes(4)[: -len(EOS)] + b"\x00\x00\x00\x00")
    result = calibrate(path)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 200


@pytest.fixture
def cut_stream() -> bytes:
    """The first two of four batches of a stream, cut where the second batch ends: the bytes
    of a two-batch stream without its marker, which the four-batch stream opens with."""
    two = stream_bytes(2)[: -len(EOS)]
    assert stream_bytes(4).startswith(two)
    return two


@pytest.mark.parametrize("route", ["file", "folder", "gzip", "workers"])
def test_a_stream_cut_at_a_batch_end_is_refused(tmp_path, cut_stream, route):
    if route == "gzip":
        path = tmp_path / "cut.arrow.gz"
        path.write_bytes(gzip.compress(cut_stream))
    else:
        path = tmp_path / "d" / "cut.arrow"
        path.parent.mkdir()
        path.write_bytes(cut_stream)
    given = {"folder": [path.parent], "workers": [path, "--workers", "2"]}.get(route, [path])
    result = calibrate(*given)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}: {CUT}\n"
    assert result.stdout == ""


def test_a_stream_cut_after_its_schema_is_refused(tmp_path):
    # no batch at all: the schema message, then nothing (a writer that never closed)
    empty = stream_bytes(0)
    path = tmp_path / "cut.arrow"
    path.write_bytes(empty[: -len(EOS)])
    result = calibrate(path)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}: {CUT}\n"


def write_parquet(path, columns):
    pq.write_table(pa.table(columns), path)
    return path


def test_decimal_columns_read_as_the_numbers_their_digits_spell(tmp_path):
    # the JSON Lines of the same digits: 0.05 is the float 0.05, a scale-0 decimal 1 the int 1
    rows = [
        {"confidence": float(c), "correct": int(y)}
        for c, y in zip(CONFIDENCES, CORRECT, strict=True)
    ]
    jsonl = write_jsonl(tmp_path / "rows.jsonl", rows)
    table = write_parquet(
        tmp_path / "rows.parquet",
        {
            "confidence": pa.array(map(decimal.Decimal, CONFIDENCES), pa.decimal128(5, 2)),
            "correct": pa.array((decimal.Decimal(int(y)) for y in CORRECT), pa.decimal128(3, 0)),
        },
    )
    from_table, from_jsonl = calibrate(table), calibrate(jsonl)
    assert from_table.exit_code == 0, from_table.stderr
    body = json.loads(from_table.stdout)
    # by hand: 40 rows, 20 correct; the mean of 0.05..0.95 is 0.5
    assert (body["n"], body["accuracy"], body["mean_confidence"]) == (40, 0.5, 0.5)
    assert body["reliability"]["count"] == [4] * 10  # 0.05 in bin 0, ..., 0.95 in bin 9
    body.pop("format", None)
    expected = json.loads(from_jsonl.stdout)
    expected.pop("format", None)
    assert body == expected


def test_a_decimal_inside_a_struct_is_read_as_a_number(tmp_path):
    values = [decimal.Decimal(c) for c in CONFIDENCES]
    kind = pa.struct([("p", pa.decimal128(5, 2))])
    table = write_parquet(
        tmp_path / "nested.parquet",
        {"pred": pa.array([{"p": v} for v in values], kind), "correct": CORRECT},
    )
    result = calibrate(table, "--confidence-field", "pred.p")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["mean_confidence"] == 0.5


def test_a_decimal_with_fractional_digits_is_no_correct_flag(tmp_path):
    # 1.0 is a float, as JSON's 1.0 is: correct takes true/false/0/1 only
    table = write_parquet(
        tmp_path / "rows.parquet",
        {
            "confidence": [0.5, 0.5],
            "correct": pa.array([decimal.Decimal("1.0")] * 2, pa.decimal128(3, 1)),
        },
    )
    result = calibrate(table)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {table}: row 1: correct 1.0 is not true/false/0/1\n"


@pytest.mark.parametrize(
    ("array", "shown"),
    [
        (pa.array([0, 0], pa.timestamp("s")), "1970-01-01 00:00:00 is a timestamp"),
        (pa.array([0, 0], pa.date32()), "1970-01-01 is a date"),
        (pa.array([1, 1], pa.duration("s")), "0:00:01 is a duration"),
        (pa.array([b"0.5", b"0.5"], pa.binary()), "0.5 is binary data"),
    ],
)
def test_a_value_of_no_json_type_is_named_by_its_type(tmp_path, array, shown):
    table = write_parquet(tmp_path / "c.parquet", {"confidence": array, "correct": [True] * 2})
    result = calibrate(table)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {table}: row 1: confidence {shown}, not a number\n"

    table = write_parquet(tmp_path / "y.parquet", {"confidence": [0.5] * 2, "correct": array})
    result = calibrate(table)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {table}: row 1: correct {shown}, not true/false/0/1\n"


@pytest.mark.parametrize(("name", "sep"), [("cr.csv", ","), ("cr.tsv", "\t")])
def test_bare_carriage_return_line_ends_are_named(tmp_path, name, sep):
    path = tmp_path / name
    path.write_bytes(f"confidence{sep}correct\r0.9{sep}true\r0.2{sep}false\r".encode())
    result = calibrate(path)
    assert result.exit_code == 2
    kind = name[-3:].upper()
    assert result.stderr == (
        f"Error: {path}:1: malformed {kind}: a bare carriage return (\\r) outside quotes: lines "
        "that end in one (old Mac line ends) must be converted to end in \\n or \\r\\n\n"
    )


def arrow_file_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    table = pa.table({"confidence": [0.5] * 3, "correct": [True] * 3})
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def parquet_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"confidence": [0.5] * 3, "correct": [True] * 3}), sink)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("content", "table"),
    [
        (parquet_bytes, "a Parquet"),
        (arrow_file_bytes, "an Arrow"),
        (lambda: stream_bytes(1), "an Arrow"),
        (lambda: gzip.compress(parquet_bytes()), "a Parquet"),
    ],
)
def test_a_table_piped_into_standard_input_gets_a_hint(content, table):
    data = content()
    # the first line, up to the first line feed, is no UTF-8 in any of these
    first = data if not data.startswith(b"\x1f\x8b") else gzip.decompress(data)
    with pytest.raises(UnicodeDecodeError):
        first.split(b"\n", 1)[0].decode("utf-8")
    result = calibrate("-", input=data)
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: <stdin>:1: line is not valid UTF-8; it opens as {table} table does: a table is "
        "read from a file given by its path, not from standard input\n"
    )


def test_text_that_opens_with_a_table_magic_gets_the_hint_too():
    result = calibrate("-", input=b"PAR1\n")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: <stdin>:1: line is not a JSON object (Expecting value at column 1); it opens as "
        "a Parquet table does: a table is read from a file given by its path, not from standard "
        "input\n"
    )
