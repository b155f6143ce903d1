"""Roots of increasing functions, elementwise, by Newton steps kept inside a shrinking bracket."""

from __future__ import annotations

import numpy as np

__all__ = ["solve_increasing"]


def solve_increasing(
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
