"""The calibration estimator family, side by side, with one convention.

Pure numpy: no I/O, no printing. Binned estimators are derived from :class:`BinStats` (so they
merge across shards); the estimators that need every row (NLL, AUROC, smooth ECE) read compact
:class:`PredictionColumns` (8 bytes per row). :func:`calibration_estimates` computes the whole
family in one place; :mod:`calibcli.metrics.bootstrap` gives each scalar a percentile interval.

Notation: N rows with confidence c_i in [0, 1] and outcome y_i in {0, 1} (1 = correct); bin k
holds n_k rows with mean confidence c̄_k, accuracy ō_k and gap_k = |c̄_k − ō_k|.

* ``ece``            Σ_k (n_k/N)·gap_k (see :mod:`calibcli.metrics.core`).
* ``mce``            max_k gap_k over populated bins (0.0 with no rows).
* ``rmsce``          sqrt(Σ_k (n_k/N)·gap_k²).
* ``rmsce_debiased`` sqrt(max(0, Σ_{k: n_k ≥ 2} (n_k/N)·[gap_k² − ō_k(1 − ō_k)/(n_k − 1)])),
  Kumar, Liang & Ma (2019), "Verified Uncertainty Calibration": the subtracted term is the
  expected contribution of sampling noise to gap_k², so a calibrated predictor scores ~0.
* ``ece_1bin``       |mean confidence − accuracy| (one bin; HELM's ece_1_bin).
* ``nll``            (1/N)·Σ −[y ln c + (1 − y) ln(1 − c)]; +inf when a wrong answer has c = 1 or
  a right one c = 0 (never clamped).
* ``auroc``          P(c_right > c_wrong) + ½·P(c_right = c_wrong), the Mann–Whitney U statistic
  divided by n_right·n_wrong; nan when either class is empty.
* ``smece``          smooth ECE of Błasiok & Nakkiran (2023), see :mod:`calibcli.metrics.smooth`.
* Wilson score interval for each bin's accuracy (Wilson 1927).

Bins are equal-width or equal-mass (``strategy``, see :mod:`calibcli.metrics.binning`); with
tied quantile edges merged, fewer than the requested bins may remain (``bins_used``).

Row weights, where accepted, are non-negative multiplicities (a row of weight w counts as w
copies) and follow the row order of :meth:`PredictionColumns.confidences` (right answers first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from calibcli.metrics.binning import (
    quantile_edges,
    quantile_edges_of_sorted,
    resolve_edges,
    stats_of_sorted,
)
from calibcli.metrics.binomial import wilson_interval
from calibcli.metrics.core import BinStats, PredictionColumns
from calibcli.metrics.validation import check_bins, row_weights

__all__ = [
    "SCALAR_KEYS",
    "CalibrationEstimates",
    "auroc",
    "calibration_estimates",
    "debiased_rms_calibration_error",
    "log_loss",
    "max_calibration_error",
    "one_bin_ece",
    "quantile_edges",
    "rms_calibration_error",
    "wilson_interval",
]

DECOMPOSITION_TERMS = (
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
)
# Every scalar that gets a bootstrap interval, in report order (nested report fields by their
# dotted path); the report's registry of figures lists them in this order too.
SCALAR_KEYS = (
    "accuracy",
    "mean_confidence",
    "ece",
    "brier",
    *(f"brier_decomposition.{term}" for term in DECOMPOSITION_TERMS),
    "mce",
    "rmsce",
    "rmsce_debiased",
    "smece",
    "smece_bandwidth",
    "ece_1bin",
    "nll",
    "auroc",
)

_CHUNK = 1 << 16  # rows per block for the row-wise passes (bounds temporaries)


# --------------------------------------------------------------------------- validation


def _split_weights(
    columns: PredictionColumns, weights: object
) -> tuple[np.ndarray | None, np.ndarray | None]:
    if weights is None:
        return None, None
    w = row_weights(weights, columns.n)
    k = columns.conf_correct.shape[0]
    return w[:k], w[k:]


# --------------------------------------------------------------------------- binned estimators


def _populated(stats: BinStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n_k, Σc_k, Σy_k) of the populated bins, as float64."""
    pop = stats.count > 0
    return (
        stats.count[pop].astype(np.float64),
        stats.sum_conf[pop],
        stats.sum_correct[pop].astype(np.float64),
    )


def max_calibration_error(stats: BinStats) -> float:
    """MCE = max_k |c̄_k − ō_k| over populated bins; 0.0 when no bin is populated."""
    nk, sc, sy = _populated(stats)
    if nk.size == 0:
        return 0.0
    return float(np.max(np.abs(sc - sy) / nk))


