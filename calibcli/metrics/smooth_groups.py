"""The smooth ECE of many groups at once: their bandwidth searches run side by side.

:func:`smooth_ece_groups` takes each group's rows; :func:`search_bandwidths` takes sets of rows
given by their grid histograms, as the bootstrap's replicates are.

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

A step of the search needs smECE_σ only to compare it with σ; its value is kept only at the
bandwidth the search ends on. So a step transforms each group's residual alone and estimates
the denominator Σ(D(t_k) + ε) from the density histogram h as h·w + T·ε, w being fixed by σ
(the smoothing's adjoint applied to ones). Both are sums of terms that are non-negative up to
rounding, so the estimate lies within about 1e-11 of the transformed denominator (1e-15 was
the largest gap on random groups); a step whose estimate lies within 1e-4 of σ, and the final
bandwidth, transform the density as the one-group code does. And since Σ|R(t_k)| ≥ |Σ R(t_k)|
= |h_r·w| for the residual histogram h_r, a step where that alone puts smECE_σ well above σ
goes up without transforming the residual either; and since Σ|R(t_k)| ≤ |h_r|·w (the
smoothing's weights are non-negative), a step where that puts smECE_σ well below σ goes down
without it (mostly the first steps, σ = 1 and 1/2). The comparisons and the final floats are
the one-group code's.

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
from typing import Any

import numpy as np

from calibcli.metrics.grid_groups import _plan
from calibcli.metrics.smooth import (
    _BISECTION_STEPS,
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
    kernels = Kernels()
    for lo in range(0, len(groups), _CHUNK):
        chunk_values, chunk_bandwidths = _search_chunk(groups[lo : lo + _CHUNK], kernels)
        values += chunk_values
        bandwidths += chunk_bandwidths
    return values, bandwidths


def _search_chunk(
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
    kernels: Kernels,
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
    found = search_bandwidths(curves, _coarse_histograms(parts, curves), kernels)
    for g, value, bandwidth in zip(rows, *found, strict=True):
        values[g] = value
        bandwidths[g] = bandwidth
    return values, bandwidths


def search_bandwidths(
    curves: Sequence[Any], histograms: np.ndarray, kernels: Kernels
) -> tuple[list[float], list[float]]:
    """The smooth ECE and its bandwidth of sets of rows searched side by side, each set given by
    its (2, 1001) grid histograms (density, residual; ``histograms`` is sets × 2 × 1001) and an
    object whose ``error(σ)`` gives smECE_σ on the finer grids (σ ≤ 10/1024): for each set
    exactly ``bandwidth_fixed_point(curve.error)``, as (value, bandwidth). Every set has rows.
    """
    k = len(curves)
    # transformed part by part (each row on its own: the same floats in any order), so that
    # each part's spectra are one block
    stacked = np.concatenate([histograms[:, 0], histograms[:, 1]])
    size, flat = histogram_spectra(stacked)
    spectra = flat.reshape(2, k, flat.shape[1])
    del histograms, flat
    evaluate = _Evaluation(curves, spectra, size, kernels, stacked.reshape(2, k, _COARSE))
    # each set's smECE at its upper end, as its numerator and its denominator (each nan until
    # computed: only the final upper end's are needed)
    upper = np.ones(k)
    everyone = np.arange(k)
    upper_num, approx, upper_den = evaluate(everyone, upper)
    lower = np.zeros(k)
    # the one-group search returns at once when error(1) > 1 (it cannot happen: error < 1)
    searching = ~evaluate.above(everyone, upper, upper_num, approx, upper_den)
    for _ in range(_BISECTION_STEPS):
        mid = (upper + lower) / 2  # exact: the ends stay dyadic
        below = searching & (mid < _MIN_BANDWIDTH)
        lower[below] = mid[below]
        evaluated = searching & ~below
        active = np.flatnonzero(evaluated)
        if not active.shape[0]:
            continue
        sigmas = mid[active]
        num, approx, den = evaluate(active, sigmas)
        up = evaluate.above(active, sigmas, num, approx, den)
        lower[active[up]] = sigmas[up]
        down = active[~up]
        upper[down] = sigmas[~up]
        upper_num[down] = num[~up]
        upper_den[down] = den[~up]
    unknown = np.flatnonzero(~np.isfinite(upper_num))  # a step decided without it
    if unknown.shape[0]:
        upper_num[unknown] = evaluate.residual(unknown, upper[unknown])
    unknown = np.flatnonzero(np.isnan(upper_den))
    if unknown.shape[0]:
        upper_den[unknown] = evaluate.density(unknown, upper[unknown])
    return (upper_num / upper_den).tolist(), upper.tolist()


class Kernels:
    """What the evaluations on the 1001-point grid share across searches, for each σ tried:
    its kernel spectrum, as a row of one table (an evaluation gathers each group's row), its
    number of evaluation points, and the weight of each grid point in the sum of the smoothed
    density over those points (a row of ``weights``, see :func:`_density_weights`)."""

    def __init__(self) -> None:
        self.size = 0
        self.row: dict[float, int] = {}  # σ -> its row of ``table``
        self.points: list[int] = []  # the number of evaluation points of each row's σ
        self.table = np.empty((0, 0), np.complex128)
        self.weights = np.empty((0, 0))

    def rows(self, sigmas: list[float], size: int) -> np.ndarray:
        """The table's row of each σ (intp), adding the σ not met before."""
        if size != self.size:  # every chunk has the same FFT size; kept general all the same
            self.row, self.points, self.size = {}, [], size
            self.table = np.empty((16, size // 2 + 1), np.complex128)
            self.weights = np.empty((16, _COARSE))
        for sigma in dict.fromkeys(sigmas):
            if sigma not in self.row:
                kernel, _, points = _sigma_inputs(sigma, _COARSE, size)
                n = len(self.row)
                if n == self.table.shape[0]:
                    self.table = _grown(self.table)
                    self.weights = _grown(self.weights)
                self.table[n] = kernel
                self.weights[n] = _density_weights(kernel, points.shape[0], size)
                self.row[sigma] = n
                self.points.append(points.shape[0])
        return np.fromiter(map(self.row.__getitem__, sigmas), np.intp, len(sigmas))


def _grown(table: np.ndarray) -> np.ndarray:
    """The table with twice the rows, the first ones copied."""
    grown = np.empty((2 * table.shape[0], table.shape[1]), table.dtype)
    grown[: table.shape[0]] = table
    return grown


def _density_weights(kernel: np.ndarray, count: int, size: int) -> np.ndarray:
    """w with Σ_k D(t_k) = Σ_j h_j·w_j in exact arithmetic, for the density histogram h of a
    group, D its smoothing by ``kernel`` (a spectrum of :func:`_sigma_inputs`) and t_k the
    ``count`` evaluation points: the adjoint of the smoothing applied to a vector of ones.

    The interpolation at the points gives each knot the sum of its shares (1 − a and a); the
    convolution's adjoint is a correlation with the kernel, done with the same transforms
    (the kernel is zero past its m samples, so no wrapped term reaches the reflected grid);
    and each knot collects the weights of its three places on the reflected grid."""
    m = _COARSE
    points, grid = _points(count), _grid()
    cell = np.clip(np.searchsorted(grid, points, side="right") - 1, 0, m - 2)
    share = (points - grid[cell]) / (grid[cell + 1] - grid[cell])
    knots = np.bincount(cell, 1.0 - share, m) + np.bincount(cell + 1, share, m)
    start = (m - 1) + m // 2
    placed = np.zeros(size)
    placed[start : start + m] = knots
    reflected = np.fft.irfft(np.fft.rfft(placed) * np.conj(kernel), size)[: 3 * m - 2]
    weights = reflected[m - 1 : 2 * m - 1].copy()
    weights[1:] += reflected[m - 2 :: -1]
    weights[:-1] += reflected[3 * m - 3 : 2 * m - 2 : -1]
    return weights


# How far (relative) the estimate of smECE_σ from the density weights must lie from σ to decide
# the bisection's step without the density's transform. The estimate's denominator is within
# about 1e-11 of the transformed one (both are sums of non-negative terms up to rounding).
_MARGIN = 1e-4


class _Evaluation:
    """smECE of a chunk's groups, each at its own σ (:meth:`__call__`).

    The bisection needs smECE_σ = Σ|R(t_k)| / Σ(D(t_k) + ε) exactly only at each group's
    final bandwidth; at the other σ it needs only whether smECE_σ > σ. So an evaluation
    transforms the residual alone, exactly as the one-group code does, and pairs it with an
    estimate of the denominator from the density weights (:func:`_density_weights`); where
    that leaves the comparison with σ in doubt, and at the final bandwidth, the density is
    transformed too (:meth:`density`), giving the one-group code's floats."""

    def __init__(
        self,
        curves: Sequence[Any],
        spectra: np.ndarray,
        size: int,
        kernels: Kernels,
        histograms: np.ndarray,
    ) -> None:
        self.curves, self.size, self.kernels = curves, size, kernels
        self.spectra = spectra  # (2 × groups × frequencies): density, residual
        self.histograms = histograms  # (2 × groups × grid points): density, residual
        self.spread = np.abs(histograms[1])  # |residual| (groups × grid points)
        # each batch's products and inverse transforms reuse these two arrays, small enough to
        # stay in cache between the product, the transform and the interpolation
        self.product = np.empty((_BATCH, spectra.shape[2]), np.complex128)
        self.kernel = np.empty((_BATCH, spectra.shape[2]), np.complex128)
        self.full = np.empty((_BATCH, size))

    def __call__(
        self, active: np.ndarray, sigmas: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the groups ``active`` (indices into the chunk's curves) at ``sigmas``: smECE's
        numerator (nan where the bounds show smECE_σ > σ without it, -inf where they show
        smECE_σ < σ), an estimate of its
        denominator and the denominator itself where known (else nan). On the finer grids
        (σ ≤ 10/1024, group by group with the one-group code) the numerator is smECE itself
        and both denominators 1.0."""
        num = np.empty(active.shape[0])
        approx = np.empty(active.shape[0])
        den = np.full(active.shape[0], math.nan)
        where, kernel_rows = self._finer(active, sigmas, num, approx, den)
        if where.shape[0]:
            groups = active[where]
            density, residual, spread = self._dots(groups, kernel_rows)
            counts = np.asarray(self.kernels.points, np.float64)[kernel_rows]
            approx[where] = density + counts * _DENSITY_FLOOR
            # |h_r·w| = |Σ R(t_k)| ≤ Σ|R(t_k)| ≤ |h_r|·w (the smoothing's weights are
            # non-negative): far above σ·denominator the step goes up, far below it goes
            # down, whatever the numerator's value, and the value is not kept
            scale = sigmas[where] * approx[where]
            sure = np.abs(residual) > (1.0 + _MARGIN) * scale
            below = ~sure & (spread < (1.0 - _MARGIN) * scale)
            num[where[sure]] = math.nan
            num[where[below]] = -math.inf
            rest = ~(sure | below)
            num[where[rest]] = self._sums(1, groups[rest], kernel_rows[rest])
        return num, approx, den

    def _dots(self, groups: np.ndarray, kernel_rows: np.ndarray) -> np.ndarray:
        """h·w of each group's density and residual histograms h, and |h|·w of the residual
        one, with its σ's weights w (:func:`_density_weights`): (3 × groups). Each group's
        weights are gathered beside its histograms, so that one einsum per product serves
        every σ of the step (a step of many replicates holds as many σ), with einsum's own
        loop: a BLAS call may wake threads that spin for longer than this takes. Only the
        bounds read these sums, with a margin far above their rounding (see :data:`_MARGIN`),
        so their order of summation is free."""
        weights = np.take(self.kernels.weights, kernel_rows, axis=0)
        out = np.empty((3, groups.shape[0]))
        np.einsum("pgj,gj->pg", np.take(self.histograms, groups, axis=1), weights, out=out[:2])
        np.einsum("gj,gj->g", np.take(self.spread, groups, axis=0), weights, out=out[2])
        return out

    def residual(self, active: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
        """smECE's numerator Σ|R(t_k)| for the groups ``active`` at ``sigmas`` (all on the
        1001-point grid)."""
        kernel_rows = self.kernels.rows(sigmas.tolist(), self.size)
        return self._sums(1, active, kernel_rows)

    def density(self, active: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
        """smECE's denominator Σ(D(t_k) + ε) for the groups ``active`` at ``sigmas`` (all on the
        1001-point grid)."""
        kernel_rows = self.kernels.rows(sigmas.tolist(), self.size)
        return self._sums(0, active, kernel_rows)

    def above(
        self,
        active: np.ndarray,
        sigmas: np.ndarray,
        num: np.ndarray,
        approx: np.ndarray,
        den: np.ndarray,
    ) -> np.ndarray:
        """``sigmas < num / den`` for each group, as the one-group search compares σ with
        smECE_σ: from the estimate where it lies clearly on one side of σ, else from the
        denominator, computed into ``den`` where not known yet."""
        # nan where the numerator is not needed and the step goes up, -inf where it goes down
        estimate = num / approx
        doubt = np.isnan(den) & (np.abs(estimate - sigmas) <= _MARGIN * sigmas)
        if doubt.any():
            at = np.flatnonzero(doubt)
            den[at] = self.density(active[at], sigmas[at])
        known = ~np.isnan(den)
        out = np.isnan(num) | (estimate > sigmas)
        out[known] = sigmas[known] < num[known] / den[known]
        return out

    def _finer(
        self,
        active: np.ndarray,
        sigmas: np.ndarray,
        num: np.ndarray,
        approx: np.ndarray,
        den: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate the groups whose σ has a finer grid than 1001 points into ``num`` (with both
        denominators 1.0); return the others' places and kernel rows."""
        where = np.arange(active.shape[0])
        finer = [s for s in np.unique(sigmas).tolist() if grid_size(s) != _COARSE]
        if finer:
            fine = np.isin(sigmas, finer)
            for i in np.flatnonzero(fine).tolist():
                num[i] = self.curves[int(active[i])].error(float(sigmas[i]))
            approx[fine] = den[fine] = 1.0
            where = where[~fine]
        kernel_rows = self.kernels.rows(sigmas[where].tolist(), self.size)
        return where, kernel_rows

    def _sums(self, part: int, groups: np.ndarray, kernel_rows: np.ndarray) -> np.ndarray:
        """Σ_k |R(t_k)| (``part`` 1) or Σ_k (D(t_k) + ε) (``part`` 0) of each group at the σ of
        its kernel row. On the 1001-point grid the σ differ only by their kernel and number of
        evaluation points: a batch of groups takes each one's kernel row, one inverse FFT, and
        one interpolation per number of points."""
        out = np.empty(groups.shape[0])
        if not groups.shape[0]:
            return out
        # grouped by number of evaluation points, so that a batch holds few of them
        counts = np.asarray(self.kernels.points, np.intp)[kernel_rows]
        order = np.argsort(counts, kind="stable")
        groups, kernel_rows, counts = groups[order], kernel_rows[order], counts[order]
        changes = (np.flatnonzero(np.diff(counts)) + 1).tolist()
        counts_list = counts.tolist()
        spectra = self.spectra[part]
        for lo in range(0, groups.shape[0], _BATCH):
            hi = min(lo + _BATCH, groups.shape[0])
            # the batch's runs of one number of points
            bounds = [lo, *(c for c in changes if lo < c < hi), hi]
            bounds = [c - lo for c in bounds]
            out[order[lo:hi]] = self._batch(
                part, spectra, groups[lo:hi], kernel_rows[lo:hi], bounds, counts_list[lo:hi]
            )
        return out

    def _batch(
        self,
        part: int,
        spectra: np.ndarray,
        groups: np.ndarray,
        kernel_rows: np.ndarray,
        bounds: list[int],
        counts: list[int],
    ) -> np.ndarray:
        """:meth:`_sums` of up to ``_BATCH`` groups, their σ given by kernel rows; ``bounds``
        delimit the runs of one number of evaluation points (``counts``)."""
        n = groups.shape[0]
        # mode="clip" takes straight into ``out`` (the indices are in range)
        product = np.take(spectra, groups, axis=0, out=self.product[:n], mode="clip")
        product *= np.take(
            self.kernels.table, kernel_rows, axis=0, out=self.kernel[:n], mode="clip"
        )
        full = np.fft.irfft(product, self.size, out=self.full[:n])
        start = (_COARSE - 1) + _COARSE // 2  # the smoothed grids: full[..., start : start + m]
        out = np.empty(n)
        for a, b in itertools.pairwise(bounds):
            smoothed = _interp_rows(counts[a], full[a:b], start)
            if part:
                out[a:b] = np.abs(smoothed).sum(axis=1)
            else:
                smoothed += _DENSITY_FLOOR
                out[a:b] = smoothed.sum(axis=1)
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

    As :mod:`calibcli.metrics.grid_groups` explains (whose plan picks the groups that take
    their own pass), the other groups get, in every cell, the sum of that cell's rows in their
    order: here they are offset by 2m cells and counted in one bincount over all their rows,
    the dense arrays of a few dozen groups on this grid costing less than the sparse pass.
    """
    m = _COARSE
    k = len(parts)
    out = np.empty((k, 2, m))
    pos, cell, lengths, alone = _plan(parts, m)
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
