"""The binomial distribution, numerically: probabilities, tails and exact confidence bounds.

Pure numpy: no I/O, no printing, no scipy. X ~ Binom(n, p) counts successes in n independent
trials of rate p (q = 1 − p).

* Probabilities by Loader's (2000) saddle-point form: ln P[X = k] from the Stirling error of
  ln k! and the deviance x·ln(x/mean) + mean − x, each without cancellation, ~1e-15 relative at
  any n.
* Tails P[X <= k] and P[X > k] as the regularised incomplete beta function, the pmf times a
  continued fraction (modified Lentz), ~1e-14 relative: :func:`binomial_cdf`.
* Wilson's (1927) score interval for a proportion, two-sided: :func:`wilson_interval`.
* One-sided Clopper–Pearson bounds, the exact quantiles of the beta distribution solved for by a
  safeguarded Newton iteration: :func:`accuracy_lower_bound` on a success rate and
  :func:`risk_upper_bound` on an error rate.
* McNemar's two-sided p-value min(1, 2·P[Binom(n, ½) <= m]): exact integer arithmetic,
  correctly rounded, or the saddle-point pmf above a size limit
  (:func:`binomial_half_two_sided`).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from calibcli.metrics.roots import solve_increasing

__all__ = [
    "accuracy_lower_bound",
    "binomial_cdf",
    "binomial_half_two_sided",
    "risk_upper_bound",
    "wilson_interval",
]

_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# stirlerr(n) = ln n! − (n + ½)·ln n + n − ln √(2π) for n = 0..15; beyond, its asymptotic series.
_STIRLERR_TABLE = np.array(
    [0.0]
    + [math.lgamma(k + 1.0) - (k + 0.5) * math.log(k) + k - _LN_SQRT_2PI for k in range(1, 16)]
)
_CF_EPS = 1e-16
_CF_TINY = 1e-300
_CF_MAX_ITER = 1_000_000


def _stirling_error(n: np.ndarray, *, divide: bool = False) -> np.ndarray:
    """The error of Stirling's formula in ln n!, accurate to ~1e-15 absolute (Loader 2000).

    A table up to n = 15, beyond it the series (1/12 − (1/360 − (1/1260 − (1/1680 −
    1/1188·n⁻²)·n⁻²)·n⁻²)·n⁻²)/n, evaluated with the reciprocal 1/n², or with ``divide=True``
    by dividing by n² (the two roundings can differ in the last bit; McNemar's p-value keeps
    the division, the tails the reciprocal).
    """
    out = np.empty(n.shape)
    small = n <= 15
    out[small] = _STIRLERR_TABLE[n[small].astype(np.intp)]
    big = n[~small]
    s0, s1, s2, s3 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680
    if divide:
        sq = big * big
        series = s0 - (s1 - (s2 - (s3 - 1 / (1188 * sq)) / sq) / sq) / sq
    else:
        inv2 = 1.0 / (big * big)
        series = s0 - (s1 - (s2 - (s3 - (1 / 1188) * inv2) * inv2) * inv2) * inv2
    out[~small] = series / big
    return out


def _libm_log(values: np.ndarray) -> np.ndarray:
    """ln of each value by the C library (``math.log``), which numpy's vectorised log need not
    match in the last bit."""
    return np.array([math.log(v) for v in values.tolist()])


def _deviance(x: np.ndarray, mean: np.ndarray, *, log=np.log) -> np.ndarray:
    """x·ln(x / mean) + mean − x without cancellation when x ≈ mean (Loader 2000).

    Near the mean (|x − mean| < 0.1·(x + mean)) by its series in v = (x − mean)/(x + mean);
    elsewhere directly, with ``log`` (numpy's, or :func:`_libm_log` for McNemar's p-value).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * log(x / mean) + mean - x
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
        _stirling_error(nm)
        - _stirling_error(km)
        - _stirling_error(nm - km)
        - _deviance(km, nm * pm)
        - _deviance(nm - km, nm * qm)
        - _LN_SQRT_2PI
        - 0.5 * (np.log(km) + np.log1p(-km / nm))
    )
    return out


def _beta_continued_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
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


def binomial_tails(k: object, n: object, p: object) -> tuple[np.ndarray, np.ndarray]:
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
            cf = _beta_continued_fraction(s, nu - s + 1.0, pu)
            tail = qu * np.exp(_log_pmf(s, nu, pu, qu)) * cf
            up_r[use_upper] = tail
            lo_r[use_upper] = 1.0 - tail
        use_lower = ~use_upper
        if use_lower.any():
            kl, nl, pl, ql = kk[use_lower], nn[use_lower], pp[use_lower], qq[use_lower]
            cf = _beta_continued_fraction(nl - kl, kl + 1.0, ql)
            tail = pl * np.exp(_log_pmf(kl, nl, pl, ql)) * cf
            lo_r[use_lower] = tail
            up_r[use_lower] = 1.0 - tail
        lower[rest] = np.clip(lo_r, 0.0, 1.0)
        upper[rest] = np.clip(up_r, 0.0, 1.0)
    return lower.reshape(shape), upper.reshape(shape)


