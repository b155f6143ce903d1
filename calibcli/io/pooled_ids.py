"""Rows pooled with ``--all-runs`` whose ids repeat across the inputs: re-runs of the same
questions, whatever wrote them.

lm-eval's re-runs of a task are known before a row is read (their file names give the task,
:func:`calibcli.io.runs.rerun_counts`). Other re-runs are not: two inspect-ai logs of one task
(a sample's id, its epoch part dropped, :func:`calibcli.io.ids.question_of`), or native rows
identified by ``--id-field``, pooled with ``--all-runs``. So their kept rows are keyed by their
questions while they are read (:func:`keyed_by_question`), and once read a question holding more
rows than any run read scored it (its epochs) tells that they repeat
(:func:`pooled_repeats`): each source whose rows carry ids then records that most rows of a
question as ``pooled`` (:class:`~calibcli.summaries.Source`), which every gate counts as it
counts epochs (``--min-rows`` and the upper-end minimums count questions, the bootstrap and
the cross-fitting folds draw a question's rows together, ``threshold`` chooses on one answer
per question). Without repeats the keys taken for this are dropped again, so the figures are
those of the rows read one by one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any


def keyed_by_question(plan: Any, files: list[str], parts: bool) -> Any:
    """The plan reading ``files`` (beside summary files: ``parts``), its kept calibration rows
    keyed by their questions where a file says before its rows are read that they repeat them
    (:func:`~calibcli.io.runs.repeating`: an inspect-ai run's epochs, a HELM run's train
    trials, lm-eval re-runs pooled), or where they are pooled with ``--all-runs`` and may carry
    ids (``pooled_keys``: the keys are dropped again when no question repeats, see
    :func:`pooled_repeats`); a row without an id is keyed by its line."""
    from calibcli.io.ids import OWN_IDS
    from calibcli.io.runs import repeating

    if plan.kind != "calibration" or not plan.keep_rows or plan.row_keys:
        return plan
    if repeating(files, plan.all_runs):
        return replace(plan, row_keys=True)
    if not plan.all_runs or (plan.id_field is None and plan.forced not in (None, *OWN_IDS)):
        return plan  # rows of a format without ids, none named: no question to repeat
    return replace(plan, row_keys=True, pooled_keys=not parts)


def pooled_repeats(summary: Any, plan: Any) -> Any:
    """The summary read by ``plan``, its sources recording ``pooled`` (the most rows a question
    holds) when its kept rows' question keys repeat more often than the runs read scored a
    question (their epochs, lm-eval re-runs of a task counted,
    :func:`~calibcli.io.runs.rerun_sources`). Keys taken only to find this (the plan's
    ``pooled_keys``) are dropped when no question repeats: the rows are then read as without
    them."""
    import numpy as np

    from calibcli.io.ids import OWN_IDS
    from calibcli.io.runs import rerun_sources
    from calibcli.summaries import most_epochs

    kept = getattr(summary, "kept", None)
    if summary.kind != "calibration" or kept is None or not kept.keyed:
        return summary
    keys = np.concatenate([kept.right_keys, kept.wrong_keys])
    most = int(np.unique(keys, return_counts=True)[1].max()) if keys.shape[0] else 0
    own = most_epochs(rerun_sources(summary.sources, plan.all_runs)) or 1
    identified = summary.settings.id_field is not None
    # rows without ids are keyed by their lines, which a file given twice repeats: only rows
    # with ids name their questions
    named = [
        s.skipped is None and s.rows > 0 and (identified or s.format in OWN_IDS)
        for s in summary.sources
    ]
    if most <= own or not any(named):
        if plan.pooled_keys:
            kept = replace(kept, right_keys=None, wrong_keys=None)
            return replace(summary, kept=kept)
        return summary
    sources = tuple(
        replace(s, pooled=most) if ids else s for s, ids in zip(summary.sources, named, strict=True)
    )
    return replace(summary, sources=sources)
