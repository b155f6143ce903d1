"""Bin edges: equal-width or equal-mass, and the per-bin statistics of sorted rows.

Pure numpy: no I/O, no printing. Bins are equal-width (``strategy="uniform"``, the exact edges of
:func:`calibcli.metrics.core.bin_edges`) or equal-mass (``strategy="quantile"``): edges at
``np.quantile(c, k/M)`` (numpy's default linear method) for k = 1..M−1, plus 0 and 1, with tied
edges merged, so fewer than M bins may remain. Membership is left-closed in both cases: bin k
holds edges[k] <= c < edges[k+1], and c = 1 falls in the last bin.
"""

from __future__ import annotations

import math

import numpy as np

from calibcli.metrics.core import BinStats, PredictionColumns, bin_edges
from calibcli.metrics.validation import check_bins, row_weights

__all__ = ["STRATEGIES", "quantile_edges", "resolve_edges"]

# the bin strategies resolve_edges implements; calibcli.metrics.methods names and describes them
STRATEGIES = ("uniform", "quantile")

_CHUNK = 1 << 16  # rows per block of a bin's sums (bounds temporaries)


def _confidence_vector(values: object) -> np.ndarray:
    """``values`` as a float64 vector of confidences in [0, 1], or ValueError naming the first
    bad one."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"confidences must be one-dimensional, got shape {arr.shape}")
    if arr.size and (arr.dtype == bool or arr.dtype.kind not in "iuf"):
        raise ValueError(f"confidences must be numbers in [0, 1], got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = float(arr[i])
        what = "is not a finite number" if not math.isfinite(value) else "is outside [0, 1]"
        raise ValueError(f"confidences[{i}] = {value!r} {what}")
    return arr


def quantile_edges(confidences: object, bins: int) -> np.ndarray:
    """Equal-mass bin edges ``[0, q(1/M), ..., q((M−1)/M), 1]`` with tied edges merged.

    q is ``np.quantile`` with numpy's default (linear) method. Edges that coincide (ties in the
    data, or quantiles at 0 or 1) are merged, so the result has at most ``bins + 1`` strictly
    increasing edges; ``len(edges) − 1`` is the number of bins actually used. With no rows the
    single bin ``[0, 1]`` is returned.

    >>> quantile_edges([0.1, 0.2, 0.3, 0.4], 2).tolist()
    [0.0, 0.25, 1.0]
    >>> quantile_edges([0.5, 0.5, 0.5, 0.25], 4).tolist()  # two tied edges at 0.5 merge
    [0.0, 0.4375, 0.5, 1.0]
    """
    m = check_bins(bins)
    conf = _confidence_vector(confidences)
    if conf.size == 0:
        return np.array([0.0, 1.0])
    interior = np.quantile(conf, np.arange(1, m, dtype=np.float64) / m)
    return np.unique(np.concatenate([[0.0], interior, [1.0]]))


def _kth_of_sorted(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """The k-th smallest value (0-based) of the union of two ascending arrays, in O(log n)."""
    lo, hi = max(0, k + 1 - b.shape[0]), min(k + 1, a.shape[0])  # how many come from ``a``
    while lo < hi:
        i = (lo + hi) // 2
        if a[i] < b[k - i]:  # the k+1 smallest hold more than i values of ``a``
            lo = i + 1
        else:
            hi = i
    j = k + 1 - lo
    return float(max(a[lo - 1] if lo else -math.inf, b[j - 1] if j else -math.inf))


def quantile_edges_of_sorted(right: np.ndarray, wrong: np.ndarray, bins: int) -> np.ndarray:
    """:func:`quantile_edges` of the rows of two ascending arrays, without concatenating them.

    np.quantile's linear method, step for step: virtual index v = (n − 1)·q, neighbours
    x[⌊v⌋] and x[⌊v⌋ + 1] of the sorted rows (both x[n − 1] when v ≥ n − 1), and its
    interpolation a + (b − a)·γ, or b − (b − a)·(1 − γ) when γ ≥ ½ (γ = v − ⌊v⌋). The two
    order statistics come from the sorted halves by bisection, so the edges are the same
    doubles as ``quantile_edges(columns.confidences(), bins)`` (checked in the tests).
    """
    m = check_bins(bins)
    n = right.shape[0] + wrong.shape[0]
    if n == 0:
        return np.array([0.0, 1.0])
    q = np.arange(1, m, dtype=np.float64) / m
    virtual = (n - 1) * q
    interior = np.empty(m - 1)
    for t, v in enumerate(virtual.tolist()):
        if v >= n - 1:
            interior[t] = _kth_of_sorted(right, wrong, n - 1)
            continue
        k = math.floor(v)
        a, b = _kth_of_sorted(right, wrong, k), _kth_of_sorted(right, wrong, k + 1)
        gamma = v - k
        diff = b - a
        interior[t] = b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma
    return np.unique(np.concatenate([[0.0], interior, [1.0]]))


def stats_of_sorted(right: np.ndarray, wrong: np.ndarray, edges: np.ndarray) -> BinStats:
    """:class:`BinStats` of the rows of two ascending arrays (right, wrong answers) on ``edges``.

    In sorted rows every bin is one contiguous run (found with ``searchsorted``, the membership
    rule of :func:`~calibcli.metrics.core.bin_index`), so each sum is a pairwise ``np.sum`` over
    blocks of the run, pooled with ``math.fsum``: more accurate than summing the sorted rows one
    after another, which a whole block falling in one bin would do.
    """
    m = edges.shape[0] - 1
    count = np.zeros(m, dtype=np.int64)
    sum_correct = np.zeros(m, dtype=np.int64)
    sums = {key: np.zeros(m) for key in ("conf", "conf_sq", "conf_correct", "sq_error")}
    for values, right_answers in ((right, True), (wrong, False)):
        bounds = [0, *np.searchsorted(values, edges[1:-1], side="left").tolist(), len(values)]
        for k in range(m):
            lo, hi = bounds[k], bounds[k + 1]
            if hi <= lo:
                continue
            conf, conf_sq, sq_error = [], [], []
            for start in range(lo, hi, _CHUNK):
                c = values[start : min(start + _CHUNK, hi)]
                conf.append(float(np.sum(c)))
                conf_sq.append(float(np.sum(c * c)))
                if right_answers:
                    gap = 1.0 - c
                    sq_error.append(float(np.sum(gap * gap)))
            count[k] += hi - lo
            sums["conf"][k] += math.fsum(conf)
            sums["conf_sq"][k] += math.fsum(conf_sq)
            if right_answers:
                sum_correct[k] += hi - lo
                sums["conf_correct"][k] += math.fsum(conf)
                sums["sq_error"][k] += math.fsum(sq_error)
            else:
                sums["sq_error"][k] += math.fsum(conf_sq)
    return BinStats(
        edges,
        count,
        sum_correct,
        sums["conf"],
        sums["conf_sq"],
        sums["conf_correct"],
        sums["sq_error"],
    )


def resolve_edges(
    columns: PredictionColumns,
    bins: int,
    strategy: str,
    *,
    weights: object = None,
    edges: object = None,
) -> np.ndarray:
    """The bin edges an estimate uses: ``edges`` if given, else uniform or quantile edges.

    Weighted quantile edges are the edges of the rows repeated by their (integer) weights.
    """
    m = check_bins(bins)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if edges is not None:
        return np.asarray(edges, dtype=np.float64)
    if strategy == "uniform":
        return bin_edges(m)
    conf = columns.confidences()
    if weights is not None:
        w = row_weights(weights, columns.n)
        if w.dtype.kind != "i":
            if not np.array_equal(w, np.floor(w)):
                raise ValueError("quantile bins with weights need integer weights")
            w = w.astype(np.int64)
        conf = np.repeat(conf, w)
    return quantile_edges(conf, m)
