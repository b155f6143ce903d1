"""Tables: Parquet files and Arrow IPC files (``.arrow``, ``.feather``; the IPC file format, or
the stream format Hugging Face ``datasets`` writes as ``.arrow``), read with pyarrow (the
``calibcli[parquet]`` extra, imported only when such a file is read); :func:`table_rows` hands
CSV and TSV files to :mod:`calibcli.io.delimited`. A compressed table (``rows.parquet.gz``)
cannot be read in place: its content is decompressed into memory, at most the limit of a
compressed document (:data:`~calibcli.io.documents.MAX_DOCUMENT_BYTES` unless given).

A table is read record batch by record batch (a Parquet file row group by row group), and each
batch becomes row objects (``RecordBatch.to_pylist``) that the row functions read exactly as
decoded JSON rows: the same field options (a dotted path reaches into a struct column), the
same checks and messages, the same figures as the JSON Lines the table was written from (a
float32 or float16 value is read as its shortest decimal spelling, as a JSON or CSV writer puts
it: :mod:`calibcli.io.narrow`). Memory holds one batch at a time. A row is located by its
1-based number in the table: errors read ``file.parquet: row 1234: confidence 1.5 is outside
[0, 1]``. A column name the table holds twice is refused, as a CSV header's is, whether or not
a field option names it (a row object would keep only the last column of that name), and so is
a field name a struct column holds twice. A decimal is read as the JSON number its digits
spell (an int without fractional digits, else the float nearest them), as a CSV of the column
reads. An Arrow stream must end with its end-of-stream marker: pyarrow also ends a stream where
its bytes end, and a stream cut short at a batch's end would read as fewer rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

PARQUET_MAGIC = b"PAR1"
ARROW_MAGIC = b"ARROW1"
STREAM_MAGIC = b"\xff\xff\xff\xff"
"""An Arrow IPC stream's first bytes: the continuation marker before its schema message."""
_NO_LENGTH = b"\x00\x00\x00\x00"
"""A message length of 0: the end of an Arrow IPC stream, after the continuation marker."""
TABLE_KINDS = ("parquet", "arrow", "csv", "tsv")
"""Tables: Parquet and Arrow read here, CSV and TSV by :mod:`calibcli.io.delimited`."""

BATCH_ROWS = 65_536
"""Rows converted to objects at a time."""

MISSING = (
    "reading Parquet and Arrow files needs pyarrow: pip install 'calibcli[parquet]' "
    "(or pip install pyarrow)"
)


def table_kind(head: bytes) -> str | None:
    """``"parquet"`` or ``"arrow"`` from a file's first bytes, else None."""
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head.startswith((ARROW_MAGIC, STREAM_MAGIC)):
        return "arrow"
    return None


def locator(number: int) -> str:
    """Where row ``number`` (1-based) of a table is, as errors print it after the path's ``:``
    (``file.parquet: row 12``), since a table has no lines."""
    return f" row {number}"


