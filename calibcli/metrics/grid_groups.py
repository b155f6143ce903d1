"""The smooth ECE's grid histograms of many groups at once, each group's the very floats
:func:`~calibcli.metrics.smooth.grid_histograms` gives for its rows alone.

``_grid_histograms`` (:mod:`calibcli.metrics.smooth`) adds a part's rows (a group's right or
wrong answers) by one bincount per block of rows, or folds a part run by run when its sorted
rows fill few cells. A part of one block that is not folded puts, in every cell, the sum of
that cell's rows in their order; a part of one row is folded into exactly that sum too. So
the groups whose parts are all of these kinds are counted together, their rows in order, by
one bincount over (group, cell) keys, which sums each cell in the same order; the others keep
their own pass. :func:`sparse_grid_histograms` then does ``_grid_histograms``' elementwise
arithmetic on the three moments of only the points the rows touch and the point after each
(every other point is +0.0 in the dense arrays), which is what a summary of many small groups
needs: its cost follows the rows, not groups times the grids' 18,966 points.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibcli.metrics.smooth import _BLOCK, _grid_histograms

Groups = Sequence[tuple[np.ndarray, np.ndarray]]  # each group's (right, wrong) confidences


def interleaved(groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Every group's rows end to end (right, wrong, right, wrong, ...) as float64, and each
    part's length: what :func:`_plan` needs of the rows, the same for every grid size."""
    k = len(groups)
    arrays = [np.asarray(a, dtype=np.float64) for pair in groups for a in pair]
    lengths = np.fromiter(map(len, arrays), np.intp, 2 * k)
    flat = np.concatenate(arrays) if arrays else np.zeros(0)
    return flat, lengths


def _plan(
    groups: Groups, m: int, rows: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every row's position on the grid and cell (right, wrong, right, wrong, ... end to end),
    each part's length, and which groups take their own pass (a part folded run by run over
    more than one row, or longer than a block). ``rows``: :func:`interleaved` of the groups,
    when already made."""
    k = len(groups)
    flat, lengths = interleaved(groups) if rows is None else rows
    pos = flat * (m - 1)
    cell = pos.astype(np.intp)  # f ≥ 0, so truncation is floor
    np.minimum(cell, m - 2, out=cell)
    # cell changes within each part: the running count of changes, read at each part's ends
    ends = np.cumsum(lengths)
    starts = ends - lengths
    changes = np.zeros(max(pos.shape[0] + 1, 2), np.intp)  # read at index 1 even without rows
    np.cumsum(cell[1:] != cell[:-1], out=changes[2:])
    inner = np.where(
        lengths > 0, changes[np.maximum(ends, 1)] - changes[np.minimum(starts + 1, ends)], 0
    )
    folded = (lengths > 1) & (4 * inner <= lengths)
    alone = (folded | (lengths > _BLOCK)).reshape(k, 2).any(axis=1)
    return pos, cell, lengths, alone


def _own_pass(right: np.ndarray, wrong: np.ndarray, m: int) -> np.ndarray:
    parts = [
        (np.asarray(right, np.float64), True, None),
        (np.asarray(wrong, np.float64), False, None),
    ]
    return _grid_histograms(parts, m)


def _moments(
    pos: np.ndarray, cell: np.ndarray, lengths: np.ndarray, alone: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The batched groups' rows as (group, half, cell) keys, half 1 for the right answers, with
    the distinct keys (ascending: group, then half, then cell) and each one's S0, S1, S2 (row
    count, Σu, Σu² of its rows, summed in row order)."""
    k = alone.shape[0]
    group = np.repeat(np.repeat(np.arange(k), 2), lengths)
    half = np.repeat(np.tile(np.array([m, 0], np.int64), k), lengths)
    key = group.astype(np.int64) * (2 * m) + half + cell
    frac = pos - cell
    rows = ~alone[group] if alone.any() else slice(None)
    keys, where = np.unique(key[rows], return_inverse=True)
    frac = frac[rows]
    s0 = np.bincount(where, minlength=keys.shape[0]).astype(np.float64)
    s1 = np.bincount(where, frac, minlength=keys.shape[0])
    s2 = np.bincount(where, frac * frac, minlength=keys.shape[0])
    return keys, s0, s1, s2


