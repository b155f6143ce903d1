"""Per-bin tables of calibration rows and per-group totals of perplexity rows, exact and
mergeable: integer counts, and float sums kept exactly (:mod:`calibcli.summaries.exact`).

A :class:`BinTable` holds, for every group and bin (bin k of M holds ``k/M <= c < (k+1)/M``,
the edges of :func:`calibcli.metrics.core.bin_edges`; c = 1 in the last bin), the rows and right
answers, Σc and Σc² of the wrong and of the right answers, and Σ(1 − c)² of the right answers.
From these come the per-bin sufficient statistics of :class:`~calibcli.metrics.core.BinStats`
(Σc, Σc², Σc·y and Σ(c − y)², each the double nearest its exact value), so every binned figure
(ECE, MCE, RMSCE, Brier and its decomposition) is a function of the rows alone: the same bits
whatever the blocks, workers, shards or merge order. Groups are dense ids ``0..G-1``; a table
without ``--by`` has one group.

A :class:`TotalsTable` holds per-group perplexity totals: sequences, rows with an infinite NLL,
null and sentinel logprobs (int64), the exact NLL of the finite rows, and token, byte and word
counts as exact sums of integers.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from calibcli.summaries.exact import (
    CHUNK,
    LIMB_BITS,
    UNIT_EXP,
    ExactSums,
    add_rows,
    fraction_pieces,
    general_pieces,
)

_CELLS_AT_ONCE = 1 << 16  # cells read back at once: the temporaries stay small

_BLOCK = CHUNK  # rows per fold step (a reader's block is smaller): one step per block
# A step folds into every cell of the table when there are at most this many cells per row (a
# bincount over all of them costs less than finding the cells the rows touch); else into the
# touched cells only. Exact sums: the same bits either way.
_DENSE_CELLS_PER_ROW = 2
_GROUPS_PER_SUM = 1 << 20  # limbs below 2**32 summed over this many groups stay below 2**53


def grown(array: np.ndarray, rows: int, spare: float = 1.0) -> np.ndarray:
    """``array`` with at least ``rows`` rows along axis 0 (growing by ``spare`` of its rows at
    least: doubling by default; new rows zero)."""
    if array.shape[0] >= rows:
        return array
    have = array.shape[0]
    out = np.zeros((max(rows, have + int(have * spare)), *array.shape[1:]), array.dtype)
    out[: array.shape[0]] = array
    return out


def _pair_sum(
    trimmed: tuple[int, np.ndarray], first: int, last: int, stride: int, offsets: tuple[int, ...]
) -> np.ndarray:
    """Nearest doubles of Σ over ``offsets`` of cell ``stride*i + offset``, for ``first <= i <
    last``, added exactly before rounding (a slice of cells at a time: small temporaries), from
    a table's :meth:`~calibcli.summaries.exact.ExactSums.trimmed` limbs."""
    lo, limbs = trimmed
    out = np.zeros(last - first)
    if not limbs.shape[1]:
        return out
    for a in range(first, last, _CELLS_AT_ONCE):
        b = min(a + _CELLS_AT_ONCE, last)
        total = ExactSums(0, lo, limbs.shape[1])
        # limbs below 2**32: a few of them add exactly as float64
        total.limbs = sum(
            limbs[stride * a + o : stride * b : stride].astype(np.float64) for o in offsets
        )
        out[a - first : b - first] = total.to_float()
    return out


