"""What a calibration estimator reads on rows calibrated by construction: its mean over draws
of outcomes y* ~ Bernoulli(c) on given confidences c (the null value), the bias allowance of a
comparison's upper-end gate.

Pure numpy: no I/O, no printing. The binned ECE, MCE, RMSCE, the one-bin ECE and the smooth
ECE read sampling noise as miscalibration: per bin the ECE is |μ_b + noise_b| with μ_b the
bin's true gap, and E|μ + X| − |μ| is largest at μ = 0 for a symmetric X, so an estimate's
upward bias is at most what it reads on the same confidences with calibrated outcomes. For the
MCE (max_b |·|), the RMSCE (a Minkowski norm) and the smooth ECE (∫|smoothed μ + smoothed
noise|) the triangle inequality bounds the bias by the same null value.

Rows that repeat their questions (an inspect-ai run's epochs) are not independent: a question's
rows tend to be right or wrong together, which widens each bin's noise and so the bias. Given
the rows' ``questions``, a draw takes one uniform number per question and sets each of its rows
right when that number is below the row's confidence: every row keeps its Bernoulli(c)
outcome, and a question's rows are as dependent as outcomes with those marginals can be
(comonotone). Per bin the ECE's term is E|μ_b + Σ_i (y_i − c_i)/n|, a convex function of a sum
with coefficients of one sign, and the comonotone coupling maximises every such expectation
(the convex order), so whatever the true dependence within a question, this null bounds the
ECE's bias; the MCE, RMSCE and smooth ECE are convex in the outcomes too and take the same
draws, as a convention.

Draw recipe (reproducible in a plain loop): the N confidences sorted increasingly (stably), c,
each row's question numbered 0..Q−1 in order of its first row in that order (without
``questions`` every row is its own question, so row i's number is i); draw r = 0..R−1 takes
``u = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, 2))).random(Q)`` and
``y = u[number] < c`` (spawn key (r, 2): never the streams of the paired bootstrap, (r,), nor of
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
    questions: object = None,
) -> CalibratedNull:
    """The null value of each estimator in ``keys`` on ``confidences`` (N >= 1 values in
    [0, 1]): its mean over ``draws`` draws of calibrated outcomes (see the module docstring).
    ``questions``: each row's question (N labels, integers or anything numpy sorts), when rows
    repeat their questions; None when each row is a question of its own. ValueError naming
    what is wrong."""
    wanted = tuple(k for k in NULL_KEYS if k in set(keys))
    unknown = set(keys) - set(NULL_KEYS)
    if unknown:
        raise ValueError(f"no null value for {', '.join(sorted(unknown))}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    conf = as_vector(confidences, "confidences").astype(np.float64)
    if conf.shape[0] == 0:
        raise ValueError("confidences has no rows")
    if not (np.all(conf >= 0.0) and np.all(conf <= 1.0)):  # nan fails both
        raise ValueError("confidences must lie in [0, 1]")
    order = np.argsort(conf, kind="stable")
    number = None if questions is None else _numbered(questions, order, conf.shape[0])
    runner = _NullRunner(conf[order], bins, frozenset(wanted), number)
    values = run_replicates(runner, int(seed), int(draws), int(workers), name="calibrated draws")
    mean, error = {}, {}
    for key in wanted:
        column = values[:, _INDEX[key]]
        mean[key] = float(column.mean())
        error[key] = float(column.std(ddof=1) / math.sqrt(column.shape[0]))
    return CalibratedNull(int(draws), int(seed), mean, error)


def _numbered(questions: object, order: np.ndarray, n: int) -> np.ndarray | None:
    """Each row's question (in ``order``) numbered 0..Q−1 by its first row in that order; None
    when every row is its own question (the draws are then the same as without labels)."""
    labels = np.asarray(questions)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"questions must hold one label per confidence ({n}), got {labels.shape}")
    _, first, inverse = np.unique(labels[order], return_index=True, return_inverse=True)
    if first.shape[0] == n:
        return None
    rank = np.empty(first.shape[0], dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.shape[0])
    return rank[inverse.reshape(-1)]


class _NullRunner:
    """Draws [start, stop) of calibrated outcomes (the interface the bootstrap's worker pool
    runs): every confidence once as a wrong answer and once as a right one, weighted 1 − y*
    and y*."""

    def __init__(
        self, conf: np.ndarray, bins: int, wanted: frozenset[str], number: np.ndarray | None
    ) -> None:
        self.conf, self.number = conf, number
        n = conf.shape[0]
        self.questions = n if number is None else int(number.max()) + 1
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
            drawn = rng.random(self.questions)
            right = (drawn if self.number is None else drawn[self.number]) < self.conf
            return self.engine.weighing(np.concatenate([~right, right]))

        return weighing
