"""JSON text as the input rules read it: UTF-8 only, whatever ``json.loads`` would guess from
bytes, and what json refuses worded in the rules' terms rather than Python's.

Given bytes, ``json.loads`` reads text opening with zero bytes as UTF-16 or UTF-32 and UTF-8
holding encoded surrogates; text is decoded strictly here first. An integer longer than int()
converts (``sys.get_int_max_str_digits()``) makes json raise Python's own advice on raising
the limit; :func:`long_integer` names the value and its length instead. The line-by-line and
whole-document paths read JSON this way; msgspec's fast path checks the text of the fields it
decodes (and skips a field no rule reads unchecked), sending a line it refuses here.
"""

from __future__ import annotations

import json
import sys
from typing import Any

NOT_AN_OBJECT = "line is not a JSON object"
TOO_DEEP = "JSON nested too deeply"
READS_UTF8 = "calibcli reads UTF-8"


def loads_line(line: bytes) -> Any:
    """The JSON value of one line of input, which is UTF-8 (a byte-order mark opening it is
    dropped, as ``json.loads`` drops one); ValueError saying what is wrong with the line."""
    try:
        # decoded here, strictly: given bytes, json.loads reads a line opening with zero bytes
        # as UTF-16 or UTF-32, and UTF-8 holding encoded surrogates
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(not_utf8(line)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if wide_encoding(line) is not None:  # ASCII in UTF-16 is valid UTF-8, zero bytes and all
            raise ValueError(not_utf8(line)) from None
        raise ValueError(
            f"{NOT_AN_OBJECT} ({e.msg} at column {e.colno}){_table_hint(text)}"
        ) from None
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except ValueError:  # int() refuses an integer longer than sys.get_int_max_str_digits()
        raise ValueError(long_integer(text)) from None


def _table_hint(text: str) -> str:
    """A hint for a line that reads as a table's header or record (``id,confidence,correct``):
    such text is read as a table only from a file named so."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[", "") or not any(d in stripped for d in (",", "\t", ";")):
        return ""
    return "; a CSV or TSV table is read from a file named .csv or .tsv"


def not_utf8(data: bytes) -> str:
    """Why a line is not read as UTF-8: the encoding it is in when it looks like UTF-16 or
    UTF-32 text, else that it is not valid UTF-8."""
    wide = wide_encoding(data)
    return "line is not valid UTF-8" if wide is None else f"line is {wide} text; {READS_UTF8}"


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


class _Long:
    """Where json met an integer longer than int() converts: its count of digits."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def long_integer(text: str, start: int = 0) -> str:
    """Why ``json`` refused JSON text with a ValueError that is no JSONDecodeError: an integer
    of more digits than int() converts (``sys.get_int_max_str_digits()``, 4,300 unless set
    otherwise), which Python words as its own limit and how to raise it. Says where the first
    such integer is, as a dotted path (``tokens``, ``meta.xs.2``), when the value from
    ``start`` is whole JSON otherwise; read again only once that value was refused."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()  # Python 3.10.7 and later
    found: list[_Long] = []

    def parse_int(literal: str) -> Any:
        digits = len(literal) - literal.startswith("-")
        if limit and digits > limit:
            found.append(_Long(digits))
            return found[-1]
        return 0  # only the long ones are looked for

    where = None
    start = len(text) - len(text[start:].lstrip(" \t\r\n"))
    try:
        value, _ = json.JSONDecoder(parse_int=parse_int).raw_decode(text, start)
        where = _path_to(value, found[0]) if found else None
    except (ValueError, RecursionError):  # broken further on: the integer is named alone
        pass
    if not found:  # not reached: json raises no other ValueError
        return "an integer too long to read"
    what = "an integer" if not where else f"{where} is an integer"
    return f"{what} of {found[0].digits:,} digits, more than the {limit:,} calibcli reads"


def _path_to(value: Any, target: Any) -> str | None:
    """The dotted path (keys and list indices) at which ``target`` sits in a decoded JSON
    value, the first in document order; None when it is not there (a key given twice keeps
    its last value). Walked without recursion, as deep as json nests."""
    if value is target:
        return ""
    root = _children(value)
    stack = [] if root is None else [root]
    path: list[str] = []  # path[i]: the key whose children stack[i + 1] walks
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if path:  # the iterator left was not the root's
                path.pop()
            continue
        key, child = step
        if child is target:
            text = ".".join([*path, _key_text(key)])
            return text if len(text) <= 80 else "..." + text[-77:]
        children = _children(child)
        if children is not None:
            path.append(_key_text(key))
            stack.append(children)
    return None


def _children(node: Any) -> Any:
    """An iterator over (key or index, value) of an object or a list; None for a scalar."""
    if isinstance(node, dict):
        return iter(node.items())
    if isinstance(node, list):
        return enumerate(node)
    return None


def _key_text(key: Any) -> str:
    """A key or index as written in a dotted path; a key that is not printable text (a
    newline, say) as a JSON string, so that a message stays one line."""
    text = str(key)
    return text if text.isprintable() else json.dumps(text)
