"""JSON text as the input rules read it: UTF-8 only, whatever ``json.loads`` would guess from
bytes, and what json refuses worded in the rules' terms rather than Python's.

Given bytes, ``json.loads`` reads text opening with zero bytes as UTF-16 or UTF-32 and UTF-8
holding encoded surrogates; text is decoded strictly here first. An integer longer than int()
converts (``sys.get_int_max_str_digits()``) makes json raise Python's own advice on raising
the limit; :func:`long_integer` names the value and its length instead. The line-by-line and
whole-document paths read JSON this way; msgspec's fast path skips a field no rule reads, so an
integer that long is kept here as a :class:`LongInteger`, which a rule refuses only where it
reads the field, as the fast path does. (That path checks a whole block's UTF-8 before decoding
it, so text that is not UTF-8 is refused wherever it sits, on every path.)
"""

from __future__ import annotations

import json
import sys
from typing import Any

NOT_AN_OBJECT = "line is not a JSON object"
TOO_DEEP = "JSON nested too deeply"
READS_UTF8 = "calibcli reads UTF-8"


def zero_bytes(what: str) -> str:
    """The refusal of a line of zero bytes only, which was to hold ``what``."""
    return (
        "line is zero bytes only (NUL padding, as a write cut off by a crash or a preallocated "
        f"file leaves), not {what}"
    )


ZERO_BYTES = zero_bytes("JSON text")


def loads_line(line: bytes) -> Any:
    """The JSON value of one line of input, which is UTF-8 (a byte-order mark opening it is
    dropped, as ``json.loads`` drops one); ValueError saying what is wrong with the line."""
    text = strict_text(line)
    try:
        return loads_text(text)
    except json.JSONDecodeError as e:
        # ASCII in UTF-16 is valid UTF-8, zero bytes and all; so are zero bytes alone
        if zero_padding(line) or wide_encoding(line) is not None:
            raise ValueError(not_utf8(line)) from None
        # json words a control character "Invalid control character at"
        what = e.msg.removesuffix(" at")
        raise ValueError(
            f"{NOT_AN_OBJECT} ({what} at column {e.colno}{nul_note(text, e.pos)})"
            f"{_table_hint(text)}"
        ) from None
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except ValueError:  # int() refuses an integer longer than sys.get_int_max_str_digits()
        raise ValueError(long_integer(text)) from None


def nul_note(text: str, pos: int) -> str:
    """Where the line of ``text`` holding ``pos`` (where JSON was refused) holds a NUL byte:
    zero bytes amid JSON text, as a write cut off by a crash leaves, are what broke it, whatever
    json names first. Empty when the line holds none."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    nul = text.find("\0", start, len(text) if end < 0 else end)
    if nul < 0:
        return ""
    return (
        f"; the line holds a NUL byte at column {nul - start + 1}: zero bytes amid the text, as "
        "a write cut off by a crash leaves"
    )


def strict_text(line: bytes) -> str:
    """One line of input as text, strictly UTF-8 (a byte-order mark opening it dropped);
    ValueError saying what else it is."""
    try:
        # decoded here, strictly: given bytes, json.loads reads a line opening with zero bytes
        # as UTF-16 or UTF-32, and UTF-8 holding encoded surrogates
        return line.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(not_utf8(line)) from None


def loads_text(text: str) -> Any:
    """``json.loads(text)``, an integer longer than int() converts kept as a
    :class:`LongInteger` (refused where a rule reads it); json's errors otherwise, an integer
    that long in text broken further on a plain ValueError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() refuses an integer longer than sys.get_int_max_str_digits()
        pass
    try:
        return json.loads(text, parse_int=_int_or_long)
    except json.JSONDecodeError:
        raise ValueError(long_integer(text)) from None


def raw_decode(text: str, start: int) -> tuple[Any, int]:
    """``json.JSONDecoder().raw_decode(text, start)`` keeping an integer longer than int()
    converts as a :class:`LongInteger`, as :func:`loads_text` does."""
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError:
        raise
    except ValueError:
        pass
    try:
        return _LONG_DECODER.raw_decode(text, start)
    except json.JSONDecodeError:
        raise ValueError(long_integer(text, start)) from None


class LongInteger:
    """An integer of more digits than int() converts (``sys.get_int_max_str_digits()``), kept
    where json met it: a rule that reads its field refuses it (:meth:`why`), a field no rule
    reads lets it pass."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def why(self) -> str:
        """What is wrong with it, to follow a field's name: ``is an integer of ...``."""
        return f"is {_too_long(self.digits)}"

    def __repr__(self) -> str:
        return f"an integer of {self.digits:,} digits"

    def described(self) -> str:
        """How an error message names it where a value of another type was expected."""
        return _too_long(self.digits)


