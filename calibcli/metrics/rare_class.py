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
  both increasing in c, so for these two figures that placement is the exact maximum.
* the binned and smooth figures (ECE, MCE, RMSCE, smooth ECE, one-bin ECE, ...) are not
  increasing in it: where the most confident bin is underconfident (accuracy above confidence),
  turning its right answers wrong moves it toward calibration and lowers the ECE. They take the
  largest value over at most bins + 1 placements: the one above, and for each bin of the
  report's bins holding rows of the other class, that bin's rows turned first (the most
  confident first within it; the least confident wrong rows made right for the mirror), any
  remainder as above from outside it. This is a stated convention, not a proven maximum; the
  floor records which placement decided (``placed``).

Rows that repeat their questions (the bootstrap draws whole questions) are counted in questions:
n the questions, k those holding a row of the rarer class, and each of the m − k questions added
is taken to hold the most rows a question holds, so (m − k)·R rows are turned (R: rows per
question). That is at least as many rows as any m − k whole questions hold, chosen where they
cost the most, so the floor is never below that of turning whole questions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibcli.metrics.binomial import risk_upper_bound
from calibcli.metrics.core import PredictionColumns

__all__ = [
    "EXACT_PLACEMENT",
    "RareClass",
    "RareClassFloor",
    "rare_class_floor",
    "rare_class_of",
    "rarer_class",
    "turned_columns",
]

#: The figures whose floor turns the most confident rows (the least confident, mirrored): their
#: cost of a turned row is increasing in its confidence, so that placement is their maximum.
EXACT_PLACEMENT = frozenset({"brier", "nll"})


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


def turned_columns(
    columns: PredictionColumns, rare: RareClass, *, within: tuple[np.ndarray, int] | None = None
) -> PredictionColumns:
    """``columns`` with ``rare.turned`` rows moved to the rare class: the most confident right
    answers made wrong, or the least confident wrong answers made right. ``within``: (edges,
    bin), that bin's rows of the other class turned first (in the same order within it), the
    remainder from outside it."""
    from calibcli.metrics.core import bin_index

    turned = rare.turned
    right = np.sort(np.asarray(columns.conf_correct, dtype=np.float64))
    wrong = np.sort(np.asarray(columns.conf_wrong, dtype=np.float64))
    if turned == 0:
        return PredictionColumns(right, wrong)
    other = right if rare.rare == "wrong" else wrong
    order = np.arange(other.shape[0])
    if rare.rare == "wrong":  # the most confident right answers first
        order = order[::-1]
    if within is not None:
        inside = bin_index(other, within[0])[order] == within[1]
        order = np.concatenate([order[inside], order[~inside]])
    take = np.zeros(other.shape[0], dtype=bool)
    take[order[:turned]] = True
    moved, kept = other[take], other[~take]
    if rare.rare == "wrong":
        return PredictionColumns(kept, np.sort(np.concatenate([wrong, moved])))
    return PredictionColumns(np.sort(np.concatenate([right, moved])), kept)


@dataclass(frozen=True)
class RareClassFloor:
    """Each asked figure (``values``: key -> value, nan where undefined) on the rows with the
    rare class raised as ``rare`` says. ``placed``: for each figure, the bin whose rows were
    turned first in the placement that gave its value, None for the most confident rows (the
    least confident, mirrored)."""

    rare: RareClass
    values: dict[str, float]
    placed: dict[str, int | None] = field(default_factory=dict)


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
    from calibcli.metrics.core import bin_index
    from calibcli.metrics.estimators import calibration_estimates

    found = rare_class_of(
        columns, level=level, least=least, questions=questions, per_question=per_question
    )
    if found is None:
        return None
    est = calibration_estimates(
        turned_columns(columns, found), bins=bins, strategy=strategy, smooth="smece" in figures
    )
    values = {key: float(getattr(est, key)) for key in figures}
    placed: dict[str, int | None] = dict.fromkeys(figures)
    spread = [key for key in figures if key not in EXACT_PLACEMENT]
    if spread and found.turned:
        # turning outcomes leaves the confidences, so the edges are the report's for each placement
        other = columns.conf_correct if found.rare == "wrong" else columns.conf_wrong
        for b in np.unique(bin_index(np.asarray(other, dtype=np.float64), est.edges)):
            est_b = calibration_estimates(
                turned_columns(columns, found, within=(est.edges, int(b))),
                edges=est.edges,
                smooth="smece" in spread,
            )
            for key in spread:
                value = float(getattr(est_b, key))
                if value > values[key]:
                    values[key], placed[key] = value, int(b)
    return RareClassFloor(found, values, placed)


def rare_class_of(
    columns: PredictionColumns,
    *,
    level: float,
    least: int,
    questions: tuple[object, object] | None = None,
    per_question: int | None = None,
) -> RareClass | None:
    """The rare class of ``columns`` as :func:`rare_class_floor` counts it (its ``questions``
    and ``per_question``), None when it holds ``least`` members or more."""
    from calibcli.metrics.clusters import question_counts

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
    return rarer_class(right, wrong, level=level, least=least, counted=counted, per_question=most)
