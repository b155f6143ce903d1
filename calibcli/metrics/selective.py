"""Selective prediction: the risk–coverage curve, exact binomial bounds and guaranteed thresholds.

Pure numpy: no I/O, no printing, no scipy. Rows with confidence ``c >= t`` are accepted
(auto-approved); the rest are abstained on.

Notation: N rows; the distinct confidences in descending order t_0 > t_1 > ... > t_{m−1} are the
candidate thresholds; n_j = #{c >= t_j} rows are accepted at t_j, with e_j errors (wrong answers)
among them. Coverage_j = n_j / N, risk_j = e_j / n_j, accuracy_j = 1 − risk_j. A target accuracy
A means a tolerated risk α = 1 − A.

* :class:`RiskCoverage` holds (t_j, n_j, e_j, N) with exact int64 counts.
* :func:`binomial_cdf`, :func:`accuracy_lower_bound`, :func:`risk_upper_bound`: exact binomial
  tails (Loader's saddle-point pmf times a Lentz continued fraction, ~1e-14 relative) and the
  one-sided Clopper–Pearson bounds.
* :func:`select_threshold`: the lowest threshold whose accuracy is >= A with probability >= 1 − δ
  (Learn then Test, or SGR); :func:`plug_in_threshold`: the same without a guarantee.
* :func:`aurc`, :func:`e_aurc`, :func:`selective_accuracy`: summary figures, defined as the
  expectation over random orderings of tied rows, so they never depend on row order.
* :func:`display_rows`: a handful of rows of the curve at round coverages, for a table.

Comparisons of an empirical accuracy (or coverage) with a user's figure use the correctly
rounded quotient, e.g. ``(n − e) / n >= A`` in floating point, so that 7 right out of 10 meets
A = 0.7 as written (``0.7 * 10`` is 7.000000000000001 in binary floating point).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.validation import validate_predictions

__all__ = [
    "METHODS",
    "RiskCoverage",
    "ThresholdChoice",
    "accuracy_lower_bound",
    "aurc",
    "binomial_cdf",
    "display_rows",
    "e_aurc",
    "plug_in_threshold",
    "risk_upper_bound",
    "select_threshold",
    "selective_accuracy",
]

METHODS = ("ltt", "sgr")

# --------------------------------------------------------------------------- the curve


@dataclass(frozen=True, eq=False)
class RiskCoverage:
    """The risk–coverage curve at every distinct confidence, from the highest down.

    ``thresholds[j]`` = t_j (float64, strictly decreasing), ``accepted[j]`` = n_j = #{c >= t_j}
    and ``errors[j]`` = e_j = #{c >= t_j, wrong} (int64, exact counts), ``total`` = N. The last
    threshold is the lowest confidence, so ``accepted[-1] == total``. Group j (the rows tied at
    confidence t_j) has g_j = n_j − n_{j−1} rows and e_j − e_{j−1} errors (n_{−1} = e_{−1} = 0).
    A curve with no rows has m = 0 and ``total`` = 0.
    """

    thresholds: np.ndarray
    accepted: np.ndarray
    errors: np.ndarray
    total: int

    def __post_init__(self) -> None:
        t, n, e = self.thresholds, self.accepted, self.errors
        if not (t.ndim == n.ndim == e.ndim == 1 and t.shape == n.shape == e.shape):
            raise ValueError("thresholds, accepted and errors must be 1-D arrays of equal length")
        if n.dtype != np.int64 or e.dtype != np.int64:
            raise ValueError("accepted and errors must be int64 counts")
        if t.shape[0] == 0:
            if self.total != 0:
                raise ValueError(f"a curve without thresholds has no rows, got total={self.total}")
            return
        dn, de = np.diff(n), np.diff(e)
        if not (
            0 <= e[0] <= n[0]
            and n[0] > 0
            and bool(np.all(t[1:] < t[:-1]))
            and bool(np.all(dn > 0))
            and bool(np.all(de >= 0))
            and bool(np.all(de <= dn))
            and int(n[-1]) == self.total
        ):
            raise ValueError(
                "not a risk-coverage curve: thresholds must decrease strictly, accepted must "
                "increase strictly to total, errors grow by at most the rows added"
            )

    @classmethod
    def from_arrays(cls, confidences: object, correct: object) -> RiskCoverage:
        """The curve of rows given as confidences in [0, 1] and correctness (bool or 0/1)."""
        conf, corr = validate_predictions(confidences, correct)
        return cls._from_split(conf[corr], conf[~corr], sort_in_place=True)

    @classmethod
    def from_columns(cls, columns: PredictionColumns, *, reorder_ok: bool = False) -> RiskCoverage:
        """The curve of :class:`PredictionColumns` (right/wrong confidences), without
        concatenating them. ``reorder_ok=True`` sorts the two arrays in place instead of copying
        (the caller no longer needs their order). Values outside [0, 1] raise ValueError.
        """
        return cls._from_split(columns.conf_correct, columns.conf_wrong, sort_in_place=reorder_ok)

    @classmethod
    def _from_split(
        cls, right: np.ndarray, wrong: np.ndarray, *, sort_in_place: bool
    ) -> RiskCoverage:
        right = _sorted(np.asarray(right, dtype=np.float64), sort_in_place)
        wrong = _sorted(np.asarray(wrong, dtype=np.float64), sort_in_place)
        for name, arr in (("right", right), ("wrong", wrong)):
            # NaN sorts last, so the two ends decide the range check.
            if arr.size and not (arr[0] >= 0.0 and arr[-1] <= 1.0):
                bad = arr[0] if not arr[0] >= 0.0 else arr[-1]
                raise ValueError(f"confidences of {name} answers include {bad!r}, not in [0, 1]")
        n_right, n_wrong = right.shape[0], wrong.shape[0]
        # Distinct values and run lengths of each sorted array, then a merge keyed on the bit
        # pattern of the value (monotone for non-negative doubles) with the source in the lowest
        # bit: a stable sort of two concatenated sorted runs is a linear merge.
        right_values, right_counts = _runs(right)
        wrong_values, wrong_counts = _runs(wrong)
        keys = np.concatenate([_key(right_values, 0), _key(wrong_values, 1)])
        counts = np.concatenate([right_counts, wrong_counts])
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        del order
        is_wrong = (keys & 1).astype(bool)
        bits = keys >> 1
        first = np.empty(keys.shape[0], dtype=bool)
        first[:1] = True
        np.not_equal(bits[1:], bits[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        group_rows = np.add.reduceat(counts, starts) if starts.size else counts
        group_errors = (
            np.add.reduceat(np.where(is_wrong, counts, 0), starts) if starts.size else counts
        )
        thresholds = np.ascontiguousarray(bits[starts][::-1]).view(np.float64)
        accepted = np.cumsum(group_rows[::-1])
        errors = np.cumsum(group_errors[::-1])
        return cls(thresholds, accepted, errors, n_right + n_wrong)

    @property
    def coverage(self) -> np.ndarray:
        """n_j / N."""
        return self.accepted / self.total if self.total else np.zeros(0)

    @property
    def risk(self) -> np.ndarray:
        """e_j / n_j."""
        return self.errors / self.accepted

    @property
    def accuracy(self) -> np.ndarray:
        """1 − e_j / n_j, computed as (n_j − e_j) / n_j."""
        return (self.accepted - self.errors) / self.accepted


def _sorted(values: np.ndarray, in_place: bool) -> np.ndarray:
    if in_place and values.flags.writeable:
        values.sort()
        return values
    return np.sort(values)


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of a sorted array and how often each occurs (int64)."""
    if values.shape[0] == 0:
        return values, np.zeros(0, dtype=np.int64)
    first = np.empty(values.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(starts, append=values.shape[0]).astype(np.int64)
    return values[starts], counts


def _key(values: np.ndarray, source: int) -> np.ndarray:
    """Sort keys for doubles in [0, 1]: the bit pattern (−0.0 folded into 0.0), shifted left one
    bit with ``source`` in the lowest bit; 1.0 is 0x3FF0..., so the shift stays below 2**63."""
    return ((values + 0.0).view(np.int64) << 1) | source


def _require_rows(curve: RiskCoverage) -> None:
    if curve.total == 0:
        raise ValueError("the risk-coverage curve has no rows")


# --------------------------------------------------------------------------- binomial tails

_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# stirlerr(n) = ln n! − (n + ½)·ln n + n − ln √(2π) for n = 0..15; beyond, its asymptotic series.
_STIRLERR_TABLE = np.array(
    [0.0]
    + [math.lgamma(k + 1.0) - (k + 0.5) * math.log(k) + k - _LN_SQRT_2PI for k in range(1, 16)]
)
_CF_EPS = 1e-16
_CF_TINY = 1e-300
_CF_MAX_ITER = 1_000_000


def _stirlerr(n: np.ndarray) -> np.ndarray:
    """The error of Stirling's formula in ln n!, accurate to ~1e-15 absolute (Loader 2000)."""
    out = np.empty(n.shape)
    small = n <= 15
    out[small] = _STIRLERR_TABLE[n[small].astype(np.intp)]
    big = n[~small]
    inv2 = 1.0 / (big * big)
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    out[~small] = (s0 - (s1 - (s2 - (s3 - s4 * inv2) * inv2) * inv2) * inv2) / big
    return out


def _bd0(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """x·ln(x / mean) + mean − x without cancellation when x ≈ mean (Loader 2000)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * np.log(x / mean) + mean - x
    near = np.abs(x - mean) < 0.1 * (x + mean)
    if near.any():
        xs, ms = x[near], mean[near]
        v = (xs - ms) / (xs + ms)
        s = (xs - ms) * v
        term = 2.0 * xs * v
        v2 = v * v
        for j in range(1, 40):  # |v| < 0.1/1.1: each term shrinks by > 100x
            term = term * v2
            s_new = s + term / (2 * j + 1)
            if np.array_equal(s_new, s):
                break
            s = s_new
        out[near] = s
    return out


def _log_pmf(k: np.ndarray, n: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """ln P[Binom(n, p) = k] for 0 <= k <= n, 0 < p < 1 (q = 1 − p), by Loader's saddle point.

    ln pmf = stirlerr(n) − stirlerr(k) − stirlerr(n − k) − bd0(k, np) − bd0(n − k, nq)
             − ½·ln(2π·k·(n − k)/n),
    with ln pmf(0) = n·ln q and ln pmf(n) = n·ln p; relative error ~1e-15 at any n.
    """
    out = np.empty(k.shape)
    lo, hi, mid = k == 0, k == n, (k > 0) & (k < n)
    out[lo] = n[lo] * np.log1p(-p[lo])
    out[hi] = n[hi] * np.log(p[hi])
    km, nm, pm, qm = k[mid], n[mid], p[mid], q[mid]
    out[mid] = (
        _stirlerr(nm)
        - _stirlerr(km)
        - _stirlerr(nm - km)
        - _bd0(km, nm * pm)
        - _bd0(nm - km, nm * qm)
        - _LN_SQRT_2PI
        - 0.5 * (np.log(km) + np.log1p(-km / nm))
    )
    return out


def _beta_cf(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of I_x(a, b) by the modified Lentz method, elementwise.

    I_x(a, b) = x^a (1 − x)^b / (a·B(a, b)) · cf; converges fast for x < (a + 1)/(a + b + 2).
    Elements that have converged leave the working set, so the cost is the sum of the iteration
    counts, not the worst one times the length.
    """
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < _CF_TINY, _CF_TINY, d)
    d = 1.0 / d
    h = d.copy()
    out = np.empty_like(x)
    idx = np.arange(x.shape[0])
    for it in range(1, _CF_MAX_ITER):
        m2 = 2.0 * it
        aa = it * (b - it) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < _CF_TINY, _CF_TINY, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < _CF_TINY, _CF_TINY, c)
        d = 1.0 / d
        h = h * d * c
        aa = -(a + it) * (qab + it) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < _CF_TINY, _CF_TINY, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < _CF_TINY, _CF_TINY, c)
        d = 1.0 / d
        step = d * c
        h = h * step
        done = np.abs(step - 1.0) <= _CF_EPS
        if done.any():
            out[idx[done]] = h[done]
            keep = ~done
            if not keep.any():
                return out
            idx, a, b, x, qab, qap, qam, c, d, h = (
                v[keep] for v in (idx, a, b, x, qab, qap, qam, c, d, h)
            )
    raise RuntimeError(
        "the incomplete beta continued fraction did not converge"
    )  # pragma: no cover