class BinTable:
    """Exact per-bin statistics of calibration rows for ``groups`` groups (see the module
    docstring). Fold rows with :meth:`add`, tables with :meth:`merge`."""

    def __init__(self, bins: int, groups: int = 1) -> None:
        from calibcli.metrics import bin_edges

        self.edges = bin_edges(bins)
        self.bins = bins
        self.groups = groups
        cells = groups * bins
        self.counts = np.zeros((cells, 2), np.int64)  # wrong answers, right answers
        self.conf = ExactSums(2 * cells)  # Σc: cell 2*(g*M + k) + y
        self.conf_sq = ExactSums(2 * cells)  # Σc²: the same cells
        self.miss_sq = ExactSums(cells)  # Σ(1 - c)² of the right answers: cell g*M + k

    @classmethod
    def of_rows(cls, bins: int, groups: int, rows: Any) -> BinTable:
        """The table of kept rows (:class:`~calibcli.summaries.rows.RowColumns` with group ids
        below ``groups``), made at its final size: the same sums as folding the rows block by
        block as they were read (every sum is exact)."""
        table = cls(bins, groups)
        for values, right in ((rows.right, True), (rows.wrong, False)):
            if values.shape[0]:
                ids = rows.right_groups if right else rows.wrong_groups
                table.add(values, np.full(values.shape[0], right), ids, groups)
        return table

    # ----- folding

    def _room(self, groups: int, spare: float = 1.0) -> None:
        """Room for ``groups`` groups (growing by ``spare`` of the rows held, at least)."""
        if groups <= self.groups:
            return
        cells = groups * self.bins
        self.counts = grown(self.counts, cells, spare)
        self.conf.grow(2 * cells, spare)
        self.conf_sq.grow(2 * cells, spare)
        self.miss_sq.grow(cells, spare)
        self.groups = groups

    def add(
        self,
        conf: np.ndarray,
        correct: np.ndarray,
        group_ids: np.ndarray | None = None,
        groups: int = 1,
    ) -> None:
        """Fold rows (confidences in [0, 1], validated) into the table; ``group_ids`` (< ``groups``)
        give each row's group, None: group 0."""
        from calibcli.metrics import bin_index

        self._room(groups)
        for start in range(0, conf.shape[0], _BLOCK):
            c = conf[start : start + _BLOCK]
            y = correct[start : start + _BLOCK]
            cell = bin_index(c, self.edges)
            if group_ids is not None:
                cell += group_ids[start : start + _BLOCK] * self.bins
            self._add_cells(cell, c, y)

    def _scratch(self, n: int) -> tuple[np.ndarray, ...]:
        """Work buffers for a step of ``n`` rows, kept from step to step (fresh temporaries of
        this size would cost page faults on every block)."""
        have = getattr(self, "_buffers", None)
        if have is None or have[0].shape[0] < n:
            self._buffers = have = tuple(np.empty(max(n, 1 << 12)) for _ in range(3))
        return have

    def _add_cells(self, cell: np.ndarray, c: np.ndarray, y: np.ndarray) -> None:
        two = 2 * cell + y
        t, u, sq = self._scratch(c.shape[0])
        n = self.groups * self.bins
        if self.groups == 1 or n <= _DENSE_CELLS_PER_ROW * c.shape[0]:  # count into every cell
            self.counts[:n] += np.bincount(two, minlength=2 * n).reshape(n, 2)
            self.conf.add_pieces(fraction_pieces(c, (t, u)), two, 2 * n)
            square = np.multiply(c, c, out=sq[: c.shape[0]])
            self.conf_sq.add_pieces(fraction_pieces(square, (t, u)), two, 2 * n)
            right = np.flatnonzero(y)
            gap = 1.0 - c[right]
            gap *= gap
            self.miss_sq.add_pieces(fraction_pieces(gap, (t, u)), cell[right], n)
            return
        # many groups: fold into the cells this block touches only
        touched, inverse = np.unique(two, return_inverse=True)
        k = touched.shape[0]
        flat = self.counts.reshape(-1)  # a view: counts is contiguous
        flat[touched] += np.bincount(inverse, minlength=k)
        self.conf.add_pieces(fraction_pieces(c), inverse, k, at=touched)
        self.conf_sq.add_pieces(fraction_pieces(c * c), inverse, k, at=touched)
        right = np.flatnonzero(y)
        if right.shape[0]:
            cells, back = np.unique(cell[right], return_inverse=True)
            gap = 1.0 - c[right]
            self.miss_sq.add_pieces(fraction_pieces(gap * gap), back, cells.shape[0], at=cells)

    def merge(self, other: BinTable, at: np.ndarray | None = None) -> None:
        """Add another table on the same bins: its group ``j`` into group ``at[j]`` here
        (``at`` None: the same group ids)."""
        if other.bins != self.bins:
            raise ValueError(f"cannot merge a table of {other.bins} bins into one of {self.bins}")
        m = self.bins
        if at is None:
            at = np.arange(other.groups)
        # a merge brings its groups at once: little room to spare (a share of 100,000 groups
        # adding a few would otherwise double tables of hundreds of MB)
        self._room(int(at.max()) + 1 if at.shape[0] else self.groups, spare=0.125)
        cells = (at[:, None] * m + np.arange(m)).reshape(-1)
        add_rows(self.counts, cells, other.counts[: other.groups * m])
        two = (2 * cells[:, None] + np.arange(2)).reshape(-1)
        self.conf.add(_window(other.conf, 2 * other.groups * m), at=two)
        self.conf_sq.add(_window(other.conf_sq, 2 * other.groups * m), at=two)
        self.miss_sq.add(_window(other.miss_sq, other.groups * m), at=cells)

    def reordered(self, order: np.ndarray) -> BinTable:
        """A new table whose group ``order[j]`` holds this table's group ``j`` (``order`` a
        permutation of the group ids): the same cells gathered in one pass each, as
        :meth:`merge` into an empty table would add them. This table is emptied as its cells
        are moved (it has no groups afterwards): both whole are never held at once."""
        g, m = order.shape[0], self.bins
        source = np.empty(g, np.intp)
        source[order] = np.arange(g)
        cells = (source[:, None] * m + np.arange(m)).reshape(-1)  # new cell -> old cell
        two = (2 * cells[:, None] + np.arange(2)).reshape(-1)
        out = BinTable(m, 0)
        out.groups = g
        out.counts = self.counts[cells]
        self.counts = np.zeros((0, 2), np.int64)
        for name, at in (("conf", two), ("conf_sq", two), ("miss_sq", cells)):
            mine = getattr(self, name)
            mine.pack()
            gathered = ExactSums(0, mine.lo, mine.depth)
            gathered.limbs = mine.limbs[at]
            mine.limbs = np.zeros((0, mine.depth))
            setattr(out, name, gathered)
        self.groups = 0
        return out

    # ----- reading

    def group_tables(self) -> Any:
        """:class:`~calibcli.metrics.GroupTables` of every group: the fields of
        :class:`~calibcli.metrics.core.BinStats` as (groups × bins) arrays, in id order."""
        return GroupReader(self).rows(0, self.groups)

    def group_stats(self) -> list[Any]:
        """:class:`~calibcli.metrics.core.BinStats` of every group, in id order (rows of the
        :meth:`group_tables` arrays, the edges one copy shared by all)."""
        from calibcli.metrics import BinStats

        t = self.group_tables()
        edges = self.edges.copy()
        return [
            BinStats(edges, *row)
            for row in zip(
                t.count,
                t.sum_correct,
                t.sum_conf,
                t.sum_conf_sq,
                t.sum_conf_correct,
                t.sum_sq_error,
                strict=True,
            )
        ]

    def stats(self) -> Any:
        """:class:`~calibcli.metrics.core.BinStats` of every row (all groups together), with
        the exact sum of every row's squared error as a double (``sq_error_total``: Brier
        rounds once more)."""
        from dataclasses import replace

        table = self if self.groups == 1 else self.pooled()
        m = table.bins
        # Σ(c − y)²: Σc² of the wrong answers (even cells) and Σ(1 − c)² of the right ones
        units = _cells_total(table.conf_sq, slice(0, 2 * m, 2)) + _cells_total(
            table.miss_sq, slice(0, m)
        )
        return replace(table.group_stats()[0], sq_error_total=Fraction(units, 1 << -UNIT_EXP))

    def pooled(self) -> BinTable:
        """A one-group table of every row: each cell's limbs summed over the groups (integers
        below 2**53 as floats: exact in any order), carried every 2**20 groups."""
        g, m = self.groups, self.bins
        out = BinTable(m)
        out.counts[:] = self.counts[: g * m].reshape(g, m, 2).sum(axis=0)
        for mine, theirs, per in (
            (out.conf, self.conf, 2 * m),
            (out.conf_sq, self.conf_sq, 2 * m),
            (out.miss_sq, self.miss_sq, m),
        ):
            theirs.normalize()
            for start in range(0, g, _GROUPS_PER_SUM):
                stop = min(start + _GROUPS_PER_SUM, g)
                part = theirs.limbs[start * per : stop * per].reshape(stop - start, per, -1)
                window = ExactSums(per, theirs.lo, theirs.depth)
                window.limbs = part.sum(axis=0, dtype=np.float64)
                mine.add(window)
        return out


