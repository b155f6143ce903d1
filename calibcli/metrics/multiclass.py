"""Multiple-choice temperature scaling: one temperature for the softmax over each row's choices.

Pure numpy: no I/O, no printing. Per row the loglikelihoods ℓ of its choices and the gold index g;
T minimises mean_r [log Σ_j exp(ℓ_rj / T) − ℓ_rg / T] and the recalibrated confidence is
max_j softmax(ℓ_r / T)_j (Guo et al. 2017). T is searched in [T_MIN, T_MAX] as the binary
temperature's is (:mod:`calibcli.metrics.calibrators`). Rows are ragged, given as one flat
``loglikelihoods`` vector and CSR-style ``offsets``: row r holds
``loglikelihoods[offsets[r]:offsets[r + 1]]``, offsets[0] = 0, offsets[-1] = len(loglikelihoods)
and every row has at least one choice (:func:`pack_choices` builds both from nested lists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from calibcli.metrics.calibrators import (
    check_param_keys,
    check_temperature,
    number_param,
    temperature_root,
)

__all__ = ["MulticlassTemperatureCalibrator", "fit_multiclass_temperature", "pack_choices"]


@dataclass(frozen=True)
class MulticlassTemperatureCalibrator:
    """Multiple-choice temperature: p_r = softmax(ℓ_r / T); confidence = max_j p_rj."""

    temperature: float
    method: ClassVar[str] = "multiclass_temperature"

    def probabilities(self, loglikelihoods: object, offsets: object) -> np.ndarray:
        """The tempered softmax of every choice, flat, in the order of ``loglikelihoods``."""
        values, offs = check_ragged(loglikelihoods, offsets)
        log_p = _row_log_softmax(values / self.temperature, offs)
        return np.exp(log_p)

    def apply(self, loglikelihoods: object, offsets: object) -> np.ndarray:
        """Recalibrated confidence of each row: its largest tempered softmax probability."""
        values, offs = check_ragged(loglikelihoods, offsets)
        log_p = _row_log_softmax(values / self.temperature, offs)
        return np.exp(np.maximum.reduceat(log_p, offs[:-1]))

    def to_dict(self) -> dict[str, object]:
        return {"temperature": float(self.temperature)}

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> MulticlassTemperatureCalibrator:
        p = check_param_keys(params, cls.method, ("temperature",))
        return cls(check_temperature(number_param(p, "temperature", cls.method), cls.method))


def pack_choices(rows: Iterable[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """(flat loglikelihoods, offsets) of ragged rows: ``[[a, b], [c, d, e]]`` →
    ``([a, b, c, d, e], [0, 2, 5])``."""
    rows = [np.asarray(r, dtype=np.float64).ravel() for r in rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.intp)
    np.cumsum([r.shape[0] for r in rows], out=offsets[1:])
    values = np.concatenate(rows) if rows else np.zeros(0)
    return values, offsets


def check_ragged(loglikelihoods: object, offsets: object) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values, intp offsets) of ragged rows, checked: finite values, offsets from 0 to
    len(values), every row with at least one choice."""
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
    values, offs = check_ragged(loglikelihoods, offsets)
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

    return MulticlassTemperatureCalibrator(temperature_root(derivative))
