"""Roots of increasing functions, elementwise, by Newton steps kept inside a shrinking bracket."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["solve_increasing"]

_ULP = float(np.finfo(np.float64).eps)

# fn(x, idx) -> (g, step) for the elements ``idx`` still being solved, at their points ``x``
NewtonStep = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def solve_increasing(
    fn: NewtonStep,
    lo: np.ndarray,
    hi: np.ndarray,
    guess: np.ndarray,
    *,
    geometric: bool = False,
    stop_on_step: bool = False,
    max_iter: int = 400,
) -> np.ndarray:
    """Root x in (lo, hi) of an increasing g, elementwise, with g(lo) < 0 < g(hi).

    ``fn(x, idx)`` returns g at ``x`` for the elements ``idx`` (only its sign is used: 0 is the
    root) and the Newton step, so that x − step is the next Newton point. Each evaluation moves
    one end of the bracket to x; a Newton point outside the bracket is replaced by its midpoint,
    ``(lo + hi)/2``, or ``sqrt(lo·hi)`` with ``geometric=True`` (a positive bracket spanning
    orders of magnitude). The iteration starts at ``guess`` where it lies inside the bracket.

    It stops at g = 0 (returning x), else when the next point moves by at most 2e-15·|x| or the
    bracket is within 4e-16·|hi| (returning the next point); with ``stop_on_step=True`` instead
    when the Newton step is at most 4 ulp of x or the bracket within 4 ulp of lo (returning x).
    After ``max_iter`` evaluations the latest point is returned.
    """

    def midpoint(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.sqrt(lo * hi) if geometric else 0.5 * (lo + hi)

    x = np.where((guess > lo) & (guess < hi), guess, midpoint(lo, hi))
    out = np.empty_like(x)
    idx = np.arange(x.shape[0])
    for _ in range(max_iter):
        g, step = fn(x, idx)
        root = g == 0
        below = g < 0
        lo = np.where(below, x, lo)
        hi = np.where(below, hi, x)
        newton = x - step
        x_next = np.where((newton > lo) & (newton < hi), newton, midpoint(lo, hi))
        if stop_on_step:
            done = root | (np.abs(step) <= 4 * _ULP * x) | (hi - lo <= 4 * _ULP * lo)
            result = x
        else:
            done = (
                (np.abs(x_next - x) <= 2e-15 * np.abs(x)) | (hi - lo <= 4e-16 * np.abs(hi)) | root
            )
            result = np.where(root, x, x_next)
        if done.any():
            out[idx[done]] = result[done]
            keep = ~done
            if not keep.any():
                return out
            idx, x_next, lo, hi = (v[keep] for v in (idx, x_next, lo, hi))
        x = x_next
    out[idx] = x  # pragma: no cover - a safeguard: the bracket shrinks at every evaluation
    return out
