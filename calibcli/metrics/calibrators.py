"""The binary calibrators: maps that make confidences honest, each with its maximum-likelihood
fit and its JSON parameters.

Pure numpy: no I/O, no printing. A calibrator is frozen; ``apply`` maps confidences of any shape,
``to_dict`` / ``from_params`` carry its parameters through JSON, and the class method ``fit``
fits it on validated rows (:func:`calibcli.metrics.recalibration.fit` validates and picks the
class by name).

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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from calibcli.metrics.core import bin_edges, bin_index
from calibcli.metrics.isotonic import Blocks, interpolate, isotonic_blocks, signed_zero
from calibcli.metrics.logistic import design_matrix, logistic_fit, sigmoid
from calibcli.metrics.pairwise import SLICE, pairwise_sums
from calibcli.metrics.roots import solve_increasing

__all__ = [
    "BINARY_CALIBRATORS",
    "EPS",
    "T_MAX",
    "T_MIN",
    "BetaCalibrator",
    "Calibrator",
    "HistogramCalibrator",
    "IsotonicCalibrator",
    "PlattCalibrator",
    "TemperatureCalibrator",
]

EPS = 1e-12
T_MIN = 1e-4
T_MAX = 1e4


# --------------------------------------------------------------------------- numerics


_sigmoid = sigmoid


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


def temperature_root(derivative: Callable[[float], tuple[float, float]]) -> float:
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


# --------------------------------------------------------------------------- parameters


def number_param(params: Mapping[str, object], key: str, method: str) -> float:
    """``params[key]`` as a finite float, or ValueError naming the method and the key."""
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{method} parameter {key!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{method} parameter {key!r} must be finite, got {value!r}")
    return value


def number_list_param(
    params: Mapping[str, object], key: str, method: str, *, nullable: bool = False
) -> np.ndarray:
    """``params[key]`` as a float64 array of finite numbers (``None`` as nan if ``nullable``)."""
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


def check_param_keys(params: object, method: str, keys: tuple[str, ...]) -> Mapping[str, object]:
    """``params`` if it is a mapping with exactly ``keys``, else ValueError listing the gaps."""
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
    if arr.size and np.fmin.reduce(arr, axis=None) >= 0.0 and np.max(arr) <= 1.0:
        return arr  # NaN makes the maximum NaN: only valid rows pass without the full check
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # NaN compares false, so it is caught here too
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        v = float(arr[i])
        what = "is not a finite number" if not math.isfinite(v) else "is outside [0, 1]"
        name = "confidence" if arr.ndim == 0 else f"confidences[{i[0] if len(i) == 1 else i}]"
        raise ValueError(f"{name} = {v!r} {what}")
    return arr


def _mapped(confidences: object, rule: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``rule`` (elementwise, float64 out) applied to valid confidences; a long 1-D array a
    slice at a time into one output, so its temporaries stay the size of a slice."""
    c = _confidences_to_map(confidences)
    if c.ndim != 1 or c.shape[0] <= SLICE:
        return rule(c)
    out = np.empty(c.shape[0], dtype=np.float64)
    for a in range(0, c.shape[0], SLICE):
        out[a : a + SLICE] = rule(c[a : a + SLICE])
    return out


def _readonly(values: object) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.flags.writeable:
        arr = arr.copy()
        arr.flags.writeable = False
    return arr


def check_temperature(t: float, method: str) -> float:
    """``t`` if it is a valid temperature (> 0)."""
    if not t > 0:
        raise ValueError(f"{method} parameter 'temperature' must be > 0, got {t!r}")
    return t


@dataclass(frozen=True)
class _Labels:
    """The outcomes of the rows a fit sees: how many are right, and the targets of rows
    [a, b) given the target of a right and of a wrong answer."""

    n_pos: int
    of: Callable[[int, int], np.ndarray]  # (a, b) -> bool, rows [a, b) right

    def targets(self, right: float, wrong: float) -> Callable[[int, int], np.ndarray]:
        return lambda a, b: np.where(self.of(a, b), right, wrong)


def _labels(y: np.ndarray) -> _Labels:
    return _Labels(int(np.count_nonzero(y)), lambda a, b: y[a:b])


