"""Tables: Parquet files and Arrow IPC files (``.arrow``, ``.feather``), read with pyarrow (the
``calibcli[parquet]`` extra, imported only when such a file is read); :func:`table_rows` hands
CSV and TSV files to :mod:`calibcli.io.delimited`.

A table is read record batch by record batch (a Parquet file row group by row group), and each
batch becomes row objects (``RecordBatch.to_pylist``) that the row functions read exactly as
decoded JSON rows: the same field options (a dotted path reaches into a struct column), the
same checks and messages, the same figures as the JSON Lines the table was written from (a
float32 or float16 value is read as its shortest decimal spelling, as a JSON or CSV writer puts
it: :mod:`calibcli.io.narrow`). Memory holds one batch at a time. A row is located by its
1-based number in the table: errors read ``file.parquet: row 1234: confidence 1.5 is outside
[0, 1]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

PARQUET_MAGIC = b"PAR1"
ARROW_MAGIC = b"ARROW1"
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
    if head.startswith(ARROW_MAGIC):
        return "arrow"
    return None


def locator(number: int) -> str:
    """Where row ``number`` (1-based) of a table is, as errors print it after the path's ``:``
    (``file.parquet: row 12``), since a table has no lines."""
    return f" row {number}"


def _batches(path: str, kind: str) -> Iterator[Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from calibcli.io.documents import DocumentError

        raise DocumentError(MISSING, None) from None
    if kind == "parquet":
        with pq.ParquetFile(path) as table:
            yield from table.iter_batches(batch_size=BATCH_ROWS)
        return
    with pa.memory_map(path, "r") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


def table_rows(path: str, kind: str) -> Iterator[tuple[str | int, dict[str, Any]]]:
    """``(locator, row)`` of each row of a Parquet or Arrow IPC file, batch by batch; a file
    pyarrow cannot read raises :class:`~calibcli.io.documents.DocumentError` with its reason.
    A CSV or TSV file's rows are located by line (:func:`~calibcli.io.delimited.delimited_rows`).
    """
    from calibcli.io.documents import DocumentError
    from calibcli.io.narrow import written_columns

    if kind in ("csv", "tsv"):
        from calibcli.io.delimited import delimited_rows

        yield from delimited_rows(path, kind)
        return

    number = 0
    batches = _batches(path, kind)
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