def _cells_total(sums: ExactSums, cells: slice) -> int:
    """The exact sum of ``cells`` of ``sums``, in units of 2**-1088 (each limb column added as
    uint64: fewer than 2**32 limbs below 2**32 each cannot overflow it)."""
    lo, limbs = sums.trimmed()
    columns = limbs[cells].astype(np.uint64).sum(axis=0, dtype=np.uint64).tolist()
    return sum(int(v) << (LIMB_BITS * (lo + k)) for k, v in enumerate(columns))


def _window(sums: ExactSums, cells: int, start: int = 0) -> ExactSums:
    """Cells ``start`` to ``cells`` of ``sums`` (a view, carried first, for merging)."""
    sums.normalize()
    out = ExactSums(0, sums.lo, sums.depth)
    out.limbs = sums.limbs[start:cells]
    return out


def _sq_error(
    conf_sq: tuple[int, np.ndarray], miss_sq: ExactSums, first: int, last: int
) -> np.ndarray:
    """Σ(c − y)² per cell ``first <= k < last``: Σc² of the wrong answers (from the trimmed
    limbs ``conf_sq``) plus Σ(1 − c)² of the right ones, exactly (a slice of cells at a time:
    small temporaries)."""
    lo, limbs = conf_sq
    out = np.empty(last - first)
    for a in range(first, last, _CELLS_AT_ONCE):
        b = min(a + _CELLS_AT_ONCE, last)
        total = ExactSums(b - a)
        wrong = ExactSums(b - a, lo, max(limbs.shape[1], 1))
        if limbs.shape[1]:
            wrong.limbs[:, : limbs.shape[1]] = limbs[2 * a : 2 * b : 2]
        total.add(wrong)
        total.add(_window(miss_sq, b, a))
        out[a - first : b - first] = total.to_float()
    return out