def rms_calibration_error(stats: BinStats) -> float:
    """RMSCE = sqrt(Σ_k (n_k/N)·(c̄_k − ō_k)²); 0.0 for no rows."""
    nk, sc, sy = _populated(stats)
    if nk.size == 0:
        return 0.0
    return math.sqrt(math.fsum((sc - sy) ** 2 / nk) / math.fsum(nk))


def debiased_rms_calibration_error(stats: BinStats) -> float:
    """Debiased RMSCE of Kumar, Liang & Ma (2019), "Verified Uncertainty Calibration".

    sqrt(max(0, Σ_{k: n_k ≥ 2} (n_k/N)·[(c̄_k − ō_k)² − ō_k(1 − ō_k)/(n_k − 1)])), N counting
    every row. A bin of one row cannot carry the variance term and contributes nothing, so on
    bins of one row each the sum is empty and the figure 0.0 whatever the gaps: it rests on
    the bins of 2 or more rows alone (a report's gate on it fails closed on too few of them).
    0.0 for no rows.
    """
    nk, sc, sy = _populated(stats)
    if nk.size == 0:
        return 0.0
    total = math.fsum(nk)
    keep = nk >= 2
    nk, sc, sy = nk[keep], sc[keep], sy[keep]
    acc = sy / nk
    terms = nk * (((sc - sy) / nk) ** 2 - acc * (1.0 - acc) / (nk - 1.0))
    return math.sqrt(max(0.0, math.fsum(terms) / total))


def one_bin_ece(stats: BinStats) -> float:
    """|mean confidence − accuracy| over all rows (ECE with a single bin); 0.0 for no rows."""
    total = math.fsum(stats.count.astype(np.float64))
    if not total:
        return 0.0
    diff = math.fsum(np.concatenate([stats.sum_conf, -stats.sum_correct.astype(np.float64)]))
    return abs(diff) / total


# --------------------------------------------------------------------------- row-wise estimators


def _loss_total(conf: np.ndarray, w: np.ndarray | None, right: bool) -> float:
    """Σ w·(−ln c) for right answers, Σ w·(−ln(1 − c)) for wrong ones; inf if a weighted row is."""
    parts = []
    for start in range(0, conf.shape[0], _CHUNK):
        c = conf[start : start + _CHUNK]
        with np.errstate(divide="ignore"):
            loss = -np.log(c) if right else -np.log1p(-c)
        if w is not None:
            wb = w[start : start + _CHUNK]
            live = wb > 0
            if np.isinf(loss[live]).any():
                return math.inf
            loss = np.where(live, loss, 0.0) * wb
        elif np.isinf(loss).any():
            return math.inf
        parts.append(float(loss.sum()))
    return math.fsum(parts)


def log_loss(columns: PredictionColumns, weights: object = None) -> float:
    """Mean negative log-likelihood of the outcome: (1/N)·Σ −[y ln c + (1 − y) ln(1 − c)].

    Uses ln(1 − c) computed as log1p(−c). +inf when any (positively weighted) wrong answer has
    c = 1 or right answer has c = 0; nan for no rows (or zero total weight).

    Unweighted, each class's losses are summed over its rows in ascending order of confidence
    (a sorted copy unless they are sorted already), so the float is the same whatever the
    rows' order: a report with or without a bootstrap, which keeps the rows in their order,
    shows the same NLL. Weighted, the rows are summed in the order given.
    """
    w_right, w_wrong = _split_weights(columns, weights)
    right_conf, wrong_conf = columns.conf_correct, columns.conf_wrong
    if weights is None:
        total_weight = float(columns.n)
        right_conf, wrong_conf = _ascending(right_conf), _ascending(wrong_conf)
    else:
        total_weight = math.fsum([float(w_right.sum()), float(w_wrong.sum())])
    if not total_weight:
        return math.nan
    right = _loss_total(right_conf, w_right, True)
    wrong = _loss_total(wrong_conf, w_wrong, False)
    return (right + wrong) / total_weight


