"""Selective prediction: the risk–coverage curve, guaranteed thresholds and summary figures.

Pure numpy: no I/O, no printing, no scipy. Rows with confidence ``c >= t`` are accepted
(auto-approved); the rest are abstained on.

Notation: N rows; the distinct confidences in descending order t_0 > t_1 > ... > t_{m−1} are the
points of the curve; n_j = #{c >= t_j} rows are accepted at t_j, with e_j errors (wrong answers)
among them. Coverage_j = n_j / N, risk_j = e_j / n_j, accuracy_j = 1 − risk_j. A target accuracy
A means a tolerated risk α = 1 − A.

* :class:`RiskCoverage` (:mod:`calibcli.metrics.risk_coverage`) holds (t_j, n_j, e_j, N) with
  exact int64 counts.
* :func:`binomial_cdf`, :func:`accuracy_lower_bound`, :func:`risk_upper_bound`: exact binomial
  tails and one-sided Clopper–Pearson bounds, from :mod:`calibcli.metrics.binomial`.
* :func:`select_threshold`: the lowest threshold whose accuracy is >= A with probability >= 1 − δ
  (Learn then Test over :func:`threshold_grid`, a grid fixed before the data, or over every
  distinct confidence; or SGR); :func:`plug_in_threshold`: the same without a guarantee.
* :func:`aurc`, :func:`e_aurc`, :func:`selective_accuracy`: summary figures, defined as the
  expectation over random orderings of tied rows, so they never depend on row order.
* :func:`display_rows`: a handful of rows of the curve at round coverages, for a table.

Comparisons of an empirical accuracy (or coverage) with a user's figure use the correctly
rounded quotient, e.g. ``(n − e) / n >= A`` in floating point, so that 7 right out of 10 meets
A = 0.7 as written (``0.7 * 10`` is 7.000000000000001 in binary floating point).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from calibcli.metrics.binomial import (
    accuracy_lower_bound,
    binomial_cdf,
    binomial_tails,
    check_level,
    risk_upper_bound,
)
from calibcli.metrics.pairwise import pairwise_sum
from calibcli.metrics.progress import ProgressHook, phase
from calibcli.metrics.risk_coverage import RiskCoverage, require_rows

_SLICE = 1 << 18  # curve points handled at once by the passes over the whole curve

__all__ = [
    "GRID_DECADES",
    "GRID_SIZE",
    "METHODS",
    "RiskCoverage",
    "ThresholdChoice",
    "accuracy_lower_bound",
    "aurc",
    "binomial_cdf",
    "curve_lower_bounds",
    "display_rows",
    "e_aurc",
    "highest_rejected",
    "plug_in_threshold",
    "points_at",
    "risk_upper_bound",
    "select_threshold",
    "selective_accuracy",
    "threshold_grid",
]

# the rules select_threshold implements; calibcli.metrics.methods names and describes them
METHODS = ("ltt", "sgr")

# Learn then Test's default candidates (threshold_grid): twenty thresholds a decade of 1 − t,
# from t = 0 up to t = 1 − 10⁻⁶
GRID_DECADES = 6
GRID_SIZE = 20 * GRID_DECADES + 1

# --------------------------------------------------------------------------- threshold selection


@dataclass(frozen=True)
class ThresholdChoice:
    """A chosen automation threshold: accept the rows with confidence >= ``threshold``.

    ``threshold`` and ``index`` (the curve point holding the rows it accepts: the lowest
    distinct confidence >= ``threshold``) are None when no threshold passed;
    then ``accepted`` = ``errors`` = 0, ``coverage`` = 0 and ``accuracy`` /
    ``accuracy_lower_bound`` are nan. ``accuracy_lower_bound`` is the one-sided Clopper–Pearson
    bound at ``test_level`` (δ for LTT, δ/K for SGR), so it is >= ``target_accuracy`` whenever a
    threshold passed. ``p_value`` = P[Binom(n, α) <= e] at the answer, or the smallest p-value
    among the tests run when none passed. The plug-in rule has no ``delta``, ``test_level``,
    ``p_value`` or bound (None / nan) and ``tests_run`` = 0. When Learn then Test passes none,
    ``skipped`` candidates accept too few rows to test and ``stopped_at`` is the next, whose
    test failed first (None: every candidate was skipped).
    """

    method: str
    target_accuracy: float
    delta: float | None
    threshold: float | None
    index: int | None
    accepted: int
    errors: int
    total: int
    coverage: float
    accuracy: float
    accuracy_lower_bound: float
    p_value: float
    test_level: float | None
    tests_run: int
    stopped_at: float | None = None
    skipped: int = 0


def _check_target(target_accuracy: object, *, allow_one: bool) -> float:
    what = "(0, 1]" if allow_one else "(0, 1)"
    if isinstance(target_accuracy, bool) or not isinstance(
        target_accuracy, (int, float, np.floating, np.integer)
    ):
        raise ValueError(f"target_accuracy must be a number in {what}, got {target_accuracy!r}")
    a = float(target_accuracy)
    if not (0.0 < a < 1.0 or (allow_one and a == 1.0)):
        hint = "" if allow_one or a != 1.0 else " (no finite sample guarantees accuracy 1)"
        raise ValueError(f"target_accuracy must be in {what}, got {target_accuracy!r}{hint}")
    return a


def _p_values(curve: RiskCoverage, rows: np.ndarray, alpha: float) -> np.ndarray:
    return binomial_tails(curve.errors[rows], curve.accepted[rows], alpha)[0]


_LEAF = 64  # segments this short are tested row by row
_SPLIT = 16  # an undecided segment is cut into this many parts


def _first_failure(n: np.ndarray, e: np.ndarray, alpha: float, level: float) -> int:
    """The first j with P[Binom(n_j, α) <= e_j] > level (len(n) when every row passes).

    The p-value grows with e and falls with n, and along the curve both grow, so over rows
    a..b it lies between P[Binom(n_b, α) <= e_a] and P[Binom(n_a, α) <= e_b]. Segments whose
    upper corner passes pass whole, segments whose lower corner fails fail whole, and the rest
    are cut finer, down to row-by-row tests: exact, and far fewer tail evaluations than rows.
    """
    m = n.shape[0]
    if m <= 4 * _LEAF * _SPLIT:
        failed = np.flatnonzero(binomial_tails(e, n, alpha)[0] > level)
        return int(failed[0]) if failed.size else m
    width = max(_LEAF, -(-m // 256))
    starts = np.arange(0, m, width, dtype=np.int64)
    stops = np.minimum(starts + width, m)
    answer = m
    while starts.size:
        keep = starts < answer
        starts, stops = starts[keep], stops[keep]
        leaf = stops - starts <= _LEAF
        if leaf.any():
            first, length = starts[leaf], stops[leaf] - starts[leaf]
            offset = np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length)
            rows = np.repeat(first, length) + offset
            rows = rows[rows < answer]
            failed = rows[binomial_tails(e[rows], n[rows], alpha)[0] > level]
            if failed.size:
                answer = int(failed.min())
        a, b = starts[~leaf], stops[~leaf] - 1
        if not a.size:
            break
        upper = binomial_tails(e[b], n[a], alpha)[0]
        lower = binomial_tails(e[a], n[b], alpha)[0]
        fails = lower > level
        if fails.any():
            answer = min(answer, int(a[fails].min()))
        open_ = (upper > level) & ~fails
        a, b = a[open_], b[open_] + 1
        if not a.size:
            break
        part = -(-(b - a) // _SPLIT)
        starts = (a[:, None] + part[:, None] * np.arange(_SPLIT)).ravel()
        stops = np.minimum(starts + np.repeat(part, _SPLIT), np.repeat(b, _SPLIT))
        nonempty = starts < stops
        starts, stops = starts[nonempty], stops[nonempty]
    return answer


def _min_testable_rows(alpha: float, level: float) -> int:
    """The fewest accepted rows n for which zero errors reject H0: (1 − α)^n <= level.

    α is the float the tests use; for a target accuracy below 1.1e-16 it rounds to 1, where
    zero errors reject at once (P[Binom(n, 1) <= 0] = 0)."""
    right = 1.0 - alpha
    if right == 0.0:
        return 1
    n = max(1, math.ceil(math.log(level) / math.log(right)))
    while n > 1 and right ** (n - 1) <= level:
        n -= 1
    while right**n > level:
        n += 1
    return n


def threshold_grid(size: int = GRID_SIZE) -> np.ndarray:
    """``size`` candidate thresholds, highest first, fixed before any data is seen: evenly
    spaced on log10(1 − t) from t = 1 − 10⁻⁶ down to t = 0,

        t_i = 1 − 10 ** (−6·(size − 1 − i) / (size − 1)),   i = 0 .. size − 1,

    in Python floats (exponent ``-(6 * j / (size - 1))`` for j = size − 1 − i). Fine where
    language models put their confidences, near 1: the default 121 points are twenty a decade
    (1 − t shrinks by 11% from one to the next), so 0.9, 0.99 and 0.999 are points and 0.995
    lies between two. ``size`` must be an integer >= 2.
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"the grid needs an integer size >= 2, got {size!r}")
    last = int(size) - 1
    points = [1.0 - 10.0 ** -(GRID_DECADES * j / last) for j in range(last, -1, -1)]
    return np.array(points, dtype=np.float64)