def _split_labels(n_right: int, n_wrong: int) -> _Labels:
    """Rows right first, then wrong."""
    n = n_right + n_wrong
    return _Labels(n_right, lambda a, b: np.arange(a, min(b, n)) < n_right)


def _distinct_clipped(parts: tuple[np.ndarray, ...]) -> int:
    """How many distinct values the clipped confidences of ``parts`` take, counted up to 3:
    clipping keeps the order, so a third value lies strictly between the extremes."""
    lo = min(float(np.min(p)) for p in parts if p.shape[0])
    hi = max(float(np.max(p)) for p in parts if p.shape[0])
    lo, hi = (float(v) for v in _clip(np.array([lo, hi])))
    if lo == hi:
        return 1
    for values in parts:
        for a in range(0, values.shape[0], SLICE):
            part = _clip(values[a : a + SLICE])
            if np.any((part > lo) & (part < hi)):
                return 3
    return 2


# --------------------------------------------------------------------------- calibrators


class Calibrator(Protocol):
    """What every binary calibrator offers."""

    method: ClassVar[str]

    def apply(self, confidences: object) -> np.ndarray: ...

    def to_dict(self) -> dict[str, object]: ...

    @classmethod
    def fit(cls, c: np.ndarray, y: np.ndarray, *, bins: int = 10) -> Calibrator:
        """Fit on validated rows: ``c`` float64 in [0, 1], ``y`` bool, at least one row, and
        both classes for a method that needs them. ``bins`` is the histogram's only."""
        ...

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> Calibrator: ...


