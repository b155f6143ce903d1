"""Exact sums of doubles, kept as fixed-point integers so that they merge to the last bit.

Every finite double is an integer multiple of 2**-1074, so a sum of doubles is an integer
number of units of 2**-1088 (a multiple of 32 below the smallest double). An :class:`ExactSums`
holds one such integer per cell as base-2**32 limbs: limb ``j`` counts units of
``2**(32*j - 1088)``; limb 33 counts 2**-32 (where the fraction bits of a value in [0, 1] start)
and limb 34 counts ones. Adding rows, merging two sums and reading a sum back are exact, so a
sum does not depend on the order of the rows, on how they were split into blocks, shards or
worker processes, or on the order in which parts are merged: the same rows give the same bits.

Limbs are added as integer-valued float64 (exact below 2**53), so numpy's ``bincount`` adds a
block's pieces without rounding: a row's value is cut on the limb grid into pieces of at most
32 bits (a value in [0, 1] has at most three non-zero pieces, its 53 bits spanning three 32-bit
limbs at most), a block of at most 2**16 rows sums each limb to less than 2**49, and carries
are propagated (:meth:`ExactSums.normalize`) every 2**20 rows or so, before any limb could
reach 2**53. A table of many cells is held packed instead: every limb carried into [0, 2**32)
and stored as uint32 (half the memory), each step gathering the cells it touches as float64,
adding to them, carrying, and storing them back. Only the limbs a table uses are stored (a
window ``[lo, lo + depth)``): a sum of confidences typically needs five limbs (40 bytes per
cell as float64, 20 packed and in a summary file).

:meth:`ExactSums.to_float` reads each sum back as the double nearest to it (round half to even),
vectorised; :meth:`ExactSums.to_int` gives the exact integer (in units of 2**-1088).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

LIMB_BITS = 32
RADIX = float(1 << LIMB_BITS)
UNIT_EXP = -1088
"""Exponent of limb 0's unit: 2**-1088, a multiple of 32 below the smallest double, 2**-1074."""
FRACTION_LIMB = 33
"""The limb counting 2**-32: a value in [0, 1] is cut into pieces from this limb down."""
ONE_LIMB = 34
"""The limb counting ones."""
CHUNK = 1 << 16
"""Rows per bincount: a limb's sum of 32-bit pieces over a chunk stays below 2**49."""
_NORMALIZE_ROWS = 1 << 20
"""Rows added between two carry propagations: a limb below 2**32 plus one piece of at most
2**32 per row of fewer than 2**20 + :data:`CHUNK` rows stays below 2**53."""


def fraction_pieces(
    values: np.ndarray, scratch: tuple[np.ndarray, np.ndarray] | None = None
) -> Iterator[tuple[int, np.ndarray | None, np.ndarray]]:
    """Cut doubles in [0, 1] on the limb grid: yields ``(limb, rows, pieces)`` where ``pieces``
    (integer-valued floats below 2**32, or exactly 2**32 for a value of 1) count units of
    limb ``limb`` and belong to ``values[rows]`` (``rows`` None: every value). The pieces of a
    value sum to it exactly; most values need two limbs, small ones more.

    ``scratch``: two float64 buffers at least as long as ``values``, reused for the work (the
    pieces yielded live in them, valid until the next one is asked for)."""
    n = values.shape[0]
    if scratch is None:
        scratch = (np.empty(n), np.empty(n))
    t, u = scratch[0][:n], scratch[1][:n]
    np.multiply(values, RADIX, out=t)  # exact: a power of two
    np.floor(t, out=u)
    yield FRACTION_LIMB, None, u
    np.subtract(t, u, out=t)  # the bits below 2**-32, exact
    rows = None
    limb = FRACTION_LIMB - 1
    while True:
        np.multiply(t, RADIX, out=t)
        np.floor(t, out=u)
        yield limb, rows, u
        np.subtract(t, u, out=t)
        left = np.flatnonzero(t)
        if left.shape[0] == 0:
            return
        if left.shape[0] < t.shape[0]:
            t = t[left]
            u = u[: left.shape[0]]
            rows = left if rows is None else rows[left]
        limb -= 1


