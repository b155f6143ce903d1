"""The rare-class floor of an upper-end gate: a figure on rows whose rarer outcome class is raised
to its exact binomial upper count.

A percentile bootstrap cannot show an error rate it never draws: on 30 rows all right, every
resample holds no wrong answer and the Brier score's 95% interval has zero width, though a
calibrated model at confidence 0.95 gives such a sample 21% of the time. With few members of the
rarer class (wrong answers, or right ones when those are rarer) the upper end of the interval
therefore stands in for the figure on rows where that class is as large as the data allow:

* k of n rows are of the rarer class; p_u is the one-sided Clopper-Pearson upper bound on its
  rate at level (1 + ci)/2, the level of the interval's upper end
  (:func:`~calibcli.metrics.binomial.risk_upper_bound`), and m = ceil(n·p_u) the count it
  allows;
* m − k rows of the other class are turned into the rarer one where that costs the most for the
  Brier score and the NLL: the most confident right answers made wrong (or, when right answers
  are the rarer class, the least confident wrong answers made right). A right row at confidence
  c turned wrong adds c² − (1 − c)² = 2c − 1 to the Brier sum and ln(c / (1 − c)) to the NLL's,
  both increasing in c. The binned and smooth figures take the same rows; for them this is a
  stated convention, not a proven maximum.

Rows that repeat their questions (the bootstrap draws whole questions) are counted in questions:
n the questions, k those holding a row of the rarer class, and each of the m − k questions added
is taken to hold the most rows a question holds, so (m − k)·R rows are turned (R: rows per
question). That is at least as many rows as any m − k whole questions hold, chosen where they
cost the most, so the floor is never below that of turning whole questions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.binomial import risk_upper_bound
from calibcli.metrics.core import PredictionColumns

__all__ = ["RareClass", "RareClassFloor", "rare_class_floor", "rarer_class", "turned_columns"]


@dataclass(frozen=True)
class RareClass:
    """The rarer outcome class of a set of rows and what the floor turns: ``rare`` ("wrong" or
    "right"), ``count`` of ``total`` (rows, or questions with ``per_question`` > 1), ``bound``
    the Clopper-Pearson upper count m, and ``turned`` the rows of the other class made rare,
    (m − count)·per_question at most the rows there are."""

    rare: str
    count: int
    total: int
    bound: int
    per_question: int
    turned: int


def rarer_class(
    right: int,
    wrong: int,
    *,
    level: float,
    least: int,
    counted: tuple[int, int, int] | None = None,
    per_question: int = 1,
) -> RareClass | None:
    """The rare class of ``right`` and ``wrong`` rows when it holds fewer than ``least`` members
    (None otherwise, and for no rows). ``level`` is the two-sided interval's (the bound is
    one-sided at (1 + level)/2). ``counted``: (questions, those with a right answer, those with
    a wrong one) when the rows repeat their questions, each holding at most ``per_question``
    rows."""
    total, have_right, have_wrong = (
        counted if counted is not None else (right + wrong, right, wrong)
    )
    if total <= 0:
        return None
    rare = "wrong" if have_wrong <= have_right else "right"
    count = have_wrong if rare == "wrong" else have_right
    if count >= least:
        return None
    delta = (1.0 - level) / 2.0
    upper = float(risk_upper_bound(count, total, delta=delta))
    bound = min(total, math.ceil(total * upper))
    other = right if rare == "wrong" else wrong
    turned = min(other, max(0, bound - count) * max(1, per_question))
    return RareClass(rare, int(count), int(total), int(bound), max(1, per_question), int(turned))


def turned_columns(columns: PredictionColumns, rare: RareClass) -> PredictionColumns:
    """``columns`` with ``rare.turned`` rows moved to the rare class: the most confident right
    answers made wrong, or the least confident wrong answers made right."""
    turned = rare.turned
    right = np.sort(np.asarray(columns.conf_correct, dtype=np.float64))
    wrong = np.sort(np.asarray(columns.conf_wrong, dtype=np.float64))
    if turned == 0:
        return PredictionColumns(right, wrong)
    if rare.rare == "wrong":
        cut = right.shape[0] - turned
        return PredictionColumns(right[:cut].copy(), np.sort(np.concatenate([wrong, right[cut:]])))
    return PredictionColumns(
        np.sort(np.concatenate([right, wrong[:turned]])), wrong[turned:].copy()
    )


@dataclass(frozen=True)
class RareClassFloor:
    """Each asked figure (``values``: key -> value, nan where undefined) on the rows with the
    rare class raised as ``rare`` says."""

    rare: RareClass
    values: dict[str, float]


def rare_class_floor(
    columns: PredictionColumns,
    figures: tuple[str, ...],
    *,
    level: float,
    least: int,
    bins: int = 10,
    strategy: str = "uniform",
    questions: tuple[object, object] | None = None,
    per_question: int | None = None,
) -> RareClassFloor | None:
    """The rare-class floor of ``figures`` (estimator keys: ``ece``, ``brier``, ``nll``, ...)
    on ``columns``, by :func:`~calibcli.metrics.calibration_estimates` with ``bins`` and
    ``strategy`` (turning outcomes leaves the confidences, so quantile edges too, as they
    were); None when the rarer class holds ``least`` members or more. ``questions``: the right
    and the wrong rows' question labels, when the bootstrap draws whole questions, counted in
    questions, each taken to hold as many rows as the largest does; without them but with
    ``per_question`` (the most rows a question holds) the rows are taken to hold as few
    questions as they can, ceil(rows / per_question) of each kind."""
    from calibcli.metrics.clusters import question_counts
    from calibcli.metrics.estimators import calibration_estimates

    right, wrong = int(columns.conf_correct.shape[0]), int(columns.conf_wrong.shape[0])
    counted = None
    most = per_question or 1
    if questions is not None:
        q = question_counts(*questions)
        counted = (q.questions, q.right, q.wrong)
        labels = np.concatenate([np.asarray(k).reshape(-1) for k in questions])
        if labels.size:
            most = max(most, int(np.unique(labels, return_counts=True)[1].max()))
    elif per_question and per_question > 1:
        counted = tuple(-(-x // per_question) for x in (right + wrong, right, wrong))
    found = rarer_class(right, wrong, level=level, least=least, counted=counted, per_question=most)
    if found is None:
        return None
    est = calibration_estimates(
        turned_columns(columns, found), bins=bins, strategy=strategy, smooth="smece" in figures
    )
    return RareClassFloor(found, {key: float(getattr(est, key)) for key in figures})
