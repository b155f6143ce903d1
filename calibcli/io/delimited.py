"""Delimited text tables: CSV (``.csv``) and TSV (``.tsv``) files with a header row, compressed or
not, as spreadsheets and ``pandas.DataFrame.to_csv`` write them.

A file is one when its name ends so (``.csv.gz``, ``.tsv.zst`` too): the name decides, since a
header line (``id,confidence,correct``) looks like no JSON. Each record becomes a row object
keyed by the header's names, which the row functions read as a decoded JSON row: the same field
options (a header ``doc.subject`` is matched whole, as a dotted key is), the same checks and
messages, the same figures as the JSON Lines the table was written from. Records stream: memory
holds one at a time. A record is located by the line it starts on, the header being line 1, so
errors read ``preds.csv:4: confidence 1.5 is outside [0, 1]``.

Text has no types, so each cell is read as the JSON value it spells (:func:`cell`): an empty
cell is null; ``true``/``false`` in any case (pandas writes ``True``) a boolean; an integer
without leading zeros an int; a decimal number with a point or an exponent, or ``nan``/``inf``,
a float (a NaN confidence is then refused as NaN); anything else a string. A number may open
with ``+`` or ``-`` alike (``+1`` is 1 as ``+0.5`` is 0.5), as spreadsheets write it, though
JSON has no ``+``. So ``007`` stays the string it names, and an id column of ``1, 2, 3`` reads
as numbers, as it would in JSON. An integer of more digits than int() converts is a
:class:`~calibcli.io.strict_json.LongInteger`, refused where a rule reads it, as in JSON.

A cell may be as long as a line may (:data:`~calibcli.io.sources.MAX_LINE_BYTES`); the csv
module's own limit of 128 KiB is raised to that.

The delimiter is a tab for ``.tsv``; for ``.csv`` it is a comma unless the header line holds
more semicolons or tabs than commas (spreadsheets in locales with a decimal comma write ``;``).
Quoted cells may hold delimiters, quotes (doubled) and line breaks. A space after a delimiter
is skipped. Lines end in a line feed (a carriage return before it is dropped); a lone carriage
return outside quotes, as old Mac line ends are, is refused by name. The text must be UTF-8 (a
byte-order mark is skipped); a UTF-16 file, as a spreadsheet's "Unicode text" export writes, is
refused by name.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import sys
from collections.abc import Iterator
from typing import Any

from calibcli.io import sources
from calibcli.io.compression import without_suffix
from calibcli.io.strict_json import LongInteger, zero_bytes, zero_padding

KINDS = {".csv": "csv", ".tsv": "tsv"}
_BLOCK = 1 << 20  # bytes decoded at a time
"""The file endings read as delimited tables (compressed too, ``.csv.gz``), and their kinds."""

_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?")
_WORDS: dict[str, Any] = {"true": True, "false": False}
_SPECIAL = {"nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}
_NUMBER_START = frozenset("0123456789-+.")
_WORD_START = frozenset("tTfFnNiI+-")  # true, false, nan, inf, infinity (signed)


def delimited_kind(name: str) -> str | None:
    """``"csv"`` or ``"tsv"`` when a file of this name is a delimited table, else None."""
    lowered = without_suffix(name.lower())
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
            except ValueError:  # more digits than int() converts: refused where it is read
                return LongInteger(len(text) - (text[0] in "+-"))
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
    for line, row, _ in Table(path, kind).records():
        yield line, row


class Table:
    """A CSV or TSV file read record by record; once :meth:`records` has read the header,
    ``header`` holds its names, ``header_text`` its line as written and ``delimiter`` the
    delimiter."""

    def __init__(self, path: str, kind: str) -> None:
        self.path, self.kind = path, kind
        self.header: list[str] = []
        self.header_text = ""
        self.delimiter = "\t" if kind == "tsv" else ","

    def records(
        self, with_text: bool = False, on_header: Any = None
    ) -> Iterator[tuple[int, dict[str, Any], str | None]]:
        """``(line, row, text)`` of each record (``text``: the record's lines as written, its
        last line break dropped, with ``with_text``; else None). ``on_header(line)`` is called
        once the header is read, before the first record."""
        from calibcli.io.documents import DocumentError, open_content

        with open_content(self.path) as raw:
            # apply keeps each record's text, line by line; reading only needs the cells
            taken = _Lines(raw) if with_text else None
            lines: Iterator[str] = iter(taken) if taken is not None else _block_lines(raw)
            header_at = 0  # the header's first line
            for header_line in lines:
                header_at += 1
                if header_line.strip():
                    break
            else:
                return
            kept = 0 if taken is None else len(taken.taken) - 1  # the header's first line
            if self.kind == "csv":
                self.delimiter = _delimiter(header_line)
            # a cell is bounded by the line cap, not by the csv module's default of 128 KiB
            csv.field_size_limit(max(csv.field_size_limit(), sources.MAX_LINE_BYTES))
            source: Any = itertools.chain((header_line,), lines)
            taken_last = None
            if sys.version_info < (3, 11):  # its csv module refuses a NUL: keep the line read
                taken_last = source = _Last(source)
            records = csv.reader(
                source,
                delimiter=self.delimiter,
                skipinitialspace=True,
                strict=True,
            )
            # records.line_num counts the lines the reader took, the header's first included:
            # the next record starts on the line after them
            line = header_at
            try:
                self.header = header = next(records)
                # a quoted name may hold a line break: the header is every line it took
                self.header_text = _unterminated(
                    "".join(taken.taken[kept:]) if taken is not None else header_line
                )
                seen: set[str] = set()
                for name in header:
                    if name in seen:
                        raise DocumentError(f"the header names column {name!r} twice", header_at)
                    seen.add(name)
                if on_header is not None:
                    on_header(header_at)
                if taken is not None:
                    taken.taken.clear()
                line = header_at + records.line_num
                width = len(header)
                for values in records:
                    if values:
                        if len(values) != width or (width == 1 and _nul_only(values[0])):
                            raise DocumentError(self._misfit(values, width), line)
                        row = dict(zip(header, map(cell, values), strict=True))
                        if taken is None:
                            yield line, row, None
                        else:
                            yield line, row, _unterminated("".join(taken.taken))
                            taken.taken.clear()
                    elif taken is not None:
                        taken.taken.clear()
                    line = header_at + records.line_num
            except csv.Error as e:
                if taken_last is not None and _nul_only(taken_last.last):
                    raise DocumentError(self._misfit([taken_last.last], 0), line) from None
                raise DocumentError(f"malformed {self.kind.upper()}: {_why(e)}", line) from None

    def _misfit(self, values: list[str], width: int) -> str:
        """Why a record of ``values`` is refused where the header names ``width`` columns."""
        if len(values) == 1 and _nul_only(values[0]):
            return zero_bytes(f"a {self.kind.upper()} record")
        return f"{len(values)} cells where the header names {width} columns"


class _Last:
    """An iterator of lines that keeps the last one it gave (``last``)."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self.last = ""

    def __iter__(self) -> _Last:
        return self

    def __next__(self) -> str:
        self.last = next(self._lines)
        return self.last


