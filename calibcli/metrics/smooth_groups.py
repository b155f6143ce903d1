"""The smooth ECE of many groups at once: their bandwidth searches run side by side.

Each group's result is exactly what :func:`~calibcli.metrics.smooth.smooth_ece_split` returns
for its rows (the same floats, bit for bit); only the number of numpy calls changes. Every
search starts at σ = 1, then 1/2, then 1/4 or 3/4, ..., so at each of the bisection's steps
many groups need smECE at the same σ. Those on the 1001-point grid (σ ≥ 11/1024) are evaluated
as one batch: their histogram spectra stacked (groups × 2 × frequencies), one product with the
cached kernel spectrum, one inverse FFT of the stack, one linear interpolation of every row at
the shared evaluation points and one sum per row. The rare finer grids (σ ≤ 10/1024, a large
well calibrated group) are evaluated group by group with the one-group code.

Why the batch gives the same bits as the one-group path:

* numpy's FFTs transform each row of a stacked array on its own, with the plan of that length,
  so row i of ``rfft(stack)`` is ``rfft(stack[i])``; the elementwise product is the same
  operation on the same pairs of numbers;
* :func:`_interp_rows` evaluates ``np.interp``'s formula for a point strictly inside a cell,
  ``(f[j + 1] − f[j]) / (g[j + 1] − g[j]) · (t − g[j]) + f[j]``, and its two exact cases (a
  point on a knot takes the knot's value, the last point the last value), in the same order of
  operations; grid and points are shared by the batch, so the cell of each point is too. A
  probe checks once that this numpy's np.interp rounds as those separate operations do (a
  build that fuses its multiply and add would not); if not, np.interp runs row by row;
* ``.sum(axis=1)`` of a C-contiguous (rows × T) array sums each row with the same pairwise
  summation as ``.sum()`` of that row alone.

The tests compare this function with ``smooth_ece_split`` group by group with ``==``, on random
groups and on the edge cases (one row, one class, confidences 0 and 1, bandwidths below 0.01).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
_CHUNK = 256  # groups searched together: bounds the stacked spectra (about 6 MB)


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
    # every chunk tries much the same bandwidths: their kernels (about 40 KB each on the
    # 1001-point grid) are kept for the whole call, not only in _sigma_inputs' small cache
    inputs: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for lo in range(0, len(groups), _CHUNK):
        chunk_values, chunk_bandwidths = _search_chunk(groups[lo : lo + _CHUNK], inputs)
        values += chunk_values
        bandwidths += chunk_bandwidths
    return values, bandwidths


def _search_chunk(
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
    inputs: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[list[float], list[float]]:
    """:func:`smooth_ece_groups` of up to ``_CHUNK`` groups."""
    values = [0.0] * len(groups)
    bandwidths = [math.nan] * len(groups)
    curves: list[_SmoothedResiduals] = []
    rows: list[int] = []  # each searched group's place in ``groups``
    for g, (right, wrong) in enumerate(groups):
        right = np.asarray(right, dtype=np.float64)
        wrong = np.asarray(wrong, dtype=np.float64)
        if right.shape[0] or wrong.shape[0]:
            curves.append(_SmoothedResiduals([(right, True, None), (wrong, False, None)]))
            rows.append(g)
    if not curves:
        return values, bandwidths
    histograms = _coarse_histograms(curves)
    k = len(curves)
    size, flat = histogram_spectra(histograms.reshape(2 * k, _COARSE))
    spectra = flat.reshape(k, 2, flat.shape[1])
    del histograms, flat
    # each step's products and inverse transforms reuse these two arrays
    product_buffer = np.empty_like(spectra)
    full_buffer = np.empty((k, 2, size))

    def error(active: np.ndarray, sigma: float) -> np.ndarray:
        """smECE at σ of the groups ``active`` (indices into ``curves``)."""
        m = grid_size(sigma)
        if m != _COARSE:
            return np.array([curves[i].error(sigma) for i in active.tolist()])
        known = inputs.get(sigma)
        if known is None:
            known = inputs[sigma] = _sigma_inputs(sigma, m, size)
        kernel, grid, points = known
        n = active.shape[0]
        if n == k:
            product = np.multiply(spectra, kernel, out=product_buffer)
        else:  # mode="clip" takes straight into ``out`` (the indices are in range)
            product = np.take(spectra, active, axis=0, out=product_buffer[:n], mode="clip")
            product *= kernel
        full = np.fft.irfft(product, size, out=full_buffer[:n])
        # the smoothed grids are full[..., start : start + m] (as in smoothed_error)
        smoothed = _interp_rows(points, grid, full, (m - 1) + m // 2)
        num = np.abs(smoothed[:, 1]).sum(axis=1)
        density = smoothed[:, 0] + _DENSITY_FLOOR
        den = density.sum(axis=1)
        return num / den

    everyone = np.arange(k)
    upper = np.ones(k)
    upper_error = error(everyone, 1.0)
    lower = np.zeros(k)
    # the one-group search returns at once when error(1) > 1 (it cannot happen: error < 1)
    searching = ~(upper < upper_error)
    for _ in range(_BISECTION_STEPS):
        mid = (upper + lower) / 2  # exact: the ends stay dyadic
        below = searching & (mid < _MIN_BANDWIDTH)
        lower[below] = mid[below]
        evaluated = searching & ~below
        mid_error = np.zeros(k)
        for sigma in np.unique(mid[evaluated]).tolist():
            active = np.flatnonzero(evaluated & (mid == sigma))
            mid_error[active] = error(active, sigma)
        up = evaluated & (mid < mid_error)
        lower[up] = mid[up]
        down = evaluated & ~up
        upper[down] = mid[down]
        upper_error[down] = mid_error[down]
    for g, value, bandwidth in zip(rows, upper_error.tolist(), upper.tolist(), strict=True):
        values[g] = value
        bandwidths[g] = bandwidth
    return values, bandwidths


def _coarse_histograms(curves: list[_SmoothedResiduals]) -> np.ndarray:
    """The (2, 1001) grid histograms of every group, (groups × 2 × 1001).

    ``_grid_histograms`` adds one bincount per part (and per block of rows), or folds a part
    run by run when its sorted rows fill few cells. A group whose parts each fit one block and
    are not folded gets, in every cell, the sum of that cell's rows in their order; so the
    groups are offset by 2m cells and counted in one bincount over all their rows, which sums
    each cell in the same order. The others keep their own pass.
    """
    m = _COARSE
    k = len(curves)
    out = np.empty((k, 2, m))
    keys, fracs, batched = [], [], []
    for g, curve in enumerate(curves):
        cells = []
        for f, y, _ in curve._parts:
            n = f.shape[0]
            if n > _BLOCK:
                break
            pos = f * (m - 1)
            cell = pos.astype(np.intp)  # f ≥ 0, so truncation is floor
            np.minimum(cell, m - 2, out=cell)
            if n and 4 * np.count_nonzero(cell[1:] != cell[:-1]) <= n:
                break  # folded run by run
            cells.append((cell + (len(batched) * 2 * m + (m if y else 0)), pos - cell))
        else:
            batched.append(g)
            for cell, frac in cells:
                keys.append(cell)
                fracs.append(frac)
            continue
        out[g] = curve._grid_histograms(m)
    if not batched:
        return out
    key = np.concatenate(keys)
    frac = np.concatenate(fracs)
    size = len(batched) * 2 * m
    moments = np.zeros((3, len(batched), 2 * m))
    moments[0] += np.bincount(key, minlength=size).reshape(len(batched), 2 * m)
    moments[1] += np.bincount(key, frac, minlength=size).reshape(len(batched), 2 * m)
    moments[2] += np.bincount(key, frac * frac, minlength=size).reshape(len(batched), 2 * m)
    # the rest of _grid_histograms, elementwise on every group's moments
    s0, s1, s2 = moments[:, :, :m] + moments[:, :, m:]  # both classes
    correct_s0, correct_s1 = moments[0, :, m:], moments[1, :, m:]
    cells = np.arange(m, dtype=np.float64)
    r_all = (cells * s0 + s1) / (m - 1) - correct_s0  # Σ w·r per cell
    r_up = (cells * s1 + s2) / (m - 1) - correct_s1  # Σ w·r·u per cell (moves to c + 1)
    folded = np.empty((len(batched), 2, m))
    folded[:, 0] = s0 - s1
    folded[:, 0, 1:] += s1[:, :-1]
    folded[:, 1] = r_all - r_up
    folded[:, 1, 1:] += r_up[:, :-1]
    out[batched] = folded
    return out


def _interp_rows(points: np.ndarray, grid: np.ndarray, full: np.ndarray, start: int) -> np.ndarray:
    """``np.interp(points, grid, row[start : start + len(grid)])`` of every row along the last
    axis of ``full``, as a C-ordered array (..., len(points)): by np.interp's formula for the
    whole stack where this numpy's np.interp rounds as the formula does (probed once), else
    row by row with np.interp itself."""
    if _formula_is_interp():
        return _interp_formula(points, grid, full, start)
    m = grid.shape[0]
    out = np.empty((*full.shape[:-1], points.shape[0]))
    for index in np.ndindex(full.shape[:-1]):
        out[index] = np.interp(points, grid, full[index][start : start + m])
    return out


_PROBED: list[bool] = []


def _formula_is_interp() -> bool:
    """Whether :func:`_interp_formula` gives np.interp's floats on this build. A compiler that
    fuses np.interp's multiply and add into one instruction (as some do on ARM) rounds once
    where the formula's separate numpy operations round twice; then np.interp runs per row."""
    if not _PROBED:
        rng = np.random.default_rng(0)
        grid = np.linspace(0.0, 1.0, _COARSE)
        same = True
        for count in (200, 317, 1000):
            points = np.linspace(0.0, 1.0, count)
            full = rng.normal(0.0, 1e3, (3, 2, _COARSE + 400))
            got = _interp_formula(points, grid, full, 200)
            want = [
                [np.interp(points, grid, row[200 : 200 + _COARSE]) for row in pair] for pair in full
            ]
            same = same and np.array_equal(got, np.array(want))
        _PROBED.append(bool(same))
    return _PROBED[0]


def _interp_formula(
    points: np.ndarray, grid: np.ndarray, full: np.ndarray, start: int
) -> np.ndarray:
    """np.interp's arithmetic on every row at once, for ascending ``grid`` and ``points``
    within [grid[0], grid[-1]]: a point strictly inside a cell takes
    ``(f[j + 1] − f[j]) / (g[j + 1] − g[j]) · (t − g[j]) + f[j]``, a point on a knot the
    knot's value and the last point the last value."""
    m = grid.shape[0]
    cell = np.searchsorted(grid, points, side="right") - 1
    np.clip(cell, 0, m - 2, out=cell)
    left = grid[cell]
    lo = full[..., start + cell]
    hi = full[..., start + cell + 1]
    # written into a C-ordered array: a row's pairwise sum must see its values contiguous
    out = np.empty((*full.shape[:-1], points.shape[0]))
    np.subtract(hi, lo, out=out)
    out /= grid[cell + 1] - left
    out *= points - left
    out += lo
    on_knot = points == left
    out[..., on_knot] = lo[..., on_knot]
    out[..., points == grid[-1]] = full[..., start + m - 1 : start + m]
    return out
