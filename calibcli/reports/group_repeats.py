"""How many rows a question holds in a --by group's rows: the group's own runs' repeats where
its sources are known (re-runs of one task pooled with --all-runs repeat that task's
questions, not another task's), else those of every run read."""

from __future__ import annotations

from typing import Any


def own_repeats(summary: Any, group: str | None, most: int | None) -> int | None:
    """The most rows a question holds in ``group``'s rows of ``summary`` (None: one each), by
    :meth:`~calibcli.summaries.GroupSources.repeats`; ``most``, the most of every run read,
    for the pooled rows (``group`` None) and where the group's sources are not known."""
    known = getattr(summary, "groups_known", None)
    return most if known is None else known.repeats(group, most)
