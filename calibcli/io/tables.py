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
a field name a struct column holds twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

PARQUET_MAGIC = b"PAR1"
ARROW_MAGIC = b"ARROW1"
STREAM_MAGIC = b"\xff\xff\xff\xff"
"""An Arrow IPC stream's first bytes: the continuation marker before its schema message."""
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
            yield from batches
            return
        reader = pa.ipc.open_file(source)
        _check_names(reader.schema)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


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


def table_rows(
    path: str, kind: str, limit: int | None = None
) -> Iterator[tuple[str | int, dict[str, Any]]]:
    """``(locator, row)`` of each row of a Parquet or Arrow IPC file, batch by batch; a file
    pyarrow cannot read, or whose names repeat, raises
    :class:`~calibcli.io.documents.DocumentError` with its reason; ``limit``: the most bytes a
    compressed table may decompress to.
    A CSV or TSV file's rows are located by line (:func:`~calibcli.io.delimited.delimited_rows`).
    """
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
        except DocumentError:
            raise
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid/ArrowIOError derive from these
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            where = locator(number + 1) if number else None  # None: the file cannot be opened
            raise DocumentError(f"cannot read the {kind} file: {reason}", where) from None
        if batch is None:
            return
        for row in written_columns(batch).to_pylist():
            number += 1
            yield locator(number), row
