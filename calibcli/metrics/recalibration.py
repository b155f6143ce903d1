"""Recalibration: maps fitted on (confidence, correct) rows that make confidences honest.

Pure numpy: no I/O, no printing. :func:`fit` returns a frozen calibrator whose ``apply`` maps new
confidences; ``to_dict`` / :func:`from_dict` carry its parameters through JSON. :func:`cross_fit`
gives out-of-fold recalibrated confidences, so a calibration figure computed on them is not
flattered by fitting and scoring on the same rows.

Notation: c is the confidence that an answer is correct, y ∈ {0, 1} the outcome, σ the logistic
function and z = logit(c) = ln c − ln(1 − c) with c first clipped to [EPS, 1 − EPS], EPS = 1e-12,
so z ∈ [−27.63, 27.63] is finite for c = 0 and c = 1. The same clip applies wherever ln c or
ln(1 − c) appears (temperature, platt, beta). Every fit is maximum likelihood (mean NLL in nats).

* ``temperature``  c' = σ(z / T), T > 0 (Guo et al. 2017). T is searched in
  [T_MIN, T_MAX] = [1e-4, 1e4]; an optimum beyond a bound is returned at the bound (T_MAX when
  the confidences carry no or inverted information, T_MIN when they separate the classes).
* ``platt``        c' = σ(a·z + b) (Platt 1999), fitted to Platt's smoothed targets
  (N₊ + 1)/(N₊ + 2) for right and 1/(N₋ + 2) for wrong answers, as scikit-learn's
  ``_SigmoidCalibration`` does (its P = 1/(1 + exp(A·f + B)) on f = z gives a = −A, b = −B).
  Non-decreasing when a ≥ 0; a < 0 (confidences ranked backwards) is kept, as scikit-learn does.
* ``isotonic``     pool-adjacent-violators on c with tied confidences averaged, applied by linear
  interpolation between the fitted points and constant beyond the ends — scikit-learn's
  ``IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")``, including its pruning of
  points inside a flat run. Non-decreasing.
* ``histogram``    c' = accuracy of c's bin over ``bins`` equal-width bins with calibcli's exact
  edges (:func:`calibcli.metrics.core.bin_index`); a bin with no fitting rows keeps c' = c.
  Not monotone in general.
* ``beta``         c' = σ(a·ln c − b·ln(1 − c) + m) (Kull, Silva Filho & Flach 2017): logistic
  regression on the features ln c and −ln(1 − c) with an intercept m. As in the authors'
  ``betacal``, a fit with a < 0 is redone without ln c (a = 0), else one with b < 0 without
  −ln(1 − c) (b = 0); if the remaining slope is negative too it is dropped as well and
  c' = σ(m) = the accuracy. So a, b ≥ 0 and the map is non-decreasing.

Multiple-choice input (:func:`fit_multiclass_temperature`): per row the loglikelihoods ℓ of its
choices and the gold index g; T minimises mean_r [log Σ_j exp(ℓ_rj / T) − ℓ_rg / T] and the
recalibrated confidence is max_j softmax(ℓ_r / T)_j (Guo et al. 2017). Rows are ragged, given as
one flat ``loglikelihoods`` vector and CSR-style ``offsets``: row r holds
``loglikelihoods[offsets[r]:offsets[r + 1]]``, offsets[0] = 0, offsets[-1] = len(loglikelihoods)
and every row has at least one choice (:func:`pack_choices` builds both from nested lists).
:func:`cross_fit_multiclass_temperature` is its out-of-fold counterpart.

Cross-fitting: fold k holds the rows ``np.array_split(np.random.default_rng(seed).permutation(N),
folds)[k]`` (sizes differ by at most one); each row is mapped by a calibrator fitted on the rows
of all other folds. 2 <= folds <= N.

Temperature, platt and beta need both right and wrong answers and raise ValueError on a single
class; isotonic and histogram fit one class (every row maps to its accuracy, 0 or 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from calibcli.metrics.core import bin_edges, bin_index
from calibcli.metrics.roots import solve_increasing
from calibcli.metrics.validation import check_bins, validate_predictions

__all__ = [
    "EPS",
    "METHODS",
    "T_MAX",
    "T_MIN",
    "BetaCalibrator",
    "Calibrator",
    "HistogramCalibrator",
    "IsotonicCalibrator",
    "MulticlassTemperatureCalibrator",
    "PlattCalibrator",
    "TemperatureCalibrator",
    "cross_fit",
    "cross_fit_multiclass_temperature",
    "fit",
    "fit_multiclass_temperature",
    "fold_assignment",
    "from_dict",
    "pack_choices",
]

EPS = 1e-12
T_MIN = 1e-4
T_MAX = 1e4
METHODS = ("temperature", "platt", "isotonic", "histogram", "beta")
_TWO_CLASS_METHODS = ("temperature", "platt", "beta")
_NEWTON_MAX_ITER = 100
_NEWTON_RTOL = 1e-10


# --------------------------------------------------------------------------- numerics


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = 1 / (1 + e^−x) without overflow for either sign."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _clip(c: np.ndarray) -> np.ndarray:
    return np.clip(c, EPS, 1.0 - EPS)


def _logit(c: np.ndarray) -> np.ndarray:
    """z = ln c − ln(1 − c) with c clipped to [EPS, 1 − EPS]."""
    c = _clip(c)
    return np.log(c) - np.log1p(-c)


def _beta_features(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ln c, −ln(1 − c)) with c clipped to [EPS, 1 − EPS]."""
    c = _clip(c)
    return np.log(c), -np.log1p(-c)