@dataclass(frozen=True)
class TemperatureCalibrator:
    """c' = σ(logit(c) / T), T > 0. Non-decreasing in c."""

    temperature: float
    method: ClassVar[str] = "temperature"

    def apply(self, confidences: object) -> np.ndarray:
        return _mapped(confidences, lambda c: _sigmoid(_logit(c) / self.temperature))

    def to_dict(self) -> dict[str, object]:
        return {"temperature": float(self.temperature)}

    @classmethod
    def fit(cls, c: np.ndarray, y: np.ndarray, *, bins: int = 10) -> TemperatureCalibrator:
        """T by maximum likelihood, searched in [T_MIN, T_MAX] (see the module docstring)."""
        z = _logit(c)
        if not np.any(z):
            raise ValueError("temperature cannot be fitted: every confidence is 0.5")
        yf = y.astype(np.float64)

        # mean NLL(β) with β = 1/T is convex; its derivative mean(z·(σ(βz) − y)) is non-decreasing
        def derivative(beta: float) -> tuple[float, float]:
            p = _sigmoid(beta * z)
            return float(np.mean(z * (p - yf))), float(np.mean(z * z * p * (1.0 - p)))

        return cls(temperature_root(derivative))

    @classmethod
    def fit_split(
        cls, right: np.ndarray, wrong: np.ndarray, *, bins: int = 10
    ) -> TemperatureCalibrator:
        """:meth:`fit` on the rows ``right`` (y = 1) then ``wrong`` (y = 0), the same T to the
        bit, with z the only array of a row's size: the means are summed in slices as np.mean
        sums the whole array."""
        n_right = right.shape[0]
        z = np.empty(n_right + wrong.shape[0])
        for offset, values in ((0, right), (n_right, wrong)):
            for a in range(0, values.shape[0], SLICE):
                part = values[a : a + SLICE]
                z[offset + a : offset + a + part.shape[0]] = _logit(part)
        if not np.any(z):
            raise ValueError("temperature cannot be fitted: every confidence is 0.5")
        n = z.shape[0]

        def derivative(beta: float) -> tuple[float, float]:
            def pieces(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
                zs = z[a:b]
                y = np.zeros(b - a)
                y[: max(0, n_right - a)] = 1.0
                p = _sigmoid(beta * zs)
                return zs * (p - y), zs * zs * p * (1.0 - p)

            first, second = pairwise_sums(n, pieces)
            return first / n, second / n

        return cls(temperature_root(derivative))

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> TemperatureCalibrator:
        p = check_param_keys(params, cls.method, ("temperature",))
        return cls(check_temperature(number_param(p, "temperature", cls.method), cls.method))


@dataclass(frozen=True)
class PlattCalibrator:
    """c' = σ(a·logit(c) + b). Non-decreasing when a ≥ 0."""

    a: float
    b: float
    method: ClassVar[str] = "platt"

    def apply(self, confidences: object) -> np.ndarray:
        return _mapped(confidences, lambda c: _sigmoid(self.a * _logit(c) + self.b))

    def to_dict(self) -> dict[str, object]:
        return {"a": float(self.a), "b": float(self.b)}

    @classmethod
    def fit(cls, c: np.ndarray, y: np.ndarray, *, bins: int = 10) -> PlattCalibrator:
        """(a, b) by maximum likelihood on Platt's smoothed targets."""
        return cls._fit((c,), _labels(y))

    @classmethod
    def fit_split(cls, right: np.ndarray, wrong: np.ndarray, *, bins: int = 10) -> PlattCalibrator:
        """:meth:`fit` on the rows ``right`` (y = 1) then ``wrong`` (y = 0), the same (a, b)
        to the bit, without a row-sized copy of the confidences or the targets."""
        return cls._fit((right, wrong), _split_labels(right.shape[0], wrong.shape[0]))

    @classmethod
    def _fit(cls, parts: tuple[np.ndarray, ...], labels: _Labels) -> PlattCalibrator:
        features = design_matrix(parts, lambda c: (_logit(c),))
        z = features.column(0)
        if np.min(z) == np.max(z):
            raise ValueError("platt cannot be fitted: every confidence is the same")
        n_pos = labels.n_pos
        n_neg = features.n - n_pos
        right, wrong = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
        start = np.array([0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))])
        a, b = logistic_fit(features, labels.targets(right, wrong), start, "platt")
        return cls(float(a), float(b))

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> PlattCalibrator:
        p = check_param_keys(params, cls.method, ("a", "b"))
        return cls(number_param(p, "a", cls.method), number_param(p, "b", cls.method))


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
        return _mapped(confidences, lambda c: interpolate(c, self.x, self.y))

    def to_dict(self) -> dict[str, object]:
        return {"x": self.x.tolist(), "y": self.y.tolist()}

    @classmethod
    def fit(cls, c: np.ndarray, y: np.ndarray, *, bins: int = 10) -> IsotonicCalibrator:
        """Pool-adjacent-violators over the distinct confidences."""
        return cls._fit(isotonic_blocks(c[y], c[~y]), (c,))

    @classmethod
    def fit_split(
        cls, right: np.ndarray, wrong: np.ndarray, *, bins: int = 10
    ) -> IsotonicCalibrator:
        """:meth:`fit` on the rows ``right`` (y = 1) then ``wrong`` (y = 0): the same points."""
        return cls._fit(isotonic_blocks(right, wrong), (right, wrong))

    @classmethod
    def _fit(cls, blocks: Blocks, rows: tuple[np.ndarray, ...]) -> IsotonicCalibrator:
        first, last, right, count = blocks
        if first[0] == 0.0:  # zero's point is the first zero of the rows, +0.0 or −0.0
            first[0] = signed_zero(rows)
        means = right.astype(np.float64) / count.astype(np.float64)
        # a block keeps its first and last confidence (one point if they coincide)
        two = last > first
        size = np.where(two, 2, 1)
        at = np.cumsum(size) - size
        x = np.empty(int(size.sum()))
        x[at] = first
        x[at[two] + 1] = last[two]
        return cls(_readonly(x), _readonly(np.clip(np.repeat(means, size), 0.0, 1.0)))

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> IsotonicCalibrator:
        p = check_param_keys(params, cls.method, ("x", "y"))
        x = number_list_param(p, "x", cls.method)
        y = number_list_param(p, "y", cls.method)
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
        edges = bin_edges(self.bins)

        def rule(c: np.ndarray) -> np.ndarray:
            mapped = self.accuracy[bin_index(c.ravel(), edges)].reshape(c.shape)
            return np.where(np.isnan(mapped), c, mapped)

        return _mapped(confidences, rule)

    def to_dict(self) -> dict[str, object]:
        return {"accuracy": [None if math.isnan(v) else v for v in self.accuracy.tolist()]}

    @classmethod
    def fit(cls, c: np.ndarray, y: np.ndarray, *, bins: int = 10) -> HistogramCalibrator:
        """Each of ``bins`` equal-width bins' accuracy on the rows (nan if empty)."""
        idx = bin_index(c, bin_edges(bins))
        count = np.bincount(idx, minlength=bins)
        right = np.bincount(idx[y], minlength=bins)
        acc = np.full(bins, np.nan)
        np.divide(right, count, out=acc, where=count > 0)
        return cls(_readonly(acc))

    @classmethod
    def fit_split(cls, right: np.ndarray, wrong: np.ndarray, *, bins: int = 10):
        """:meth:`fit` on the rows ``right`` (y = 1) then ``wrong`` (y = 0), binned a slice at
        a time: the counts are exact integers, so the accuracies are the same floats."""
        edges = bin_edges(bins)
        count = np.zeros(bins, dtype=np.intp)
        right_count = np.zeros(bins, dtype=np.intp)
        for values, totals in ((right, (count, right_count)), (wrong, (count,))):
            for a in range(0, values.shape[0], SLICE):
                seen = np.bincount(bin_index(values[a : a + SLICE], edges), minlength=bins)
                for total in totals:
                    total += seen
        acc = np.full(bins, np.nan)
        np.divide(right_count, count, out=acc, where=count > 0)
        return cls(_readonly(acc))

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> HistogramCalibrator:
        p = check_param_keys(params, cls.method, ("accuracy",))
        acc = number_list_param(p, "accuracy", cls.method, nullable=True)
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
        def rule(c: np.ndarray) -> np.ndarray:
            ln_c, neg_ln_1mc = _beta_features(c)
            return _sigmoid(self.a * ln_c + self.b * neg_ln_1mc + self.intercept)

        return _mapped(confidences, rule)

    def to_dict(self) -> dict[str, object]:
        return {"a": float(self.a), "b": float(self.b), "intercept": float(self.intercept)}

    @classmethod
    def fit(cls, c: np.ndarray, y: np.ndarray, *, bins: int = 10) -> BetaCalibrator:
        """(a, b, intercept) by maximum likelihood, slopes kept >= 0 as ``betacal`` does."""
        return cls._fit((c,), _labels(y))

    @classmethod
    def fit_split(cls, right: np.ndarray, wrong: np.ndarray, *, bins: int = 10) -> BetaCalibrator:
        """:meth:`fit` on the rows ``right`` (y = 1) then ``wrong`` (y = 0), the same
        parameters to the bit, with one design matrix at a time."""
        return cls._fit((right, wrong), _split_labels(right.shape[0], wrong.shape[0]))

    @classmethod
    def _fit(cls, parts: tuple[np.ndarray, ...], labels: _Labels) -> BetaCalibrator:
        if _distinct_clipped(parts) < 3:
            raise ValueError("beta cannot be fitted: it needs at least three distinct confidences")
        targets = labels.targets(1.0, 0.0)
        accuracy = labels.n_pos / sum(p.shape[0] for p in parts)  # np.mean of the 0/1 targets
        base = math.log(accuracy / (1.0 - accuracy))  # the intercept-only optimum

        def one_slope(feature: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
            features = design_matrix(parts, lambda c: (feature(_clip(c)),))
            slope, icpt = logistic_fit(features, targets, np.array([0, base]), "beta")
            return (slope, icpt) if slope >= 0 else (0.0, base)

        a, b, icpt = logistic_fit(
            design_matrix(parts, _beta_features), targets, np.array([0.0, 0.0, base]), "beta"
        )
        if a < 0:
            a, (b, icpt) = 0.0, one_slope(lambda c: -np.log1p(-c))
        elif b < 0:
            b, (a, icpt) = 0.0, one_slope(np.log)
        return cls(float(a), float(b), float(icpt))

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> BetaCalibrator:
        p = check_param_keys(params, cls.method, ("a", "b", "intercept"))
        a, b = number_param(p, "a", cls.method), number_param(p, "b", cls.method)
        for name, v in (("a", a), ("b", b)):
            if v < 0:
                raise ValueError(f"beta parameter {name!r} must be >= 0 (monotone map), got {v!r}")
        return cls(a, b, number_param(p, "intercept", cls.method))


# in the order of calibcli.metrics.methods.RECALIBRATION_METHODS
BINARY_CALIBRATORS: tuple[type[Calibrator], ...] = (
    TemperatureCalibrator,
    PlattCalibrator,
    IsotonicCalibrator,
    HistogramCalibrator,
    BetaCalibrator,
)