def _nul_only(text: str) -> bool:
    """Whether a line read as one cell is zero bytes only (NUL padding)."""
    return zero_padding(text.encode())


def _why(error: csv.Error) -> str:
    """What the csv module found wrong, in the input's terms. Lines are split at line feeds,
    so a line break the reader meets outside quotes is a carriage return standing alone."""
    if str(error).startswith("new-line character seen in unquoted field"):
        return (
            "a bare carriage return (\\r) outside quotes: lines that end in one (old Mac line "
            "ends) must be converted to end in \\n or \\r\\n"
        )
    return str(error)


def cell_span(text: str, column: int, delimiter: str) -> tuple[int, int]:
    """Where cell ``column`` (0-based) of a record's text is, from just after the delimiter
    before it to the delimiter after it, as the reader splits the record: a cell that opens
    with a quote (after spaces) runs to its closing quote (a doubled quote is one quote);
    elsewhere a quote is an ordinary character. The record has at least ``column + 1`` cells."""
    start, at, n = 0, 0, len(text)
    for _ in range(column + 1):
        start = at
        while at < n and text[at] == " ":
            at += 1
        if at < n and text[at] == '"':
            at += 1
            while at < n:
                if text[at] == '"':
                    if at + 1 < n and text[at + 1] == '"':
                        at += 2
                        continue
                    at += 1
                    break
                at += 1
        found = text.find(delimiter, at)
        at = n if found < 0 else found
        end = at
        at += 1
    return start, end