def _batches(path: str, kind: str, limit: int | None) -> Iterator[Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from calibcli.io.documents import DocumentError

        raise DocumentError(MISSING, None) from None
    with _content(path, limit, pa) as source:
        if kind == "parquet":
            with pq.ParquetFile(source) as table:
                _check_names(table.schema_arrow)
                yield from table.iter_batches(batch_size=BATCH_ROWS)
            return
        stream = not source.read(len(ARROW_MAGIC)).startswith(ARROW_MAGIC)
        source.seek(0)
        if stream:
            batches = pa.ipc.open_stream(source)
            _check_names(batches.schema)
            last = source.tell()  # where the last message read ends
            while (batch := next(batches, None)) is not None:
                last = source.tell()
                yield batch
            _check_ended(source, last)
            return
        reader = pa.ipc.open_file(source)
        _check_names(reader.schema)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


def _check_ended(source: Any, last: int) -> None:
    """DocumentError unless the bytes the stream reader took after its last message are the
    end-of-stream marker: pyarrow ends a stream at the end of its bytes as well, so a stream
    cut short at a message's end would read as fewer rows. The reader reads one message at a
    time, so the marker is exactly what it took after ``last``: 0xFFFFFFFF then a length of 0,
    or the length alone that writers before Arrow 0.15 wrote."""
    from calibcli.io.documents import DocumentError

    taken = source.tell() - last
    source.seek(last)
    if source.read(taken) not in (STREAM_MAGIC + _NO_LENGTH, _NO_LENGTH):
        raise DocumentError(
            "the Arrow stream ends without its end-of-stream marker: the file is cut short", None
        )


def _content(path: str, limit: int | None, pa: Any) -> Any:
    """A pyarrow file over the table's bytes: the file memory-mapped, or a compressed file's
    content decompressed into memory (a DocumentError past ``limit`` bytes)."""
    from calibcli.io.compression import MAGIC_BYTES, codec_of, open_path
    from calibcli.io.documents import MAX_DOCUMENT_BYTES, DocumentError, too_large

    with open(path, "rb") as f:
        if codec_of(f.read(MAGIC_BYTES)) is None:
            return pa.memory_map(path, "r")
    cap = MAX_DOCUMENT_BYTES if limit is None else limit
    data = bytearray()
    with open_path(path) as stream:
        while part := stream.read(min(1 << 20, cap + 1 - len(data))):
            data += part
            if len(data) > cap:
                raise DocumentError(too_large(cap), None)
    return pa.BufferReader(pa.py_buffer(data))


def _check_names(schema: Any) -> None:
    """DocumentError when the table names a column twice, or a struct column (also inside a
    list or map column) a field twice: a row object keeps one value per name."""
    from calibcli.io.documents import DocumentError

    seen: set[str] = set()
    for field in schema:
        if field.name in seen:
            raise DocumentError(f"the table names column {field.name!r} twice", None)
        seen.add(field.name)
    for field in schema:
        repeated = _repeated_field(field.type, field.name)
        if repeated is not None:
            column, name = repeated
            raise DocumentError(f"column {column!r} names field {name!r} twice", None)


def _repeated_field(kind: Any, column: str) -> tuple[str, str] | None:
    """(struct column's dotted name, field name) of the first field name a struct inside
    ``kind`` holds twice, else None; a list's or map's fields add nothing to the name."""
    import pyarrow as pa

    fields = [kind.field(i) for i in range(kind.num_fields)]
    struct = pa.types.is_struct(kind)
    seen: set[str] = set()
    for field in fields:
        if struct and field.name in seen:
            return column, field.name
        seen.add(field.name)
    for field in fields:
        found = _repeated_field(field.type, f"{column}.{field.name}" if struct else column)
        if found is not None:
            return found
    return None


def _decimal(kind: Any) -> bool:
    """Whether an Arrow type holds decimal values, as itself or inside another type."""
    import pyarrow as pa

    if pa.types.is_decimal(kind):
        return True
    if pa.types.is_dictionary(kind):
        return _decimal(kind.value_type)
    return any(_decimal(kind.field(i).type) for i in range(kind.num_fields))


def _numbers(value: Any) -> Any:
    """A row object with each decimal in it read as the JSON number its digits spell: one of no
    fractional digits an int, else the float nearest its digits (``Decimal("0.05")`` as 0.05,
    ``Decimal("1.00")`` as 1.0), as a CSV or JSON file of the same column reads."""
    if isinstance(value, dict):
        return {key: _numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_numbers(item) for item in value)
    if isinstance(value, Decimal):
        return int(value) if value.as_tuple().exponent >= 0 else float(value)
    return value


def group_value(value: Any) -> Any:
    """A table's ``--by`` value that JSON has no type for, as the same column written to JSON
    or CSV reads: a date, time or timestamp as its ISO text (``2026-01-05``), a decimal as the
    number its digits spell; ValueError for any other (bytes)."""
    import datetime

    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return _numbers(value)
    what = "binary" if isinstance(value, bytes | bytearray) else f"a {type(value).__name__}"
    raise ValueError(f"is {what}: a group is named by text, a number, a boolean or a date")


def table_rows(
    path: str, kind: str, limit: int | None = None
) -> Iterator[tuple[str | int, dict[str, Any]]]:
    """``(locator, row)`` of each row of a Parquet or Arrow IPC file, batch by batch; a file
    pyarrow cannot read, or whose names repeat, raises
    :class:`~calibcli.io.documents.DocumentError` with its reason; ``limit``: the most bytes a
    compressed table may decompress to.
    A CSV or TSV file's rows are located by line (:func:`~calibcli.io.delimited.delimited_rows`).
    """
    from calibcli.io.compression import AppendedBytes
    from calibcli.io.documents import DocumentError
    from calibcli.io.narrow import written_columns

    if kind in ("csv", "tsv"):
        from calibcli.io.delimited import delimited_rows

        yield from delimited_rows(path, kind)
        return

    number = 0
    batches = _batches(path, kind, limit)
    while True:
        try:
            batch = next(batches, None)
        except (DocumentError, AppendedBytes):
            raise
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid/ArrowIOError derive from these
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            where = locator(number + 1) if number else None  # None: the file cannot be opened
            raise DocumentError(f"cannot read the {kind} file: {reason}", where) from None
        if batch is None:
            return
        rows = written_columns(batch).to_pylist()
        if any(_decimal(field.type) for field in batch.schema):
            rows = [_numbers(row) for row in rows]
        for row in rows:
            number += 1
            yield locator(number), row