def _temperature_root(derivative: Callable[[float], tuple[float, float]]) -> float:
    """The temperature T = 1/β at which a convex NLL's derivative in β vanishes, T in
    [T_MIN, T_MAX]; the bound the derivative's sign points to when it does not vanish inside.

    ``derivative(β)`` returns the NLL's first and second derivatives in β, the first
    non-decreasing. Newton steps in a geometric bracket, until a step is at most 4 ulp of β.
    """
    lo, hi = 1.0 / T_MAX, 1.0 / T_MIN
    if derivative(lo)[0] >= 0:
        beta = lo
    elif derivative(hi)[0] <= 0:
        beta = hi
    else:

        def newton(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            g, dg = derivative(float(x[0]))
            return np.array([g]), np.array([g / dg if dg > 0 else math.inf])

        beta = float(
            solve_increasing(
                newton,
                np.array([lo]),
                np.array([hi]),
                np.array([1.0]),
                geometric=True,
                stop_on_step=True,
                max_iter=500,
            )[0]
        )
    return float(min(max(1.0 / beta, T_MIN), T_MAX))


def _logistic_fit(features: np.ndarray, target: np.ndarray, start: np.ndarray, what: str):
    """Minimise mean[log(1 + e^η) − t·η], η = features @ θ, by Newton's method with backtracking.

    ``target`` may be soft (in [0, 1]). Stops when a Newton step is at most 1e-10·(1 + max|θ|);
    raises ValueError when that does not happen within 100 steps or the Hessian is singular,
    which is how a fit without a finite optimum (separable classes) shows itself.
    """
    theta = start.astype(np.float64, copy=True)

    def loss(th: np.ndarray) -> float:
        eta = features @ th
        return float(np.mean(np.logaddexp(0.0, eta) - target * eta))

    n = features.shape[0]
    for _ in range(_NEWTON_MAX_ITER):
        p = _sigmoid(features @ theta)
        grad = features.T @ (p - target) / n
        hess = (features.T * (p * (1.0 - p))) @ features / n
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


# --------------------------------------------------------------------------- validation


def _number(params: Mapping[str, object], key: str, method: str) -> float:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{method} parameter {key!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{method} parameter {key!r} must be finite, got {value!r}")
    return value


def _number_list(params: Mapping[str, object], key: str, method: str, *, nullable: bool = False):
    value = params[key]
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise ValueError(f"{method} parameter {key!r} must be a list of numbers, got {value!r}")
    out = []
    for i, v in enumerate(value):
        if v is None and nullable:
            out.append(math.nan)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{method} parameter {key}[{i}] must be a number, got {v!r}")
        if not math.isfinite(float(v)):
            raise ValueError(f"{method} parameter {key}[{i}] must be finite, got {v!r}")
        out.append(float(v))
    return np.array(out, dtype=np.float64)


def _check_keys(params: object, method: str, keys: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(params, Mapping):
        raise ValueError(f"{method} parameters must be a mapping, got {type(params).__name__}")
    missing = [k for k in keys if k not in params]
    extra = sorted(str(k) for k in params if k not in keys)
    if missing or extra:
        raise ValueError(
            f"{method} parameters must be exactly {list(keys)}; "
            f"missing {missing}, unexpected {extra}"
        )
    return params


def _confidences_to_map(confidences: object) -> np.ndarray:
    """Confidences of any shape as float64, all finite and in [0, 1]."""
    arr = np.asarray(confidences)
    if arr.dtype == bool or (arr.size and arr.dtype.kind not in "iuf"):
        raise ValueError(f"confidences must be numbers in [0, 1], got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # NaN compares false, so it is caught here too
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        v = float(arr[i])
        what = "is not a finite number" if not math.isfinite(v) else "is outside [0, 1]"
        name = "confidence" if arr.ndim == 0 else f"confidences[{i[0] if len(i) == 1 else i}]"
        raise ValueError(f"{name} = {v!r} {what}")
    return arr


def _readonly(values: object) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.flags.writeable:
        arr = arr.copy()
        arr.flags.writeable = False
    return arr


def _check_temperature(t: float, method: str) -> float:
    if not t > 0:
        raise ValueError(f"{method} parameter 'temperature' must be > 0, got {t!r}")
    return t


# --------------------------------------------------------------------------- calibrators


class Calibrator(Protocol):
    """What every binary calibrator offers."""

    method: ClassVar[str]

    def apply(self, confidences: object) -> np.ndarray: ...

    def to_dict(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class TemperatureCalibrator:
    """c' = σ(logit(c) / T), T > 0. Non-decreasing in c."""

    temperature: float
    method: ClassVar[str] = "temperature"

    def apply(self, confidences: object) -> np.ndarray:
        c = _confidences_to_map(confidences)
        return _sigmoid(_logit(c) / self.temperature)

    def to_dict(self) -> dict[str, object]:
        return {"temperature": float(self.temperature)}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> TemperatureCalibrator:
        p = _check_keys(params, cls.method, ("temperature",))
        return cls(_check_temperature(_number(p, "temperature", cls.method), cls.method))


@dataclass(frozen=True)
class PlattCalibrator:
    """c' = σ(a·logit(c) + b). Non-decreasing when a ≥ 0."""

    a: float
    b: float
    method: ClassVar[str] = "platt"

    def apply(self, confidences: object) -> np.ndarray:
        c = _confidences_to_map(confidences)
        return _sigmoid(self.a * _logit(c) + self.b)

    def to_dict(self) -> dict[str, object]:
        return {"a": float(self.a), "b": float(self.b)}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> PlattCalibrator:
        p = _check_keys(params, cls.method, ("a", "b"))
        return cls(_number(p, "a", cls.method), _number(p, "b", cls.method))


@dataclass(frozen=True, eq=False)
class IsotonicCalibrator:
    """Piecewise-linear through the points (x_k, y_k); y_0 below x_0, y_last above x_last.

    x strictly increasing in [0, 1]; y non-decreasing in [0, 1]. Non-decreasing in c.
    """

    x: np.ndarray
    y: np.ndarray
    method: ClassVar[str] = "isotonic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _readonly(self.x))
        object.__setattr__(self, "y", _readonly(self.y))

    def apply(self, confidences: object) -> np.ndarray:
        c = _confidences_to_map(confidences)
        return np.interp(c, self.x, self.y)

    def to_dict(self) -> dict[str, object]:
        return {"x": self.x.tolist(), "y": self.y.tolist()}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> IsotonicCalibrator:
        p = _check_keys(params, cls.method, ("x", "y"))
        x = _number_list(p, "x", cls.method)
        y = _number_list(p, "y", cls.method)
        if x.shape[0] == 0 or x.shape != y.shape:
            raise ValueError(
                f"isotonic parameters 'x' and 'y' must be non-empty and of equal length, "
                f"got {x.shape[0]} and {y.shape[0]}"
            )
        for name, arr in (("x", x), ("y", y)):
            if arr.min() < 0.0 or arr.max() > 1.0:
                raise ValueError(f"isotonic parameter {name!r} must lie in [0, 1]")
        if np.any(np.diff(x) <= 0):
            i = int(np.flatnonzero(np.diff(x) <= 0)[0]) + 1
            raise ValueError(f"isotonic parameter 'x' must increase strictly; x[{i}] = {x[i]!r}")
        if np.any(np.diff(y) < 0):
            i = int(np.flatnonzero(np.diff(y) < 0)[0]) + 1
            raise ValueError(f"isotonic parameter 'y' must not decrease; y[{i}] = {y[i]!r}")
        return cls(_readonly(x), _readonly(y))


@dataclass(frozen=True, eq=False)
class HistogramCalibrator:
    """c' = accuracy[k] for c in equal-width bin k of len(accuracy); NaN (JSON null) keeps c."""

    accuracy: np.ndarray
    method: ClassVar[str] = "histogram"

    def __post_init__(self) -> None:
        object.__setattr__(self, "accuracy", _readonly(self.accuracy))

    @property
    def bins(self) -> int:
        return int(self.accuracy.shape[0])

    def apply(self, confidences: object) -> np.ndarray:
        c = _confidences_to_map(confidences)
        mapped = self.accuracy[bin_index(c.ravel(), bin_edges(self.bins))].reshape(c.shape)
        return np.where(np.isnan(mapped), c, mapped)

    def to_dict(self) -> dict[str, object]:
        return {"accuracy": [None if math.isnan(v) else v for v in self.accuracy.tolist()]}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> HistogramCalibrator:
        p = _check_keys(params, cls.method, ("accuracy",))
        acc = _number_list(p, "accuracy", cls.method, nullable=True)
        if acc.shape[0] == 0:
            raise ValueError("histogram parameter 'accuracy' must hold one entry per bin, got none")
        filled = acc[~np.isnan(acc)]
        if filled.size and (filled.min() < 0.0 or filled.max() > 1.0):
            raise ValueError("histogram parameter 'accuracy' must lie in [0, 1] (or be null)")
        return cls(_readonly(acc))


@dataclass(frozen=True)
class BetaCalibrator:
    """c' = σ(a·ln c − b·ln(1 − c) + intercept), a, b ≥ 0. Non-decreasing in c."""

    a: float
    b: float
    intercept: float
    method: ClassVar[str] = "beta"

    def apply(self, confidences: object) -> np.ndarray:
        c = _confidences_to_map(confidences)
        ln_c, neg_ln_1mc = _beta_features(c)
        return _sigmoid(self.a * ln_c + self.b * neg_ln_1mc + self.intercept)

    def to_dict(self) -> dict[str, object]:
        return {"a": float(self.a), "b": float(self.b), "intercept": float(self.intercept)}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> BetaCalibrator:
        p = _check_keys(params, cls.method, ("a", "b", "intercept"))
        a, b = _number(p, "a", cls.method), _number(p, "b", cls.method)
        for name, v in (("a", a), ("b", b)):
            if v < 0:
                raise ValueError(f"beta parameter {name!r} must be >= 0 (monotone map), got {v!r}")
        return cls(a, b, _number(p, "intercept", cls.method))


@dataclass(frozen=True)
class MulticlassTemperatureCalibrator:
    """Multiple-choice temperature: p_r = softmax(ℓ_r / T); confidence = max_j p_rj."""

    temperature: float
    method: ClassVar[str] = "multiclass_temperature"

    def probabilities(self, loglikelihoods: object, offsets: object) -> np.ndarray:
        """The tempered softmax of every choice, flat, in the order of ``loglikelihoods``."""
        values, offs = _check_ragged(loglikelihoods, offsets)
        log_p = _row_log_softmax(values / self.temperature, offs)
        return np.exp(log_p)

    def apply(self, loglikelihoods: object, offsets: object) -> np.ndarray:
        """Recalibrated confidence of each row: its largest tempered softmax probability."""
        values, offs = _check_ragged(loglikelihoods, offsets)
        log_p = _row_log_softmax(values / self.temperature, offs)
        return np.exp(np.maximum.reduceat(log_p, offs[:-1]))

    def to_dict(self) -> dict[str, object]:
        return {"temperature": float(self.temperature)}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> MulticlassTemperatureCalibrator:
        p = _check_keys(params, cls.method, ("temperature",))
        return cls(_check_temperature(_number(p, "temperature", cls.method), cls.method))


_CLASSES = {
    c.method: c
    for c in (
        TemperatureCalibrator,
        PlattCalibrator,
        IsotonicCalibrator,
        HistogramCalibrator,
        BetaCalibrator,
        MulticlassTemperatureCalibrator,
    )
}


def from_dict(method: str, params: Mapping[str, object]):
    """The calibrator of ``method`` (one of METHODS or "multiclass_temperature") from its
    ``to_dict()`` parameters, validated: raises ValueError naming any bad value."""
    cls = _CLASSES.get(method) if isinstance(method, str) else None
    if cls is None:
        raise ValueError(f"unknown calibration method {method!r}; expected one of {list(_CLASSES)}")
    return cls.from_params(params)


# --------------------------------------------------------------------------- fitting


def _check_method(method: object) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; expected one of {list(METHODS)}")
    return method


def _fit_temperature(c: np.ndarray, y: np.ndarray) -> TemperatureCalibrator:
    z = _logit(c)
    if not np.any(z):
        raise ValueError("temperature cannot be fitted: every confidence is 0.5")
    yf = y.astype(np.float64)

    # mean NLL(β) with β = 1/T is convex; its derivative mean(z·(σ(βz) − y)) is non-decreasing
    def derivative(beta: float) -> tuple[float, float]:
        p = _sigmoid(beta * z)
        return float(np.mean(z * (p - yf))), float(np.mean(z * z * p * (1.0 - p)))

    return TemperatureCalibrator(_temperature_root(derivative))


def _fit_platt(c: np.ndarray, y: np.ndarray) -> PlattCalibrator:
    z = _logit(c)
    if np.all(z == z[0]):
        raise ValueError("platt cannot be fitted: every confidence is the same")
    n_pos = int(np.count_nonzero(y))
    n_neg = y.shape[0] - n_pos
    target = np.where(y, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    features = np.column_stack([z, np.ones_like(z)])
    start = np.array([0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))])
    a, b = _logistic_fit(features, target, start, "platt")
    return PlattCalibrator(float(a), float(b))


def _fit_beta(c: np.ndarray, y: np.ndarray) -> BetaCalibrator:
    if np.unique(_clip(c)).shape[0] < 3:
        raise ValueError("beta cannot be fitted: it needs at least three distinct confidences")
    ln_c, neg_ln_1mc = _beta_features(c)
    yf = y.astype(np.float64)
    ones = np.ones_like(yf)
    base = math.log(yf.mean() / (1.0 - yf.mean()))  # the intercept-only optimum

    def one_slope(feature: np.ndarray) -> tuple[float, float]:
        slope, icpt = _logistic_fit(
            np.column_stack([feature, ones]), yf, np.array([0, base]), "beta"
        )
        return (slope, icpt) if slope >= 0 else (0.0, base)

    a, b, icpt = _logistic_fit(
        np.column_stack([ln_c, neg_ln_1mc, ones]), yf, np.array([0.0, 0.0, base]), "beta"
    )
    if a < 0:
        a, (b, icpt) = 0.0, one_slope(neg_ln_1mc)
    elif b < 0:
        b, (a, icpt) = 0.0, one_slope(ln_c)
    return BetaCalibrator(float(a), float(b), float(icpt))


def _fit_isotonic(c: np.ndarray, y: np.ndarray) -> IsotonicCalibrator:
    order = np.argsort(c, kind="stable")
    cs, ys = c[order], y[order]
    ux, first = np.unique(cs, return_index=True)
    counts = np.diff(np.append(first, cs.shape[0])).tolist()
    sums = np.add.reduceat(ys.astype(np.int64), first).tolist()
    # pool adjacent violators over the distinct confidences; integer sums and counts make the
    # comparison of block means exact, and equal neighbours pool so block means rise strictly
    blk_sum: list[int] = []
    blk_cnt: list[int] = []
    blk_first: list[int] = []
    for i, (s, n) in enumerate(zip(sums, counts, strict=True)):
        blk_sum.append(s)
        blk_cnt.append(n)
        blk_first.append(i)
        while len(blk_sum) > 1 and blk_sum[-2] * blk_cnt[-1] >= blk_sum[-1] * blk_cnt[-2]:
            s_last, n_last = blk_sum.pop(), blk_cnt.pop()
            blk_first.pop()
            blk_sum[-1] += s_last
            blk_cnt[-1] += n_last
    starts = np.array(blk_first, dtype=np.intp)
    ends = np.append(starts[1:], ux.shape[0]) - 1
    means = np.array(blk_sum, dtype=np.float64) / np.array(blk_cnt, dtype=np.float64)
    # a block keeps its first and last confidence (one point if they coincide)
    two = ends > starts
    idx = np.sort(np.concatenate([starts, ends[two]]))
    vals = np.repeat(means, np.where(two, 2, 1))
    return IsotonicCalibrator(_readonly(ux[idx]), _readonly(np.clip(vals, 0.0, 1.0)))


def _fit_histogram(c: np.ndarray, y: np.ndarray, bins: int) -> HistogramCalibrator:
    idx = bin_index(c, bin_edges(bins))
    count = np.bincount(idx, minlength=bins)
    right = np.bincount(idx[y], minlength=bins)
    acc = np.full(bins, np.nan)
    np.divide(right, count, out=acc, where=count > 0)
    return HistogramCalibrator(_readonly(acc))


def _fit_validated(c: np.ndarray, y: np.ndarray, method: str, bins: int):
    if c.shape[0] == 0:
        raise ValueError(f"{method} cannot be fitted on no rows")
    if method in _TWO_CLASS_METHODS:
        n_right = int(np.count_nonzero(y))
        if n_right in (0, y.shape[0]):
            which = "right" if n_right else "wrong"
            raise ValueError(
                f"{method} cannot be fitted on a single class: all {y.shape[0]} answers are {which}"
            )
    if method == "temperature":
        return _fit_temperature(c, y)
    if method == "platt":
        return _fit_platt(c, y)
    if method == "beta":
        return _fit_beta(c, y)
    if method == "isotonic":
        return _fit_isotonic(c, y)
    return _fit_histogram(c, y, bins)


def fit(confidences: object, correct: object, *, method: str, bins: int = 10):
    """Fit a calibrator of ``method`` (one of METHODS) by maximum likelihood on the rows.

    ``bins`` is used by ``histogram`` only. Raises ValueError on empty input, NaN or values
    outside [0, 1], a single class for temperature/platt/beta, or a fit without a finite optimum.
    """
    method = _check_method(method)
    bins = check_bins(bins)
    c, y = validate_predictions(confidences, correct)
    return _fit_validated(c, y, method, bins)


def fold_assignment(n: int, *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Fold of each of ``n`` rows: ``np.array_split(np.random.default_rng(seed).permutation(n),
    folds)[k]`` holds the rows of fold k, so fold sizes differ by at most one (larger first)."""
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    if folds > n:
        raise ValueError(f"folds = {folds} exceeds the number of rows ({n})")
    out = np.empty(n, dtype=np.intp)
    for k, rows in enumerate(np.array_split(np.random.default_rng(seed).permutation(n), folds)):
        out[rows] = k
    return out


def cross_fit(
    confidences: object,
    correct: object,
    *,
    method: str,
    folds: int = 5,
    seed: int = 0,
    bins: int = 10,
) -> np.ndarray:
    """Out-of-fold recalibrated confidences: row i mapped by a calibrator fitted on the rows of
    every fold but its own (folds from :func:`fold_assignment`). Raises ValueError for
    folds < 2, folds > N, and for a training split the method cannot fit (naming the fold)."""
    method = _check_method(method)
    bins = check_bins(bins)
    c, y = validate_predictions(confidences, correct)
    fold = fold_assignment(c.shape[0], folds=folds, seed=seed)
    out = np.empty(c.shape[0], dtype=np.float64)
    for k in range(int(folds)):
        held = fold == k
        try:
            calibrator = _fit_validated(c[~held], y[~held], method, bins)
        except ValueError as err:
            raise ValueError(f"fold {k} of {folds}: {err}") from None
        out[held] = calibrator.apply(c[held])
    return out


# --------------------------------------------------------------------------- multiple choice


def pack_choices(rows: Iterable[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """(flat loglikelihoods, offsets) of ragged rows: ``[[a, b], [c, d, e]]`` →
    ``([a, b, c, d, e], [0, 2, 5])``."""
    rows = [np.asarray(r, dtype=np.float64).ravel() for r in rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.intp)
    np.cumsum([r.shape[0] for r in rows], out=offsets[1:])
    values = np.concatenate(rows) if rows else np.zeros(0)
    return values, offsets


def _check_ragged(loglikelihoods: object, offsets: object) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(loglikelihoods)
    if values.ndim != 1:
        raise ValueError(f"loglikelihoods must be one-dimensional, got shape {values.shape}")
    if values.dtype == bool or (values.size and values.dtype.kind not in "iuf"):
        raise ValueError(f"loglikelihoods must be numbers, got dtype {values.dtype}")
    values = values.astype(np.float64, copy=False)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"loglikelihoods[{i}] = {values[i].item()!r} is not a finite number")
    offs = np.asarray(offsets)
    if offs.ndim != 1 or offs.shape[0] < 2:
        raise ValueError("offsets must be one-dimensional with at least two entries (one row)")
    if offs.dtype == bool or offs.dtype.kind not in "iu":
        raise ValueError(f"offsets must be integers, got dtype {offs.dtype}")
    offs = offs.astype(np.intp)
    if offs[0] != 0 or offs[-1] != values.shape[0]:
        raise ValueError(
            f"offsets must start at 0 and end at len(loglikelihoods) = {values.shape[0]}, "
            f"got {offs[0]} and {offs[-1]}"
        )
    sizes = np.diff(offs)
    if np.any(sizes < 1):
        r = int(np.flatnonzero(sizes < 1)[0])
        raise ValueError(f"row {r} has no choices (offsets must increase strictly)")
    return values, offs


def _row_log_softmax(values: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """log softmax within each row (log-sum-exp shifted by the row maximum)."""
    starts = offs[:-1]
    sizes = np.diff(offs)
    shifted = values - np.repeat(np.maximum.reduceat(values, starts), sizes)
    lse = np.log(np.add.reduceat(np.exp(shifted), starts))
    return shifted - np.repeat(lse, sizes)


def fit_multiclass_temperature(
    loglikelihoods: object, offsets: object, gold: object
) -> MulticlassTemperatureCalibrator:
    """T minimising the mean NLL of the gold choice under softmax(ℓ_r / T), T in [T_MIN, T_MAX].

    ``gold[r]`` indexes row r's choices (0-based). Raises ValueError for malformed input or when
    the NLL does not depend on T (every row's choices tie).
    """
    values, offs = _check_ragged(loglikelihoods, offsets)
    sizes = np.diff(offs)
    g = np.asarray(gold)
    if g.ndim != 1 or g.shape[0] != sizes.shape[0]:
        raise ValueError(f"gold must be one-dimensional of length {sizes.shape[0]} (one per row)")
    if g.dtype == bool or (g.size and g.dtype.kind not in "iu"):
        raise ValueError(f"gold must be integer choice indices, got dtype {g.dtype}")
    bad = (g < 0) | (g >= sizes)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"gold[{r}] = {int(g[r])} is not a choice index of row {r} (0..{sizes[r] - 1})"
        )
    starts = offs[:-1]
    rows = np.repeat(np.arange(sizes.shape[0]), sizes)
    # centre each row: the softmax does not change and the moments below stay well scaled
    centred = values - np.repeat(np.add.reduceat(values, starts) / sizes, sizes)
    gold_ll = centred[starts + g.astype(np.intp)]
    if not np.any(centred):
        raise ValueError("multiclass temperature cannot be fitted: every row's choices tie")

    # d/dβ mean NLL = mean_r(E_p[ℓ] − ℓ_gold), d² = mean_r Var_p(ℓ), with p = softmax(βℓ_r)
    def derivative(beta: float) -> tuple[float, float]:
        p = np.exp(_row_log_softmax(beta * centred, offs))
        mean = np.bincount(rows, weights=p * centred, minlength=sizes.shape[0])
        dev = centred - mean[rows]
        var = np.bincount(rows, weights=p * dev * dev, minlength=sizes.shape[0])
        return float(np.mean(mean - gold_ll)), float(np.mean(var))

    return MulticlassTemperatureCalibrator(_temperature_root(derivative))


def _take_rows(values: np.ndarray, offs: np.ndarray, rows: np.ndarray):
    """(values, offsets) of the given rows, in the given order."""
    sizes = np.diff(offs)[rows]
    new_offs = np.zeros(rows.shape[0] + 1, dtype=np.intp)
    np.cumsum(sizes, out=new_offs[1:])
    starts = np.repeat(offs[:-1][rows] - new_offs[:-1], sizes)
    return values[starts + np.arange(new_offs[-1])], new_offs


def cross_fit_multiclass_temperature(
    loglikelihoods: object, offsets: object, gold: object, *, folds: int = 5, seed: int = 0
) -> np.ndarray:
    """Out-of-fold recalibrated confidences of multiple-choice rows: row r's largest tempered
    softmax probability under the T fitted on the other folds (folds as in
    :func:`fold_assignment`, over rows). Raises ValueError as :func:`cross_fit` does."""
    values, offs = _check_ragged(loglikelihoods, offsets)
    g = np.asarray(gold)
    n_rows = offs.shape[0] - 1
    fold = fold_assignment(n_rows, folds=folds, seed=seed)
    out = np.empty(n_rows, dtype=np.float64)
    if g.ndim != 1 or g.shape[0] != n_rows:
        raise ValueError(f"gold must be one-dimensional of length {n_rows} (one per row)")
    for k in range(int(folds)):
        train = np.flatnonzero(fold != k)
        held = np.flatnonzero(fold == k)
        try:
            calibrator = fit_multiclass_temperature(*_take_rows(values, offs, train), g[train])
        except ValueError as err:
            raise ValueError(f"fold {k} of {folds}: {err}") from None
        out[held] = calibrator.apply(*_take_rows(values, offs, held))
    return out