def _tails(k: object, n: object, p: object) -> tuple[np.ndarray, np.ndarray]:
    """(P[X <= k], P[X > k]) for X ~ Binom(n, p), elementwise; each tail to ~1e-14 relative.

    With s = k + 1: P[X >= s] = I_p(s, n − s + 1) = q·pmf(s)·cf(s, n − s + 1, p) and
    P[X <= k] = I_q(n − k, k + 1) = p·pmf(k)·cf(n − k, k + 1, q). The tail whose continued
    fraction converges (the smaller one, roughly) is computed this way, the other as 1 minus it.
    """
    k_arr, n_arr, p_arr = np.broadcast_arrays(
        np.asarray(k, dtype=np.float64),
        np.asarray(n, dtype=np.float64),
        np.asarray(p, dtype=np.float64),
    )
    shape = k_arr.shape
    k_arr, n_arr, p_arr = (np.ravel(v) for v in (k_arr, n_arr, p_arr))
    k_arr = np.floor(k_arr)
    lower = np.empty(k_arr.shape)
    upper = np.empty(k_arr.shape)
    below = k_arr < 0
    full = (k_arr >= n_arr) & ~below
    zero_p = (p_arr == 0.0) & ~below & ~full
    one_p = (p_arr == 1.0) & ~below & ~full
    lower[below], upper[below] = 0.0, 1.0
    lower[full | zero_p], upper[full | zero_p] = 1.0, 0.0
    lower[one_p], upper[one_p] = 0.0, 1.0
    rest = ~(below | full | zero_p | one_p)
    if rest.any():
        kk, nn, pp = k_arr[rest], n_arr[rest], p_arr[rest]
        qq = 1.0 - pp
        use_upper = pp < (kk + 2.0) / (nn + 3.0)
        lo_r = np.empty(kk.shape)
        up_r = np.empty(kk.shape)
        if use_upper.any():
            s, nu, pu, qu = kk[use_upper] + 1.0, nn[use_upper], pp[use_upper], qq[use_upper]
            cf = _beta_cf(s, nu - s + 1.0, pu)
            tail = qu * np.exp(_log_pmf(s, nu, pu, qu)) * cf
            up_r[use_upper] = tail
            lo_r[use_upper] = 1.0 - tail
        use_lower = ~use_upper
        if use_lower.any():
            kl, nl, pl, ql = kk[use_lower], nn[use_lower], pp[use_lower], qq[use_lower]
            cf = _beta_cf(nl - kl, kl + 1.0, ql)
            tail = pl * np.exp(_log_pmf(kl, nl, pl, ql)) * cf
            lo_r[use_lower] = tail
            up_r[use_lower] = 1.0 - tail
        lower[rest] = np.clip(lo_r, 0.0, 1.0)
        upper[rest] = np.clip(up_r, 0.0, 1.0)
    return lower.reshape(shape), upper.reshape(shape)