def _check_grid(grid: object) -> np.ndarray:
    """Grid thresholds as distinct float64 values in [0, 1], highest first."""
    values = np.asarray(grid, dtype=np.float64)
    if values.ndim != 1 or values.shape[0] == 0:
        raise ValueError("grid must be a non-empty 1-D array of thresholds")
    if not bool(np.all((values >= 0.0) & (values <= 1.0))):
        raise ValueError("grid thresholds must lie in [0, 1]")
    return np.unique(values)[::-1]


def _at_grid(curve: RiskCoverage, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For thresholds ``grid`` (descending): the curve point holding each one's accepted rows
    (the lowest distinct confidence >= t; −1 when no row is accepted), and n and e there."""
    points = np.array([points_at(curve.thresholds, t) for t in grid.tolist()], dtype=np.intp)
    inside = points >= 0
    n = np.where(inside, curve.accepted[np.maximum(points, 0)], 0)
    e = np.where(inside, curve.errors[np.maximum(points, 0)], 0)
    return points, n.astype(np.int64), e.astype(np.int64)


def points_at(thresholds: np.ndarray, t: float) -> int:
    """The index of the lowest of the descending ``thresholds`` that is >= ``t`` (−1: none),
    by bisection on the array itself (searching its negation would copy it)."""
    lo, hi = 0, thresholds.shape[0]  # thresholds[:lo] >= t, thresholds[hi:] < t
    while lo < hi:
        mid = (lo + hi) // 2
        if thresholds[mid] >= t:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


def highest_rejected(thresholds: np.ndarray, t: float) -> float | None:
    """The largest of the descending distinct confidences ``thresholds`` below ``t`` (None:
    none is): the row a printed threshold must stay above to accept the same rows as ``t``."""
    j = points_at(thresholds, t) + 1
    return float(thresholds[j]) if j < thresholds.shape[0] else None


def next_lower(thresholds: np.ndarray, points: Iterable[int]) -> list[float | None]:
    """For each point j of the descending distinct confidences ``thresholds``, the next one
    down, t_{j+1} (None at the lowest): :func:`highest_rejected` of t_j, found by index."""
    size = thresholds.shape[0]
    return [float(thresholds[j + 1]) if j + 1 < size else None for j in points]


def select_threshold(
    curve: RiskCoverage,
    *,
    target_accuracy: float,
    delta: float = 0.05,
    method: str = "ltt",
    grid: object = None,
) -> ThresholdChoice:
    """The lowest threshold whose accuracy is >= A with probability >= 1 − δ.

    Each candidate threshold t is a hypothesis test of H0: risk(t) > α = 1 − A with the exact
    binomial p-value p = P[Binom(n, α) <= e] over the n rows with c >= t and their e errors;
    t passes when p <= the test level.

    * ``"ltt"`` — Learn then Test with fixed-sequence testing (Angelopoulos, Bates, Candès,
      Jordan & Lei 2021): test the candidates from the highest down at level δ, stop at the
      first failure, return the last threshold that passed. The family-wise error rate is <= δ
      because the order is fixed before the outcomes are seen. The candidates are ``grid``
      (thresholds in [0, 1], e.g. :func:`threshold_grid`; the answer is one of them) or, with
      ``grid=None``, every distinct confidence. Candidates accepting so few rows that even
      zero errors cannot reject H0 ((1 − α)^n > δ) are not tested; the sequence starts after
      them (n depends on the confidences only, never on the outcomes). When the walk passes
      candidates below the lowest confidence, which all accept every row, the answer is the
      highest of them, not t = 0: below the rows seen the data cannot tell thresholds apart.
    * ``"sgr"`` — Selection with Guaranteed Risk (Geifman & El-Yaniv 2017): bisection over the
      m distinct confidences for K = max(1, ⌈log2 m⌉) steps, each tested at level δ/K
      (Bonferroni); a pass moves to lower thresholds, a failure to higher ones. Unlike the
      paper, the result is the lowest threshold that passed (never merely the last one tried),
      or None. It takes no ``grid``.

    ``target_accuracy`` must be in (0, 1) and ``delta`` in (0, 1); an empty curve raises.
    """
    a = _check_target(target_accuracy, allow_one=False)
    level = check_level(delta)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if grid is not None and method != "ltt":
        raise ValueError("a grid of candidate thresholds applies to method 'ltt' only")
    require_rows(curve)
    alpha = 1.0 - a
    if method == "ltt":
        if grid is None:
            values, points = curve.thresholds, np.arange(curve.thresholds.shape[0])
            n, e = curve.accepted, curve.errors
        else:
            values = _check_grid(grid)
            points, n, e = _at_grid(curve, values)
        return _fixed_sequence(curve, a, level, values, points, n, e)
    m = curve.thresholds.shape[0]
    steps = max(1, math.ceil(math.log2(m)))
    test_level = level / steps
    lo, hi = -1, m  # rows <= lo passed, rows >= hi failed
    best, best_p, smallest_p, tests_run = None, math.nan, math.inf, 0
    while tests_run < steps and hi - lo > 1:
        mid = (lo + hi) // 2
        p = float(_p_values(curve, np.array([mid]), alpha)[0])
        tests_run += 1
        smallest_p = min(smallest_p, p)
        if p <= test_level:
            lo = mid
            if best is None or mid > best:
                best, best_p = mid, p
        else:
            hi = mid
    return _choice(
        curve,
        "sgr",
        a,
        level,
        best,
        best_p if best is not None else smallest_p,
        test_level,
        tests_run,
    )


def _fixed_sequence(
    curve: RiskCoverage,
    target: float,
    level: float,
    values: np.ndarray,
    points: np.ndarray,
    n: np.ndarray,
    e: np.ndarray,
) -> ThresholdChoice:
    """LTT's walk down the candidates ``values`` (descending), with n_k accepted rows and e_k
    errors at each (non-decreasing) and ``points`` the curve point holding those rows."""
    alpha = 1.0 - target
    m = values.shape[0]
    start = int(np.searchsorted(n, _min_testable_rows(alpha, level)))
    fail = start + _first_failure(n[start:], e[start:], alpha, level)
    tests_run = min(fail + 1, m) - start
    if fail == start:  # nothing passed: the first test failed, or none could be run
        p = float(binomial_tails(e[start], n[start], alpha)[0]) if start < m else math.nan
        none = _choice(curve, "ltt", target, level, None, p, level, tests_run)
        return replace(none, stopped_at=float(values[start]) if start < m else None, skipped=start)
    k = fail - 1
    if points[k] == curve.thresholds.shape[0] - 1:
        # below the lowest confidence every candidate accepts every row: the walk passes them
        # all alike, and the lowest says nothing the data showed; answer with the highest of
        # them (tested and passed, so the guarantee holds), never below where rows were seen
        k = int(np.searchsorted(points, points[k]))
    p = float(binomial_tails(e[k], n[k], alpha)[0])
    return _choice(
        curve, "ltt", target, level, int(points[k]), p, level, tests_run, float(values[k])
    )


def _choice(
    curve: RiskCoverage,
    method: str,
    target: float,
    delta: float | None,
    j: int | None,
    p_value: float,
    test_level: float | None,
    tests_run: int,
    threshold: float | None = None,
) -> ThresholdChoice:
    """The choice accepting the rows of curve point ``j`` (None: nothing passed), at
    ``threshold`` (default: the point's own confidence t_j)."""
    if j is None:
        return ThresholdChoice(
            method,
            target,
            delta,
            None,
            None,
            0,
            0,
            curve.total,
            0.0,
            math.nan,
            math.nan,
            p_value,
            test_level,
            tests_run,
        )
    n, e = int(curve.accepted[j]), int(curve.errors[j])
    bound = math.nan if test_level is None else accuracy_lower_bound(n - e, n, delta=test_level)
    return ThresholdChoice(
        method,
        target,
        delta,
        float(curve.thresholds[j]) if threshold is None else threshold,
        j,
        n,
        e,
        curve.total,
        n / curve.total,
        (n - e) / n,
        bound,
        p_value,
        test_level,
        tests_run,
    )


def plug_in_threshold(curve: RiskCoverage, *, target_accuracy: float) -> ThresholdChoice:
    """The lowest threshold whose empirical accuracy (n_j − e_j)/n_j is >= A; no guarantee.

    The accuracy is compared as the correctly rounded quotient, so 7/10 meets A = 0.7.
    ``target_accuracy`` must be in (0, 1]; an empty curve raises.
    """
    a = _check_target(target_accuracy, allow_one=True)
    require_rows(curve)
    j = None
    n, e = curve.accepted, curve.errors
    for start in range(n.shape[0], 0, -_SLICE):  # from the end: the last point that meets A
        stop, start = start, max(0, start - _SLICE)
        ok = np.flatnonzero((n[start:stop] - e[start:stop]) / n[start:stop] >= a)
        if ok.size:
            j = start + int(ok[-1])
            break
    return _choice(curve, "plug-in", a, None, j, math.nan, None, 0)


# --------------------------------------------------------------------------- summary figures


_HARMONIC_CUT = 64
_HARMONIC_TABLE = np.array(
    [math.fsum(1.0 / i for i in range(1, k + 1)) for k in range(_HARMONIC_CUT)]
)
_EULER_GAMMA = 0.5772156649015329


def _harmonic(n: np.ndarray) -> np.ndarray:
    """H(n) = Σ_{i=1..n} 1/i: a table below 64, the asymptotic series (error < 1e-17) above."""
    out = np.empty(n.shape)
    small = n < _HARMONIC_CUT
    out[small] = _HARMONIC_TABLE[n[small]]
    x = n[~small].astype(np.float64)
    inv2 = 1.0 / (x * x)
    out[~small] = (
        np.log(x) + _EULER_GAMMA + 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))
    )
    return out


