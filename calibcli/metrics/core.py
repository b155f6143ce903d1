"""The calibration core: per-bin sufficient statistics, expected calibration error, Brier score
and reliability data.

Pure numpy: no I/O, no printing. Every calibration figure is derived from per-bin sufficient
statistics (:class:`BinStats`) that one pass over the rows builds and that merge by addition, so
a large file can be folded block by block, or split across processes, and give the pooled result.

This module is the documented entry point of the metrics: it also offers the perplexity of
:mod:`calibcli.metrics.corpus_perplexity` and the validators of :mod:`calibcli.metrics.validation`.

Conventions (stated once, used everywhere; perplexity's are in its module):

* Bins are equal-width on [0, 1] unless explicit edges are given. Bin ``k`` of ``M`` holds
  ``k/M <= c < (k+1)/M`` where ``k/M`` is the double nearest the exact fraction (Python's
  ``k / M``); ``c == 1.0`` goes in the last bin. So 0.3 lands in bin 3 of 10 and 0.29 in bin 29
  of 100, as written (``floor(c * M)`` and ``np.linspace`` edges get some of these wrong).
* ECE = Σ_k (n_k / N)·|c̄_k − ō_k| over populated bins, where c̄_k is the bin's mean confidence
  and ō_k its accuracy. Empty bins contribute nothing and are reported with count 0.
* Brier = mean((c − y)²) with y ∈ {0, 1}.
* Sums over rows are blockwise (≤ 8,192 rows, numpy) and combined with an error-free
  transformation (TwoSum), so results do not drift with the number of rows and do not depend on
  how the rows were split into blocks beyond rounding of the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from calibcli.metrics.corpus_perplexity import PerplexityResult, bits_per_unit, perplexity
from calibcli.metrics.validation import (
    check_bins,
    validate_predictions,
    validate_weights,
)

__all__ = [
    "BinStats",
    "CalibrationReport",
    "PerplexityResult",
    "PredictionColumns",
    "StatsAccumulator",
    "bin_edges",
    "bin_index",
    "bits_per_unit",
    "brier_decomposition",
    "brier_score",
    "check_bins",
    "expected_calibration_error",
    "perplexity",
    "reliability_diagram",
    "validate_predictions",
    "validate_weights",
]

_BLOCK = 8192
_FLOAT_FIELDS = ("sum_conf", "sum_conf_sq", "sum_conf_correct", "sum_sq_error")
_COUNT_FIELDS = ("count", "sum_correct")


# --------------------------------------------------------------------------- binning


def bin_edges(bins: int) -> np.ndarray:
    """Equal-width edges ``[0/M, 1/M, ..., M/M]``, each the double nearest the exact fraction."""
    m = check_bins(bins)
    return np.arange(m + 1, dtype=np.float64) / m  # IEEE division is correctly rounded, = k / M


def _check_edges(edges: object) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.shape[0] < 2:
        raise ValueError("edges must be a 1-D array of at least two increasing values")
    if not (np.all(np.diff(e) > 0) and e[0] == 0.0 and e[-1] == 1.0):
        raise ValueError("edges must increase strictly from 0 to 1")
    return e


def bin_index(confidences: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each confidence: ``k`` where ``edges[k] <= c < edges[k+1]``; ``c >= edges[-1]`` goes
    to the last bin. Inputs are assumed validated (finite, in [0, 1]).

    Equal-width edges take a fast path: ``floor(c * M)`` is off by at most one next to an edge,
    and one comparison with the true edges on each side corrects it.
    """
    c = np.asarray(confidences, dtype=np.float64)
    m = edges.shape[0] - 1
    if np.array_equal(edges, np.arange(m + 1, dtype=np.float64) / m):
        idx = (c * m).astype(np.intp)
        np.minimum(idx, m - 1, out=idx)
        idx -= c < edges[idx]
        idx += (c >= edges[idx + 1]) & (idx < m - 1)
        return idx
    idx = np.searchsorted(edges, c, side="right") - 1
    np.clip(idx, 0, m - 1, out=idx)
    return idx


# --------------------------------------------------------------------------- sufficient statistics