def _ascending(values: np.ndarray) -> np.ndarray:
    """The values sorted ascending: themselves when they are already, else a sorted copy."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] > 1 and bool((values[1:] < values[:-1]).any()):
        return np.sort(values)
    return values


def auroc(columns: PredictionColumns, weights: object = None, *, reorder_ok: bool = False) -> float:
    """Area under the ROC curve of confidence as a score for correctness.

    AUROC = U / (n_right·n_wrong) with the Mann–Whitney U = Σ_{i right, j wrong} [c_i > c_j] +
    ½·[c_i = c_j] (weighted: each pair counts w_i·w_j). nan when either class is empty (or has
    zero weight). Unweighted, the count is exact integer arithmetic and the memory beyond the
    columns is one sorted copy of the wrong answers plus blocks of 2**16 rows: at most 16 bytes
    per row in all, columns included, plus ~2 MB (5,000,000 rows, half wrong: 12.4 bytes/row).

    ``reorder_ok=True`` lets it sort ``columns.conf_correct`` and ``columns.conf_wrong`` in place
    (the caller owns them and no longer needs their order; every estimator of this module is
    permutation-invariant): no copy, and the count becomes a merge of two sorted arrays, several
    times faster. It cannot be combined with ``weights``, which follow the row order.
    """
    right, wrong = columns.conf_correct, columns.conf_wrong
    if reorder_ok:
        if weights is not None:
            raise ValueError("reorder_ok cannot be combined with weights (they follow row order)")
        return _auroc_sorted(_sort_in_place(right), _sort_in_place(wrong))
    w_right, w_wrong = _split_weights(columns, weights)
    if weights is None:
        n_right, n_wrong = right.shape[0], wrong.shape[0]
        if not n_right or not n_wrong:
            return math.nan
        wrong_sorted = np.sort(wrong)
        twice_u = 0
        for start in range(0, n_right, _CHUNK):
            keys = np.sort(right[start : start + _CHUNK])  # sorted keys search faster
            below = np.searchsorted(wrong_sorted, keys, side="left")
            not_above = np.searchsorted(wrong_sorted, keys, side="right")
            twice_u += int(below.sum()) + int(not_above.sum())
        return twice_u / (2 * n_right * n_wrong)
    order = np.argsort(wrong, kind="stable")
    wrong_sorted = wrong[order]
    integer = w_right.dtype.kind == "i" and w_wrong.dtype.kind == "i"
    acc_dtype = np.int64 if integer else np.float64
    cum_wrong = np.zeros(wrong.shape[0] + 1, dtype=acc_dtype)
    np.cumsum(w_wrong[order], out=cum_wrong[1:])
    del order
    total_right = w_right.sum()
    if not total_right or not cum_wrong[-1]:
        return math.nan
    parts = []
    for start in range(0, right.shape[0], _CHUNK):
        keys = right[start : start + _CHUNK]
        wk = w_right[start : start + _CHUNK]
        below = cum_wrong[np.searchsorted(wrong_sorted, keys, side="left")]
        not_above = cum_wrong[np.searchsorted(wrong_sorted, keys, side="right")]
        parts.append(((below + not_above) * wk).sum())
    if integer:
        twice_u = sum(int(p) for p in parts)
        return twice_u / (2 * int(total_right) * int(cum_wrong[-1]))
    return math.fsum(parts) / (2.0 * float(total_right) * float(cum_wrong[-1]))


def _sort_in_place(values: np.ndarray) -> np.ndarray:
    """``values`` sorted ascending, in place when the array is writeable (else a sorted copy)."""
    if not values.flags.writeable:
        return np.sort(values)
    values.sort()
    return values


def _auroc_sorted(right: np.ndarray, wrong: np.ndarray) -> float:
    """Unweighted AUROC from the two classes' confidences, each sorted ascending.

    2U = Σ_i (#{wrong < c_i} + #{wrong ≤ c_i}) over right answers i, or equivalently
    Σ_j (2·n_right − #{right ≤ c_j} − #{right < c_j}) over wrong answers j; the smaller class is
    searched into the larger one (sorted keys make each search start where the last ended),
    in blocks so the index temporaries stay small, and only keys that equal a value of the
    larger class are searched a second time. Exact integer arithmetic.
    """
    n_right, n_wrong = right.shape[0], wrong.shape[0]
    if not n_right or not n_wrong:
        return math.nan
    keys_are_right = n_right <= n_wrong
    keys, table = (right, wrong) if keys_are_right else (wrong, right)
    found = 0  # Σ over keys of (#table < key) + (#table ≤ key)
    lo = 0
    for start in range(0, keys.shape[0], _CHUNK):
        block = keys[start : start + _CHUNK]
        # every key of the block lies at or above block[0]: search only from there on
        lo += int(np.searchsorted(table[lo:], block[0], side="left"))
        hi = lo + int(np.searchsorted(table[lo:], block[-1], side="right"))
        found += 2 * lo * block.shape[0]
        if hi == lo:
            continue
        window = table[lo:hi]
        below = np.searchsorted(window, block, side="left")
        # #table ≤ key exceeds #table < key only for a key equal to a table value: search those
        tied = np.flatnonzero(np.take(window, below, mode="clip") == block)
        ties = np.searchsorted(window, block[tied], side="right") - below[tied]
        found += 2 * int(below.sum()) + int(ties.sum())
    twice_u = found if keys_are_right else 2 * n_right * n_wrong - found
    return twice_u / (2 * n_right * n_wrong)


# --------------------------------------------------------------------------- the whole family


def binned_scalars(stats: BinStats, keys: frozenset[str] | None = None) -> dict[str, float]:
    """Every scalar that the per-bin statistics determine (shared by the bootstrap).

    ``keys`` limits the work to those scalars (the others are left out of the result).
    """
    functions = {
        "ece": BinStats.ece,
        "mce": max_calibration_error,
        "rmsce": rms_calibration_error,
        "rmsce_debiased": debiased_rms_calibration_error,
        "ece_1bin": one_bin_ece,
        "brier": BinStats.brier,
        "accuracy": lambda s: float(s.total_accuracy),
        "mean_confidence": lambda s: float(s.total_mean_confidence),
    }
    out = {k: f(stats) for k, f in functions.items() if keys is None or k in keys}
    terms = [t for t in DECOMPOSITION_TERMS if keys is None or f"brier_decomposition.{t}" in keys]
    if terms:
        decomposition = stats.decomposition()
        for term in terms:
            out[f"brier_decomposition.{term}"] = float(decomposition[term])
    return out


@dataclass(frozen=True, eq=False)
class CalibrationEstimates:
    """The whole estimator family for one set of predictions (see the module docstring).

    ``bins`` is the number requested, ``bins_used`` the number after merging tied quantile edges
    (equal to ``bins`` for uniform bins). Per-bin arrays (``stats``, the Wilson bounds) have
    ``bins_used`` entries; Wilson bounds are nan for empty bins.
    """

    n: int
    bins: int
    strategy: str
    bins_used: int
    edges: np.ndarray
    stats: BinStats
    ece: float
    populated_bins: int
    mce: float
    rmsce: float
    rmsce_debiased: float
    smece: float
    smece_bandwidth: float
    ece_1bin: float
    brier: float
    decomposition: dict[str, float]
    nll: float
    auroc: float
    accuracy: float
    mean_confidence: float
    accuracy_ci_lower: np.ndarray
    accuracy_ci_upper: np.ndarray
    wilson_level: float = field(default=0.95)

    def scalars(self) -> dict[str, float]:
        """Every scalar that gets a bootstrap interval, keyed as in :data:`SCALAR_KEYS`."""
        values = {
            "ece": self.ece,
            "mce": self.mce,
            "rmsce": self.rmsce,
            "rmsce_debiased": self.rmsce_debiased,
            "smece": self.smece,
            "smece_bandwidth": self.smece_bandwidth,
            "ece_1bin": self.ece_1bin,
            "brier": self.brier,
            "nll": self.nll,
            "auroc": self.auroc,
            "accuracy": self.accuracy,
            "mean_confidence": self.mean_confidence,
        }
        for term in DECOMPOSITION_TERMS:
            values[f"brier_decomposition.{term}"] = self.decomposition[term]
        return {key: float(values[key]) for key in SCALAR_KEYS}


def calibration_estimates(
    columns: PredictionColumns,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    weights: object = None,
    edges: object = None,
    wilson_level: float = 0.95,
    stats: BinStats | None = None,
    reorder_ok: bool = False,
    smooth: bool = True,
) -> CalibrationEstimates:
    """Compute the whole estimator family (one place, one convention).

    ``strategy`` is "uniform" (equal-width) or "quantile" (equal-mass, see :func:`quantile_edges`);
    explicit ``edges`` override both. ``weights`` are row multiplicities in the order of
    ``columns.confidences()``. ``smooth=False`` leaves ``smece`` and its bandwidth nan (the
    smooth ECE's bandwidth search is most of the cost on small sets of rows).

    Two options for callers that already hold more than the columns (the command line):

    * ``stats``: the per-bin statistics of these same rows (e.g. pooled by the reader while
      reading). They are used when their edges are the ones this call bins on and no weights are
      given, and rebuilt from the columns otherwise; statistics of a different number of rows
      are refused.
    * ``reorder_ok=True``: the caller owns ``columns.conf_correct`` / ``conf_wrong`` and no
      longer needs their row order, so they may be sorted in place (every estimator here is
      permutation-invariant). AUROC then needs no sorted copy and no random-access search, and
      the other row passes read sorted data. Not with ``weights`` (they follow the row order).
      The binned figures, NLL and AUROC equal those without it to the bit, the smooth ECE to
      rounding.

    Without weights, per-bin sums computed here add each bin's rows in ascending order, so
    they are the same bits whatever the rows' order, and Brier is the given ``stats``' when
    they know Σ(c − y)² exactly (it does not depend on the bins).
    """
    if reorder_ok and weights is not None:
        raise ValueError("reorder_ok cannot be combined with weights (they follow row order)")
    if reorder_ok:
        right = _sort_in_place(columns.conf_correct)
        wrong = _sort_in_place(columns.conf_wrong)
        columns = PredictionColumns(right, wrong)  # the same arrays unless one was read-only
    if reorder_ok and strategy == "quantile" and edges is None:
        check_bins(bins)
        e = quantile_edges_of_sorted(columns.conf_correct, columns.conf_wrong, bins)
    else:
        e = resolve_edges(columns, bins, strategy, weights=weights, edges=edges)
    if stats is not None and stats.n != columns.n:
        raise ValueError(f"stats hold {stats.n} rows but the columns {columns.n}")
    reuse = stats is not None and weights is None and np.array_equal(stats.edges, e)
    if not reuse and weights is None:
        # the per-bin sums of the rows in ascending order (sorted copies unless sorted in place
        # above): the same bits whatever order the rows came in, with a bootstrap or without,
        # from a file or from a summary's table
        given = stats
        stats = stats_of_sorted(_ascending(columns.conf_correct), _ascending(columns.conf_wrong), e)
        if given is not None and given.sq_error_total is not None:
            # Σ(c − y)² does not depend on the bins: the given rows' exact one
            stats = replace(stats, sq_error_total=given.sq_error_total)
    elif not reuse:
        stats = columns.stats(edges=e, weights=weights)
    area = auroc(columns, weights, reorder_ok=reorder_ok)
    binned = binned_scalars(stats)
    smece, bandwidth = _smooth(columns, weights) if smooth else (math.nan, math.nan)
    lower, upper = wilson_interval(stats.sum_correct, stats.count, wilson_level)
    return CalibrationEstimates(
        n=stats.n,
        bins=check_bins(bins),
        strategy=strategy,
        bins_used=stats.bins,
        edges=stats.edges,
        stats=stats,
        ece=binned["ece"],
        populated_bins=stats.populated_bins,
        mce=binned["mce"],
        rmsce=binned["rmsce"],
        rmsce_debiased=binned["rmsce_debiased"],
        smece=smece,
        smece_bandwidth=bandwidth,
        ece_1bin=binned["ece_1bin"],
        brier=binned["brier"],
        decomposition=stats.decomposition(),
        nll=log_loss(columns, weights),
        auroc=area,
        accuracy=binned["accuracy"],
        mean_confidence=binned["mean_confidence"],
        accuracy_ci_lower=lower,
        accuracy_ci_upper=upper,
        wilson_level=float(wilson_level),
    )


def _smooth(columns: PredictionColumns, weights: object) -> tuple[float, float]:
    """smooth ECE of the two halves, folded one after the other (no concatenated copy), each
    half in ascending order of confidence (weighted rows by confidence, then weight): its grid
    histograms are sums over rows, so the same rows in another order, as a bootstrap's caller
    or a shuffled file gives them, would round otherwise in the last bit."""
    from calibcli.metrics.smooth import smooth_ece_split

    w_right, w_wrong = _split_weights(columns, weights)
    right, w_right = _in_order(columns.conf_correct, w_right)
    wrong, w_wrong = _in_order(columns.conf_wrong, w_wrong)
    result = smooth_ece_split(right, wrong, weights_correct=w_right, weights_wrong=w_wrong)
    return float(result.value), float(result.bandwidth)


def _in_order(values: np.ndarray, weights: object) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` ascending (:func:`_ascending`), or with ``weights`` both in the order of
    (value, weight), the weights as float64."""
    if weights is None:
        return _ascending(values), None
    w = np.asarray(weights).astype(np.float64, copy=False)
    order = np.lexsort((w, np.asarray(values, dtype=np.float64)))
    return np.asarray(values, dtype=np.float64)[order], w[order]