def sparse_grid_histograms(
    groups: Groups, m: int, rows: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every group's (2, m) grid histograms of :func:`~calibcli.metrics.smooth.grid_histograms`
    without their +0.0 cells, as :class:`~calibcli.summaries.moments.SparseGrids` holds them:
    ``(cells, values, offsets)``, cells the flat index into a group's (2, m) array, ascending
    within each group, and group g's entries from ``offsets[g]`` to ``offsets[g + 1]``.
    ``rows``: :func:`interleaved` of the groups, to share between grid sizes."""
    k = len(groups)
    pos, cell, lengths, alone = _plan(groups, m, rows)
    owners, cells, values = [], [], []
    for g in np.flatnonzero(alone).tolist():
        flat = _own_pass(*groups[g], m).reshape(2 * m)
        kept = np.flatnonzero(flat.view(np.uint64))  # every value but +0.0
        owners.append(np.full(kept.shape[0], g, np.int64))
        cells.append(kept)
        values.append(flat[kept])
    if not alone.all():
        keys, s0, s1, s2 = _moments(pos, cell, lengths, alone, m)
        owner, cells_b, values_b = _from_moments(keys, s0, s1, s2, m)
        owners.append(owner)
        cells.append(cells_b)
        values.append(values_b)
    owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    flat_cells = np.concatenate(cells).astype(np.int64) if cells else np.zeros(0, np.int64)
    flat_values = np.concatenate(values) if values else np.zeros(0)
    order = np.argsort(owner * (2 * m) + flat_cells, kind="stable")
    owner = owner[order]
    offsets = np.searchsorted(owner, np.arange(k + 1)).astype(np.int64)
    return flat_cells[order], flat_values[order], offsets


def _from_moments(
    keys: np.ndarray, s0: np.ndarray, s1: np.ndarray, s2: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_grid_histograms``' arithmetic after its moments, on the touched points and the point
    after each: the (group, flat cell, value) of every value but +0.0."""
    group, rest = np.divmod(keys, 2 * m)
    right = rest >= m
    point = group * m + np.where(right, rest - m, rest)  # group-wide point index
    # the points whose values can differ from +0.0: touched, or right after a touched one
    points = _distinct(np.concatenate([point, point + 1]))
    w0, w1, w2 = _at(points, point[~right], s0[~right], s1[~right], s2[~right])
    r0, r1, r2 = _at(points, point[right], s0[right], s1[right], s2[right])
    c = (points % m).astype(np.float64)
    t0, t1, t2 = w0 + r0, w1 + r1, w2 + r2  # both classes
    r_all = (c * t0 + t1) / (m - 1) - r0  # Σ w·r per cell
    r_up = (c * t1 + t2) / (m - 1) - r1  # Σ w·r·u per cell (moves to c + 1)
    density = t0 - t1
    residual = r_all - r_up
    # point c ≥ 1 adds its predecessor's moved share (+0.0 where the predecessor is untouched)
    inner = c > 0
    moved, moved_r = _at(points[inner] - 1, points, t1, r_up)
    density[inner] += moved
    residual[inner] += moved_r
    owner = points // m
    cell = points % m
    out_owner = np.concatenate([owner, owner])
    out_cell = np.concatenate([cell, cell + m])
    out_value = np.concatenate([density, residual])
    kept = np.flatnonzero(out_value.view(np.uint64))
    return out_owner[kept], out_cell[kept], out_value[kept]


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (one sort)."""
    values = np.sort(values)
    keep = np.ones(values.shape[0], bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _at(wanted: np.ndarray, have: np.ndarray, *columns: np.ndarray) -> list[np.ndarray]:
    """Each column's value at each ``wanted`` key, from the ascending distinct keys ``have``
    (+0.0 where a key is missing)."""
    if not have.shape[0]:
        return [np.zeros(wanted.shape[0]) for _ in columns]
    i = np.minimum(np.searchsorted(have, wanted), have.shape[0] - 1)
    hit = have[i] == wanted
    return [np.where(hit, column[i], 0.0) for column in columns]