def two_sum(hi: np.ndarray, lo: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Add ``x`` into the compensated pair (hi, lo) in place; exact error of each addition."""
    s = hi + x
    bp = s - hi
    lo += (hi - (s - bp)) + (x - bp)
    hi[...] = s
    return hi


@dataclass(frozen=True, eq=False)
class BinStats:
    """Per-bin sufficient statistics for calibration, mergeable by addition.

    ``count`` and ``sum_correct`` are exact integers (int64) unless fractional weights were used;
    the float sums are Σc, Σc², Σc·y and Σ(c − y)² per bin. ``sum_sq_error`` is kept alongside the
    moments so that Brier never suffers the cancellation of Σc² − 2Σcy + Σy.

    ``sq_error_total``, when known, is the exact sum over every row of its squared error as
    a double, (c − y)² rounded once (a summary's exact tables give it): Brier is then the
    double nearest that sum / N, whatever the bins. Without it (a ``--by`` group's figures)
    Brier adds the per-bin doubles, which rounds more than once.
    """

    edges: np.ndarray
    count: np.ndarray
    sum_correct: np.ndarray
    sum_conf: np.ndarray
    sum_conf_sq: np.ndarray
    sum_conf_correct: np.ndarray
    sum_sq_error: np.ndarray
    sq_error_total: Fraction | None = None

    # ----- construction

    @classmethod
    def empty(cls, bins: int = 10, *, edges: object = None) -> BinStats:
        """Statistics of no rows over ``bins`` equal-width bins (or the given edges)."""
        e = bin_edges(bins) if edges is None else _check_edges(edges)
        m = e.shape[0] - 1
        zeros_i = np.zeros(m, dtype=np.int64)
        zeros_f = np.zeros(m, dtype=np.float64)
        return cls(e, zeros_i, zeros_i.copy(), *(zeros_f.copy() for _ in _FLOAT_FIELDS))

    @classmethod
    def from_arrays(
        cls,
        confidences: object,
        correct: object,
        bins: int = 10,
        *,
        edges: object = None,
        weights: object = None,
        validate: bool = True,
    ) -> BinStats:
        """One pass over the rows. ``weights`` are row multiplicities (w ≡ w copies of the row)."""
        if validate:
            conf, corr = validate_predictions(confidences, correct)
        else:
            conf = np.asarray(confidences, dtype=np.float64)
            corr = np.asarray(correct, dtype=bool)
        e = bin_edges(bins) if edges is None else _check_edges(edges)
        w = None if weights is None else validate_weights(weights, conf.shape[0])
        acc = StatsAccumulator(edges=e)
        for start in range(0, conf.shape[0], _BLOCK):
            stop = start + _BLOCK
            acc.add(
                _block_stats(
                    conf[start:stop], corr[start:stop], e, None if w is None else w[start:stop]
                )
            )
        return acc.result()

    # ----- merging

    def merge(self, other: BinStats) -> BinStats:
        """Statistics of the union of the two row sets (``a + b`` does the same)."""
        if not np.array_equal(self.edges, other.edges):
            raise ValueError("cannot merge statistics built on different bin edges")
        acc = StatsAccumulator(edges=self.edges)
        acc.add(self)
        acc.add(other)
        return acc.result()

    __add__ = merge

    # ----- derived figures

    @property
    def bins(self) -> int:
        return int(self.count.shape[0])

    @property
    def n(self) -> int:
        return _scalar(self.count.sum())

    @property
    def populated_bins(self) -> int:
        return int(np.count_nonzero(self.count))

    @property
    def mean_confidence(self) -> np.ndarray:
        """Per-bin mean confidence c̄_k (0.0 for empty bins)."""
        return _safe_ratio(self.sum_conf, self.count)

    @property
    def accuracy(self) -> np.ndarray:
        """Per-bin accuracy ō_k (0.0 for empty bins)."""
        return _safe_ratio(self.sum_correct, self.count)

    @property
    def total_accuracy(self) -> float:
        n = self.n
        return _scalar(self.sum_correct.sum()) / n if n else 0.0

    @property
    def total_mean_confidence(self) -> float:
        n = self.n
        return math.fsum(self.sum_conf) / n if n else 0.0

    def ece(self) -> float:
        """ECE = Σ_k (n_k/N)·|c̄_k − ō_k| = (1/N)·Σ_k |Σc − Σy|_k (0.0 for no rows)."""
        n = self.n
        if not n:
            return 0.0
        return math.fsum(np.abs(self.sum_conf - self.sum_correct)) / n

    def brier(self) -> float:
        """Brier = (1/N)·Σ (c − y)² (0.0 for no rows): the double nearest the exact mean when
        ``sq_error_total`` is known (a quotient of integers rounds once)."""
        n = self.n
        if not n:
            return 0.0
        if self.sq_error_total is not None and isinstance(n, int):
            total = self.sq_error_total
            return total.numerator / (total.denominator * n)
        return math.fsum(self.sum_sq_error) / n

    def decomposition(self) -> dict[str, float]:
        """Murphy's decomposition with the within-bin terms of Stephenson, Coelho & Jolliffe (2008).

        reliability − resolution + uncertainty + within_bin_variance − within_bin_covariance = brier
        holds exactly in real arithmetic; here to rounding.
        """
        n = self.n
        keys = (
            "reliability",
            "resolution",
            "uncertainty",
            "within_bin_variance",
            "within_bin_covariance",
            "brier",
        )
        if not n:
            return dict.fromkeys(keys, 0.0)
        pop = self.count > 0
        nk = self.count[pop].astype(np.float64)
        sc = self.sum_conf[pop]
        sy = self.sum_correct[pop].astype(np.float64)
        obar = _scalar(self.sum_correct.sum()) / n
        reliability = math.fsum((sc - sy) ** 2 / nk) / n
        resolution = math.fsum(nk * (sy / nk - obar) ** 2) / n
        variance = max(0.0, math.fsum(self.sum_conf_sq[pop] - sc * sc / nk) / n)
        covariance = 2.0 * math.fsum(self.sum_conf_correct[pop] - sc * sy / nk) / n
        return {
            "reliability": reliability,
            "resolution": resolution,
            "uncertainty": obar * (1.0 - obar),
            "within_bin_variance": variance,
            "within_bin_covariance": covariance,
            "brier": self.brier(),
        }

    def reliability(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean confidence, accuracy, count) per bin; zeros for empty bins."""
        return self.mean_confidence, self.accuracy, self.count.copy()


def _scalar(x: object) -> int | float:
    v = x.item() if isinstance(x, np.generic) else x
    return v


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(den.shape[0], dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _block_stats(
    conf: np.ndarray, corr: np.ndarray, edges: np.ndarray, w: np.ndarray | None
) -> BinStats:
    m = edges.shape[0] - 1
    idx = bin_index(conf, edges)
    y = corr.astype(np.float64)
    sq = (conf - y) ** 2
    if w is None:
        count = np.bincount(idx, minlength=m).astype(np.int64, copy=False)
        sum_correct = np.bincount(idx[corr], minlength=m).astype(np.int64, copy=False)
        wc = conf
    else:
        wf = w.astype(np.float64)
        count = np.bincount(idx, weights=wf, minlength=m)
        sum_correct = np.bincount(idx, weights=wf * y, minlength=m)
        if w.dtype.kind in "iu":
            count = np.rint(count).astype(np.int64)
            sum_correct = np.rint(sum_correct).astype(np.int64)
        wc = wf * conf
        sq *= wf
    return BinStats(
        edges,
        count,
        sum_correct,
        np.bincount(idx, weights=wc, minlength=m),
        np.bincount(idx, weights=wc * conf, minlength=m),
        np.bincount(idx, weights=wc * y, minlength=m),
        np.bincount(idx, weights=sq, minlength=m),
    )


class StatsAccumulator:
    """Running, compensated sum of :class:`BinStats` (constant memory, order-robust).

    Integer fields add exactly; float fields keep a TwoSum error term, so the result equals the
    correctly rounded pooled sum to within an ulp whatever the block sizes or merge order.
    """

    def __init__(self, bins: int = 10, *, edges: object = None) -> None:
        self._edges = bin_edges(bins) if edges is None else _check_edges(edges)
        m = self._edges.shape[0] - 1
        self._counts = {f: np.zeros(m, dtype=np.int64) for f in _COUNT_FIELDS}
        self._hi = {f: np.zeros(m) for f in _FLOAT_FIELDS}
        self._lo = {f: np.zeros(m) for f in _FLOAT_FIELDS}
        # Σ(c − y)² exactly while every part added knows it (None once one does not)
        self._sq_error_total: Fraction | None = Fraction(0)

    @property
    def edges(self) -> np.ndarray:
        return self._edges

    def add(self, stats: BinStats) -> None:
        if not np.array_equal(stats.edges, self._edges):
            raise ValueError("cannot add statistics built on different bin edges")
        for f in _COUNT_FIELDS:
            v = getattr(stats, f)
            if v.dtype.kind == "f" and self._counts[f].dtype.kind != "f":
                self._counts[f] = self._counts[f].astype(np.float64)
            self._counts[f] = self._counts[f] + v
        for f in _FLOAT_FIELDS:
            two_sum(self._hi[f], self._lo[f], getattr(stats, f))
        if self._sq_error_total is not None and stats.sq_error_total is not None:
            self._sq_error_total += stats.sq_error_total
        else:
            self._sq_error_total = None

    def result(self) -> BinStats:
        floats = {f: self._hi[f] + self._lo[f] for f in _FLOAT_FIELDS}
        return BinStats(
            self._edges.copy(),
            self._counts["count"].copy(),
            self._counts["sum_correct"].copy(),
            floats["sum_conf"],
            floats["sum_conf_sq"],
            floats["sum_conf_correct"],
            floats["sum_sq_error"],
            self._sq_error_total,
        )


# --------------------------------------------------------------------------- compact columns


@dataclass(frozen=True, eq=False)
class PredictionColumns:
    """All rows, compactly: the confidences of right and of wrong answers, 8 bytes per row.

    Every estimator is invariant to the order of rows, so splitting by correctness loses nothing;
    the row order of :meth:`confidences` / :meth:`correct` is "right answers first".
    """

    conf_correct: np.ndarray
    conf_wrong: np.ndarray

    @classmethod
    def from_arrays(
        cls, confidences: object, correct: object, *, validate: bool = True
    ) -> PredictionColumns:
        if validate:
            conf, corr = validate_predictions(confidences, correct)
        else:
            conf = np.asarray(confidences, dtype=np.float64)
            corr = np.asarray(correct, dtype=bool)
        return cls(np.ascontiguousarray(conf[corr]), np.ascontiguousarray(conf[~corr]))

    @classmethod
    def concat(cls, parts: Iterable[PredictionColumns]) -> PredictionColumns:
        parts = list(parts)
        if not parts:
            return cls(np.zeros(0), np.zeros(0))
        return cls(
            np.concatenate([p.conf_correct for p in parts]),
            np.concatenate([p.conf_wrong for p in parts]),
        )

    @property
    def n(self) -> int:
        return int(self.conf_correct.shape[0] + self.conf_wrong.shape[0])

    def confidences(self) -> np.ndarray:
        return np.concatenate([self.conf_correct, self.conf_wrong])

    def correct(self) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        out[: self.conf_correct.shape[0]] = True
        return out

    def stats(self, bins: int = 10, *, edges: object = None, weights: object = None) -> BinStats:
        """BinStats of these rows; ``weights`` follow the :meth:`confidences` order."""
        e = bin_edges(bins) if edges is None else _check_edges(edges)
        k = self.conf_correct.shape[0]
        w = None if weights is None else validate_weights(weights, self.n)
        right = BinStats.from_arrays(
            self.conf_correct,
            np.ones(k, dtype=bool),
            edges=e,
            weights=None if w is None else w[:k],
            validate=False,
        )
        wrong = BinStats.from_arrays(
            self.conf_wrong,
            np.zeros(self.n - k, dtype=bool),
            edges=e,
            weights=None if w is None else w[k:],
            validate=False,
        )
        return right.merge(wrong)


# --------------------------------------------------------------------------- calibration


def expected_calibration_error(
    confidences: object, correct: object, bins: int = 10
) -> tuple[float, int]:
    """(ECE, populated bins) over ``bins`` equal-width bins; (0.0, 0) for empty input.

    ECE = Σ_k (n_k / N)·|mean confidence_k − accuracy_k| over populated bins.
    """
    stats = BinStats.from_arrays(confidences, correct, check_bins(bins))
    return stats.ece(), stats.populated_bins


def brier_score(confidences: object, correct: object) -> float:
    """Brier = mean((c − y)²); 0.0 for empty input."""
    conf, corr = validate_predictions(confidences, correct)
    return BinStats.from_arrays(conf, corr, 1, validate=False).brier()


def brier_decomposition(confidences: object, correct: object, bins: int = 10) -> dict[str, float]:
    """Brier decomposition over ``bins`` equal-width bins (see :meth:`BinStats.decomposition`).

    reliability = (1/N) Σ n_k (c̄_k − ō_k)²; resolution = (1/N) Σ n_k (ō_k − ō)²;
    uncertainty = ō(1 − ō); within_bin_variance = (1/N) Σ_k Σ_{i∈k} (c_i − c̄_k)²;
    within_bin_covariance = (2/N) Σ_k Σ_{i∈k} (c_i − c̄_k)(y_i − ō_k); all zeros for empty input.
    """
    return BinStats.from_arrays(confidences, correct, check_bins(bins)).decomposition()


def reliability_diagram(
    confidences: object, correct: object, bins: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean confidence, accuracy, count) per equal-width bin, each of length ``bins``.

    Empty bins have count 0 and 0.0 in the other two arrays.
    """
    return BinStats.from_arrays(confidences, correct, check_bins(bins)).reliability()


@dataclass(frozen=True, eq=False)
class CalibrationReport:
    """ECE, Brier and reliability data for one set of predictions."""

    ece: float
    brier: float
    reliability: tuple[np.ndarray, np.ndarray, np.ndarray]
    populated_bins: int
    n: int
    bins: int
    accuracy: float
    mean_confidence: float

    @classmethod
    def from_stats(cls, stats: BinStats) -> CalibrationReport:
        return cls(
            ece=stats.ece(),
            brier=stats.brier(),
            reliability=stats.reliability(),
            populated_bins=stats.populated_bins,
            n=stats.n,
            bins=stats.bins,
            accuracy=stats.total_accuracy,
            mean_confidence=stats.total_mean_confidence,
        )

    @classmethod
    def from_predictions(
        cls, confidences: object, correct: object, bins: int = 10
    ) -> CalibrationReport:
        return cls.from_stats(BinStats.from_arrays(confidences, correct, check_bins(bins)))
