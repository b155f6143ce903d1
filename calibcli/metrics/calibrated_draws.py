"""What a calibration estimator reads on rows calibrated by construction: its mean over draws
of outcomes y* ~ Bernoulli(c) on given confidences c (the null value), the bias allowance of a
comparison's upper-end gate.

Pure numpy: no I/O, no printing. The binned ECE, MCE, RMSCE, the one-bin ECE and the smooth
ECE read sampling noise as miscalibration: per bin the ECE is |μ_b + noise_b| with μ_b the
bin's true gap, and E|μ + X| − |μ| is largest at μ = 0 for a symmetric X, so an estimate's
upward bias is at most what it reads on the same confidences with calibrated outcomes. For the
MCE (max_b |·|), the RMSCE (a Minkowski norm) and the smooth ECE (∫|smoothed μ + smoothed
noise|) the triangle inequality bounds the bias by the same null value.

Draw recipe (reproducible in a plain loop): the N confidences sorted increasingly, c; draw
r = 0..R−1 takes ``y = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, 2)))
.random(N) < c`` (spawn key (r, 2): never the streams of the paired bootstrap, (r,), nor of
the unpaired one, (r, 0) and (r, 1)); the estimates of (c, y) come from the bootstrap's
replicate engine (:class:`~calibcli.metrics.bootstrap.ReplicateEngine`, bins fixed at the
uniform edges), whose rows here are every confidence once as a wrong answer and once as a right
one, weighted 1 − y and y. The mean and its Monte Carlo standard error (sample standard
deviation / √R) are over the R draws; they depend on (confidences, bins, seed, R) alone, never
on the rows' order or ``workers``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.bootstrap import ReplicateEngine
from calibcli.metrics.core import bin_edges
from calibcli.metrics.estimators import SCALAR_KEYS
from calibcli.metrics.replicates import run_replicates
from calibcli.metrics.validation import as_vector

__all__ = ["NULL_DRAWS", "NULL_KEYS", "CalibratedNull", "calibrated_null"]

NULL_DRAWS = 200
"""Draws of calibrated outcomes the null value averages (its Monte Carlo standard error is
about a fourteenth of one draw's spread)."""

NULL_KEYS = ("ece", "mce", "rmsce", "smece", "ece_1bin")
"""The estimators biased upward by sampling noise, whose null value bounds that bias (the
Brier score, the NLL and the debiased RMSCE are not biased that way)."""

_STREAM = 2  # the draws' second spawn key: the bootstraps use (r,), (r, 0) and (r, 1)
_INDEX = {key: i for i, key in enumerate(SCALAR_KEYS)}


@dataclass(frozen=True)
class CalibratedNull:
    """Each estimator's mean over ``draws`` calibrated draws, and that mean's Monte Carlo
    standard error, keyed as :data:`NULL_KEYS` (those requested)."""

    draws: int
    seed: int
    mean: dict[str, float]
    standard_error: dict[str, float]


def calibrated_null(
    confidences: object,
    *,
    keys: Iterable[str] = NULL_KEYS,
    bins: int = 10,
    draws: int = NULL_DRAWS,
    seed: int = 0,
    workers: int = 1,
) -> CalibratedNull:
    """The null value of each estimator in ``keys`` on ``confidences`` (N >= 1 values in
    [0, 1]): its mean over ``draws`` draws of calibrated outcomes (see the module docstring).
    ValueError naming what is wrong."""
    wanted = tuple(k for k in NULL_KEYS if k in set(keys))
    unknown = set(keys) - set(NULL_KEYS)
    if unknown:
        raise ValueError(f"no null value for {', '.join(sorted(unknown))}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    conf = np.sort(as_vector(confidences, "confidences").astype(np.float64))
    if conf.shape[0] == 0:
        raise ValueError("confidences has no rows")
    if not (np.all(conf >= 0.0) and np.all(conf <= 1.0)):  # nan fails both
        raise ValueError("confidences must lie in [0, 1]")
    runner = _NullRunner(conf, bins, frozenset(wanted))
    values = run_replicates(runner, int(seed), int(draws), int(workers), name="calibrated draws")
    mean, error = {}, {}
    for key in wanted:
        column = values[:, _INDEX[key]]
        mean[key] = float(column.mean())
        error[key] = float(column.std(ddof=1) / math.sqrt(column.shape[0]))
    return CalibratedNull(int(draws), int(seed), mean, error)


class _NullRunner:
    """Draws [start, stop) of calibrated outcomes (the interface the bootstrap's worker pool
    runs): every confidence once as a wrong answer and once as a right one, weighted 1 − y*
    and y*."""

    def __init__(self, conf: np.ndarray, bins: int, wanted: frozenset[str]) -> None:
        self.conf = conf
        n = conf.shape[0]
        edges = bin_edges(bins)
        self.engine = ReplicateEngine.from_layout(np.concatenate([conf, conf]), n, edges, wanted)

    def run(self, seed: int, start: int, stop: int) -> np.ndarray:
        out = np.empty((stop - start, len(SCALAR_KEYS)))
        self.engine.evaluate_each(map(self._weighing(seed), range(start, stop)), out)
        return out

    def _weighing(self, seed: int) -> Callable[[int], Callable]:
        """Draw r's block filler: the rows' weights from draw r's outcomes."""

        def weighing(r: int) -> Callable:
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, _STREAM)))
            right = rng.random(self.conf.shape[0]) < self.conf
            return self.engine.weighing(np.concatenate([~right, right]))

        return weighing
