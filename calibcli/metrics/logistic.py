"""Logistic regression by Newton's method with backtracking, on a design matrix held once.

Pure numpy. The fit keeps one row-sized array besides the design matrix at a time: the
linear predictor, the probabilities and the residuals are computed a slice at a time and
the loss is summed in slices on numpy's own summation tree
(:mod:`calibcli.metrics.pairwise`). The two reductions over the rows that go through BLAS,
the gradient ``X.T @ r`` and the Hessian ``(X.T * w) @ X``, are made by the same calls on
arrays of the same shape and layout as a whole-array fit makes them, so every iterate is the
same float as one computed with whole-array temporaries: BLAS adds in its own order, which a
sliced product would not reproduce.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from calibcli.metrics.pairwise import SLICE, pairwise_sum

__all__ = ["design_matrix", "logistic_fit", "sigmoid"]

_NEWTON_MAX_ITER = 100
_NEWTON_RTOL = 1e-10

# targets(a, b): the targets of rows [a, b) (float64, soft targets allowed)
Targets = Callable[[int, int], np.ndarray]


def sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = 1 / (1 + e^−x) without overflow for either sign."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def design_matrix(
    parts: Sequence[np.ndarray], features: Callable[[np.ndarray], Sequence[np.ndarray]]
) -> np.ndarray:
    """The (n, k + 1) C-ordered matrix whose rows are ``features(c)`` (k columns) and a 1, for
    the rows of ``parts`` one part after another, computed a slice at a time: the same floats
    as ``np.column_stack([*features(concatenated), ones])``."""
    n = sum(p.shape[0] for p in parts)
    width = len(features(np.zeros(1))) + 1
    x = np.empty((n, width))
    x[:, -1] = 1.0
    offset = 0
    for values in parts:
        for a in range(0, values.shape[0], SLICE):
            part = values[a : a + SLICE]
            rows = slice(offset + a, offset + a + part.shape[0])
            for k, column in enumerate(features(part)):
                x[rows, k] = column
        offset += values.shape[0]
    return x


def _predictor(x: np.ndarray) -> Callable[[np.ndarray, int, int], np.ndarray]:
    """η[a:b] = (x @ θ)[a:b]: a slice's own product where this BLAS gives each row the same
    float sliced or whole (probed once), else the whole product kept for the current θ."""
    if _rows_independent():
        return lambda theta, a, b: x[a:b] @ theta
    cache: list = [None, None]

    def whole(theta: np.ndarray, a: int, b: int) -> np.ndarray:
        if cache[0] is None or not np.array_equal(cache[0], theta):
            cache[1] = None
            cache[1] = x @ theta
            cache[0] = theta.copy()
        return cache[1][a:b]

    return whole


_PROBED: list[bool] = []


def _rows_independent() -> bool:
    """Whether ``x[a:b] @ θ`` equals ``(x @ θ)[a:b]`` bit for bit on this BLAS, for slices
    of any length and offset."""
    if not _PROBED:
        rng = np.random.default_rng(0)
        same = True
        for width in (2, 3):
            x = np.ones((20011, width))
            x[:, :-1] = rng.normal(0.0, 5.0, (x.shape[0], width - 1))
            theta = rng.normal(0.0, 3.0, width)
            whole = x @ theta
            for a, b in ((0, 7), (3, 1030), (129, 20011), (65, 9999), (20000, 20011)):
                same = same and np.array_equal(x[a:b] @ theta, whole[a:b])
        _PROBED.append(bool(same))
    return _PROBED[0]


def logistic_fit(x: np.ndarray, targets: Targets, start: np.ndarray, what: str) -> np.ndarray:
    """Minimise mean[log(1 + e^η) − t·η], η = x @ θ, by Newton's method with backtracking.

    ``x`` is the (n, k) design matrix, ``targets(a, b)`` the targets of rows [a, b) (soft
    targets in [0, 1] allowed). Stops when a Newton step is at most 1e-10·(1 + max|θ|); raises
    ValueError when that does not happen within 100 steps or the Hessian is singular, which is
    how a fit without a finite optimum (separable classes) shows itself.
    """
    theta = start.astype(np.float64, copy=True)
    n = x.shape[0]
    eta = _predictor(x)

    def loss(th: np.ndarray) -> float:
        def piece(a: int, b: int) -> np.ndarray:
            e = eta(th, a, b)
            return np.logaddexp(0.0, e) - targets(a, b) * e

        return pairwise_sum(n, piece) / n

    for _ in range(_NEWTON_MAX_ITER):
        # the Hessian's weighted copy of x, then the residuals: one of them exists at a time
        weighted = np.empty(x.shape).T  # the layout of x.T * w, so the product is the same call
        for a in range(0, n, SLICE):
            p = sigmoid(eta(theta, a, a + SLICE))
            weighted.T[a : a + SLICE] = x[a : a + SLICE] * (p * (1.0 - p))[:, None]
        hess = weighted @ x / n
        del weighted
        residual = np.empty(n)
        for a in range(0, n, SLICE):
            residual[a : a + SLICE] = sigmoid(eta(theta, a, a + SLICE)) - targets(a, a + SLICE)
        grad = x.T @ residual / n
        del residual
        try:
            step = np.linalg.solve(hess, -grad)
        except np.linalg.LinAlgError:
            step = np.full_like(theta, np.nan)
        if not np.all(np.isfinite(step)):
            break
        decrement = float(-grad @ step)
        scale = 1.0
        if decrement > 1e-12:  # far from the optimum: backtrack until the loss falls enough
            f0 = loss(theta)
            while scale > 1e-12 and loss(theta + scale * step) > f0 - 1e-4 * scale * decrement:
                scale *= 0.5
        theta = theta + scale * step
        # the full Newton step estimates the distance to the optimum, whatever the line search did
        if np.max(np.abs(step)) <= _NEWTON_RTOL * (1.0 + np.max(np.abs(theta))):
            return theta
    raise ValueError(
        f"{what} fit did not converge: maximum likelihood has no finite solution "
        "(do the confidences separate right from wrong answers?)"
    )
