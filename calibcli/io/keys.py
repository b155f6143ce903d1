"""Row ids as numbers: each id's canonical bytes hashed to 128 bits, and rows matched by them.

An id is equal to another exactly when Python's ``==`` says their keys
(:func:`~calibcli.io.ids.row_key`) are equal, so the canonical bytes keep JSON types apart and
fold equal numbers together: a string is ``"`` + its UTF-8 + ``"``; an integer, or a float
holding a whole number, its decimal digits (``1``, ``1.0``, ``1e0`` and ``-0`` give ``1`` and
``0``); any other float its ``repr``; ``true``, ``false`` and ``null`` themselves. The keys of
the formats with ids of their own (lm-eval task + doc_id, inspect-ai id + epoch, ...) are a zero
byte and the ``repr`` of the key with its numbers folded the same way. A string id of native rows
without escapes and a whole number without a fraction or exponent are their own canonical bytes,
so the block reader hashes their raw JSON text without making a Python object per row.

Two ids are taken as equal when their 128-bit hashes are: for a million ids, the chance that two
different ones share a hash is about 10⁻²⁷.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.summaries import mix64_in_place

LONG = 64
"""Canonical ids longer than this are hashed by blake2b one by one; shorter ones in columns."""

_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], np.uint64)  # the low k bytes of a word


def canonical_id(key: Any) -> bytes:
    """The canonical bytes of a row key from :func:`~calibcli.io.ids.row_key`."""
    kind = key[0]
    if kind in ("string", "number", "literal"):
        return canonical_value(key[1])
    folded = tuple(_fold(part) for part in key)
    return b"\x00" + repr(folded).encode("utf-8", "surrogatepass")


def canonical_value(value: Any) -> bytes:
    """The canonical bytes of a JSON scalar id (a string, number, boolean or null)."""
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if value is None:
        return b"null"
    if isinstance(value, str):
        return b'"' + value.encode("utf-8", "surrogatepass") + b'"'
    if isinstance(value, int):
        return str(value).encode()
    if math.isfinite(value) and value == int(value):
        return str(int(value)).encode()
    return repr(value).encode()


def _fold(part: Any) -> Any:
    """A part of a structured key with its numbers in one form (1.0 and 1 are equal keys)."""
    if isinstance(part, bool) or not isinstance(part, (int, float)):
        return part
    if isinstance(part, float) and not (math.isfinite(part) and part == int(part)):
        return part
    return int(part)


def hash_packed(buffer: bytes, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two uint64 columns (the 128-bit hash) of the canonical ids packed end to end in
    ``buffer``, id i being ``lengths[i]`` bytes long."""
    n = lengths.shape[0]
    lengths = lengths.astype(np.int64, copy=False)
    hi = np.empty(n, np.uint64)
    lo = np.empty(n, np.uint64)
    if n == 0:
        return hi, lo
    ends = np.cumsum(lengths)
    starts = ends - lengths
    data = np.frombuffer(buffer, np.uint8)
    long = lengths > LONG
    if long.any():
        for i in np.flatnonzero(long).tolist():
            digest = hashlib.blake2b(buffer[starts[i] : ends[i]], digest_size=16).digest()
            hi[i], lo[i] = np.frombuffer(digest, np.uint64)
    short = np.flatnonzero(~long)
    if short.shape[0] == 0:
        return hi, lo
    sizes = lengths[short]
    at = starts[short]
    # every 8 bytes of the buffer read as one little-endian word, from any byte
    padded = np.zeros(data.shape[0] + 8, np.uint8)
    padded[: data.shape[0]] = data
    word_at = np.ndarray((data.shape[0] + 1,), "<u8", padded, 0, (1,))
    # an id takes one round per 8 bytes of its own, ceil(size / 8), and no more: its hash is a
    # function of its bytes alone, whatever ids share its batch
    rounds = -(-sizes // 8)
    fewest = int(rounds.min())
    with np.errstate(over="ignore"):
        lanes = [mix64_in_place(sizes.astype(np.uint64) ^ seed) for seed in _SEEDS]
        for j in range(int(rounds.max())):
            live = None if j < fewest else np.flatnonzero(rounds > j)
            size, start = (sizes, at) if live is None else (sizes[live], at[live])
            left = np.clip(size - 8 * j, 0, 8)
            word = word_at[np.minimum(start + 8 * j, data.shape[0])] & _MASKS[left]
            for k, seed in enumerate(_SEEDS):
                h = lanes[k] if live is None else lanes[k][live]
                h ^= word
                h += seed
                mix64_in_place(h)
                if live is not None:
                    lanes[k][live] = h
    hi[short], lo[short] = lanes
    return hi, lo


def hash_ids(canonical: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The 128-bit hashes (two uint64 columns) of canonical ids."""
    lengths = np.fromiter(map(len, canonical), np.int64, len(canonical))
    return hash_packed(b"".join(canonical), lengths)


@dataclass(frozen=True, eq=False)
class IdHashes:
    """Rows' id hashes, in reading order."""

    hi: np.ndarray
    lo: np.ndarray

    @property
    def n(self) -> int:
        return int(self.hi.shape[0])

    def _collides(self, order: np.ndarray) -> bool:
        """Whether two different ids share the high half (order sorts by it)."""
        hi = self.hi[order]
        same = np.flatnonzero(hi[1:] == hi[:-1])
        if same.shape[0] == 0:
            return False
        lo = self.lo[order]
        return bool(np.any(lo[same] != lo[same + 1]))

    def first_repeat(self) -> tuple[int, int] | None:
        """(first row, repeating row) of the earliest row whose id an earlier row holds."""
        if self.n < 2:
            return None
        ordered = np.sort(self.hi)
        if not np.any(ordered[1:] == ordered[:-1]):
            return None
        del ordered
        order = np.argsort(self.hi, kind="stable")
        if self._collides(order):
            seen: dict[tuple[int, int], int] = {}
            for i, key in enumerate(zip(self.hi.tolist(), self.lo.tolist(), strict=True)):
                if key in seen:
                    return seen[key], i
                seen[key] = i
            return None
        hi = self.hi[order]
        same = np.flatnonzero(hi[1:] == hi[:-1])
        if same.shape[0] == 0:
            return None
        # in a run of equal ids sorted stably, each later row follows its first one
        later = order[same + 1]
        k = int(np.argmin(later))
        run_start = same[k]
        while run_start > 0 and hi[run_start - 1] == hi[run_start]:
            run_start -= 1
        return int(order[run_start]), int(later[k])


class IdIndex:
    """One side's ids sorted by hash, for looking up the other side's a block at a time: the
    sorted halves and the rows they came from (32-bit where they fit), 20 bytes a row, so that
    the side's own :class:`IdHashes` can be freed once the index is built."""

    def __init__(self, ids: IdHashes) -> None:
        self.n = ids.n
        index = np.int32 if self.n < 2**31 else np.intp
        self.order = np.argsort(ids.hi, kind="stable").astype(index)
        self.hi = ids.hi[self.order]
        self.lo = ids.lo[self.order]
        # two ids sharing a high half (about 10⁻⁸ for a million ids): look up both halves
        self.exact: dict[tuple[int, int], int] | None = None
        if self.n > 1 and np.any(self.hi[1:] == self.hi[:-1]):
            self.exact = {
                k: j for j, k in enumerate(zip(ids.hi.tolist(), ids.lo.tolist(), strict=True))
            }

    def ranks(self) -> np.ndarray:
        """Each row's place among the side's ids sorted by hash (high half, then low): an order
        of the rows that does not depend on the order they were read in, and that the ids two
        sides share keep among themselves on either side."""
        order = self.order
        if self.exact is not None:  # ids sharing a high half: ordered by their low halves too
            order = order[np.lexsort((self.lo, self.hi))]
        ranks = np.empty(self.n, order.dtype)
        ranks[order] = np.arange(self.n, dtype=order.dtype)
        return ranks

    def rows_of(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """The row holding each id (given as its hash halves), -1 where none does."""
        if self.exact is not None:
            found = self.exact
            pairs = zip(hi.tolist(), lo.tolist(), strict=True)
            return np.fromiter((found.get(k, -1) for k in pairs), self.order.dtype, hi.shape[0])
        if self.n == 0:
            return np.full(hi.shape[0], -1, self.order.dtype)
        at = np.searchsorted(self.hi, hi)
        np.minimum(at, self.n - 1, out=at)
        hit = self.hi[at] == hi
        hit &= self.lo[at] == lo
        rows = self.order[at]
        rows[~hit] = -1
        return rows


_QUOTE, _MINUS, _BACKSLASH = 34, 45, 92
_NUMBER_MAX = 19  # digits of a whole-number id hashed as its text (longer ones: json.loads)


def plain_ids(packed: bytes, lengths: np.ndarray) -> bool:
    """Whether every raw id is its own canonical text: a string without escapes, or a whole
    number of at most 19 digits without a fraction, an exponent or a minus zero."""
    data = np.frombuffer(packed, np.uint8)
    starts = np.cumsum(lengths) - lengths
    head = data[starts]
    strings = head == _QUOTE
    if packed.find(b"\\") >= 0 and np.any(strings):
        return False
    numbers = ~strings
    if not numbers.any():
        return True
    digits = (head == _MINUS) | ((head >= 48) & (head <= 57))
    if not np.all(digits[numbers]) or np.any(lengths[numbers] > _NUMBER_MAX):
        return False
    odd = (data == 46) | (data == 101) | (data == 69) | (data == _BACKSLASH)  # . e E \
    if np.any(np.add.reduceat(odd, starts)[numbers]):
        return False
    minus_zero = numbers & (head == _MINUS) & (lengths == 2)
    return not np.any(data[starts[minus_zero] + 1] == 48)