class GroupReader:
    """Reads a :class:`BinTable`'s groups back as :class:`~calibcli.metrics.GroupTables`, a
    range of groups at a time (:meth:`rows`): code that treats every group can then hold the
    floats of a slice of groups, not of all (each table is trimmed once, here)."""

    def __init__(self, table: BinTable) -> None:
        self.table = table
        self.conf = table.conf.trimmed()
        self.conf_sq = table.conf_sq.trimmed()
        self._miss_sq: tuple[int, np.ndarray] | None = None  # trimmed when first needed

    def rows(self, start: int, stop: int, fields: tuple[str, ...] | None = None) -> Any:
        """The tables of groups ``start`` to ``stop``; ``fields`` (names of GroupTables'
        fields, ``brier`` among them) computes those only, the others None."""
        from calibcli.metrics import GroupTables

        t, m = self.table, self.table.bins
        g, first, last = stop - start, start * m, stop * m
        wanted = GroupTables.FIELDS if fields is None else fields
        counts = t.counts[first:last].reshape(g, m, 2)
        made = {
            "count": lambda: counts.sum(axis=2),
            "sum_correct": lambda: counts[:, :, 1],  # a view: the table's own counts
            "sum_conf": lambda: _pair_sum(self.conf, first, last, 2, (0, 1)).reshape(g, m),
            "sum_conf_sq": lambda: _pair_sum(self.conf_sq, first, last, 2, (0, 1)).reshape(g, m),
            "sum_conf_correct": lambda: _pair_sum(self.conf, first, last, 2, (1,)).reshape(g, m),
            "sum_sq_error": lambda: _sq_error(self.conf_sq, t.miss_sq, first, last).reshape(g, m),
        }
        brier = None
        if fields is None or "brier" in fields:
            if self._miss_sq is None:
                self._miss_sq = t.miss_sq.trimmed()
            n = counts.sum(axis=(1, 2)).tolist()
            brier = _exact_brier(self.conf_sq, self._miss_sq, m, start, n)
        return GroupTables(
            *(made[f]() if f in wanted else None for f in GroupTables.FIELDS), brier=brier
        )

    def sq_error_total(self, g: int) -> Fraction:
        """Group ``g``'s exact Σ(c − y)², each row's squared error a double (as
        :meth:`BinTable.stats` gives every row's)."""
        if self._miss_sq is None:
            self._miss_sq = self.table.miss_sq.trimmed()
        (units,), exp = _exact_sq_errors(self.conf_sq, self._miss_sq, self.table.bins, g, 1)
        return Fraction(units << exp) if exp >= 0 else Fraction(units, 1 << -exp)


