"""Smooth ECE (smECE) of Błasiok & Nakkiran (2023), with its automatic bandwidth.

Reference: J. Błasiok and P. Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel
Smoothing" (2023). The numbers reproduce the authors' package relplot 1.0.3 (``relplot.smECE``
with its default reflected Gaussian kernel) to rounding; this module is an independent numpy
implementation of the same discretised procedure.

Definition
----------
With predictions f_i in [0, 1], outcomes y_i in {0, 1}, residuals r_i = f_i − y_i, row weights
w_i (multiplicities, n = Σ w_i) and a kernel K_σ, the smooth ECE at bandwidth σ is

    smECE_σ = ∫_0^1 |R_σ(t)| dt / ∫_0^1 D_σ(t) dt,
    R_σ(t) = Σ_i w_i r_i K_σ(t, f_i),       D_σ(t) = Σ_i w_i K_σ(t, f_i),

i.e. the paper's ∫ |r̂_σ(t)| δ̂_σ(t) dt: the absolute kernel-smoothed residual r̂ = R/D weighted
by the kernel density δ̂ = D/n of the predictions (∫ D = n for a kernel of mass 1 on [0, 1]).
K_σ is the Gaussian φ_σ(t − f) = exp(−(t − f)² / 2σ²) / (σ√(2π)) reflected at 0 and 1 (mass
that would leave [0, 1] is folded back in). The reported smECE uses the bandwidth
σ* at which smECE_σ = σ; smECE_σ does not grow with σ, so there is one such fixed point.

How it is computed (relplot's discretisation)
---------------------------------------------
1. Grid. For bandwidth σ the predictions live on m = ⌊max(2000, round(20/σ)) / 2⌋ + 1 grid
   points g_j = j/(m − 1) (m = 1001 whenever σ ≥ 0.01). A prediction at p = f·(m − 1), with
   cell c = min(⌊p⌋, m − 2) and fraction u = p − c, puts weight (1 − u) on g_c and u on g_{c+1}
   (linear interpolation, so f = 1 sits on the last point). This is linear in the rows, so a
   row of weight w counts exactly as w copies; one bincount pass over the rows per grid size
   gives both histograms (of w and of w·r). Grids whose points all lie on a finer grid of 10241
   points are coarsened from that one instead of re-reading the rows.
2. Kernel. Each histogram h is reflected once at each end (h_{−j} = h_j, h_{m−1+j} = h_{m−1−j})
   and convolved with the Gaussian sampled at the m points k/(m − 1) − 1/2, k = 0..m−1, whose
   centre is taken as entry ⌊m/2⌋. So the kernel is truncated at ±1/2 and, when m is even,
   shifted by half a grid cell. The convolution is done with a real FFT (no wrap-around reaches
   the output).
3. Evaluation. The smoothed grids are linearly interpolated at T = max(200, round(10/σ))
   equispaced points t_k = k/(T − 1), and with a density floor ε = 10⁻⁴

       smECE_σ ≈ Σ_k |R(t_k)| / Σ_k (D(t_k) + ε).

4. Bandwidth. Bisection on [0, 1] for 10 steps: at a midpoint σ, smECE_σ > σ (or σ < 0.001)
   moves the lower end up, otherwise the upper end comes down. The reported bandwidth is the
   final upper end — a multiple of 1/1024 in [2/1024, 1] at which smECE_σ ≤ σ (or 1 if no
   midpoint qualified) — and the value is smECE at that bandwidth.

Where it departs from the continuous definition: predictions are rounded to the grid (error
O(1/m) in position); the kernel is truncated at ±1/2, reflected only once and, for even m, off
centre by half a cell; the integrals are equal-weight sums over T points (endpoints included);
ε is an absolute floor on unnormalised densities (they scale with n·(m − 1)), so the value is
not exactly invariant to scaling all weights, and it matters only for tiny n; and the bandwidth
is the fixed point only to the resolution of 1/1024 (it can be up to 1/1024 above it, never
below 2/1024, and the monotonicity the bisection relies on is assumed, not checked).

Bounds: |R| ≤ D pointwise because |r_i| ≤ 1, so 0 ≤ smECE < 1 (not ≤ 1/2: confident wrong
answers drive it towards 1); with the bisection's rule, smECE ≤ bandwidth whenever the bandwidth
is below 1.

Edge cases: no rows (or zero total weight) give value 0.0 and bandwidth nan — there is nothing
to smooth and no bandwidth is chosen (relplot would report 0.0 at the search's floor, 2/1024).
Rows of a single class need no special case; the result equals relplot's.

Cost: one bincount pass over the rows for the 1001-point grid, at most three more when the
bandwidth falls below 0.01 (a well calibrated large sample); then O(m log m) per bisection step.
Rows are read in blocks, so the extra memory is a few grid-sized arrays plus block temporaries.

Steps 2–4 are module-level functions — :func:`grid_size`, :func:`grid_points`,
:func:`eval_points`, :func:`kernel_spectrum`, :func:`histogram_spectra`, :func:`smoothed_error`,
:func:`bandwidth_fixed_point` — so that :mod:`calibcli.metrics.bootstrap`, which builds each
replicate's grid histograms its own way, runs this very code on them. They are not part of the
package's public API (not in ``__all__``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from calibcli.metrics.validation import validate_predictions

__all__ = ["SmoothECE", "smooth_ece"]

_BISECTION_STEPS = 10
_MIN_BANDWIDTH = 0.001  # below this the bisection stops refining (counts as "too small")
_DENSITY_FLOOR = 1e-4  # ε added to the smoothed density at every evaluation point
_MIN_GRID = 2000  # grid size before halving: m = max(2000, round(20 / σ)) // 2 + 1
_MIN_EVAL_POINTS = 200  # T = max(200, round(10 / σ))
_BLOCK = 1 << 16  # rows per block in the histogram pass (bounds the per-row temporaries)
# Grids with m − 1 ∈ {1024, 1280, 2048, 2560, 5120} (σ = k/1024 for k = 10, 8, 5, 4, 2) have
# knots that all lie on this finer grid, so they are derived from it without another row pass.
_FINE_INTERVALS = 10240


@dataclass(frozen=True)
class SmoothECE:
    """Smooth ECE ``value`` and the automatically chosen kernel ``bandwidth`` (σ).

    For no rows (or zero total weight) the value is 0.0 and the bandwidth nan: there is nothing to
    smooth, so no bandwidth is chosen.
    """

    value: float
    bandwidth: float


def smooth_ece(
    confidences: object,
    correct: object,
    *,
    weights: object = None,
    validate: bool = True,
) -> SmoothECE:
    """Smooth ECE with automatic bandwidth, as ``relplot.smECE(f, y, return_width=True)`` computes.

    ``confidences`` are finite numbers in [0, 1]; ``correct`` booleans or 0/1, of equal length.
    ``weights`` are optional non-negative row multiplicities: a row of weight w gives the result
    of repeating it w times (fractional weights act as fractional copies). ``validate=False``
    skips the value checks for inputs already validated (e.g. inside a bootstrap). No rows, or a
    zero total weight, give ``SmoothECE(0.0, nan)``. See the module docstring for the formula and
    the discretisation.

    >>> r = smooth_ece([0.9, 0.8, 0.7, 0.6], [True, True, False, True])
    >>> 0.0 <= r.value <= r.bandwidth <= 1.0
    True
    """
    if validate:
        f, y = validate_predictions(confidences, correct)
    else:
        f = np.asarray(confidences, dtype=np.float64)
        y = np.asarray(correct, dtype=bool)
        if f.shape != y.shape or f.ndim != 1:
            raise ValueError(
                f"confidences and correct must be 1-D of equal length: {f.shape} vs {y.shape}"
            )
    w = None if weights is None else _as_weights(weights, f.shape[0], validate)
    if f.shape[0] == 0 or (w is not None and not w.any()):
        return SmoothECE(0.0, math.nan)
    curve = _SmoothedResiduals([(f, y, w)])
    bandwidth, value = bandwidth_fixed_point(curve.error)
    return SmoothECE(float(value), float(bandwidth))


def smooth_ece_split(
    conf_correct: np.ndarray,
    conf_wrong: np.ndarray,
    *,
    weights_correct: np.ndarray | None = None,
    weights_wrong: np.ndarray | None = None,
) -> SmoothECE:
    """:func:`smooth_ece` of rows given as the confidences of right and of wrong answers.

    The same number as ``smooth_ece`` on the two halves concatenated (to rounding: the grid
    histograms are sums over rows, so each half is folded on its own and the sums add), without
    building the concatenated arrays. Inputs are trusted (float64 in [0, 1], as in
    :class:`~calibcli.metrics.core.PredictionColumns`); optional weights are per half, float64
    multiplicities as for :func:`smooth_ece`. Not part of the public API (not in ``__all__``).
    """
    parts = [
        (np.asarray(conf_correct, dtype=np.float64), True, weights_correct),
        (np.asarray(conf_wrong, dtype=np.float64), False, weights_wrong),
    ]
    if not any(f.shape[0] if w is None else w.any() for f, _, w in parts):
        return SmoothECE(0.0, math.nan)
    curve = _SmoothedResiduals(parts)
    bandwidth, value = bandwidth_fixed_point(curve.error)
    return SmoothECE(float(value), float(bandwidth))


def _as_weights(weights: object, n: int, validate: bool) -> np.ndarray:
    """Weights as float64, checked for shape and (when validating) finite and non-negative."""
    w = np.asarray(weights)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"weights must be 1-D of length {n}, got shape {w.shape}")
    if validate and w.size and (w.dtype == bool or w.dtype.kind not in "iuf"):
        raise ValueError(f"weights must be non-negative numbers, got dtype {w.dtype}")
    w = w.astype(np.float64, copy=False)
    if validate:
        bad = ~(np.isfinite(w) & (w >= 0.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"weights[{i}] = {float(w[i])!r} is not a finite non-negative number")
    return w


# --------------------------------------------------------------------------- the algorithm
# Steps 2–4 of the module docstring (and step 1's grid), given the grid histograms;
# calibcli.metrics.bootstrap runs them on each replicate's histograms, caching across replicates
# what depends only on σ and m.


def grid_size(sigma: float) -> int:
    """Grid points m for bandwidth σ: ⌊max(2000, round(20/σ)) / 2⌋ + 1 (1001 for σ ≥ 0.01)."""
    return max(_MIN_GRID, round(20 / sigma)) // 2 + 1


# Every grid size the bisection can use: it evaluates σ = 1 and multiples k/1024 of its final
# resolution 2**-10, from the first one not below _MIN_BANDWIDTH (k = 2) up. That is 1001 points
# for σ ≥ 11/1024 and nine finer grids for σ = 2/1024 .. 10/1024.
_RESOLUTION = 1 << _BISECTION_STEPS
BISECTION_GRID_SIZES: tuple[int, ...] = tuple(
    sorted(
        {
            grid_size(k / _RESOLUTION)
            for k in range(math.ceil(_MIN_BANDWIDTH * _RESOLUTION), _RESOLUTION + 1)
        }
    )
)


def grid_points(m: int) -> np.ndarray:
    """The m grid points g_j = j/(m − 1) the histograms live on (step 1)."""
    return np.linspace(0.0, 1.0, m)


def eval_points(sigma: float) -> np.ndarray:
    """The T = max(200, round(10/σ)) points t_k = k/(T − 1) at which smECE_σ is summed (step 3)."""
    return np.linspace(0.0, 1.0, max(_MIN_EVAL_POINTS, round(10 / sigma)))


def fft_size(n: int) -> int:
    """Smallest integer ≥ n whose only prime factors are 2, 3 and 5 (fast FFT lengths)."""
    size = n
    while True:
        rest = size
        for p in (2, 3, 5):
            while rest % p == 0:
                rest //= p
        if rest == 1:
            return size
        size += 1


def histogram_spectra(histograms: np.ndarray) -> tuple[int, np.ndarray]:
    """Reflect grid histograms once at each end and real-FFT them (step 2): (size, spectra).

    ``histograms`` is (k, m), e.g. the density and residual histograms of step 1. Each row h
    becomes h_{m−1} .. h_1, h_0 .. h_{m−1}, h_{m−2} .. h_0 (length 3m − 2), transformed at
    ``size = fft_size(3m − 2)``, long enough that the convolution with an m-point kernel in
    :func:`smoothed_error` has no wrapped term in the part it keeps.
    """
    m = histograms.shape[1]
    reflected = np.concatenate([histograms[:, :0:-1], histograms, histograms[:, -2::-1]], axis=1)
    size = fft_size(3 * m - 2)
    return size, np.fft.rfft(reflected, size)


def kernel_spectrum(sigma: float, m: int, size: int) -> np.ndarray:
    """Real FFT at ``size`` of the Gaussian φ_σ sampled at j/(m − 1) − 1/2, j < m (step 2)."""
    offsets = np.linspace(0.0, 1.0, m) - 0.5
    kernel = np.exp(-(offsets * offsets) / (2 * sigma * sigma))
    kernel /= math.sqrt(2 * math.pi) * sigma
    return np.fft.rfft(kernel, size)


def smoothed_error(
    spectra: np.ndarray, size: int, kernel: np.ndarray, grid: np.ndarray, points: np.ndarray
) -> float:
    """smECE_σ from histogram spectra (steps 2–3): Σ_k |R(t_k)| / Σ_k (D(t_k) + ε).

    ``size, spectra = histogram_spectra(h)`` for the (2, m) histograms h = (density, residual);
    ``kernel = kernel_spectrum(σ, m, size)``, ``grid = grid_points(m)``, ``points =
    eval_points(σ)`` (callers evaluating many replicates cache these three).
    """
    m = grid.shape[0]
    # Linear convolution of the reflected grid (length 3m − 2) with the kernel (length m);
    # output j of the reflected-and-centred smoothing is full-convolution index
    # (m − 1) + m // 2 + j. With size ≥ 3m − 2 no wrapped term lands on those indices.
    full = np.fft.irfft(spectra * kernel, size)
    start = (m - 1) + m // 2
    density, residual = full[:, start : start + m]
    num = np.abs(np.interp(points, grid, residual)).sum()
    den = (np.interp(points, grid, density) + _DENSITY_FLOOR).sum()
    return float(num / den)


def bandwidth_fixed_point(error: Callable[[float], float]) -> tuple[float, float]:
    """Bisect for the smallest σ (multiple of 1/1024) with error(σ) ≤ σ; return (σ, error(σ)).

    Step 4: relplot's search. ``error`` is called once per bandwidth it needs: σ = 1, then each
    midpoint not below 0.001 (at most 11 calls; their grid sizes are ``BISECTION_GRID_SIZES``).
    """
    upper, upper_error = 1.0, error(1.0)
    if upper < upper_error:  # cannot happen (error < 1), kept so the rule is stated whole
        return upper, upper_error
    lower = 0.0
    for _ in range(_BISECTION_STEPS):
        mid = (upper + lower) / 2  # exact: the ends stay dyadic
        if mid < _MIN_BANDWIDTH:
            lower = mid
            continue
        mid_error = error(mid)
        if mid < mid_error:
            lower = mid
        else:
            upper, upper_error = mid, mid_error
    return upper, upper_error


# --------------------------------------------------------------------------- from grid sums
# A set of rows enters the bisection only through its grid histograms, which are sums over the
# rows: the histograms of disjoint sets add. So a summary can hold the histograms of every grid
# the bisection may use instead of the rows, and the smooth ECE of merged summaries is the
# smooth ECE of all their rows (to the rounding of the additions).


def stored_grid_sizes() -> tuple[int, ...]:
    """The grids whose histograms give smECE at every bandwidth the bisection may try: the fine
    grid of 10241 points (the bisection's grids whose points all lie on it are coarsened from it)
    and the others of ``BISECTION_GRID_SIZES`` (1001, 1139, 1464, 1707 and 3414 points)."""
    direct = (m for m in BISECTION_GRID_SIZES if _FINE_INTERVALS % (m - 1))
    return tuple(sorted({_FINE_INTERVALS + 1, *direct}))


def grid_histograms(conf_correct: np.ndarray, conf_wrong: np.ndarray) -> dict[int, np.ndarray]:
    """The (2, m) histograms (density, residual) of rows given as the confidences of right and
    of wrong answers, for each m of :func:`stored_grid_sizes`. Inputs are trusted (float64 in
    [0, 1]); the histograms of disjoint sets of rows add."""
    parts: _Parts = [
        (np.asarray(conf_correct, dtype=np.float64), True, None),
        (np.asarray(conf_wrong, dtype=np.float64), False, None),
    ]
    return {m: _grid_histograms(parts, m) for m in stored_grid_sizes()}


def smooth_ece_from_grids(histograms: dict[int, np.ndarray]) -> SmoothECE:
    """:func:`smooth_ece` of the rows whose :func:`grid_histograms` (or their sums over
    disjoint sets of rows) these are. No rows give ``SmoothECE(0.0, nan)``."""
    fine = histograms[_FINE_INTERVALS + 1]
    if not fine[0].any():
        return SmoothECE(0.0, math.nan)
    curve = _SmoothedResiduals([])
    curve._fine = fine
    curve._direct = histograms
    bandwidth, value = bandwidth_fixed_point(curve.error)
    return SmoothECE(float(value), float(bandwidth))


# Rows as parts (f, y, w): confidences, outcomes (a bool array, or one bool for the whole part)
# and optional weights; the histograms of several parts add.
_Parts = list[tuple[np.ndarray, "np.ndarray | bool", "np.ndarray | None"]]


class _SmoothedResiduals:
    """The rows, folded onto grids (cached per grid size), and smECE_σ evaluated from them."""

    def __init__(self, parts: _Parts) -> None:
        self._parts = parts
        self._spectra: dict[int, tuple[int, np.ndarray]] = {}
        self._fine: np.ndarray | None = None
        self._direct: dict[int, np.ndarray] = {}  # histograms given instead of rows

    def error(self, sigma: float) -> float:
        """smECE at bandwidth σ (steps 1–3 of the module docstring)."""
        m = grid_size(sigma)
        size, spectra = self._grid_spectra(m)
        kernel, grid, points = _sigma_inputs(sigma, m, size)
        return smoothed_error(spectra, size, kernel, grid, points)

    def _grid_spectra(self, m: int) -> tuple[int, np.ndarray]:
        cached = self._spectra.get(m)
        if cached is None:
            cached = self._spectra[m] = histogram_spectra(self._grid_histograms(m))
        return cached

    def _grid_histograms(self, m: int) -> np.ndarray:
        """Histograms on m points: a pass over the rows, or a coarsening of the fine grid."""
        ratio, rest = divmod(_FINE_INTERVALS, m - 1)
        if rest:
            given = self._direct.get(m)
            return _grid_histograms(self._parts, m) if given is None else given
        if self._fine is None:
            self._fine = _grid_histograms(self._parts, _FINE_INTERVALS + 1)
        return _coarsen(self._fine, ratio)


@lru_cache(maxsize=48)
def _sigma_inputs(sigma: float, m: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel spectrum, grid and evaluation points of one bandwidth (read-only arrays):
    they depend on σ alone, and the searches of many --by groups try the same bandwidths (all
    start 1, 1/2, then 1/4 or 3/4), so each is computed once. 48 entries hold at most ~12 MB."""
    arrays = (kernel_spectrum(sigma, m, size), grid_points(m), eval_points(sigma))
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _coarsen(fine: np.ndarray, ratio: int) -> np.ndarray:
    """Re-interpolate histograms from a grid onto every ``ratio``-th of its points.

    The coarse hat functions are linear between fine points, so fine point c·ratio + d (0 ≤ d <
    ratio) passes 1 − d/ratio of its mass to coarse point c and d/ratio to c + 1: the same
    numbers as interpolating the rows onto the coarse grid directly. The shares are added by
    numpy's own sum, not a BLAS product, whose kernel (and so the last bit) depends on how
    the process loaded BLAS: the command and the Python API give the same bits.
    """
    intervals = (fine.shape[1] - 1) // ratio
    blocks = fine[:, :-1].reshape(fine.shape[0], intervals, ratio)
    share = np.arange(ratio) / ratio
    coarse = np.zeros((fine.shape[0], intervals + 1))
    coarse[:, :-1] = (blocks * (1.0 - share)).sum(axis=2)
    coarse[:, 1:] += (blocks * share).sum(axis=2)
    coarse[:, -1] += fine[:, -1]
    return coarse


def _fold_runs(moments: np.ndarray, cell: np.ndarray, frac: np.ndarray, offset: int) -> bool:
    """Add a block of one class's unweighted rows to ``moments`` run by run, if it has few runs.

    Rows in sorted order (e.g. :class:`PredictionColumns` halves sorted in place) fall into long
    runs of one cell; each run's S0, S1, S2 are its length and two sums (``np.add.reduceat``),
    a few times faster than three bincounts over the rows. Returns False, adding nothing, when
    the block has too many runs for this to pay (unsorted rows).
    """
    n = cell.shape[0]
    starts = np.flatnonzero(cell[1:] != cell[:-1])
    if 4 * starts.shape[0] > n:
        return False
    starts += 1
    starts = np.concatenate([[0], starts])
    cells = cell[starts]  # distinct when the block is sorted; bincount adds repeats anyway
    size = moments.shape[1]
    lengths = np.diff(starts, append=n).astype(np.float64)
    moments[0, offset:] += np.bincount(cells, lengths, minlength=size - offset)
    moments[1, offset:] += np.bincount(cells, np.add.reduceat(frac, starts), size - offset)
    moments[2, offset:] += np.bincount(cells, np.add.reduceat(frac * frac, starts), size - offset)
    return True


def _grid_histograms(parts: _Parts, m: int) -> np.ndarray:
    """Rows linearly interpolated onto m grid points: rows Σ w·hat_j(f) and Σ w·r·hat_j(f).

    Per cell c and outcome class, three weighted moments of the fraction u are enough —
    S_k = Σ w·u^k (k = 0, 1, 2) — because f = (c + u)/(m − 1): the row puts w(1 − u) on point c
    and w·u on c + 1, and its residual r = f − y gives Σ w·r = (c·S0 + S1)/(m − 1) − y·S0 and
    Σ w·r·u = (c·S1 + S2)/(m − 1) − y·S1.
    """
    moments = np.zeros((3, 2 * m))
    for f, y, w in parts:
        whole = isinstance(y, bool)
        for lo in range(0, f.shape[0], _BLOCK):
            pos = f[lo : lo + _BLOCK] * (m - 1)
            cell = pos.astype(np.intp)  # f ≥ 0, so truncation is floor
            np.minimum(cell, m - 2, out=cell)
            frac = pos - cell
            if whole and w is None and _fold_runs(moments, cell, frac, m if y else 0):
                continue
            if not whole:
                key = cell + m * y[lo : lo + _BLOCK]  # correct rows in the upper half
            elif y:
                key = np.add(cell, m, out=cell)
            else:
                key = cell
            if w is None:
                moments[0] += np.bincount(key, minlength=2 * m)
                wu = frac
            else:
                wb = w[lo : lo + _BLOCK]
                moments[0] += np.bincount(key, wb, minlength=2 * m)
                wu = wb * frac
            moments[1] += np.bincount(key, wu, minlength=2 * m)
            moments[2] += np.bincount(key, wu * frac, minlength=2 * m)
    s0, s1, s2 = moments[:, :m] + moments[:, m:]  # both classes
    correct_s0, correct_s1 = moments[0, m:], moments[1, m:]
    cells = np.arange(m, dtype=np.float64)
    r_all = (cells * s0 + s1) / (m - 1) - correct_s0  # Σ w·r per cell
    r_up = (cells * s1 + s2) / (m - 1) - correct_s1  # Σ w·r·u per cell (moves to c + 1)
    out = np.empty((2, m))
    out[0] = s0 - s1
    out[0, 1:] += s1[:-1]
    out[1] = r_all - r_up
    out[1, 1:] += r_up[:-1]
    return out