def _counts(k: object, n: object, k_name: str) -> tuple[np.ndarray, np.ndarray, tuple]:
    """(k, n) broadcast as int64, checked 0 <= k <= n, flattened to float64; and their shape."""
    k_arr, n_arr = np.broadcast_arrays(np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64))
    if np.any(n_arr < 0) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError(f"need 0 <= {k_name} <= n, got {k_name}={k_arr!r}, n={n_arr!r}")
    return k_arr.ravel().astype(np.float64), n_arr.ravel().astype(np.float64), k_arr.shape


def check_level(delta: object, name: str = "delta") -> float:
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
    lower, _ = binomial_tails(k, n, p_arr)
    return float(lower) if lower.ndim == 0 else lower


def _wilson_bounds(
    k: np.ndarray, n: np.ndarray, z: float, *, scale_last: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval centre ∓ half-width for the normal quantile z, elementwise.

    With p̂ = k/n: centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z/(1 + z²/n)·sqrt(p̂(1 − p̂)/n
    + z²/4n²). Centre and half-width are each divided by 1 + z²/n, or with ``scale_last=True``
    their difference and sum once (the rounding the exact bounds' starting points use). nan
    where n == 0; not clipped.
    """
    z2 = z * z
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z2 / n
        centre = p + z2 / (2.0 * n)
        root = np.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
        if scale_last:
            return (centre - z * root) / denom, (centre + z * root) / denom
        centre = centre / denom
        half = z / denom * root
        return centre - half, centre + half


def wilson_interval(
    successes: object, n: object, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion, elementwise; (nan, nan) where n == 0.

    With p̂ = k/n and z the two-sided normal quantile of ``level``:
    centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z/(1 + z²/n)·sqrt(p̂(1 − p̂)/n + z²/4n²),
    clipped to [0, 1] (it lies there in exact arithmetic).

    >>> lo, hi = wilson_interval(0, 10)
    >>> round(float(lo), 6), round(float(hi), 6)
    (0.0, 0.277533)
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    k = np.asarray(successes, dtype=np.float64)
    total = np.asarray(n, dtype=np.float64)
    if np.any(total < 0) or np.any(k < 0) or np.any(k > total):
        raise ValueError("wilson_interval needs 0 <= successes <= n")
    lo, hi = _wilson_bounds(k, total, NormalDist().inv_cdf(0.5 + level / 2.0))
    lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
    empty = total == 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def _wilson_start(s: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """One-sided Wilson score lower bound: a starting point for the exact solver, nothing more.

    The quantile is Φ⁻¹(1 − level), or −Φ⁻¹(level) when 1 − level rounds to 1 (a level below
    1.1e-16), where Φ⁻¹ is undefined."""
    upper = 1.0 - level
    z = NormalDist().inv_cdf(upper) if upper < 1.0 else -NormalDist().inv_cdf(level)
    return _wilson_bounds(s, n, z, scale_last=True)[0]


def _solve_upper_tail(
    k: np.ndarray, n: np.ndarray, target: np.ndarray, guess: np.ndarray
) -> np.ndarray:
    """The rate p with P[Binom(n, p) > k] = target, elementwise (0 <= k < n, 0 < target < 1).

    P[X > k] increases with p; the Newton steps are on its logarithm, whose derivative is
    n·pmf_{n−1}(k; p) / P[X > k].
    """
    log_target = np.log(target)

    def newton(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ki, ni = k[idx], n[idx]
        fx = binomial_tails(ki, ni, x)[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            density = ni * np.exp(_log_pmf(ki, ni - 1.0, x, 1.0 - x))
            step = (np.log(fx) - log_target[idx]) * fx / density
        return fx - target[idx], step

    return solve_increasing(newton, np.zeros(k.shape), np.ones(k.shape), guess)


def _solve_lower_tail(
    k: np.ndarray, n: np.ndarray, target: np.ndarray, guess: np.ndarray
) -> np.ndarray:
    """The rate p with P[Binom(n, p) <= k] = target, elementwise (0 <= k < n, 0 < target < 1).

    P[X <= k] decreases with p, so the root is that of the increasing ln target − ln P[X <= k],
    whose derivative is n·pmf_{n−1}(k; p) / P[X <= k]. Solving for the lower tail itself (not
    for 1 − target as an upper tail) keeps a small target exact: 1 − target rounds to 1 below
    1.1e-16.
    """
    log_target = np.log(target)

    def newton(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ki, ni = k[idx], n[idx]
        fx = binomial_tails(ki, ni, x)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            density = ni * np.exp(_log_pmf(ki, ni - 1.0, x, 1.0 - x))
            step = (log_target[idx] - np.log(fx)) * fx / density
        return target[idx] - fx, step

    return solve_increasing(newton, np.zeros(k.shape), np.ones(k.shape), guess)


def accuracy_lower_bound(successes: object, n: object, *, delta: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson lower bound on a success rate, elementwise.

    L = the largest p with P[Binom(n, p) >= s] <= δ, i.e. the δ-quantile of Beta(s, n − s + 1);
    L = 0 when s = 0 and L = δ^(1/n) when s = n. The true rate is >= L with probability
    >= 1 − δ. Scalars in, float out.

    >>> round(accuracy_lower_bound(10, 10, delta=0.05), 12)  # 0.05 ** (1/10)
    0.741134449107
    """
    level = check_level(delta)
    s_flat, n_flat, shape = _counts(successes, n, "successes")
    out = np.zeros(s_flat.shape)
    allright = (s_flat == n_flat) & (n_flat > 0)
    out[allright] = np.exp(np.log(level) / n_flat[allright])
    solve = (s_flat > 0) & ~allright
    if solve.any():
        s, nn = s_flat[solve], n_flat[solve]
        guess = _wilson_start(s, nn, level)
        out[solve] = _solve_upper_tail(s - 1.0, nn, np.full(s.shape, level), guess)
    return float(out[0]) if shape == () else out.reshape(shape)


def risk_upper_bound(errors: object, n: object, *, delta: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson upper bound on an error rate, elementwise.

    U = the smallest r with P[Binom(n, r) <= e] <= δ (= 1 − accuracy_lower_bound(n − e, n)),
    solved for directly so that small bounds keep their relative precision; U = 1 when e = n
    and U = 1 − δ^(1/n) when e = 0. The true rate is <= U with probability >= 1 − δ.
    """
    level = check_level(delta)
    e_flat, n_flat, shape = _counts(errors, n, "errors")
    out = np.ones(e_flat.shape)
    none_wrong = (e_flat == 0) & (n_flat > 0)
    out[none_wrong] = -np.expm1(np.log(level) / n_flat[none_wrong])
    solve = (e_flat < n_flat) & ~none_wrong
    if solve.any():
        e, nn = e_flat[solve], n_flat[solve]
        guess = 1.0 - _wilson_start(nn - e, nn, level)
        out[solve] = _solve_lower_tail(e, nn, np.full(e.shape, level), guess)
    return float(out[0]) if shape == () else out.reshape(shape)


# --------------------------------------------------------------------------- Binom(n, ½), two-sided

_CHECK_EVERY = 64  # tail terms summed between two checks of the exact sum's rounding bound


def binomial_half_two_sided(n: int, m: int, *, exact_limit: int) -> float:
    """min(1, 2·P[Binom(n, ½) <= m]) = min(1, Σ_{k=0}^{m} C(n, k) / 2^(n−1)); 1.0 for n = 0.

    McNemar's exact p-value. Exact and correctly rounded up to ``exact_limit`` trials; above
    it, ``math.comb`` alone takes seconds, so the saddle-point form is used (relative error
    < 1e-11).
    """
    if 2 * m >= n:  # includes n = 0: the two tails overlap, p >= 1
        return 1.0
    if n > exact_limit:
        return _binomial_half_two_sided_float(n, m)
    return _binomial_half_two_sided_exact(n, m)


def _binomial_half_two_sided_exact(n: int, m: int) -> float:
    """Σ_{k=0}^{m} C(n, k) / 2^(n−1) for m < n/2 in integers, correctly rounded.

    The terms are summed from k = m downwards (t_{k−1} = t_k·k / (n − k + 1), exact). The ratios
    shrink as k falls, so the terms not yet added sum to at most t_j·j / (n − 2j + 1) after
    adding t_j; once the sum and the sum plus that bound round to the same float, the exact
    value (which lies between them) rounds to it too, and the loop stops.
    """
    scale = 1 << (n - 1)
    term = math.comb(n, m)
    total = term
    for k in range(m, 0, -1):
        if (m - k) % _CHECK_EVERY == 0:
            bound = -(-term * k // (n - 2 * k + 1))  # ceiling
            if total / scale == (total + bound) / scale:  # int / int is correctly rounded
                break
        term = term * k // (n - k + 1)
        total += term
    return total / scale


def _binomial_half_two_sided_float(n: int, m: int) -> float:
    """Σ_{k<=m} C(n, k) / 2^(n−1) for 0 <= m < n/2 in floating point.

    P[X = m] by Loader's (2000) saddle-point form, exp(ε(n) − ε(m) − ε(n − m) − D(m) −
    D(n − m))·sqrt(n / (2π·m·(n − m))) with ε the Stirling error and D the deviance from n/2,
    then times Σ_j P[X = m − j]/P[X = m], whose ratios are exact products of small fractions.
    """
    if m == 0:
        return math.ldexp(1.0, 1 - n)
    half = n / 2.0
    eps = _stirling_error(np.array([n, m, n - m], dtype=np.float64), divide=True).tolist()
    dev = _deviance(
        np.array([m, n - m], dtype=np.float64), np.array([half, half]), log=_libm_log
    ).tolist()
    log_term = eps[0] - eps[1] - eps[2] - dev[0] - dev[1]
    log_term += 0.5 * math.log(n / (2.0 * math.pi * m * (n - m)))
    ratio, total = 1.0, 1.0
    for k in range(m, 0, -1):
        ratio *= k / (n - k + 1)
        if ratio < 1e-17 * total:
            break
        total += ratio
    return 2.0 * math.exp(log_term) * total
