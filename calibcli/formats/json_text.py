"""Where a value sits in JSON text: the character span of the value at a key path.

``apply`` rewrites one field of each row and must keep the text of every other value as it was
written (``1e5`` stays ``1e5``, ``1e400`` is not turned into ``Infinity``), so it splices the new
value into the row's own text instead of serialising the decoded row again. The scan below
finds that span for any key path; it decodes the values it passes over with the standard
library's C scanner, so it is meant for text already known to be valid JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from json.decoder import scanstring

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]


def members(text: str, pos: int) -> Iterator[tuple[str, int, int]]:
    """``(key, start, end)`` of each member of the object whose ``{`` is at ``pos``: the
    value's span is ``text[start:end]``. ValueError for text that is not a JSON object."""
    if text[pos : pos + 1] != "{":
        raise ValueError("not a JSON object")
    pos = _skip(text, pos + 1)
    if text[pos : pos + 1] == "}":
        return
    while True:
        if text[pos : pos + 1] != '"':
            raise ValueError("expected a key")
        key, pos = scanstring(text, pos + 1)
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError("expected ':'")
        start = _skip(text, pos + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        pos = _skip(text, end)
        if text[pos : pos + 1] == ",":
            pos = _skip(text, pos + 1)
        elif text[pos : pos + 1] == "}":
            return
        else:
            raise ValueError("expected ',' or '}'")


def elements(text: str, pos: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each element of the array whose ``[`` is at ``pos``."""
    if text[pos : pos + 1] != "[":
        raise ValueError("not a JSON array")
    pos = _skip(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return
    while True:
        _, end = _DECODER.raw_decode(text, pos)
        yield pos, end
        pos = _skip(text, end)
        if text[pos : pos + 1] == ",":
            pos = _skip(text, pos + 1)
        elif text[pos : pos + 1] == "]":
            return
        else:
            raise ValueError("expected ',' or ']'")


def value_span(text: str, path: Sequence[str | int], start: int = 0) -> tuple[int, int] | None:
    """The span ``(start, end)`` of the value reached from the value at ``start`` by ``path``
    (object keys as ``str``, array indices as ``int``), or None when the path does not lead to a
    value. A key written twice in one object resolves to its last occurrence, as ``json.loads``
    keeps the last one."""
    pos = _skip(text, start)
    try:
        for part in path:
            found = None
            if isinstance(part, int):
                for i, (begin, _) in enumerate(elements(text, pos)):
                    if i == part:
                        found = begin
                        break
            else:
                for key, begin, _ in members(text, pos):
                    if key == part:
                        found = begin
            if found is None:
                return None
            pos = found
        _, end = _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return None
    return pos, end