def _harmonic_diff(n0: np.ndarray, n1: np.ndarray) -> np.ndarray:
    """H(n1) − H(n0) for n0 <= n1, without the cancellation of subtracting two large sums."""
    out = np.empty(n0.shape)
    small = n0 < _HARMONIC_CUT
    out[small] = _harmonic(n1[small]) - _HARMONIC_TABLE[n0[small]]
    a = n0[~small].astype(np.float64)
    b = n1[~small].astype(np.float64)
    ia2, ib2 = 1.0 / (a * a), 1.0 / (b * b)
    out[~small] = (
        np.log1p((b - a) / a)
        - (b - a) / (2.0 * a * b)
        - (
            ib2 * (1 / 12 - ib2 * (1 / 120 - ib2 / 252))
            - ia2 * (1 / 12 - ia2 * (1 / 120 - ia2 / 252))
        )
    )
    return out


def aurc(curve: RiskCoverage) -> float:
    """Area under the risk–coverage curve, independent of how tied rows are ordered.

    AURC = (1/N)·Σ_{k=1..N} E[errors among the top k]/k, the expectation over random orderings
    of rows with equal confidence. Inside tied group j (g rows, ε errors, entered after n0 rows
    and E0 errors) position n0 + i holds E0 + i·ε/g expected errors, which sums to
    ε + (E0 − ε·n0/g)·(H(n0 + g) − H(n0)) with H the harmonic numbers. An empty curve raises.
    """
    require_rows(curve)
    accepted, errors = curve.accepted, curve.errors

    def contributions(a: int, b: int) -> np.ndarray:
        n1, e1 = accepted[a:b], errors[a:b]
        n0 = np.concatenate([[0], n1[:-1]]) if a == 0 else accepted[a - 1 : b - 1]
        e0 = np.concatenate([[0], e1[:-1]]) if a == 0 else errors[a - 1 : b - 1]
        g = n1 - n0
        eps = e1 - e0
        out = e1 / n1  # a group of one row: errors among the top n1 over n1
        tied = np.flatnonzero(g > 1)
        if tied.size:
            g, eps, n0, e0 = g[tied], eps[tied], n0[tied], e0[tied]
            weight = (e0 * g - eps * n0) / g  # E0 − ε·n0/g, numerator exact in int64
            out[tied] = eps + weight * _harmonic_diff(n0, n1[tied])
        return out

    # summed a slice at a time as np.sum sums the whole array: the curve can hold a point a row
    return pairwise_sum(accepted.shape[0], contributions) / curve.total