def _exact_brier(
    conf_sq: tuple[int, np.ndarray], miss_sq: tuple[int, np.ndarray], m: int, first: int, n: list
) -> np.ndarray:
    """The Brier score of each group from ``first`` on (``n``: each one's rows, ``m`` bins
    each): its exact Σ(c − y)² (:func:`_exact_sq_errors`) divided once by its rows, a quotient
    of integers correctly rounded, as :meth:`~calibcli.metrics.core.BinStats.brier` of one
    group's exact total; 0.0 without rows."""
    units, exp = _exact_sq_errors(conf_sq, miss_sq, m, first, len(n))
    out = np.empty(len(n))
    for j, (total, rows) in enumerate(zip(units, n, strict=True)):
        out[j] = ((total << exp) / rows if exp >= 0 else total / (rows << -exp)) if rows else 0.0
    return out


def _exact_sq_errors(
    conf_sq: tuple[int, np.ndarray], miss_sq: tuple[int, np.ndarray], m: int, first: int, g: int
) -> tuple[list[int], int]:
    """Each of ``g`` groups' (from ``first`` on, ``m`` bins each) exact Σ(c − y)², as integers
    counting 2**exp: Σc² of its wrong answers and Σ(1 − c)² of its right ones, from the
    trimmed limbs (each group's cells summed as uint64 columns, then carried)."""
    parts = []  # (lowest limb, each group's column sums of its cells' limbs)
    for (lo, limbs), cells, step in ((conf_sq, 2 * m, 2), (miss_sq, m, 1)):
        if limbs.shape[1]:
            mine = limbs[first * cells : (first + g) * cells : step].reshape(g, m, limbs.shape[1])
            parts.append((lo, mine.astype(np.uint64).sum(axis=1, dtype=np.uint64)))
    if not parts:
        return [0] * g, 0
    low = min(lo for lo, _ in parts)
    width = max(lo + sums.shape[1] for lo, sums in parts) - low + 2  # room for the carries
    total = np.zeros((g, width), np.uint64)
    for lo, sums in parts:  # each below m·2**32: two of them cannot overflow 64 bits
        total[:, lo - low : lo - low + sums.shape[1]] += sums
    for k in range(width - 1):  # carried into 32-bit limbs, little end first
        total[:, k + 1] += total[:, k] >> np.uint64(LIMB_BITS)
        total[:, k] &= np.uint64((1 << LIMB_BITS) - 1)
    raw, size = total.astype("<u4").tobytes(), 4 * width
    units = [int.from_bytes(raw[j * size : (j + 1) * size], "little") for j in range(g)]
    return units, LIMB_BITS * low + UNIT_EXP  # limb 0 counts 2**exp


_HALF = 31
_LOW = (1 << _HALF) - 1


def _halves(ids: np.ndarray, col: np.ndarray, groups: int) -> np.ndarray:
    """Per-group Σ of counts in [0, 2**62] as (high, low) 31-bit halves, int64 (float bincount
    is exact while a block has fewer than 2**22 rows)."""
    return np.stack(
        [
            np.bincount(ids, weights=col >> _HALF, minlength=groups),
            np.bincount(ids, weights=col & _LOW, minlength=groups),
        ],
        axis=1,
    ).astype(np.int64)


def join_halves(halves: np.ndarray) -> int:
    """A (high, low) pair of :func:`_halves` as one exact Python integer."""
    return (int(halves[0]) << _HALF) + int(halves[1])