def _check_counts(k: np.ndarray, n: np.ndarray, k_name: str) -> None:
    if np.any(n < 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= {k_name} <= n, got {k_name}={k!r}, n={n!r}")


def _check_level(delta: object, name: str = "delta") -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number in (0, 1), got {delta!r}")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {delta!r}")
    return float(delta)


def binomial_cdf(k: object, n: object, p: object) -> np.ndarray | float:
    """P[X <= k] for X ~ Binom(n, p), elementwise (broadcasting), ~1e-14 relative accuracy.

    k is floored; k < 0 gives 0 and k >= n gives 1. Scalars in, float out.

    >>> round(binomial_cdf(1, 4, 0.5), 12)  # (1 + 4) / 16
    0.3125
    """
    p_arr = np.asarray(p, dtype=np.float64)
    if np.any(~((p_arr >= 0.0) & (p_arr <= 1.0))):
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    if np.any(np.asarray(n, dtype=np.float64) < 0):
        raise ValueError(f"n must be non-negative, got {n!r}")
    lower, _ = _tails(k, n, p_arr)
    return float(lower) if lower.ndim == 0 else lower


def _solve_increasing(
    f, target: np.ndarray, lo: np.ndarray, hi: np.ndarray, deriv, guess: np.ndarray
) -> np.ndarray:
    """Root x in [lo, hi] of f(x) = target for increasing f, elementwise: Newton steps on
    ln f (safeguarded by bisection of the bracket) until the bracket or the step is ~1 ulp."""
    x = np.where((guess > lo) & (guess < hi), guess, 0.5 * (lo + hi))
    out = np.empty_like(x)
    idx = np.arange(x.shape[0])
    log_target = np.log(target)
    for _ in range(400):
        fx = f(x, idx)
        low = fx < target
        lo = np.where(low, x, lo)
        hi = np.where(low, hi, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = (np.log(fx) - log_target) * fx / deriv(x, idx)
            newton = x - step
        ok = np.isfinite(newton) & (newton > lo) & (newton < hi)
        x_new = np.where(ok, newton, 0.5 * (lo + hi))
        done = (
            (np.abs(x_new - x) <= 2e-15 * np.abs(x))
            | (hi - lo <= 4e-16 * np.abs(hi))
            | (fx == target)
        )
        if done.any():
            out[idx[done]] = np.where(fx[done] == target[done], x[done], x_new[done])
            keep = ~done
            if not keep.any():
                return out
            idx, x_new, lo, hi, target, log_target = (
                v[keep] for v in (idx, x_new, lo, hi, target, log_target)
            )
        x = x_new
    out[idx] = x  # pragma: no cover - the bracket halves at least every other step
    return out


def _wilson_lower(s: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """One-sided Wilson score bound: a starting point for the exact solver, nothing more."""
    z = NormalDist().inv_cdf(1.0 - level)
    p = s / n
    centre = p + z * z / (2.0 * n)
    half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return (centre - half) / (1.0 + z * z / n)


def accuracy_lower_bound(successes: object, n: object, *, delta: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson lower bound on a success rate, elementwise.

    L = the largest p with P[Binom(n, p) >= s] <= δ, i.e. the δ-quantile of Beta(s, n − s + 1);
    L = 0 when s = 0 and L = δ^(1/n) when s = n. The true rate is >= L with probability
    >= 1 − δ. Scalars in, float out.

    >>> round(accuracy_lower_bound(10, 10, delta=0.05), 12)  # 0.05 ** (1/10)
    0.741134449107
    """
    level = _check_level(delta)
    s_arr, n_arr = np.broadcast_arrays(
        np.asarray(successes, dtype=np.int64), np.asarray(n, dtype=np.int64)
    )
    _check_counts(s_arr, n_arr, "successes")
    shape = s_arr.shape
    s_flat, n_flat = s_arr.ravel().astype(np.float64), n_arr.ravel().astype(np.float64)
    out = np.zeros(s_flat.shape)
    allright = (s_flat == n_flat) & (n_flat > 0)
    out[allright] = np.exp(np.log(level) / n_flat[allright])
    solve = (s_flat > 0) & ~allright
    if solve.any():
        s, nn = s_flat[solve], n_flat[solve]

        def upper_tail(x, idx):
            return _tails(s[idx] - 1.0, nn[idx], x)[1]

        def density(x, idx):
            # d/dp P[X >= s] = n·pmf_{n−1}(s − 1; p)
            si, ni = s[idx], nn[idx]
            return ni * np.exp(_log_pmf(si - 1.0, ni - 1.0, x, 1.0 - x))

        guess = _wilson_lower(s, nn, level)
        out[solve] = _solve_increasing(
            upper_tail, np.full(s.shape, level), np.zeros(s.shape), np.ones(s.shape), density, guess
        )
    return float(out[0]) if shape == () else out.reshape(shape)


def risk_upper_bound(errors: object, n: object, *, delta: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson upper bound on an error rate, elementwise.

    U = the smallest r with P[Binom(n, r) <= e] <= δ (= 1 − accuracy_lower_bound(n − e, n)),
    solved for directly so that small bounds keep their relative precision; U = 1 when e = n
    and U = 1 − δ^(1/n) when e = 0. The true rate is <= U with probability >= 1 − δ.
    """
    level = _check_level(delta)
    e_arr, n_arr = np.broadcast_arrays(
        np.asarray(errors, dtype=np.int64), np.asarray(n, dtype=np.int64)
    )
    _check_counts(e_arr, n_arr, "errors")
    shape = e_arr.shape
    e_flat, n_flat = e_arr.ravel().astype(np.float64), n_arr.ravel().astype(np.float64)
    out = np.ones(e_flat.shape)
    none_wrong = (e_flat == 0) & (n_flat > 0)
    out[none_wrong] = -np.expm1(np.log(level) / n_flat[none_wrong])
    solve = (e_flat < n_flat) & ~none_wrong
    if solve.any():
        e, nn = e_flat[solve], n_flat[solve]

        def upper_tail(x, idx):  # P[X > e], increasing in the rate
            return _tails(e[idx], nn[idx], x)[1]

        def density(x, idx):
            ei, ni = e[idx], nn[idx]
            return ni * np.exp(_log_pmf(ei, ni - 1.0, x, 1.0 - x))

        guess = 1.0 - _wilson_lower(nn - e, nn, level)
        out[solve] = _solve_increasing(
            upper_tail,
            np.full(e.shape, 1.0 - level),
            np.zeros(e.shape),
            np.ones(e.shape),
            density,
            guess,
        )
    return float(out[0]) if shape == () else out.reshape(shape)


# --------------------------------------------------------------------------- threshold selection


@dataclass(frozen=True)
class ThresholdChoice:
    """A chosen automation threshold: accept the rows with confidence >= ``threshold``.

    ``threshold`` and ``index`` (its position in the curve) are None when no threshold passed;
    then ``accepted`` = ``errors`` = 0, ``coverage`` = 0 and ``accuracy`` /
    ``accuracy_lower_bound`` are nan. ``accuracy_lower_bound`` is the one-sided Clopper–Pearson
    bound at ``test_level`` (δ for LTT, δ/K for SGR), so it is >= ``target_accuracy`` whenever a
    threshold passed. ``p_value`` = P[Binom(n, α) <= e] at the answer, or the smallest p-value
    among the tests run when none passed. The plug-in rule has no ``delta``, ``test_level``,
    ``p_value`` or bound (None / nan) and ``tests_run`` = 0.
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
    return _tails(curve.errors[rows], curve.accepted[rows], alpha)[0]


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
        failed = np.flatnonzero(_tails(e, n, alpha)[0] > level)
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
            failed = rows[_tails(e[rows], n[rows], alpha)[0] > level]
            if failed.size:
                answer = int(failed.min())
        a, b = starts[~leaf], stops[~leaf] - 1
        if not a.size:
            break
        upper = _tails(e[b], n[a], alpha)[0]
        lower = _tails(e[a], n[b], alpha)[0]
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
    """The fewest accepted rows n for which zero errors reject H0: (1 − α)^n <= level."""
    n = max(1, math.ceil(math.log(level) / math.log1p(-alpha)))
    while n > 1 and (1.0 - alpha) ** (n - 1) <= level:
        n -= 1
    while (1.0 - alpha) ** n > level:
        n += 1
    return n


def select_threshold(
    curve: RiskCoverage, *, target_accuracy: float, delta: float = 0.05, method: str = "ltt"
) -> ThresholdChoice:
    """The lowest threshold whose accuracy is >= A with probability >= 1 − δ.

    Each candidate threshold t_j is a hypothesis test of H0: risk(t_j) > α = 1 − A with the exact
    binomial p-value p_j = P[Binom(n_j, α) <= e_j]; t_j passes when p_j <= the test level.

    * ``"ltt"`` — Learn then Test with fixed-sequence testing (Angelopoulos, Bates, Candès,
      Jordan & Lei 2021): test t_0 > t_1 > ... at level δ, stop at the first failure, return the
      last threshold that passed. The family-wise error rate is <= δ.
    * ``"sgr"`` — Selection with Guaranteed Risk (Geifman & El-Yaniv 2017): bisection over the
      m thresholds for K = max(1, ⌈log2 m⌉) steps, each tested at level δ/K (Bonferroni);
      a pass moves to lower thresholds, a failure to higher ones. Unlike the paper, the result
      is the lowest threshold that passed (never merely the last one tried), or None.

    ``target_accuracy`` must be in (0, 1) and ``delta`` in (0, 1); an empty curve raises.
    """
    a = _check_target(target_accuracy, allow_one=False)
    level = _check_level(delta)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    _require_rows(curve)
    alpha = 1.0 - a
    m = curve.thresholds.shape[0]
    if method == "ltt":
        # Thresholds accepting so few rows that even zero errors cannot reject H0
        # ((1 − α)^n > level) are not tested; the sequence starts after them.
        start = int(np.searchsorted(curve.accepted, _min_testable_rows(alpha, level)))
        fail = start + _first_failure(curve.accepted[start:], curve.errors[start:], alpha, level)
        tests_run = min(fail + 1, m) - start
        if start == m:
            return _choice(curve, "ltt", a, level, None, math.nan, level, 0)
        if fail == start:
            return _choice(
                curve,
                "ltt",
                a,
                level,
                None,
                float(_p_values(curve, np.array([start]), alpha)[0]),
                level,
                tests_run,
            )
        j = fail - 1
        return _choice(
            curve,
            "ltt",
            a,
            level,
            j,
            float(_p_values(curve, np.array([j]), alpha)[0]),
            level,
            tests_run,
        )
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


def _choice(
    curve: RiskCoverage,
    method: str,
    target: float,
    delta: float | None,
    j: int | None,
    p_value: float,
    test_level: float | None,
    tests_run: int,
) -> ThresholdChoice:
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
        float(curve.thresholds[j]),
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
    _require_rows(curve)
    ok = np.flatnonzero(curve.accuracy >= a)
    j = int(ok[-1]) if ok.size else None
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
    _require_rows(curve)
    n1 = curve.accepted
    e1 = curve.errors
    n0 = np.concatenate([[0], n1[:-1]])
    e0 = np.concatenate([[0], e1[:-1]])
    g = n1 - n0
    eps = e1 - e0
    contributions = e1 / n1  # a group of one row: errors among the top n1 over n1
    tied = np.flatnonzero(g > 1)
    if tied.size:
        g, eps, n0, e0 = g[tied], eps[tied], n0[tied], e0[tied]
        weight = (e0 * g - eps * n0) / g  # E0 − ε·n0/g, numerator exact in int64
        contributions[tied] = eps + weight * _harmonic_diff(n0, n1[tied])
    return float(np.sum(contributions)) / curve.total


def _oracle_aurc(total: int, errors: int) -> float:
    """(1/N)·Σ_k max(0, k − (N − E))/k = (E − (N − E)·(H(N) − H(N − E)))/N."""
    right = total - errors
    diff = float(_harmonic_diff(np.array([right]), np.array([total]))[0])
    return (errors - right * diff) / total


def e_aurc(curve: RiskCoverage) -> float:
    """Excess AURC: :func:`aurc` minus the AURC of the oracle ranking of the same rows (all right
    answers first), (1/N)·Σ_{k=1..N} max(0, k − (N − E))/k with E the total errors. Clamped at 0
    against rounding; an empty curve raises."""
    _require_rows(curve)
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
    _require_rows(curve)
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