def _unterminated(text: str) -> str:
    """A line's text without its line break."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


class _Lines:
    """The file's lines as text, one ``readline`` at a time, each kept in ``taken`` until the
    caller clears it (apply writes each record's text back)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.taken: list[str] = []

    def __iter__(self) -> Iterator[str]:
        count, bound = 0, sources.MAX_LINE_BYTES
        while data := self.raw.readline(bound + 1):
            count += 1
            too_long = len(data) > bound
            text = _text(_first_bytes(data) if count == 1 else data, count, too_long)
            self.taken.append(text)
            yield text


def _block_lines(raw: Any) -> Iterator[str]:
    """The file's lines as text, decoded a block of about 1 MB at a time and split by the
    ``io`` module: no Python code runs per line. The errors are those of :class:`_Lines`, at
    the same lines, and only once every line before the bad one has been given."""

    bound = sources.MAX_LINE_BYTES

    def blocks() -> Iterator[io.StringIO]:
        count = 0  # lines given so far
        carry = b""  # a line not yet ended
        first = True
        while data := raw.read(max(_BLOCK, 4) if first else _BLOCK):  # a mark's 4 bytes first
            if first:
                first = False
                data = _first_bytes(data)
            data = carry + data if carry else data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                if len(carry) > bound:
                    _text(carry, count + 1, True)
                continue
            block, carry = data[:cut], data[cut:]
            if block.find(b"\n") + 1 > bound:  # a carried line ended over the bound
                _text(block, count + 1, True)
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError as e:
                start = block.rfind(b"\n", 0, e.start) + 1  # the bad line's first byte
                yield io.StringIO(block[:start].decode("utf-8"), newline="\n")
                _text(
                    block[start : block.find(b"\n", start) + 1],
                    count + 1 + block.count(b"\n", 0, start),
                    False,
                )
            count += block.count(b"\n")
            yield io.StringIO(text, newline="\n")
        if carry:
            yield io.StringIO(_text(carry, count + 1, False), newline="\n")

    return itertools.chain.from_iterable(blocks())


def _first_bytes(data: bytes) -> bytes:
    """The file's first bytes, less a UTF-8 byte-order mark; a UTF-16 or UTF-32 one is an
    error."""
    from calibcli.io.documents import DocumentError
    from calibcli.io.strict_json import READS_UTF8, wide_encoding

    first = data[: data.find(b"\n") + 1 or len(data)]
    if zero_padding(first):
        raise DocumentError(zero_bytes("a table's header"), 1)
    wide = wide_encoding(data)
    if wide is not None:
        raise DocumentError(f"{wide} text; {READS_UTF8}", None)
    return data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark is not the text's


def _text(data: bytes, line: int, too_long: bool) -> str:
    """One line's bytes as text; DocumentError at ``line`` for one over the bound or one that
    is not UTF-8."""
    from calibcli.io.documents import DocumentError
    from calibcli.io.strict_json import READS_UTF8

    if too_long:  # found without holding more of it
        raise DocumentError(
            f"line longer than {sources.MAX_LINE_BYTES >> 20} MiB, the most a table's line "
            "may hold",
            line,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(f"the text is not UTF-8; {READS_UTF8}", line) from None


def _delimiter(header: str) -> str:
    """A CSV file's delimiter: the comma, unless the header holds more semicolons or tabs."""
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > counts[","] else ","