def _oracle_aurc(total: int, errors: int) -> float:
    """(1/N)·Σ_k max(0, k − (N − E))/k = (E − (N − E)·(H(N) − H(N − E)))/N."""
    right = total - errors
    diff = float(_harmonic_diff(np.array([right]), np.array([total]))[0])
    return (errors - right * diff) / total


def e_aurc(curve: RiskCoverage) -> float:
    """Excess AURC: :func:`aurc` minus the AURC of the oracle ranking of the same rows (all right
    answers first), (1/N)·Σ_{k=1..N} max(0, k − (N − E))/k with E the total errors. Clamped at 0
    against rounding; an empty curve raises."""
    require_rows(curve)
    return max(0.0, aurc(curve) - _oracle_aurc(curve.total, int(curve.errors[-1])))


def _rows_for_coverage(total: int, coverage: float) -> int:
    """The smallest k with k/N >= coverage, comparing the correctly rounded quotient."""
    k = min(total, math.ceil(coverage * total))
    while k < total and k / total < coverage:
        k += 1
    while k > 1 and (k - 1) / total >= coverage:
        k -= 1
    return max(k, 1)


def selective_accuracy(curve: RiskCoverage, coverage: float) -> float:
    """Accuracy of the k = ⌈coverage·N⌉ most confident rows (the smallest k with k/N >= coverage,
    the quotient correctly rounded), averaged over random orderings of tied rows.

    When the cut falls inside tied group j (n_{j−1} < k <= n_j, g rows, ε errors), the group
    counts pro rata: accuracy = (n_{j−1} − e_{j−1} + (k − n_{j−1})·(g − ε)/g) / k. HELM's
    ``selective_acc@10`` takes ⌊0.1·N⌋ + 1 rows instead (one more when 0.1·N is a whole
    number) and breaks ties by sort order. ``coverage`` must be in (0, 1].
    """
    if isinstance(coverage, bool) or not isinstance(
        coverage, (int, float, np.floating, np.integer)
    ):
        raise ValueError(f"coverage must be a number in (0, 1], got {coverage!r}")
    if not 0.0 < float(coverage) <= 1.0:
        raise ValueError(f"coverage must be in (0, 1], got {coverage!r}")
    require_rows(curve)
    k = _rows_for_coverage(curve.total, float(coverage))
    j = int(np.searchsorted(curve.accepted, k, side="left"))
    n1, e1 = int(curve.accepted[j]), int(curve.errors[j])
    n0 = int(curve.accepted[j - 1]) if j else 0
    e0 = int(curve.errors[j - 1]) if j else 0
    g, eps = n1 - n0, e1 - e0
    right = (n0 - e0) + (k - n0) * (g - eps) / g
    return right / k


