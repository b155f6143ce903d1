"""The discordance floor of a paired comparison's upper-end gate: NEW's figure on pairs where
NEW's own errors (NEW wrong where BASE is right) are raised to their exact binomial upper count.

The paired bootstrap resamples questions; a NEW-only error it never draws it cannot show. When
no question, or few, holds a pair with NEW wrong and BASE right, every resample says NEW is
never worse than BASE there and the interval of NEW − BASE can close at 0, though a NEW that is
wrong alone on 5% of the questions gives such a sample of 60 questions 0.95^60 = 4.6% of the
time. The upper end of the interval then stands in for the difference on pairs where NEW's own
errors are as many as the data allow (the rare-class floor of
:mod:`calibcli.metrics.rare_class`, applied to the discordant questions):

* k of n questions (the bootstrap's units: rows, or the questions rows repeat) hold a pair with
  NEW wrong and BASE right; p_u is the one-sided Clopper-Pearson upper bound on their rate at
  level (1 + ci)/2, the level of the interval's upper end
  (:func:`~calibcli.metrics.binomial.risk_upper_bound`), and m = ceil(n·p_u) the count it
  allows;
* m − k whole questions whose pairs are all right on both sides (at most as many as there are)
  are made NEW-wrong: every NEW row of each turned wrong, BASE left as it is. BASE unchanged,
  NEW − BASE rises by NEW's cost of the turn alone: for the Brier score c² − (1 − c)² = 2c − 1
  per row, for the NLL ln(c / (1 − c)), so the questions whose sums of these are largest give
  the exact maximum of each. Every other figure takes the Brier score's questions, a stated
  convention.
* the floor of a figure is NEW's figure on the turned rows less BASE's; for a figure where
  higher is better (:data:`DECREASE`: accuracy, AUROC) BASE's less NEW's, how much worse NEW is.

None when k >= ``least``: the bootstrap then draws enough discordant questions to vary them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.binomial import risk_upper_bound
from calibcli.metrics.core import PredictionColumns

__all__ = ["DECREASE", "Discordance", "DiscordanceFloor", "discordance_floor", "discordance_of"]

#: The figures where higher is better: their floor is BASE's figure less NEW's.
DECREASE = frozenset({"accuracy", "auroc"})


@dataclass(frozen=True)
class Discordance:
    """``count`` of ``total`` questions hold a pair with NEW wrong and BASE right; ``bound``
    is their Clopper-Pearson upper count m; ``questions`` the questions turned NEW-wrong (m −
    count, at most those all right on both sides) and ``turned`` NEW's rows in them;
    ``per_question`` the most rows a question holds (1: each row is its own question)."""

    count: int
    total: int
    bound: int
    per_question: int
    questions: int = 0
    turned: int = 0


@dataclass(frozen=True)
class DiscordanceFloor:
    """Each asked figure's floor (``values``: key -> NEW − BASE, or BASE − NEW for
    :data:`DECREASE`, on the turned rows; nan where undefined) and what it rests on."""

    discordance: Discordance
    values: dict[str, float]


def _questions(labels: object, n: int) -> tuple[np.ndarray, int, int]:
    """Each pair's question numbered 0..C-1 (by its label; each pair its own without labels),
    C, and the most pairs a question holds."""
    if labels is None:
        return np.arange(n), n, 1
    _, number = np.unique(np.asarray(labels), return_inverse=True)
    number = number.reshape(-1)
    count = int(number.max()) + 1 if number.size else 0
    most = int(np.bincount(number).max()) if number.size else 1
    return number, count, most


def discordance_of(
    base_right: object, new_right: object, *, level: float, least: int, labels: object = None
) -> Discordance | None:
    """The discordant questions of paired outcomes (``base_right``, ``new_right``: each pair's
    outcome on each side; ``labels`` each pair's question, None when each pair is its own) and
    their upper count at the two-sided ``level`` (the bound is one-sided at (1 + level)/2);
    None when ``least`` or more questions are discordant, and for no pairs."""
    y_base, y_new = np.asarray(base_right, bool), np.asarray(new_right, bool)
    question, total, most = _questions(labels, y_new.shape[0])
    if total == 0:
        return None
    count = int(np.count_nonzero(np.bincount(question, y_base & ~y_new, total)))
    if count >= least:
        return None
    upper = float(risk_upper_bound(count, total, delta=(1.0 - level) / 2.0))
    return Discordance(count, total, min(total, math.ceil(total * upper)), most)


def discordance_floor(
    base: tuple[object, object],
    new: tuple[object, object],
    figures: tuple[str, ...],
    *,
    level: float,
    least: int,
    bins: int = 10,
    labels: object = None,
) -> DiscordanceFloor | None:
    """The discordance floor of ``figures`` (estimator keys: ``brier``, ``nll``, ``ece``,
    ``accuracy``, ...) on paired rows (``base`` and ``new``: (confidences, outcomes), row for
    row; ``labels`` each pair's question), each side's figure by
    :func:`~calibcli.metrics.calibration_estimates` with ``bins``; None when ``least`` or more
    questions are discordant (:func:`discordance_of`)."""
    from dataclasses import replace

    from calibcli.metrics.estimators import calibration_estimates

    c_new, y_new = np.asarray(new[0], np.float64), np.asarray(new[1], bool)
    c_base, y_base = np.asarray(base[0], np.float64), np.asarray(base[1], bool)
    found = discordance_of(y_base, y_new, level=level, least=least, labels=labels)
    if found is None:
        return None
    question, total, _ = _questions(labels, c_new.shape[0])
    free = np.flatnonzero(np.bincount(question, ~(y_new & y_base), total) == 0)
    want = max(0, found.bound - found.count)
    smooth = "smece" in figures
    base_est = calibration_estimates(
        PredictionColumns(c_base[y_base], c_base[~y_base]), bins=bins, smooth=smooth
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        costs = {"brier": 2.0 * c_new - 1.0, "nll": np.log(c_new / (1.0 - c_new))}
    values: dict[str, float] = {}
    questions = turned = 0
    for cost in ("brier", "nll"):
        asked = [k for k in figures if (k == "nll") == (cost == "nll")]
        if not asked:
            continue
        summed = np.bincount(question, np.nan_to_num(costs[cost], nan=0.0), total)
        chosen = free[np.argsort(-summed[free], kind="stable")][:want]
        flip = np.isin(question, chosen)
        right = y_new & ~flip
        new_est = calibration_estimates(
            PredictionColumns(c_new[right], c_new[~right]), bins=bins, smooth=smooth
        )
        for key in asked:
            ours, theirs = float(getattr(new_est, key)), float(getattr(base_est, key))
            values[key] = theirs - ours if key in DECREASE else ours - theirs
        questions, turned = max(questions, int(chosen.shape[0])), max(turned, int(flip.sum()))
    done = replace(found, questions=questions, turned=turned)
    return DiscordanceFloor(done, {k: values[k] for k in figures})
