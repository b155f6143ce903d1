"""Recalibration by name: the registry of methods, fitting, cross-fitting and reading back.

Pure numpy: no I/O, no printing. :func:`fit` returns a frozen calibrator of
:mod:`calibcli.metrics.calibrators` (which states each map and its fit) whose ``apply`` maps new
confidences; ``to_dict`` / :func:`from_dict` carry its parameters through JSON. :func:`cross_fit`
gives out-of-fold recalibrated confidences, so a calibration figure computed on them is not
flattered by fitting and scoring on the same rows; :func:`cross_fit_multiclass_temperature` does
the same for multiple-choice rows (:mod:`calibcli.metrics.multiclass`).

:data:`RECALIBRATORS` maps each method of
:data:`calibcli.metrics.methods.RECALIBRATION_METHODS` (name, help, whether it needs both
classes) to its calibrator class; a new method is an entry there and a class in
:mod:`calibcli.metrics.calibrators`.

Cross-fitting: fold k holds the rows ``np.array_split(np.random.default_rng(seed).permutation(N),
folds)[k]`` (sizes differ by at most one); each row is mapped by a calibrator fitted on the rows
of all other folds. 2 <= folds <= N. Rows labelled with their questions (``clusters``: an
inspect-ai run's epochs) are held out a question at a time: the C distinct labels, numbered in
increasing order, are cut into folds as the rows would be (``permutation(C)``), and each row
takes its question's fold, so no held-out answer has its question's other answers in training.
When every label is distinct the folds are the rows' as above.

Temperature, platt and beta need both right and wrong answers and raise ValueError on a single
class; isotonic and histogram fit one class (every row maps to its accuracy, 0 or 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.calibrators import (
    BINARY_CALIBRATORS,
    EPS,
    T_MAX,
    T_MIN,
    BetaCalibrator,
    Calibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)
from calibcli.metrics.clusters import cluster_numbers
from calibcli.metrics.methods import RECALIBRATION_METHODS, RecalibrationMethod
from calibcli.metrics.multiclass import (
    MulticlassTemperatureCalibrator,
    check_ragged,
    fit_multiclass_temperature,
    pack_choices,
)
from calibcli.metrics.progress import ProgressHook, phase
from calibcli.metrics.validation import check_bins, validate_predictions

__all__ = [
    "EPS",
    "METHODS",
    "RECALIBRATORS",
    "T_MAX",
    "T_MIN",
    "BetaCalibrator",
    "Calibrator",
    "HistogramCalibrator",
    "IsotonicCalibrator",
    "MulticlassTemperatureCalibrator",
    "PlattCalibrator",
    "Recalibrator",
    "TemperatureCalibrator",
    "cross_fit",
    "cross_fit_multiclass_temperature",
    "fit",
    "fit_columns",
    "fit_multiclass_temperature",
    "fold_assignment",
    "from_dict",
    "pack_choices",
]


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Recalibrator:
    """A recalibration method: its name, help and needs, and the class that fits and applies it
    (``calibrator.fit`` on validated rows, ``calibrator.from_params`` from JSON)."""

    method: RecalibrationMethod
    calibrator: type[Calibrator]


_BY_NAME = {cls.method: cls for cls in BINARY_CALIBRATORS}
RECALIBRATORS: dict[str, Recalibrator] = {
    m.name: Recalibrator(m, _BY_NAME[m.name]) for m in RECALIBRATION_METHODS
}
METHODS = tuple(RECALIBRATORS)
# every calibrator that from_dict reads back: the methods, then multiple-choice temperature
_CLASSES = {
    **{name: r.calibrator for name, r in RECALIBRATORS.items()},
    MulticlassTemperatureCalibrator.method: MulticlassTemperatureCalibrator,
}


def from_dict(method: str, params: Mapping[str, object]):
    """The calibrator of ``method`` (one of METHODS or "multiclass_temperature") from its
    ``to_dict()`` parameters, validated: raises ValueError naming any bad value."""
    cls = _CLASSES.get(method) if isinstance(method, str) else None
    if cls is None:
        raise ValueError(f"unknown calibration method {method!r}; expected one of {list(_CLASSES)}")
    return cls.from_params(params)


# --------------------------------------------------------------------------- fitting


def _check_method(method: object) -> Recalibrator:
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; expected one of {list(METHODS)}")
    return RECALIBRATORS[method]


def _fit_validated(c: np.ndarray, y: np.ndarray, recalibrator: Recalibrator, bins: int):
    method = recalibrator.method.name
    if c.shape[0] == 0:
        raise ValueError(f"{method} cannot be fitted on no rows")
    if recalibrator.method.two_class:
        n_right = int(np.count_nonzero(y))
        if n_right in (0, y.shape[0]):
            which = "right" if n_right else "wrong"
            raise ValueError(
                f"{method} cannot be fitted on a single class: all {y.shape[0]} answers are {which}"
            )
    return recalibrator.calibrator.fit(c, y, bins=bins)


def fit(confidences: object, correct: object, *, method: str, bins: int = 10):
    """Fit a calibrator of ``method`` (one of METHODS) by maximum likelihood on the rows.

    ``bins`` is used by ``histogram`` only. Raises ValueError on empty input, NaN or values
    outside [0, 1], a single class for temperature/platt/beta, or a fit without a finite optimum.
    """
    recalibrator = _check_method(method)
    bins = check_bins(bins)
    c, y = validate_predictions(confidences, correct)
    return _fit_validated(c, y, recalibrator, bins)


def fit_columns(right: object, wrong: object, *, method: str, bins: int = 10):
    """:func:`fit` on the rows of ``right`` (right answers' confidences) then ``wrong``, the
    same calibrator, without the concatenated copies where a method can fit the two apart."""
    recalibrator = _check_method(method)
    right = np.asarray(right, dtype=np.float64)
    wrong = np.asarray(wrong, dtype=np.float64)
    fit_split = getattr(recalibrator.calibrator, "fit_split", None)
    # the single-class and no-row cases take fit's path, for its checks and messages
    if fit_split is None or not (right.shape[0] and wrong.shape[0]):
        correct = np.zeros(right.shape[0] + wrong.shape[0], dtype=bool)
        correct[: right.shape[0]] = True
        return fit(np.concatenate([right, wrong]), correct, method=method, bins=bins)
    check_bins(bins)
    for values in (right, wrong):  # NaN makes the maximum NaN, so it fails here too
        if not (np.fmin.reduce(values) >= 0.0 and np.max(values) <= 1.0):
            correct = np.zeros(right.shape[0] + wrong.shape[0], dtype=bool)
            correct[: right.shape[0]] = True
            validate_predictions(np.concatenate([right, wrong]), correct)  # words the error
    return fit_split(right, wrong, bins=bins)


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
    progress: ProgressHook | None = None,
    clusters: object | None = None,
) -> np.ndarray:
    """Out-of-fold recalibrated confidences: row i mapped by a calibrator fitted on the rows of
    every fold but its own (folds from :func:`fold_assignment`; of questions with ``clusters``,
    one integer label per row, see the module docstring). Raises ValueError for folds < 2,
    folds > N (or the questions), and for a training split the method cannot fit (naming the
    fold). ``progress`` (default: the installed hook) hears the folds fitted."""
    recalibrator = _check_method(method)
    bins = check_bins(bins)
    c, y = validate_predictions(confidences, correct)
    fold = fold_assignment(c.shape[0], folds=folds, seed=seed)
    if clusters is not None:
        numbers, count = cluster_numbers(clusters)
        if numbers.shape[0] != c.shape[0]:
            raise ValueError(f"clusters hold {numbers.shape[0]} labels, not {c.shape[0]}")
        if count < c.shape[0]:
            if count < folds:
                raise ValueError(f"folds = {folds} exceeds the number of questions ({count})")
            fold = fold_assignment(count, folds=folds, seed=seed)[numbers]
    out = np.empty(c.shape[0], dtype=np.float64)
    with phase("cross-fitting folds", int(folds), progress) as advance:
        for k in range(int(folds)):
            held = fold == k
            try:
                calibrator = _fit_validated(c[~held], y[~held], recalibrator, bins)
            except ValueError as err:
                raise ValueError(f"fold {k} of {folds}: {err}") from None
            out[held] = calibrator.apply(c[held])
            advance(k + 1)
    return out


# --------------------------------------------------------------------------- multiple choice


def _take_rows(values: np.ndarray, offs: np.ndarray, rows: np.ndarray):
    """(values, offsets) of the given rows, in the given order."""
    sizes = np.diff(offs)[rows]
    new_offs = np.zeros(rows.shape[0] + 1, dtype=np.intp)
    np.cumsum(sizes, out=new_offs[1:])
    starts = np.repeat(offs[:-1][rows] - new_offs[:-1], sizes)
    return values[starts + np.arange(new_offs[-1])], new_offs


def cross_fit_multiclass_temperature(
    loglikelihoods: object,
    offsets: object,
    gold: object,
    *,
    folds: int = 5,
    seed: int = 0,
    progress: ProgressHook | None = None,
) -> np.ndarray:
    """Out-of-fold recalibrated confidences of multiple-choice rows: row r's largest tempered
    softmax probability under the T fitted on the other folds (folds as in
    :func:`fold_assignment`, over rows). Raises ValueError as :func:`cross_fit` does;
    ``progress`` as there."""
    values, offs = check_ragged(loglikelihoods, offsets)
    g = np.asarray(gold)
    n_rows = offs.shape[0] - 1
    fold = fold_assignment(n_rows, folds=folds, seed=seed)
    out = np.empty(n_rows, dtype=np.float64)
    if g.ndim != 1 or g.shape[0] != n_rows:
        raise ValueError(f"gold must be one-dimensional of length {n_rows} (one per row)")
    with phase("cross-fitting folds", int(folds), progress) as advance:
        for k in range(int(folds)):
            train = np.flatnonzero(fold != k)
            held = np.flatnonzero(fold == k)
            try:
                calibrator = fit_multiclass_temperature(*_take_rows(values, offs, train), g[train])
            except ValueError as err:
                raise ValueError(f"fold {k} of {folds}: {err}") from None
            out[held] = calibrator.apply(*_take_rows(values, offs, held))
            advance(k + 1)
    return out
