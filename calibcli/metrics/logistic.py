"""Logistic regression by Newton's method with backtracking, on a design matrix held once.

Pure numpy. The linear predictor, the probabilities and the residuals are computed a slice
at a time and the loss is summed in slices on numpy's own summation tree
(:mod:`calibcli.metrics.pairwise`). The two reductions over the rows that go through BLAS,
the gradient ``X.T @ r`` and the Hessian ``(X.T * w) @ X``, must add in BLAS's own order, so
every iterate is the same float as one computed with whole-array temporaries. Where numpy's
OpenBLAS is shown to give those products bit for bit a slice at a time
(:mod:`calibcli.metrics.blas`), the design matrix keeps only its feature columns and the fit
no row-sized array besides; elsewhere it holds X whole, and the Hessian's weighted copy of X
and the residuals one after the other, and makes the calls on the whole arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from calibcli.metrics import blas
from calibcli.metrics.pairwise import SLICE, pairwise_sum

__all__ = ["Design", "design_matrix", "logistic_fit", "sigmoid"]

_NEWTON_MAX_ITER = 100
_NEWTON_RTOL = 1e-10

# targets(a, b): the targets of rows [a, b) (float64, soft targets allowed)
Targets = Callable[[int, int], np.ndarray]


def sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = 1 / (1 + e^−x) without overflow for either sign."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class Design:
    """The (n, k + 1) design matrix whose rows are k features and a 1: ``values`` holds the
    whole matrix, or only its k feature columns when the 1s are added a slice at a time."""

    def __init__(self, values: np.ndarray, width: int) -> None:
        self.values = values
        self.n, self.width = values.shape[0], width

    def column(self, k: int) -> np.ndarray:
        return self.values[:, k]

    def rows(self, a: int, b: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows [a, b) as a C-ordered (b − a, k + 1) array (``out`` if given)."""
        if self.values.shape[1] == self.width and out is None:
            return self.values[a:b]
        if out is None:
            out = np.empty((min(b, self.n) - a, self.width))
        out[:, : self.values.shape[1]] = self.values[a:b]
        out[:, self.values.shape[1] :] = 1.0
        return out

    def whole(self) -> np.ndarray:
        """The whole matrix, C-ordered."""
        if self.values.shape[1] < self.width:
            self.values = self.rows(0, self.n)
        return self.values


def design_matrix(
    parts: Sequence[np.ndarray], features: Callable[[np.ndarray], Sequence[np.ndarray]]
) -> Design:
    """The design matrix whose rows are ``features(c)`` (k columns) and a 1, for the rows of
    ``parts`` one part after another, computed a slice at a time: the same floats as
    ``np.column_stack([*features(concatenated), ones])``. Its 1s are left out where the fit
    can take its products a slice at a time."""
    n = sum(p.shape[0] for p in parts)
    width = len(features(np.zeros(1))) + 1
    held = width - 1 if _sliced(n) else width
    x = np.empty((n, held))
    if held == width:
        x[:, -1] = 1.0
    offset = 0
    for values in parts:
        for a in range(0, values.shape[0], SLICE):
            part = values[a : a + SLICE]
            rows = slice(offset + a, offset + a + part.shape[0])
            for k, column in enumerate(features(part)):
                x[rows, k] = column
        offset += values.shape[0]
    return Design(x, width)


def _sliced(n: int) -> bool:
    """Whether a fit on n rows takes its BLAS products a slice at a time."""
    return n >= blas.MIN_ROWS and _rows_independent() and blas.sliced_products()


def _predictor(x: Design) -> Callable[[np.ndarray, int, int], np.ndarray]:
    """η[a:b] = (x @ θ)[a:b]: a slice's own product where this BLAS gives each row the same
    float sliced or whole (probed once), else the whole product kept for the current θ."""
    if _rows_independent():
        return lambda theta, a, b: x.rows(a, b) @ theta
    whole_x = x.whole()
    cache: list = [None, None]

    def whole(theta: np.ndarray, a: int, b: int) -> np.ndarray:
        if cache[0] is None or not np.array_equal(cache[0], theta):
            cache[1] = None
            cache[1] = whole_x @ theta
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


def logistic_fit(x: Design, targets: Targets, start: np.ndarray, what: str) -> np.ndarray:
    """Minimise mean[log(1 + e^η) − t·η], η = x @ θ, by Newton's method with backtracking.

    ``x`` is the (n, k) design matrix (:func:`design_matrix`), ``targets(a, b)`` the targets of
    rows [a, b) (soft targets in [0, 1] allowed). Stops when a Newton step is at most
    1e-10·(1 + max|θ|); raises ValueError when that does not happen within 100 steps or the
    Hessian is singular, which is how a fit without a finite optimum (separable classes) shows
    itself.
    """
    theta = start.astype(np.float64, copy=True)
    n = x.n
    eta = _predictor(x)

    def loss(th: np.ndarray) -> float:
        def piece(a: int, b: int) -> np.ndarray:
            e = eta(th, a, b)
            return np.logaddexp(0.0, e) - targets(a, b) * e

        return pairwise_sum(n, piece) / n

    sliced = _sliced(n)
    for _ in range(_NEWTON_MAX_ITER):
        if sliced:
            hess, grad = _sliced_products(x, eta, theta, targets)
        else:
            hess, grad = _whole_products(x.whole(), eta, theta, targets)
        hess, grad = hess / n, grad / n
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


Predictor = Callable[[np.ndarray, int, int], np.ndarray]


def _whole_products(
    x: np.ndarray, eta: Predictor, theta: np.ndarray, targets: Targets
) -> tuple[np.ndarray, np.ndarray]:
    """The Hessian's ``(x.T * w) @ x`` and the gradient's ``x.T @ r`` (w = p(1 − p),
    r = p − t, p = σ(x @ θ)), each by one BLAS call on whole arrays; the weighted copy of x
    and the residuals exist one after the other."""
    n = x.shape[0]
    weighted = np.empty(x.shape).T  # the layout of x.T * w, so the product is the same call
    for a in range(0, n, SLICE):
        p = sigmoid(eta(theta, a, a + SLICE))
        weighted.T[a : a + SLICE] = x[a : a + SLICE] * (p * (1.0 - p))[:, None]
    hess = weighted @ x
    del weighted
    residual = np.empty(n)
    for a in range(0, n, SLICE):
        residual[a : a + SLICE] = sigmoid(eta(theta, a, a + SLICE)) - targets(a, a + SLICE)
    return hess, x.T @ residual


def _sliced_products(
    x: Design, eta: Predictor, theta: np.ndarray, targets: Targets
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_whole_products` a slice of rows at a time, the same floats
    (:func:`calibcli.metrics.blas.gram_and_dot`)."""

    def fill(a: int, b: int, xs: np.ndarray, ws: np.ndarray, rs: np.ndarray) -> None:
        x.rows(a, b, out=xs)
        for i in range(0, b - a, SLICE):
            j = min(i + SLICE, b - a)
            p = sigmoid(xs[i:j] @ theta)
            np.multiply(xs[i:j], (p * (1.0 - p))[:, None], out=ws[i:j])
            np.subtract(p, targets(a + i, a + j), out=rs[i:j])

    return blas.gram_and_dot(x.n, x.width, fill)
