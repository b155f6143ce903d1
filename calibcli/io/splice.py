"""Block rewriting for ``calibcli apply``: a block of JSON Lines decoded in one msgspec call, the
new confidences computed for the whole block, and each new value written over the old value's
bytes in the block itself, so every other byte of every line stays as it was.

A line's value is spliced here only when its span is proven: the field's JSON spelling occurs
exactly once in the line (a nested object with the same key, a duplicate key, or the key's
spelling as a string value all make two), the line holds no ``\\u`` or ``\\/`` escape (the only
escapes that could spell the key another way), and the key is followed by ``:`` or ``: `` and a
number. The decoded row has the field at the top level, spelled as the key is, so that one
occurrence is the field. Every other line is handed back to the caller (the per-line path, which
scans the line's JSON), and a block that does not decode or check as a whole goes back entirely,
so that the per-line path words the first error with its line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from itertools import repeat
from typing import Any

import numpy as np

from calibcli.io.decode import struct_names_ok
from calibcli.io.rows import confidence_ok, group_names
from calibcli.io.sources import is_utf8

_NEWLINE, _CR, _SPACE, _COMMA, _COLON = 10, 13, 32, 44, 58
_BACKSLASH, _CLOSE_LIST, _CLOSE = 92, 93, 125
# the bytes a JSON number can open with
_NUMBER_OPENS = np.zeros(256, np.bool_)
_NUMBER_OPENS[list(b"0123456789-")] = True


def splices(field: str, by: str | None, correct: str | None = None) -> bool:
    """Whether rows can be rewritten block by block: the field, the group and the outcome read
    beside them are top-level keys (a dotted path may name a key holding a dot or a nested
    value, which only the per-line path tells apart), no two are the same key, and each is a
    name a msgspec struct takes (:func:`~calibcli.io.decode.struct_names_ok`)."""
    keys = [k for k in (field, by, correct) if k is not None]
    plain = bool(field) and not any("." in k for k in keys) and len(set(keys)) == len(keys)
    return plain and struct_names_ok(keys)


OUTCOMES = {True: 1, False: 0}
"""A row's outcome as a code (1 right, 0 wrong) from the values ``correct`` takes (true/false,
or the integers 1/0, which hash as True/False); any other value is ``NO_OUTCOME``."""
NO_OUTCOME = -1


class Block:
    """One decoded block: its rows' confidences, groups and outcomes (int8 ``OUTCOMES`` codes;
    None when not read), and the lines the per-line path must rewrite (``fallback``: row
    index, line number, the line's bytes)."""

    def __init__(
        self, data: bytes, conf: Any, groups: list[str] | None, outcomes: Any = None
    ) -> None:
        self.data = data
        self.conf = conf
        self.groups = groups
        self.outcomes = outcomes
        self.fallback: list[tuple[int, int, bytes]] = []
        self.fast: Any = None  # bool per row: spliced here
        self.spans: Any = None  # (start, end) per row: the number's bytes, or the whole line
        self.blank: Any = None  # starts of empty lines, dropped from the output

    def output(self, mapped: Any, lines: dict[int, bytes]) -> bytes:
        """The block's rows, one a line, each with its new value (``mapped``, per row); the rows
        of ``fallback`` are given whole in ``lines`` (row index -> the rewritten line)."""
        data = self.data
        texts = float_texts(mapped[self.fast])
        if lines:
            merged: list[bytes] = []
            it = iter(texts)
            for i in range(len(self.fast)):
                merged.append(lines[i] if i in lines else next(it))
            texts = merged
        starts, ends = self.spans
        if self.blank.shape[0]:
            texts += [b""] * self.blank.shape[0]
            starts = np.concatenate((starts, self.blank))
            ends = np.concatenate((ends, self.blank + 1))
            order = np.argsort(starts, kind="stable")
            starts, ends = starts[order], ends[order]
            texts = [texts[i] for i in order.tolist()]
        cuts = np.empty(2 * starts.shape[0] + 2, np.int64)
        cuts[0], cuts[-1] = 0, len(data)
        cuts[1:-1:2], cuts[2:-1:2] = starts, ends
        bounds = cuts.tolist()
        parts: list[bytes] = [b""] * (2 * len(texts) + 1)
        parts[0::2] = [data[a:b] for a, b in zip(bounds[0::2], bounds[1::2], strict=True)]
        parts[1::2] = texts
        if not data.endswith(b"\n"):
            parts.append(b"\n")
        return b"".join(parts)


class BlockSplicer:
    """Decodes blocks of rows for one confidence field (and ``--by`` group field, and the
    ``correct`` field whose outcomes are read beside the confidences: a row without it, or
    whose value is no true/false/0/1, has ``NO_OUTCOME``)."""

    def __init__(self, field: str, by: str | None, correct: str | None = None) -> None:
        import msgspec

        fields: list[tuple[str, Any]] = [("c", float)]
        rename = {"c": field}
        if by is not None:
            fields.append(("g", Any))
            rename["g"] = by
        self._correct = correct is not None
        if correct is not None:  # another type (a string, a float) sends the block line by line
            fields.append(("y", bool | int | None, None))
            rename["y"] = correct
        row_type = msgspec.defstruct("ApplyRow", fields, rename=rename, gc=False)
        self._decode_lines = msgspec.json.Decoder(row_type).decode_lines
        self._errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
        self._key = json.dumps(field, ensure_ascii=False).encode("utf-8")
        self._by = by
        self._names: dict[str, str] = {}

    def block(self, data: bytes, first_line: int, expected: int) -> Block | None:
        """The decoded block, or None when it must go line by line (it does not decode in one
        call into ``expected`` rows, a row breaks a rule, or it may hold an lm-eval row)."""
        if expected < 0 or (b'"filtered_resps"' in data and b'"doc_id"' in data):
            return None
        if not is_utf8(data):  # line by line, each line's text checked (msgspec skips fields)
            return None
        try:
            rows = self._decode_lines(data)
        except self._errors:
            return None
        n = len(rows)
        if n != expected:
            return None
        conf = np.fromiter([r.c for r in rows], np.float64, n)
        if n and not (confidence_ok(conf.min()) and confidence_ok(conf.max())):
            return None
        groups = None
        if self._by is not None:
            groups = self._group_names([r.g for r in rows])
            if groups is None:
                return None
        outcomes = None
        if self._correct:
            codes = map(OUTCOMES.get, [r.y for r in rows], repeat(NO_OUTCOME, n))
            outcomes = np.fromiter(codes, np.int8, n)
        block = Block(data, conf, groups, outcomes)
        return block if self._locate(block, first_line) else None

    def _locate(self, block: Block, first_line: int) -> bool:
        """Find each row's line and the span to rewrite in it; False when a line does not end
        with ``}`` (before an optional CR): every line opens with ``{``, so a line closing an
        object right before the next line's ``{`` is what proves each line holds one whole
        value (the one-call decode also accepts a value split across lines)."""
        data = block.data
        arr = np.frombuffer(data, np.uint8)
        size = arr.shape[0]
        newlines = np.flatnonzero(arr == _NEWLINE)
        line_starts = np.concatenate(([0], newlines + 1))
        line_starts = line_starts[line_starts < size]
        filled = arr[line_starts] != _NEWLINE
        row_starts = line_starts[filled]
        row_lines = np.flatnonzero(filled) + first_line
        block.blank = line_starts[~filled]
        n = row_starts.shape[0]
        ends = np.append(newlines, size)
        row_ends = ends[np.searchsorted(newlines, row_starts)]
        last = arr[row_ends - 1]
        closed = (last == _CLOSE) | ((last == _CR) & (arr[np.maximum(row_ends - 2, 0)] == _CLOSE))
        if not closed.all():
            return False

        key = _find(arr, self._key)
        row_of = np.searchsorted(row_starts, key, "right") - 1
        once = np.bincount(row_of, minlength=n) == 1
        # an escape that could spell a key another way: the per-line path reads that line
        slashes = np.flatnonzero(arr[:-1] == _BACKSLASH)
        after = arr[slashes + 1]
        escaped = slashes[(after == ord("u")) | (after == ord("/"))]
        once[np.searchsorted(row_starts, escaped, "right") - 1] = False

        key, row_of = key[once[row_of]], row_of[once[row_of]]
        colon = np.minimum(key + len(self._key), size - 1)
        value = np.minimum(colon + 1, size - 1)
        value = np.minimum(value + (arr[value] == _SPACE), size - 1)
        ok = (arr[colon] == _COLON) & _NUMBER_OPENS[arr[value]]
        stop = _number_ends(arr, value)

        fast = np.zeros(n, np.bool_)
        fast[row_of[ok]] = True
        starts, stops = row_starts.copy(), row_ends.copy()
        starts[row_of[ok]] = value[ok]
        stops[row_of[ok]] = stop[ok]
        block.fast, block.spans = fast, (starts, stops)
        slow = np.flatnonzero(~fast).tolist()
        if slow:
            line_nos, a, b = row_lines.tolist(), row_starts.tolist(), row_ends.tolist()
            block.fallback = [(i, line_nos[i], data[a[i] : b[i]]) for i in slow]
        return True

    def _group_names(self, values: list) -> list[str] | None:
        """:func:`~calibcli.io.rows.group_names`, remembering names across this reader's
        blocks."""
        return group_names(values, self._names)


def float_texts(values: Any) -> list[bytes]:
    """Each value as ``json.dumps`` writes a float (``repr``, or ``NaN``/``Infinity``).

    msgspec writes the same shortest round-trip digits as ``repr`` a score of times faster, and
    the same text wherever ``repr`` writes no exponent (1e-4 <= |x| < 1e16, and zero); the
    values outside that range take ``repr`` itself."""
    import msgspec

    if not values.shape[0]:
        return []
    texts = msgspec.json.encode(values.tolist())[1:-1].split(b",")
    size = np.abs(values)
    plain = ((size >= 1e-4) & (size < 1e16)) | (values == 0)
    if not plain.all():
        for i in np.flatnonzero(~plain).tolist():
            v = float(values[i])
            texts[i] = (repr(v) if math.isfinite(v) else json.dumps(v)).encode()
    return texts


def _number_ends(arr: Any, value: Any) -> Any:
    """Where each number starting at ``value`` ends: the first byte that can follow a JSON
    number (whitespace, ``,``, ``]`` or ``}``; none of them occurs inside one)."""
    after = (arr <= _SPACE) | (arr == _COMMA) | (arr == _CLOSE) | (arr == _CLOSE_LIST)
    stops = np.flatnonzero(after)
    at = np.searchsorted(stops, value)
    return np.append(stops, arr.shape[0])[at]


def _find(arr: Any, pattern: bytes) -> Any:
    """Start of every occurrence of ``pattern`` (two bytes or more) in ``arr``."""
    k = len(pattern)
    if arr.shape[0] < k:
        return np.empty(0, np.int64)
    # the second byte first: the first, a quote, opens every string
    at = np.flatnonzero(arr[1 : arr.shape[0] - k + 2] == pattern[1])
    for j in (0, *range(2, k)):
        at = at[arr[at + j] == pattern[j]]
    return at


def map_groups(
    mapping: Callable[[str | None, Any], Any], conf: Any, groups: list[str] | None
) -> Any:
    """``mapping(group, confidences)`` of each group's rows, in row order."""
    if groups is None:
        return np.asarray(mapping(None, conf), dtype=np.float64)
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(g, len(index)) for g in groups), np.int64, len(groups))
    mapped = np.empty_like(conf)
    for name, code in index.items():
        rows = codes == code
        mapped[rows] = mapping(name, conf[rows])
    return mapped
