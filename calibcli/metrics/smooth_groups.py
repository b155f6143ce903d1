"""The smooth ECE of many groups at once: their bandwidth searches run side by side.

Each group's result is exactly what :func:`~calibcli.metrics.smooth.smooth_ece_split` returns
for its rows (the same floats, bit for bit); only the number of numpy calls changes. Every
search starts at σ = 1, then 1/2, then 1/4 or 3/4, ..., so at each of the bisection's steps
many groups need smECE, at a few σ. On the 1001-point grid (σ ≥ 11/1024) the σ differ only by
their kernel spectrum and their number of evaluation points, so a step's groups there are
evaluated in batches whatever their σ: their histogram spectra stacked (groups × 2 ×
frequencies), each multiplied by its σ's kernel spectrum (a row of a table of the kernels
tried), one inverse FFT of the stack, one linear interpolation of the rows that share their
evaluation points and one sum per row. A batch holds a few dozen groups, so that the product,
the transform and the interpolation work on arrays that stay in the processor's cache. The
rare finer grids (σ ≤ 10/1024, a large well calibrated group) are evaluated group by group with
the one-group code.

Why the batch gives the same bits as the one-group path:

* numpy's FFTs transform each row of a stacked array on its own, with the plan of that length,
  so row i of ``rfft(stack)`` is ``rfft(stack[i])``; the elementwise product is the same
  operation on the same pairs of numbers;
* :func:`_interp_rows` evaluates ``np.interp``'s formula for a point strictly inside a cell,
  ``(f[j + 1] − f[j]) / (g[j + 1] − g[j]) · (t − g[j]) + f[j]``, and its two exact cases (a
  point on a knot takes the knot's value, the last point the last value), in the same order of
  operations; rows with the same evaluation points share the cell of each point. A
  probe checks once that this numpy's np.interp rounds as those separate operations do (a
  build that fuses its multiply and add would not); if not, np.interp runs row by row;
* ``.sum(axis=1)`` of a C-contiguous (rows × T) array sums each row with the same pairwise
  summation as ``.sum()`` of that row alone.

The tests compare this function with ``smooth_ece_split`` group by group with ``==``, on random
groups and on the edge cases (one row, one class, confidences 0 and 1, bandwidths below 0.01).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from calibcli.metrics.smooth import (
    _BISECTION_STEPS,
    _BLOCK,
    _DENSITY_FLOOR,
    _MIN_BANDWIDTH,
    _sigma_inputs,
    _SmoothedResiduals,
    grid_size,
    histogram_spectra,
)

_COARSE = grid_size(1.0)  # the 1001-point grid of every σ ≥ 11/1024
_CHUNK = 64  # groups searched together: bounds the stacked spectra (about 3 MB)
_BATCH = 32  # groups evaluated together: their products and transforms stay in cache


def smooth_ece_groups(
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[list[float], list[float]]:
    """The smooth ECE and its bandwidth of every group, given as (confidences of its right
    answers, confidences of its wrong answers): for each group exactly
    ``smooth_ece_split(right, wrong)``'s value and bandwidth (0.0 and nan for no rows).

    Inputs are trusted as for ``smooth_ece_split`` (float64 in [0, 1]); rows are unweighted.
    """
    values: list[float] = []
    bandwidths: list[float] = []
    # every chunk tries much the same bandwidths: their kernels (about 25 KB each on the
    # 1001-point grid) are kept for the whole call, not only in _sigma_inputs' small cache
    kernels = _Kernels()
    for lo in range(0, len(groups), _CHUNK):
        chunk_values, chunk_bandwidths = _search_chunk(groups[lo : lo + _CHUNK], kernels)
        values += chunk_values
        bandwidths += chunk_bandwidths
    return values, bandwidths


def _search_chunk(
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
    kernels: _Kernels,
) -> tuple[list[float], list[float]]:
    """:func:`smooth_ece_groups` of up to ``_CHUNK`` groups."""
    values = [0.0] * len(groups)
    bandwidths = [math.nan] * len(groups)
    curves: list[_SmoothedResiduals] = []
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    rows: list[int] = []  # each searched group's place in ``groups``
    for g, (right, wrong) in enumerate(groups):
        right = np.asarray(right, dtype=np.float64)
        wrong = np.asarray(wrong, dtype=np.float64)
        if right.shape[0] or wrong.shape[0]:
            curves.append(_SmoothedResiduals([(right, True, None), (wrong, False, None)]))
            parts.append((right, wrong))
            rows.append(g)
    if not curves:
        return values, bandwidths
    histograms = _coarse_histograms(parts, curves)
    k = len(curves)
    size, flat = histogram_spectra(histograms.reshape(2 * k, _COARSE))
    spectra = flat.reshape(k, 2, flat.shape[1])
    del histograms, flat
    evaluate = _Evaluation(curves, spectra, size, kernels)
    upper = np.ones(k)
    upper_error = evaluate(np.arange(k), upper)
    lower = np.zeros(k)
    # the one-group search returns at once when error(1) > 1 (it cannot happen: error < 1)
    searching = ~(upper < upper_error)
    for _ in range(_BISECTION_STEPS):
        mid = (upper + lower) / 2  # exact: the ends stay dyadic
        below = searching & (mid < _MIN_BANDWIDTH)
        lower[below] = mid[below]
        evaluated = searching & ~below
        mid_error = np.zeros(k)
        active = np.flatnonzero(evaluated)
        if active.shape[0]:
            mid_error[active] = evaluate(active, mid[active])
        up = evaluated & (mid < mid_error)
        lower[up] = mid[up]
        down = evaluated & ~up
        upper[down] = mid[down]
        upper_error[down] = mid_error[down]
    for g, value, bandwidth in zip(rows, upper_error.tolist(), upper.tolist(), strict=True):
        values[g] = value
        bandwidths[g] = bandwidth
    return values, bandwidths


class _Kernels:
    """What the evaluations on the 1001-point grid share across a whole call: the kernel
    spectrum of each σ tried, as rows of one table (an evaluation gathers each group's row),
    and its number of evaluation points."""

    def __init__(self) -> None:
        self.size = 0
        self.row: dict[float, int] = {}  # σ -> its row of ``table``
        self.points: list[int] = []  # the number of evaluation points of each row's σ
        self.table = np.empty((0, 0), np.complex128)

    def rows(self, sigmas: list[float], size: int) -> np.ndarray:
        """The table's row of each σ (intp), adding the σ not met before."""
        if size != self.size:  # every chunk has the same FFT size; kept general all the same
            self.row, self.points, self.size = {}, [], size
            self.table = np.empty((16, size // 2 + 1), np.complex128)
        for sigma in dict.fromkeys(sigmas):
            if sigma not in self.row:
                kernel, _, points = _sigma_inputs(sigma, _COARSE, size)
                n = len(self.row)
                if n == self.table.shape[0]:
                    grown = np.empty((2 * n, kernel.shape[0]), np.complex128)
                    grown[:n] = self.table
                    self.table = grown
                self.table[n] = kernel
                self.row[sigma] = n
                self.points.append(points.shape[0])
        return np.fromiter(map(self.row.__getitem__, sigmas), np.intp, len(sigmas))


class _Evaluation:
    """smECE of a chunk's groups, each at its own σ (:meth:`__call__`)."""

    def __init__(
        self,
        curves: list[_SmoothedResiduals],
        spectra: np.ndarray,
        size: int,
        kernels: _Kernels,
    ) -> None:
        self.curves, self.spectra, self.size, self.kernels = curves, spectra, size, kernels
        # each batch's products and inverse transforms reuse these two arrays, small enough to
        # stay in cache between the product, the transform and the interpolation
        self.product = np.empty((_BATCH, 2, spectra.shape[2]), np.complex128)
        self.full = np.empty((_BATCH, 2, size))

    def __call__(self, active: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
        """smECE of the groups ``active`` (indices into the chunk's curves) at ``sigmas``. On
        the 1001-point grid the σ differ only by their kernel and number of evaluation points:
        a batch of groups takes each one's kernel row, one inverse FFT, and one interpolation
        per number of points. The finer grids go group by group."""
        out = np.empty(active.shape[0])
        where = np.arange(active.shape[0])
        finer = [s for s in np.unique(sigmas).tolist() if grid_size(s) != _COARSE]
        if finer:
            fine = np.isin(sigmas, finer)
            for i in np.flatnonzero(fine).tolist():
                out[i] = self.curves[int(active[i])].error(float(sigmas[i]))
            where = where[~fine]
            if not where.shape[0]:
                return out
        # grouped by number of evaluation points, so that a batch holds few of them
        kernel_rows = self.kernels.rows(sigmas[where].tolist(), self.size)
        counts = np.asarray(self.kernels.points, np.intp)[kernel_rows]
        order = np.argsort(counts, kind="stable")
        where, kernel_rows, counts = where[order], kernel_rows[order], counts[order]
        groups = active[where]
        changes = (np.flatnonzero(np.diff(counts)) + 1).tolist()
        counts_list = counts.tolist()
        for lo in range(0, where.shape[0], _BATCH):
            hi = min(lo + _BATCH, where.shape[0])
            # the batch's runs of one number of points
            bounds = [lo, *(c for c in changes if lo < c < hi), hi]
            bounds = [c - lo for c in bounds]
            out[where[lo:hi]] = self._batch(
                groups[lo:hi], kernel_rows[lo:hi], bounds, counts_list[lo:hi]
            )
        return out

    def _batch(
        self, groups: np.ndarray, kernel_rows: np.ndarray, bounds: list[int], counts: list[int]
    ) -> np.ndarray:
        """smECE on the 1001-point grid of up to ``_BATCH`` groups, their σ given by kernel
        rows; ``bounds`` delimit the runs of one number of evaluation points (``counts``)."""
        n = groups.shape[0]
        # mode="clip" takes straight into ``out`` (the indices are in range)
        product = np.take(self.spectra, groups, axis=0, out=self.product[:n], mode="clip")
        product *= np.take(self.kernels.table, kernel_rows, axis=0)[:, None, :]
        full = np.fft.irfft(product, self.size, out=self.full[:n])
        start = (_COARSE - 1) + _COARSE // 2  # the smoothed grids: full[..., start : start + m]
        out = np.empty(n)
        for a, b in itertools.pairwise(bounds):
            smoothed = _interp_rows(counts[a], full[a:b], start)
            num = np.abs(smoothed[:, 1]).sum(axis=1)
            density = smoothed[:, 0] + _DENSITY_FLOOR
            den = density.sum(axis=1)
            out[a:b] = num / den
        return out


@lru_cache(maxsize=64)
def _points(count: int) -> np.ndarray:
    """``count`` evaluation points, as :func:`~calibcli.metrics.smooth.eval_points` spaces
    them (read-only)."""
    points = np.linspace(0.0, 1.0, count)
    points.setflags(write=False)
    return points


@lru_cache(maxsize=1)
def _grid() -> np.ndarray:
    """The 1001-point grid (:func:`~calibcli.metrics.smooth.grid_points`, read-only)."""
    return _points(_COARSE)


def _coarse_histograms(
    parts: list[tuple[np.ndarray, np.ndarray]], curves: list[_SmoothedResiduals]
) -> np.ndarray:
    """The (2, 1001) grid histograms of every group, (groups × 2 × 1001), given each group's
    (right, wrong) confidences and its curve.

    ``_grid_histograms`` adds one bincount per part (and per block of rows), or folds a part
    run by run when its sorted rows fill few cells. A group whose parts each fit one block and
    are not folded gets, in every cell, the sum of that cell's rows in their order; so the
    groups are offset by 2m cells and counted in one bincount over all their rows, which sums
    each cell in the same order. The others keep their own pass. Each row's cell and fraction,
    and each part's count of cell changes (which decides the folding), are computed for all the
    groups' rows at once.
    """
    m = _COARSE
    k = len(parts)
    out = np.empty((k, 2, m))
    arrays = [a for pair in parts for a in pair]  # right, wrong, right, wrong, ...
    lengths = np.fromiter((a.shape[0] for a in arrays), np.intp, 2 * k)
    pos = np.concatenate(arrays) * (m - 1)
    cell = pos.astype(np.intp)  # f ≥ 0, so truncation is floor
    np.minimum(cell, m - 2, out=cell)
    # cell changes within each part: the running count of changes, read at each part's ends
    ends = np.cumsum(lengths)
    starts = ends - lengths
    changes = np.zeros(pos.shape[0] + 1, np.intp)
    np.cumsum(cell[1:] != cell[:-1], out=changes[2:])
    inner = np.where(
        lengths > 0, changes[np.maximum(ends, 1)] - changes[np.minimum(starts + 1, ends)], 0
    )
    folded = (lengths > 0) & (4 * inner <= lengths)
    alone = (folded | (lengths > _BLOCK)).reshape(k, 2).any(axis=1)
    for g in np.flatnonzero(alone).tolist():
        out[g] = curves[g]._grid_histograms(m)
    batched = np.flatnonzero(~alone)
    if not batched.shape[0]:
        return out
    b = batched.shape[0]
    # cell offset of each part: 2m per batched group, + m for the right answers
    offsets = np.zeros((k, 2), np.intp)
    offsets[batched, 0] = np.arange(b) * (2 * m) + m
    offsets[batched, 1] = np.arange(b) * (2 * m)
    key = cell + np.repeat(offsets.reshape(-1), lengths)
    frac = pos - cell
    if b < k:  # only the batched groups' rows
        rows = np.repeat(np.repeat(~alone, 2), lengths)
        key, frac = key[rows], frac[rows]
    size = b * 2 * m
    moments = np.zeros((3, b, 2 * m))
    moments[0] += np.bincount(key, minlength=size).reshape(b, 2 * m)
    moments[1] += np.bincount(key, frac, minlength=size).reshape(b, 2 * m)
    moments[2] += np.bincount(key, frac * frac, minlength=size).reshape(b, 2 * m)
    # the rest of _grid_histograms, elementwise on every group's moments
    s0, s1, s2 = moments[:, :, :m] + moments[:, :, m:]  # both classes
    correct_s0, correct_s1 = moments[0, :, m:], moments[1, :, m:]
    cells = np.arange(m, dtype=np.float64)
    r_all = (cells * s0 + s1) / (m - 1) - correct_s0  # Σ w·r per cell
    r_up = (cells * s1 + s2) / (m - 1) - correct_s1  # Σ w·r·u per cell (moves to c + 1)
    folded_out = np.empty((b, 2, m))
    folded_out[:, 0] = s0 - s1
    folded_out[:, 0, 1:] += s1[:, :-1]
    folded_out[:, 1] = r_all - r_up
    folded_out[:, 1, 1:] += r_up[:, :-1]
    out[batched] = folded_out
    return out


def _interp_rows(count: int, full: np.ndarray, start: int) -> np.ndarray:
    """``np.interp(_points(count), _grid(), row[start : start + 1001])`` of every row along the
    last axis of ``full``, as a C-ordered array (..., count): by np.interp's formula for the
    whole stack where this numpy's np.interp rounds as the formula does (probed once), else
    row by row with np.interp itself."""
    if _formula_is_interp():
        return _interp_formula(_interp_plan(count, start), full)
    points, grid = _points(count), _grid()
    out = np.empty((*full.shape[:-1], count))
    for index in np.ndindex(full.shape[:-1]):
        out[index] = np.interp(points, grid, full[index][start : start + _COARSE])
    return out


_PROBED: list[bool] = []


def _formula_is_interp() -> bool:
    """Whether :func:`_interp_formula` gives np.interp's floats on this build. A compiler that
    fuses np.interp's multiply and add into one instruction (as some do on ARM) rounds once
    where the formula's separate numpy operations round twice; then np.interp runs per row."""
    if not _PROBED:
        rng = np.random.default_rng(0)
        grid = _grid()
        same = True
        for count in (200, 317, 1000):
            points = _points(count)
            full = rng.normal(0.0, 1e3, (3, 2, _COARSE + 400))
            got = _interp_formula(_interp_plan(count, 200), full)
            want = [
                [np.interp(points, grid, row[200 : 200 + _COARSE]) for row in pair] for pair in full
            ]
            same = same and np.array_equal(got, np.array(want))
        _PROBED.append(bool(same))
    return _PROBED[0]


@lru_cache(maxsize=64)
def _interp_plan(count: int, start: int) -> tuple[np.ndarray, ...]:
    """Where np.interp reads each of ``count`` evaluation points on the 1001-point grid held at
    ``start`` of a row: the index of its cell's left and right knots, the cell's width, the
    point's offset from the left knot, the points on a knot and the last point (read-only)."""
    points, grid = _points(count), _grid()
    m = grid.shape[0]
    cell = np.searchsorted(grid, points, side="right") - 1
    np.clip(cell, 0, m - 2, out=cell)
    left = grid[cell]
    plan = (
        start + cell,
        start + cell + 1,
        grid[cell + 1] - left,
        points - left,
        np.flatnonzero(points == left),
        np.flatnonzero(points == grid[-1]),
        np.array([start + m - 1]),
    )
    for a in plan:
        a.setflags(write=False)
    return plan


def _interp_formula(plan: tuple[np.ndarray, ...], full: np.ndarray) -> np.ndarray:
    """np.interp's arithmetic on every row at once (the points and grid of ``plan``, ascending,
    the points within the grid): a point strictly inside a cell takes
    ``(f[j + 1] − f[j]) / (g[j + 1] − g[j]) · (t − g[j]) + f[j]``, a point on a knot the
    knot's value and the last point the last value."""
    left, right, width, offset, knots, last, end = plan
    # gathered into C-ordered arrays: a row's pairwise sum must see its values contiguous
    lo = np.take(full, left, axis=-1)
    out = np.take(full, right, axis=-1)
    out -= lo
    out /= width
    out *= offset
    out += lo
    out[..., knots] = lo[..., knots]
    out[..., last] = np.take(full, end, axis=-1)
    return out