def display_rows(curve: RiskCoverage, *, rows: int = 20) -> np.ndarray:
    """Indices into the curve for a readable table: for i = 1..rows, the first threshold whose
    coverage reaches i/rows (n_j·rows >= i·N, exact integers), deduplicated, ascending."""
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise ValueError(f"rows must be a positive integer, got {rows!r}")
    if curve.total == 0:
        return np.zeros(0, dtype=np.intp)
    i = np.arange(1, rows + 1, dtype=np.int64)
    need = -((-i * curve.total) // rows)  # ⌈i·N/rows⌉
    return np.unique(np.searchsorted(curve.accepted, need, side="left"))


_BOUND_SLICE = 1 << 13  # curve points per Clopper–Pearson solve (a few tenths of a second)


def curve_lower_bounds(
    curve: RiskCoverage, rows: np.ndarray, *, delta: float, progress: ProgressHook | None = None
) -> np.ndarray:
    """:func:`accuracy_lower_bound` of the rows accepted at the curve points ``rows``.

    Each bound is solved on its own, so solving them a slice at a time gives the same numbers;
    every distinct confidence of millions of rows (``threshold --full``) takes minutes, so
    the slices are reported as the phase "table accuracy bounds" (to ``progress``, or the
    installed hook).
    """
    out = np.empty(rows.shape[0])
    with phase("table accuracy bounds", rows.shape[0], progress) as advance:
        for a in range(0, rows.shape[0], _BOUND_SLICE):
            at = rows[a : a + _BOUND_SLICE]
            accepted, errors = curve.accepted[at], curve.errors[at]
            lower = accuracy_lower_bound(accepted - errors, accepted, delta=delta)
            out[a : a + at.shape[0]] = lower
            advance(a + at.shape[0])
    return out
