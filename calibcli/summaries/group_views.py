"""The views of every ``--by`` group of a calibration summary, built as they are read.

A report of 100,000 groups that built each group's :class:`~calibcli.summaries.calibration.RowsView`
up front would hold a dozen small numpy arrays per group (about 100 bytes of overhead each)
besides the (groups × bins) tables they slice. :class:`GroupViews` keeps the tables and the
kept rows as whole arrays, which code treating every group at once reads directly, and builds a
group's view only when that group is asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from calibcli.summaries.calibration import CalibrationSummary, RowsView


class GroupViews(Mapping):
    """The :class:`RowsView` of every ``--by`` group (name -> view, in name order), each built
    when read; and every group's tables and kept rows as whole arrays, for code that treats all
    groups at once: ``tables`` (:class:`~calibcli.metrics.GroupTables`, groups × bins), and
    each class's kept confidences ordered by group (``right``, ``wrong``; a group's rows in
    the order kept) with each group's start (``right_starts``, ``wrong_starts``: groups + 1)."""

    def __init__(self, summary: CalibrationSummary) -> None:
        assert summary.group_names is not None
        self.names = summary.group_names
        groups = len(self.names)
        self.tables = summary.table.group_tables()
        self.edges = summary.table.edges.copy()
        self._summary = summary
        self._fmt = summary.fmt
        self._index: dict[str, int] | None = None
        self.right = self.wrong = self.right_starts = self.wrong_starts = None
        self._keys: list[Any] | None = None
        kept = summary.kept
        if kept is not None:
            self.right, self.right_starts = _by_group(kept.right, kept.right_groups, groups)
            self.wrong, self.wrong_starts = _by_group(kept.wrong, kept.wrong_groups, groups)
            if kept.keyed:
                self._keys = kept.keys_by_group(groups)

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __getitem__(self, name: str) -> RowsView:
        if self._index is None:
            self._index = {n: g for g, n in enumerate(self.names)}
        return self.view(self._index[name])

    def view(self, g: int) -> RowsView:
        """Group ``g``'s view."""
        from calibcli.metrics import BinStats, PredictionColumns

        t, s = self.tables, self._summary
        stats = BinStats(
            self.edges,
            t.count[g],
            t.sum_correct[g],
            t.sum_conf[g],
            t.sum_conf_sq[g],
            t.sum_conf_correct[g],
            t.sum_sq_error[g],
        )
        columns = None
        if self.right is not None:
            r, w = self.right_starts, self.wrong_starts
            columns = PredictionColumns(self.right[r[g] : r[g + 1]], self.wrong[w[g] : w[g + 1]])
        return RowsView(
            stats,
            columns,
            self._fmt,
            None if s.moments is None else s.moments.group(g),
            s.missing,
            None if self._keys is None else self._keys[g],
            None if s.bootstrap is None else s.bootstrap.group(g),
        )

    def rows(self) -> np.ndarray | None:
        """Each group's kept rows (int64; None when the rows were not kept)."""
        if self.right is None:
            return None
        return np.diff(self.right_starts) + np.diff(self.wrong_starts)


def _by_group(
    values: np.ndarray, ids: np.ndarray | None, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """``values`` ordered by group id (one stable sort: a copy, each group's rows in the order
    given) and each group's start."""
    if ids is None:
        ids = np.zeros(0, np.intp)
    # ids below 2**16 as uint16: numpy's stable sort of 16-bit keys is a radix sort
    order = np.argsort(ids.astype(np.uint16) if groups <= 1 << 16 else ids, kind="stable")
    starts = np.zeros(groups + 1, np.int64)
    np.cumsum(np.bincount(ids, minlength=groups), out=starts[1:])
    return values[order], starts
