"""The answers a threshold's guarantee is read on when rows repeat their questions (an
inspect-ai run's epochs, a HELM run's train trials, lm-eval re-runs pooled with --all-runs):
one answer per question, drawn at random by each question's key, whatever the rows' order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calibcli.reports.group_repeats import own_repeats


def repeats_of(summary: Any) -> tuple[bool, bool]:
    """Whether ``summary``'s rows repeat their questions (a run's epochs), and whether they
    are kept with their questions' keys."""
    from calibcli.summaries import repeated_questions

    kept = getattr(summary, "kept", None)
    repeated = repeated_questions(summary.sources)
    return repeated, repeated and kept is not None and kept.keyed


def repeated_in(summary: Any) -> Callable[[str | None], bool]:
    """Whether a --by group's rows of ``summary`` repeat their questions (None: the pooled
    rows), by the group's own runs where known
    (:func:`~calibcli.reports.group_repeats.own_repeats`): re-runs of one task pooled with
    --all-runs repeat none of another's."""
    from calibcli.summaries import most_epochs

    most = most_epochs(summary.sources)
    return lambda group: own_repeats(summary, group, most) is not None


def one_answer_each(columns: Any, keys: Any) -> tuple[Any, dict[str, Any]]:
    """The risk–coverage curve of one answer per question of ``columns`` (their (right, wrong)
    question ``keys``), drawn at random with seed 0 by each question's key and answers, whatever
    the rows' order (:func:`calibcli.metrics.one_per_question`), and what the report says of it."""
    from calibcli.metrics import PredictionColumns, RiskCoverage, one_per_question

    right, wrong = one_per_question(*keys, seed=0, columns=columns)
    kept = PredictionColumns(columns.conf_correct[right], columns.conf_wrong[wrong])
    said = {"questions": int(kept.n), "rows": int(columns.n), "seed": 0}
    return RiskCoverage.from_columns(kept), said