def _limit() -> int:
    return getattr(sys, "get_int_max_str_digits", lambda: 0)()  # Python 3.10.7 and later


def _too_long(digits: int) -> str:
    return f"an integer of {digits:,} digits, more than the {_limit():,} calibcli reads"


def _int_or_long(literal: str) -> Any:
    digits = len(literal) - literal.startswith("-")
    limit = _limit()
    return LongInteger(digits) if limit and digits > limit else int(literal)


_DECODER = json.JSONDecoder()
_LONG_DECODER = json.JSONDecoder(parse_int=_int_or_long)


def _table_hint(text: str) -> str:
    """A hint for a line that reads as a table's header or record (``id,confidence,correct``):
    such text is read as a table only from a file named so."""
    if hint := _binary_table_hint(text[:16].encode()):
        return hint
    stripped = text.lstrip().lstrip("\ufeff")
    if stripped[:1] in ("{", "[", "") or not any(d in stripped for d in (",", "\t", ";")):
        return ""
    return "; a CSV or TSV table is read from a file named .csv or .tsv"


def not_utf8(data: bytes) -> str:
    """Why a line is not read as UTF-8: that it is zero bytes only (:func:`zero_padding`), the
    encoding it is in when it looks like UTF-16 or UTF-32 text, else that it is not valid
    UTF-8."""
    if zero_padding(data):
        return ZERO_BYTES
    wide = wide_encoding(data)
    if wide is None:
        return f"line is not valid UTF-8{_binary_table_hint(data)}"
    return f"line is {wide} text; {READS_UTF8}"


def _binary_table_hint(head: bytes) -> str:
    """A hint for input that opens as a Parquet or Arrow table or a calibcli summary does, as
    one piped into standard input: these are read by seeking, so only from a file given by its
    path."""
    from calibcli.io.tables import table_kind
    from calibcli.summaries import MAGIC

    if bytes(head[: len(MAGIC)]) == MAGIC:
        what, kind = "a calibcli summary", "a summary"
    elif (table := table_kind(bytes(head[:6]))) is not None:
        what = "a Parquet table" if table == "parquet" else "an Arrow table"
        kind = "a table"
    else:
        return ""
    return (
        f"; it opens as {what} does: {kind} is read from a file given by its path, not from "
        "standard input"
    )


def zero_padding(data: bytes) -> bool:
    """Whether a line holds zero bytes and nothing else but whitespace at its ends: what a write
    cut off by a crash, or a file allocated before it was written, holds where text was to be.
    Text in UTF-16 or UTF-32 holds other bytes between its zeros, which :func:`wide_encoding`
    names instead."""
    core = data.strip(b" \t\r\n")
    return bool(core) and not core.strip(b"\0")


def wide_encoding(data: bytes | bytearray | memoryview) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` when ``data`` opens as JSON text in that encoding would, else
    None: a byte-order mark, or the zero bytes that an ASCII character holds there (JSON text in
    UTF-8 holds no zero byte). The same test by which ``json.loads`` reads bytes as either."""
    head = bytes(data[:4])
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    if len(head) < 2 or 0 not in head[:2]:
        return None
    if len(head) < 4:
        return "UTF-16"
    if head[0] == 0:  # 00 XX: big-endian UTF-16; 00 00: big-endian UTF-32
        return "UTF-16" if head[1] else "UTF-32"
    # XX 00 00 00: little-endian UTF-32; else little-endian UTF-16
    return "UTF-16" if head[2] or head[3] else "UTF-32"


def long_integer(text: str, start: int = 0) -> str:
    """Why ``json`` refused JSON text with a ValueError that is no JSONDecodeError: an integer
    of more digits than int() converts (``sys.get_int_max_str_digits()``, 4,300 unless set
    otherwise), which Python words as its own limit and how to raise it. Says where the first
    such integer is, as a dotted path (``tokens``, ``meta.xs.2``), when the value from
    ``start`` is whole JSON otherwise; read again only once that value was refused."""
    limit = _limit()
    found: list[LongInteger] = []

    def parse_int(literal: str) -> Any:
        digits = len(literal) - literal.startswith("-")
        if limit and digits > limit:
            found.append(LongInteger(digits))
            return found[-1]
        return 0  # only the long ones are looked for

    where = None
    start = len(text) - len(text[start:].lstrip(" \t\r\n"))
    try:
        value, _ = json.JSONDecoder(parse_int=parse_int).raw_decode(text, start)
        from calibcli.formats import path_where

        where = path_where(value, lambda v: v is found[0]) if found else None
    except (ValueError, RecursionError):  # broken further on: the integer is named alone
        pass
    if not found:  # not reached: json raises no other ValueError
        return "an integer too long to read"
    return _too_long(found[0].digits) if not where else f"{where} {found[0].why()}"
