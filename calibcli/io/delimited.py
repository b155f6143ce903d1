"""Delimited text tables: CSV (``.csv``) and TSV (``.tsv``) files with a header row, gzipped or
not, as spreadsheets and ``pandas.DataFrame.to_csv`` write them.

A file is one when its name ends so (``.csv.gz`` too): the name decides, since a header line
(``id,confidence,correct``) looks like no JSON. Each record becomes a row object keyed by the
header's names, which the row functions read as a decoded JSON row: the same field options (a
header ``doc.subject`` is matched whole, as a dotted key is), the same checks and messages, the
same figures as the JSON Lines the table was written from. Records stream: memory holds one at
a time. A record is located by the line it starts on, the header being line 1, so errors read
``preds.csv:4: confidence 1.5 is outside [0, 1]``.

Text has no types, so each cell is read as the JSON value it spells (:func:`cell`): an empty
cell is null; ``true``/``false`` in any case (pandas writes ``True``) a boolean; an integer
without leading zeros an int; a decimal number with a point or an exponent, or ``nan``/``inf``,
a float (a NaN confidence is then refused as NaN); anything else a string. So ``007`` stays
the string it names, and an id column of ``1, 2, 3`` reads as numbers, as it would in JSON.

The delimiter is a tab for ``.tsv``; for ``.csv`` it is a comma unless the header line holds
more semicolons or tabs than commas (spreadsheets in locales with a decimal comma write ``;``).
Quoted cells may hold delimiters, quotes (doubled) and line breaks. A space after a delimiter
is skipped. The text must be UTF-8 (a byte-order mark is skipped); a UTF-16 file, as a
spreadsheet's "Unicode text" export writes, is refused by name.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from typing import Any

KINDS = {".csv": "csv", ".tsv": "tsv"}
"""The file endings read as delimited tables (with or without ``.gz``), and their kinds."""

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?")
_WORDS: dict[str, Any] = {"true": True, "false": False}
_SPECIAL = {"nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}
_NUMBER_START = frozenset("0123456789-+.")
_WORD_START = frozenset("tTfFnNiI+-")  # true, false, nan, inf, infinity (signed)


def delimited_kind(name: str) -> str | None:
    """``"csv"`` or ``"tsv"`` when a file of this name is a delimited table, else None."""
    lowered = name.lower().removesuffix(".gz")
    for ending, kind in KINDS.items():
        if lowered.endswith(ending):
            return kind
    return None


def cell(text: str) -> Any:
    """The JSON value a cell's text spells (see the module docstring)."""
    if not text:
        return None
    first = text[0]
    if first in _NUMBER_START:
        if _INT.fullmatch(text):
            try:
                return int(text)
            except ValueError:  # more digits than int() converts: the row functions name it
                return text
        if _FLOAT.fullmatch(text):
            return float(text)
    if first in _WORD_START and len(text) <= 9:
        lowered = text.lower()
        if lowered in _WORDS:
            return _WORDS[lowered]
        if lowered in _SPECIAL:
            return float(lowered)
    return text


def delimited_rows(path: str, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, row)`` of each record of a CSV or TSV file (``kind``), after its header; blank
    lines are skipped. Raises :class:`~calibcli.io.documents.DocumentError` for text that is
    not UTF-8, a header naming a column twice, a record of another number of cells than the
    header, or a malformed quote, each at its line."""
    from calibcli.io.documents import DocumentError, open_content

    with open_content(path) as raw:
        lines = _Lines(raw)
        header_line = next((got for got in lines if got.strip()), None)
        if header_line is None:
            return
        header_at = lines.count
        delimiter = "\t" if kind == "tsv" else _delimiter(header_line)
        records = csv.reader(
            _chain(header_line, lines), delimiter=delimiter, skipinitialspace=True, strict=True
        )
        line = header_at  # the line the next record starts on
        try:
            header = next(records)
            seen: set[str] = set()
            for name in header:
                if name in seen:
                    raise DocumentError(f"the header names column {name!r} twice", header_at)
                seen.add(name)
            line = lines.count + 1
            for values in records:
                if values:
                    if len(values) != len(header):
                        raise DocumentError(
                            f"{len(values)} cells where the header names {len(header)} columns",
                            line,
                        )
                    yield line, dict(zip(header, map(cell, values), strict=True))
                line = lines.count + 1
        except csv.Error as e:
            raise DocumentError(f"malformed {kind.upper()}: {e}", line) from None


class _Lines:
    """The file's lines as text, each decoded on its own so that a byte that is not UTF-8 is
    named at its line, and none longer than the line reader's default bound; ``count`` is the
    number of lines read so far."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        from calibcli.io.documents import DocumentError
        from calibcli.io.sources import MAX_LINE_BYTES
        from calibcli.io.strict_json import READS_UTF8, wide_encoding

        while data := self.raw.readline(MAX_LINE_BYTES + 1):
            self.count += 1
            if len(data) > MAX_LINE_BYTES:  # found without holding more of it
                raise DocumentError(
                    f"line longer than {MAX_LINE_BYTES >> 20} MiB, the most a table's line may "
                    "hold",
                    self.count,
                )
            if self.count == 1:
                wide = wide_encoding(data)
                if wide is not None:
                    raise DocumentError(f"{wide} text; {READS_UTF8}", None)
                data = data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark is not the text's
            try:
                yield data.decode("utf-8")
            except UnicodeDecodeError:
                raise DocumentError(f"the text is not UTF-8; {READS_UTF8}", self.count) from None


def _chain(first: str, rest: Any) -> Iterator[str]:
    yield first
    yield from rest


def _delimiter(header: str) -> str:
    """A CSV file's delimiter: the comma, unless the header holds more semicolons or tabs."""
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > counts[","] else ","
