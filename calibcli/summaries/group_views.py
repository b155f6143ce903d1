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
        self.tables = SummaryGroupTables(summary.table)
        self.edges = summary.table.edges.copy()
        # what a group's view reads of the summary, not the summary itself: the summary caches
        # its views, and a cycle would keep every array alive until the next full collection
        self._moments, self._missing = summary.moments, summary.missing
        self._bootstrap = summary.bootstrap
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

        t = self.tables
        stats = BinStats(
            self.edges,
            t.count[g],
            t.sum_correct[g],
            t.sum_conf[g],
            t.sum_conf_sq[g],
            t.sum_conf_correct[g],
            t.sum_sq_error[g],
            sq_error_total=t.sq_error_total(g),
        )
        columns = None
        if self.right is not None:
            r, w = self.right_starts, self.wrong_starts
            columns = PredictionColumns(self.right[r[g] : r[g + 1]], self.wrong[w[g] : w[g + 1]])
        return RowsView(
            stats,
            columns,
            self._fmt,
            None if self._moments is None else self._moments.group(g),
            self._missing,
            None if self._keys is None else self._keys[g],
            None if self._bootstrap is None else self._bootstrap.group(g),
        )

    def rows(self) -> np.ndarray | None:
        """Each group's kept rows (int64; None when the rows were not kept)."""
        if self.right is None:
            return None
        return np.diff(self.right_starts) + np.diff(self.wrong_starts)


class SummaryGroupTables:
    """The :class:`~calibcli.metrics.GroupTables` of a summary's table, read back as they are
    needed: ``count``, ``sum_correct`` and ``sum_conf`` at once, each other field when first
    read, and :meth:`rows` of a range of groups from the exact sums (a pass over every group's
    figures then holds that range's floats only, not six (groups × bins) tables)."""

    _LATER = ("sum_conf_sq", "sum_conf_correct", "sum_sq_error")

    def __init__(self, table: Any) -> None:
        from calibcli.summaries.tables import GroupReader

        self._reader = GroupReader(table)
        self._groups = table.groups
        first = self._reader.rows(0, table.groups, ("count", "sum_correct", "sum_conf"))
        self.count, self.sum_correct, self.sum_conf = first.count, first.sum_correct, first.sum_conf

    def __getattr__(self, name: str) -> np.ndarray:
        if name not in self._LATER:
            raise AttributeError(name)
        value = getattr(self._reader.rows(0, self._groups, (name,)), name)
        setattr(self, name, value)  # read once: later reads find the attribute
        return value

    def sq_error_total(self, g: int) -> Any:
        """Group ``g``'s exact Σ(c − y)² (a Fraction), as its view's Brier takes it."""
        return self._reader.sq_error_total(g)

    def rows(self, start: int, stop: int) -> Any:
        """:meth:`GroupTables.rows <calibcli.metrics.GroupTables.rows>`, the fields not read
        yet made for these groups only."""
        from calibcli.metrics import GroupTables

        later = tuple(f for f in self._LATER if f not in vars(self))
        part = self._reader.rows(start, stop, (*later, "brier"))
        return GroupTables(
            *(
                getattr(part, f) if f in later else getattr(self, f)[start:stop]
                for f in GroupTables.FIELDS
            ),
            brier=part.brier,
        )


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