def general_pieces(values: np.ndarray) -> Iterator[tuple[int, np.ndarray | None, np.ndarray]]:
    """:func:`fraction_pieces` for any finite non-negative doubles: the integer part below
    2**53 as two pieces (limbs 35 and 34), the fraction as :func:`fraction_pieces` cuts it,
    and larger values (integers, rare) piece by piece."""
    whole = np.floor(values)
    big = np.flatnonzero(whole >= 2.0**53)
    if big.shape[0]:
        small = np.flatnonzero(whole < 2.0**53)
        yield from _big_pieces(values, big)
        if small.shape[0] == 0:
            return
        for limb, rows, pieces in general_pieces(values[small]):
            yield limb, small if rows is None else small[rows], pieces
        return
    high = np.floor(whole / RADIX)
    yield ONE_LIMB + 1, None, high
    yield ONE_LIMB, None, whole - high * RADIX
    yield from fraction_pieces(values - whole)


def _big_pieces(
    values: np.ndarray, rows: np.ndarray
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Pieces of integers of 2**53 and more, one limb at a time (exact Python integers)."""
    by_limb: dict[int, tuple[list[int], list[float]]] = {}
    for i in rows.tolist():
        n = int(values[i])  # an integer: doubles of 2**53 and more have no fraction
        j = ONE_LIMB
        while n:
            n, piece = divmod(n, 1 << LIMB_BITS)
            if piece:
                where, got = by_limb.setdefault(j, ([], []))
                where.append(i)
                got.append(float(piece))
            j += 1
    for limb, (where, got) in sorted(by_limb.items()):
        yield limb, np.asarray(where, np.intp), np.asarray(got)


PACK_CELLS = 1 << 16
"""Cells from which :meth:`ExactSums.add` of another table's sums into chosen cells packs the
table (a smaller table adds as float64: no per-step gather)."""


class ExactSums:
    """Exact sums of non-negative doubles, one per cell (see the module docstring).

    ``lo`` is the lowest limb held and ``limbs`` an array of shape ``(cells, depth)``; limb
    ``lo + k`` of cell ``c`` is ``limbs[c, k]``: integer-valued float64 while adding, in
    [0, 2**32) after :meth:`normalize`, or uint32 when packed (:meth:`pack`; adding values into
    chosen cells keeps a table packed, adding into every cell unpacks it).
    """

    __slots__ = ("_pending", "limbs", "lo")

    def __init__(self, cells: int, lo: int = FRACTION_LIMB - 1, depth: int = 4) -> None:
        self.lo = lo
        self.limbs = np.zeros((cells, depth), np.uint32 if cells >= PACK_CELLS else np.float64)
        self._pending = 0  # rows added since the last normalization

    # ----- shape

    @property
    def cells(self) -> int:
        return int(self.limbs.shape[0])

    @property
    def depth(self) -> int:
        return int(self.limbs.shape[1])

    def grow(self, cells: int, spare: float = 1.0) -> None:
        """Room for at least ``cells`` cells (new cells hold 0), growing by ``spare`` of the
        cells held at least (doubling by default); packed from :data:`PACK_CELLS` cells."""
        have = self.limbs.shape[0]
        if cells <= have:
            return
        if cells >= PACK_CELLS:
            self.pack()  # a large table grows packed (adding into every cell unpacks it)
        grown = np.zeros((max(cells, have + int(have * spare)), self.depth), self.limbs.dtype)
        grown[:have] = self.limbs
        self.limbs = grown

    def _span(self, low: int, high: int) -> None:
        """Widen the window to hold limbs ``low`` to ``high`` (inclusive)."""
        lo, hi = min(low, self.lo), max(high, self.lo + self.depth - 1)
        if lo == self.lo and hi == self.lo + self.depth - 1:
            return
        wider = np.zeros((self.limbs.shape[0], hi - lo + 1), self.limbs.dtype)
        wider[:, self.lo - lo : self.lo - lo + self.depth] = self.limbs
        self.limbs, self.lo = wider, lo

    @property
    def packed(self) -> bool:
        """Whether the limbs are held as uint32 (see :meth:`pack`)."""
        return self.limbs.dtype == np.uint32

    def pack(self) -> None:
        """Hold the limbs as uint32, carried into [0, 2**32) first: half the memory, the same
        sums."""
        if not self.packed:
            self.normalize()
            self.limbs = self.limbs.astype(np.uint32)

    def _unpacked(self) -> None:
        """Hold the limbs as float64, to add into them in place."""
        if self.packed:
            self.limbs = self.limbs.astype(np.float64)

    def _store(self, rows: np.ndarray, lo: int, at: np.ndarray) -> None:
        """Carry ``rows`` (float64 limbs of cells ``at``, distinct, window from ``lo``, at most
        as wide as this table's) and store them packed into those cells."""
        rows = _widened(rows, lo, self.lo, self.depth)
        top = _carry(rows)
        if top is not None:  # one more limb on top
            self._span(self.lo, self.lo + self.depth)
            rows = np.concatenate([rows, top[:, None]], axis=1)
        self.limbs[at] = rows.astype(np.uint32)

    # ----- adding

    def add_pieces(
        self,
        pieces: Iterator[tuple[int, np.ndarray | None, np.ndarray]],
        cells: np.ndarray | None,
        ncells: int,
        at: np.ndarray | None = None,
    ) -> None:
        """Add cut values (:func:`fraction_pieces`, :func:`general_pieces`) of at most
        :data:`CHUNK` rows: row i's pieces go to cell ``cells[i]`` (< ``ncells``), or, with
        ``at``, to cell ``at[cells[i]]`` (``cells`` then index the distinct cells ``at``);
        ``cells`` None: every row to cell 0. With ``at`` the table is packed (see the module
        docstring)."""
        if at is not None:
            self._add_at(pieces, cells, ncells, at)
            return
        self._unpacked()
        added = 0  # rows whose pieces were added: at most one piece per row and limb
        for limb, rows, values in pieces:
            added = max(added, values.shape[0])
            if cells is None:  # one cell: integer-valued pieces sum exactly in any order
                column = np.array([values.sum()])
            else:
                keys = cells if rows is None else cells[rows]
                column = np.bincount(keys, weights=values, minlength=ncells)
            if limb < self.lo or limb >= self.lo + self.depth:
                if not column.any():
                    continue
                self._span(limb, limb)
            self.limbs[:ncells, limb - self.lo] += column
        self._pending += added
        if self._pending >= _NORMALIZE_ROWS:
            self.normalize()

    def _add_at(
        self,
        pieces: Iterator[tuple[int, np.ndarray | None, np.ndarray]],
        cells: np.ndarray,
        ncells: int,
        at: np.ndarray,
    ) -> None:
        """:meth:`add_pieces` into the distinct cells ``at``, packed: their limbs gathered as
        float64, the pieces added, carried and stored back."""
        self.pack()
        lo = self.lo
        rows = self.limbs[at].astype(np.float64)
        for limb, where, values in pieces:
            keys = cells if where is None else cells[where]
            column = np.bincount(keys, weights=values, minlength=ncells)
            if limb < lo or limb >= lo + rows.shape[1]:
                if not column.any():
                    continue
                self._span(limb, limb)
                rows, lo = _widened(rows, lo, self.lo, self.depth), self.lo
            rows[:, limb - lo] += column
        self._store(rows, lo, at)

    def add_fractions(self, cells: np.ndarray, values: np.ndarray, ncells: int) -> None:
        """Add values in [0, 1]: ``values[i]`` to cell ``cells[i]``."""
        for start in range(0, values.shape[0], CHUNK):
            stop = start + CHUNK
            self.add_pieces(fraction_pieces(values[start:stop]), cells[start:stop], ncells)

    def add_values(self, cells: np.ndarray, values: np.ndarray, ncells: int) -> None:
        """Add finite non-negative values: ``values[i]`` to cell ``cells[i]``."""
        for start in range(0, values.shape[0], CHUNK):
            stop = start + CHUNK
            self.add_pieces(general_pieces(values[start:stop]), cells[start:stop], ncells)

    def add(self, other: ExactSums, at: np.ndarray | None = None) -> None:
        """Add another table's sums: its cell ``k`` to cell ``at[k]`` here (``at`` None: the
        same cell; several cells may go to one). A table of :data:`PACK_CELLS` cells or more
        adds into chosen cells packed."""
        other.normalize()
        if self.packed or (at is not None and self.cells >= PACK_CELLS):
            if at is None:
                self.grow(other.cells)
                at = np.arange(other.cells)
            self._add_packed(other, at)
            return
        self.normalize()
        self._span(other.lo, other.lo + other.depth - 1)
        k0 = other.lo - self.lo
        if at is None:
            self.grow(other.cells)
            self.limbs[: other.cells, k0 : k0 + other.depth] += other.limbs
        else:
            add_rows(self.limbs[:, k0 : k0 + other.depth], at, other.limbs)
        self.normalize()

    def _add_packed(self, other: ExactSums, at: np.ndarray) -> None:
        """:meth:`add` into this table packed, a slice of cells at a time (small temporaries)."""
        self.pack()
        self._span(other.lo, other.lo + other.depth - 1)
        k0 = other.lo - self.lo
        repeated = at.shape[0] > 0 and int(np.bincount(at, minlength=1).max()) > 1
        for a in range(0, at.shape[0], CHUNK):
            where, values = at[a : a + CHUNK], other.limbs[a : a + CHUNK]
            if repeated:
                where, inverse = np.unique(where, return_inverse=True)
            rows = self.limbs[where].astype(np.float64)
            if repeated:
                np.add.at(rows[:, k0 : k0 + other.depth], inverse, values)
            else:
                rows[:, k0 : k0 + other.depth] += values
            self._store(rows, self.lo, where)

    def normalize(self) -> None:
        """Propagate carries: every limb into [0, 2**32), the window widened upward if needed."""
        self._pending = 0
        limbs = self.limbs
        if not limbs.size or self.packed:
            return
        for k in range(limbs.shape[1]):
            column = limbs[:, k]
            carry = np.floor(column / RADIX)
            if not carry.any():
                continue
            column -= carry * RADIX
            if k + 1 == limbs.shape[1]:
                self._span(self.lo, self.lo + self.depth)  # one more limb on top
                limbs = self.limbs
            limbs[:, k + 1] += carry

    # ----- reading

    def trimmed(self) -> tuple[int, np.ndarray]:
        """``(lo, limbs)`` with every limb in [0, 2**32) and no all-zero limb at either end of
        the window (``limbs`` of depth 0 when every sum is 0): the canonical form."""
        self.normalize()
        used = np.flatnonzero(self.limbs.any(axis=0))
        if used.shape[0] == 0:
            return FRACTION_LIMB, self.limbs[:, :0]
        first, last = int(used[0]), int(used[-1])
        return self.lo + first, self.limbs[:, first : last + 1]

    def to_int(self, cell: int) -> int:
        """Cell ``cell``'s sum exactly, in units of 2**-1088."""
        lo, limbs = self.trimmed()
        total = 0
        for k in range(limbs.shape[1] - 1, -1, -1):
            total = (total << LIMB_BITS) + int(limbs[cell, k])
        return total << (LIMB_BITS * lo)

    def to_float(self) -> np.ndarray:
        """Each cell's sum as the nearest double (ties to even); +inf beyond the largest."""
        lo, limbs = self.trimmed()
        return limbs_to_float(limbs, lo)


def _carry(limbs: np.ndarray) -> np.ndarray | None:
    """Propagate carries through float64 limbs (below 2**53) in place, each into [0, 2**32);
    the carry out of the top limb, None when there is none."""
    carry = None
    for k in range(limbs.shape[1]):
        column = limbs[:, k]
        if carry is not None:
            column += carry
        carry = np.floor(column / RADIX)
        if not carry.any():
            carry = None
            continue
        column -= carry * RADIX
    return carry


def _widened(rows: np.ndarray, lo: int, new_lo: int, depth: int) -> np.ndarray:
    """Limbs ``rows`` (window from ``lo``) in the window of ``depth`` limbs from ``new_lo``
    (which holds it)."""
    if lo == new_lo and rows.shape[1] == depth:
        return rows
    out = np.zeros((rows.shape[0], depth))
    out[:, lo - new_lo : lo - new_lo + rows.shape[1]] = rows
    return out


def add_rows(target: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    """``target[at[i]] += values[i]`` for every i, repeated targets included."""
    # distinct targets, found by counting them (targets are row indices of ``target``)
    if not at.shape[0] or int(np.bincount(at, minlength=1).max()) <= 1:
        for a in range(0, at.shape[0], CHUNK):  # in slices: small temporaries
            target[at[a : a + CHUNK]] += values[a : a + CHUNK]
    else:
        np.add.at(target, at, values)


def limbs_to_float(limbs: np.ndarray, lo: int) -> np.ndarray:
    """The nearest doubles (ties to even) to integers given as base-2**32 limbs.

    ``limbs[c, k]`` (integer-valued, in [0, 2**32)) counts units of 2**(32*(lo + k) - 1088).
    Vectorised: the top three limbs of each value give its 53-bit significand, the round bit
    and part of the sticky bit; the limbs below complete the sticky bit.
    """
    cells = limbs.shape[0]
    if cells <= _CELLS_AT_ONCE:
        return _limbs_to_float(limbs, lo)
    # elementwise per cell: in slices, so that its two dozen temporaries stay small
    out = np.empty(cells)
    for start in range(0, cells, _CELLS_AT_ONCE):
        out[start : start + _CELLS_AT_ONCE] = _limbs_to_float(
            limbs[start : start + _CELLS_AT_ONCE], lo
        )
    return out


_CELLS_AT_ONCE = 1 << 16


def _limbs_to_float(limbs: np.ndarray, lo: int) -> np.ndarray:
    """:func:`limbs_to_float` of one slice of cells."""
    cells, depth = limbs.shape
    out = np.zeros(cells)
    if depth == 0 or cells == 0:
        return out
    padded = np.zeros((cells, depth + 2), np.uint64)
    padded[:, 2:] = limbs.astype(np.uint64)
    nonzero = padded != 0
    any_set = nonzero.any(axis=1)
    top = (depth + 1) - np.argmax(nonzero[:, ::-1], axis=1)  # index of the highest non-zero limb
    rows = np.arange(cells)
    a = padded[rows, top]
    b = padded[rows, top - 1]
    c = padded[rows, top - 2]
    below = np.cumsum(nonzero, axis=1)  # non-zero limbs at or below each index
    lower = np.where(top >= 3, below[rows, np.maximum(top - 3, 0)], 0) > 0
    hi = (a << np.uint64(32)) | b  # the top two limbs: 33 to 64 bits
    bits = _bit_length(hi)  # of hi; the three limbs hold bits + 32 bits
    drop = bits - 21  # bits below the 53-bit significand, 12 to 43
    wide = drop >= 32
    # drop >= 32: the significand lies in hi; c and the low (drop - 32) bits of hi are dropped
    s_wide = np.where(wide, drop - 32, 0).astype(np.uint64)
    mant_wide = hi >> s_wide
    rest_wide = hi & ((np.uint64(1) << s_wide) - np.uint64(1))
    round_wide = np.where(
        s_wide > 0,
        (rest_wide >> np.maximum(s_wide, np.uint64(1)) - np.uint64(1)) & np.uint64(1),
        c >> np.uint64(31),
    )
    sticky_wide = np.where(
        s_wide > 0,
        (
            rest_wide
            & ((np.uint64(1) << np.maximum(s_wide, np.uint64(1)) - np.uint64(1)) - np.uint64(1))
        )
        | c,
        c & np.uint64(0x7FFFFFFF),
    )
    # drop < 32: the significand takes all of hi and the top (32 - drop) bits of c
    s_narrow = np.where(wide, 1, drop).astype(np.uint64)
    mant_narrow = (hi << (np.uint64(32) - s_narrow)) | (c >> s_narrow)
    round_narrow = (c >> (s_narrow - np.uint64(1))) & np.uint64(1)
    sticky_narrow = c & ((np.uint64(1) << (s_narrow - np.uint64(1))) - np.uint64(1))
    mant = np.where(wide, mant_wide, mant_narrow)
    round_bit = np.where(wide, round_wide, round_narrow) != 0
    sticky = (np.where(wide, sticky_wide, sticky_narrow) != 0) | lower
    up = round_bit & (sticky | ((mant & np.uint64(1)) != 0))
    mant = mant + up.astype(np.uint64)  # 2**53 at most: still exact as a double
    exponent = drop + LIMB_BITS * (top - 2 + lo - 2) + UNIT_EXP
    with np.errstate(over="ignore"):
        out = np.ldexp(mant.astype(np.float64), exponent.astype(np.int64))
    return np.where(any_set, out, 0.0)


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of each uint64 (x >= 1), exactly: frexp's exponent, corrected where the
    conversion to a double rounded up to the next power of two."""
    _, e = np.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    over = (e > 64) | ((x >> np.minimum(e - 1, 63).astype(np.uint64)) == 0)
    return e - over


def sum_to_float(total: int) -> float:
    """The nearest double to ``total`` units of 2**-1088 (Python's integer division is
    correctly rounded): the reference :meth:`ExactSums.to_float` agrees with."""
    try:
        return total / (1 << -UNIT_EXP)
    except OverflowError:
        return math.inf
