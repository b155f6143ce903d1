"""Isotonic regression of 0/1 outcomes on confidences by pool-adjacent-violators, in numpy.

Pure numpy. The rows come as the confidences of right answers and of wrong answers; the fit
sorts each once and never holds a row-sized array of labels, indices or Python objects. It
returns the blocks of distinct confidences whose accuracies increase strictly: the first and
last confidence of each block, and its right answers and rows as exact integers, so each
block's accuracy is one division of the same two integers whatever the order of pooling.

Pooling an adjacent pair of blocks whose accuracies do not increase never leaves the
isotonic solution, and pooling in any order until none is left ends at the same blocks
(the level sets of the solution). So adjacent violators are pooled in vectorised rounds, the
first while the sorted rows are read a slice at a time, and a stack of blocks finishes what
the rounds leave once they stop pooling much.
"""

from __future__ import annotations

import numpy as np

from calibcli.metrics.pairwise import SLICE

__all__ = ["Blocks", "interpolate", "isotonic_blocks"]

# (first confidence, last confidence, right answers, rows) of each block, in order
Blocks = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

_ROUNDS_WHILE = 8  # another vectorised round while it pools at least 1/8 of the blocks


def isotonic_blocks(right: np.ndarray, wrong: np.ndarray) -> Blocks:
    """The blocks of pool-adjacent-violators over the distinct confidences of the rows
    ``right`` (y = 1) and ``wrong`` (y = 0), equal neighbours pooled so the block accuracies
    rise strictly. Tied confidences are one point: +0.0 and −0.0 are one, shown as the first
    of them in the rows ``right`` then ``wrong``. At least one row."""
    # the sorted copies live while the first round reads them, its blocks are joined after
    pieces = _first_round(np.sort(right), np.sort(wrong))
    blocks: Blocks = tuple(np.concatenate(p) for p in pieces)  # type: ignore[assignment]
    del pieces
    while blocks[0].shape[0] > 1:
        before = blocks[0].shape[0]
        blocks = _pool_round(blocks)
        if blocks[0].shape[0] * _ROUNDS_WHILE > before * (_ROUNDS_WHILE - 1):
            break
    return _pool_stack(blocks)


def signed_zero(parts: tuple[np.ndarray, ...]) -> float | None:
    """The first zero among ``parts`` read in order (−0.0 or 0.0), None if there is none."""
    for values in parts:
        for a in range(0, values.shape[0], SLICE):
            zero = values[a : a + SLICE] == 0.0
            if zero.any():
                return float(values[a + int(np.argmax(zero))])
    return None


def _violations(right: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Whether block i's accuracy is at least block i + 1's, compared exactly in integers."""
    if rows.shape[0] and int(rows.sum()) >= 1 << 31:  # products beyond int64: Python integers
        right, rows = right.astype(object), rows.astype(object)
    return right[:-1] * rows[1:] >= right[1:] * rows[:-1]


def _first_round(right: np.ndarray, wrong: np.ndarray) -> list[list[np.ndarray]]:
    """Each distinct confidence a block, pooled with its neighbour wherever they violate,
    read a range of confidences at a time from the two sorted columns: the blocks' four
    arrays, each in pieces."""
    cuts = np.unique(np.concatenate([right[::SLICE], wrong[::SLICE]]))[1:]
    r_at = [*np.searchsorted(right, cuts).tolist(), right.shape[0]]
    w_at = [*np.searchsorted(wrong, cuts).tolist(), wrong.shape[0]]
    out: list[list[np.ndarray]] = [[], [], [], []]
    last = None  # (right answers, rows) of the last distinct confidence read so far
    r0 = w0 = 0
    for r1, w1 in zip(r_at, w_at, strict=True):
        values = np.concatenate([right[r0:r1], wrong[w0:w1]])
        is_right = np.zeros(values.shape[0], dtype=np.int64)
        is_right[: r1 - r0] = 1
        order = np.argsort(values, kind="stable")
        values, is_right = values[order], is_right[order]
        del order
        r0, w0 = r1, w1
        if not values.shape[0]:
            continue
        first = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
        rows = np.diff(np.append(first, values.shape[0]))
        rights = np.add.reduceat(is_right, first)
        # a new block starts at each distinct confidence that does not violate its predecessor
        starts = np.concatenate([[True], ~_violations(rights, rows)])
        joins = last is not None and bool(
            _violations(np.array([last[0], rights[0]]), np.array([last[1], rows[0]]))[0]
        )
        last = (int(rights[-1]), int(rows[-1]))
        at = np.flatnonzero(starts)
        ends = np.append(at[1:], first.shape[0]) - 1
        xs = values[first]
        part = [xs[at], xs[ends], np.add.reduceat(rights, at), np.add.reduceat(rows, at)]
        if joins:  # the first block continues the last one read
            prev = [o[-1] for o in out]
            prev[1][-1] = part[1][0]
            prev[2][-1] += part[2][0]
            prev[3][-1] += part[3][0]
            part = [p[1:] for p in part]
        for o, p in zip(out, part, strict=True):
            o.append(p)
    return out


def _pool_round(blocks: Blocks) -> Blocks:
    """Every run of adjacent violators pooled into one block."""
    first, last, right, rows = blocks
    at = np.flatnonzero(np.concatenate([[True], ~_violations(right, rows)]))
    ends = np.append(at[1:], first.shape[0]) - 1
    return first[at], last[ends], np.add.reduceat(right, at), np.add.reduceat(rows, at)


def _pool_stack(blocks: Blocks) -> Blocks:
    """Pool-adjacent-violators with a stack over the blocks left, in Python integers."""
    first, last, right, rows = blocks
    s_first: list[float] = []
    s_last: list[float] = []
    s_right: list[int] = []
    s_rows: list[int] = []
    for a in range(0, first.shape[0], SLICE):
        b = a + SLICE
        for f, t, r, n in zip(
            first[a:b].tolist(),
            last[a:b].tolist(),
            right[a:b].tolist(),
            rows[a:b].tolist(),
            strict=True,
        ):
            while s_right and s_right[-1] * n >= r * s_rows[-1]:
                r += s_right.pop()
                n += s_rows.pop()
                f = s_first.pop()
                s_last.pop()
            s_first.append(f)
            s_last.append(t)
            s_right.append(r)
            s_rows.append(n)
    return (
        np.array(s_first, dtype=np.float64),
        np.array(s_last, dtype=np.float64),
        np.array(s_right, dtype=np.int64),
        np.array(s_rows, dtype=np.int64),
    )


def interpolate(c: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The isotonic map at ``c`` through the points (x, y): np.interp(c, x, y), also where two
    points are closer than 1/DBL_MAX (subnormal confidences): np.interp's slope
    (y1 − y0) / (x1 − x0) overflows there and gives ±inf or NaN. Those entries take
    y0 + t·(y1 − y0) with t = (c − x0) / (x1 − x0) instead: the differences of subnormals are
    exact, so t lies in [0, 1]. Every other entry is np.interp's own."""
    out = np.interp(c, x, y)
    bad = ~np.isfinite(out)
    if bad.any():
        v = c[bad]
        j = np.clip(np.searchsorted(x, v, side="right") - 1, 0, x.shape[0] - 2)
        t = (v - x[j]) / (x[j + 1] - x[j])
        out[bad] = y[j] + t * (y[j + 1] - y[j])
    return out