class TotalsTable:
    """Exact per-group totals of perplexity rows (see the module docstring)."""

    COUNTS = ("tokens", "bytes", "words")

    def __init__(self, groups: int = 1) -> None:
        self.groups = groups
        # sequences, rows with an infinite NLL, null and sentinel logprobs, rows whose finite
        # per-token terms sum beyond the largest double
        self.ints = np.zeros((groups, 5), np.int64)
        self.counts = np.zeros((groups, 3, 2), np.int64)  # tokens, bytes, words: (high, low)
        self.nll = ExactSums(groups, lo=30, depth=8)  # the NLL of the rows where it is finite

    def _room(self, groups: int) -> None:
        if groups > self.groups:
            self.ints = grown(self.ints, groups)
            self.counts = grown(self.counts, groups)
            self.nll.grow(groups)
            self.groups = groups

    def add(
        self, cols: tuple, infinite: np.ndarray, ids: np.ndarray | None = None, groups: int = 1
    ) -> None:
        """Fold a perplexity block (the column layout of :mod:`calibcli.io.rows`) whose count
        columns were checked; ``infinite`` marks rows whose NLL is infinite as given (counted,
        not summed), the block's last column rows whose NLL overflowed a double (counted, not
        summed); ``ids`` (< ``groups``) each row's group, None: group 0."""
        self._room(groups)
        nll = cols[0]
        n = nll.shape[0]
        if ids is None and cols[4] is None and cols[5] is None and cols[6] is None:
            self._add_one(cols, infinite)
            return
        if ids is None:
            ids = np.zeros(n, np.intp)
        self.ints[:groups, 0] += np.bincount(ids, minlength=groups)
        self.ints[:groups, 1] += np.bincount(ids[infinite], minlength=groups)
        for j, col in ((2, cols[4]), (3, cols[5])):
            if col is not None:
                self.ints[:groups, j] += np.bincount(ids, weights=col, minlength=groups).astype(
                    np.int64
                )
        if cols[6] is not None:
            self.ints[:groups, 4] += np.bincount(ids, weights=cols[6], minlength=groups).astype(
                np.int64
            )
        for k, col in enumerate(cols[1:4]):
            if col is not None and col.shape[0] and col[0] >= 0:  # checked: all or none
                self.counts[:groups, k] += _halves(ids, col, groups)
        finite = np.flatnonzero(~np.isinf(nll))
        for start in range(0, finite.shape[0], CHUNK):
            rows = finite[start : start + CHUNK]
            self.nll.add_pieces(general_pieces(nll[rows]), ids[rows], groups)

    def _add_one(self, cols: tuple, infinite: np.ndarray) -> None:
        """:meth:`add` of native rows into group 0: the same exact integers, summed without
        per-row group ids (the counts' halves and the NLL's pieces add up exactly in any
        order)."""
        nll = cols[0]
        self.ints[0, 0] += nll.shape[0]
        self.ints[0, 1] += np.count_nonzero(infinite)
        for k, col in enumerate(cols[1:4]):
            if col is not None and col.shape[0] and col[0] >= 0:  # checked: all or none
                self.counts[0, k] += (int(np.sum(col >> _HALF)), int(np.sum(col & _LOW)))
        finite = np.flatnonzero(~infinite) if infinite.any() else None
        for start in range(0, nll.shape[0] if finite is None else finite.shape[0], CHUNK):
            part = (
                nll[start : start + CHUNK] if finite is None else nll[finite[start : start + CHUNK]]
            )
            self.nll.add_pieces(general_pieces(part), None, 1)

    def merge(self, other: TotalsTable, at: np.ndarray | None = None) -> None:
        """Add another table: its group ``j`` into group ``at[j]`` here (None: same ids)."""
        if at is None:
            at = np.arange(other.groups)
        self._room(int(at.max()) + 1 if at.shape[0] else self.groups)
        add_rows(self.ints, at, other.ints[: other.groups])
        add_rows(self.counts, at, other.counts[: other.groups])
        self.nll.add(_window(other.nll, other.groups), at=at)

    def pooled(self) -> TotalsTable:
        """All groups as one."""
        out = TotalsTable(1)
        out.merge(self, np.zeros(self.groups, np.intp))
        return out

    def totals(self, g: int, nll: float) -> dict[str, int | float]:
        """Group ``g``'s totals as Python numbers (``nll`` its NLL, from :meth:`nll_floats`)."""
        sequences, infinite, nulls, sentinels, overflowed = (int(v) for v in self.ints[g])
        tokens, nbytes, words = (join_halves(self.counts[g, k]) for k in range(3))
        return {
            "sequences": sequences,
            "infinite": infinite,
            "overflowed": overflowed,
            "null_logprobs": nulls,
            "sentinel_logprobs": sentinels,
            "tokens": tokens,
            "bytes": nbytes,
            "words": words,
            "nll": nll,
        }

    def nll_floats(self) -> np.ndarray:
        """Each group's finite NLL total, the nearest double (+inf beyond the largest)."""
        return self.nll.to_float()
