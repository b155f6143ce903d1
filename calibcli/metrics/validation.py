"""Validation of prediction vectors at the edge of the metrics: every check names the offending
position and value (``confidences[3] = 1.5 is outside [0, 1]``)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["check_bins", "validate_predictions", "validate_weights"]


def check_bins(bins: object) -> int:
    """Return ``bins`` as an int, or raise ValueError unless it is a positive integer."""
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    return int(bins)


def first_bad(mask: np.ndarray) -> int:
    """Position of the first True in ``mask`` (which has one)."""
    return int(np.flatnonzero(mask)[0])


def as_vector(values: object, name: str) -> np.ndarray:
    """``values`` as a one-dimensional array (any dtype), or ValueError naming ``name``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _as_confidences(values: object, name: str = "confidences") -> np.ndarray:
    arr = as_vector(values, name)
    if arr.dtype == bool:
        raise ValueError(f"{name} must be numbers in [0, 1], got booleans")
    if arr.size and arr.dtype.kind not in "iuf":
        _first_given(values, name, _is_number, "is not a number")
        raise ValueError(f"{name} must be numbers in [0, 1], got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # NaN compares false, so it is caught here too
    if bad.any():
        i = first_bad(bad)
        what = "is not a finite number" if not math.isfinite(arr[i]) else "is outside [0, 1]"
        raise ValueError(f"{name}[{i}] = {arr[i].item()!r} {what}")
    return arr


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


def _is_outcome(v: object) -> bool:
    return isinstance(v, (bool, np.bool_)) or (_is_number(v) and (v == 0 or v == 1))


def _first_given(values: object, name: str, ok: Callable[[object], bool], what: str) -> None:
    """For a list or tuple that numpy made strings or objects (``[0.9, "0.6"]`` is all
    strings), the ValueError naming its first value, as given, that is not ``ok``; nothing
    raised otherwise (an array's dtype is its own)."""
    if not isinstance(values, (list, tuple)):
        return
    for i, v in enumerate(values):
        if not ok(v):
            raise ValueError(f"{name}[{i}] = {v!r} {what}")


def as_correct(values: object, name: str = "correct") -> np.ndarray:
    arr = as_vector(values, name)
    if arr.dtype == bool:
        return arr
    if arr.size and arr.dtype.kind not in "iuf":
        _first_given(values, name, _is_outcome, "is not true/false or 0/1")
        raise ValueError(f"{name} must be booleans or 0/1, got dtype {arr.dtype}")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        i = first_bad(bad)
        raise ValueError(f"{name}[{i}] = {arr[i].item()!r} is not true/false or 0/1")
    return arr.astype(bool)


def validate_weights(values: object, n: int) -> np.ndarray:
    """Row multiplicities: non-negative, finite, length ``n``; int64 when all are whole numbers."""
    arr = as_vector(values, "weights")
    if arr.shape[0] != n:
        raise ValueError(f"weights has length {arr.shape[0]}, expected {n}")
    if arr.dtype.kind in "iu":
        if arr.size and arr.min() < 0:
            i = first_bad(arr < 0)
            raise ValueError(f"weights[{i}] = {arr[i].item()!r} is negative")
        return arr.astype(np.int64, copy=False)
    arr = arr.astype(np.float64, copy=False)
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        i = first_bad(bad)
        raise ValueError(f"weights[{i}] = {arr[i].item()!r} is not a finite non-negative number")
    if np.array_equal(arr, np.floor(arr)) and (arr.size == 0 or arr.max() < 2.0**53):
        return arr.astype(np.int64)
    return arr


def validate_predictions(confidences: object, correct: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of prediction vectors and return them as (float64, bool) arrays.

    Confidences must be finite numbers in [0, 1]; ``correct`` booleans or 0/1; lengths equal.
    Raises ValueError naming the first offending position and value.
    """
    conf = _as_confidences(confidences)
    corr = as_correct(correct)
    if conf.shape[0] != corr.shape[0]:
        raise ValueError(
            f"confidences and correct differ in length: {conf.shape[0]} != {corr.shape[0]}"
        )
    return conf, corr


def row_weights(weights: object, n: int) -> np.ndarray:
    """Row multiplicities of ``n`` rows as given: int64 when they are integers, else float64;
    checked finite and non-negative. Unlike :func:`validate_weights`, whole-number floats stay
    float64, so float weights keep float arithmetic."""
    w = np.asarray(weights)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"weights must be 1-D of length {n}, got shape {w.shape}")
    if w.size and (w.dtype == bool or w.dtype.kind not in "iuf"):
        raise ValueError(f"weights must be non-negative numbers, got dtype {w.dtype}")
    if w.dtype.kind in "iu":
        bad = w < 0
        out = w.astype(np.int64, copy=False)
    else:
        w = w.astype(np.float64, copy=False)
        bad = ~(np.isfinite(w) & (w >= 0.0))
        out = w
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"weights[{i}] = {w[i].item()!r} is not a finite non-negative number")
    return out
