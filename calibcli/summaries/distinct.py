"""The distinct-value table: every distinct confidence of a set of rows with how many right and
how many wrong answers hold it, per ``--by`` group. It holds exactly what the row-level figures
need (AUROC, AURC, risk–coverage and thresholds, equal-mass bins, NLL, smooth ECE, the fits)
and nothing of the rows' order, so tables merge by adding counts into a canonical form: the
same rows give the same table, however they were split and in whatever order the parts merge.

Layout: per class (right answers, wrong answers) the values sorted by group then value, their
counts, and the offsets where each group's entries start (``offsets[g]:offsets[g + 1]``). A
summary file stores the values as float64 and the counts as uint32 (uint64 only when a count
needs it): 12 bytes per distinct value and class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_DISTINCT = 1 << 21
"""Distinct values per part that ``summarize --table auto`` keeps (above, the table is
dropped with a warning)."""


def _compact(
    values: np.ndarray, groups: np.ndarray, counts: np.ndarray, ngroups: int, *, runs: bool
):
    """(values, counts, offsets) of entries sorted by (group, value) with equal ones merged.
    ``runs``: the values are sorted runs (tables being merged)."""
    if values.shape[0] == 0:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(ngroups + 1, np.int64)
    # one group: sorted runs make the stable sort near linear; rows in their input order sort
    # several times faster with the default sort (equal values are merged, so their order
    # among themselves never shows)
    single = ngroups == 1
    if single:
        order = np.argsort(values, kind="stable" if runs else None)
    else:
        order = np.lexsort((values, groups))
    v, g, c = values[order], groups[order], counts[order]
    first = np.ones(v.shape[0], bool)
    first[1:] = (v[1:] != v[:-1]) | (g[1:] != g[:-1])
    starts = np.flatnonzero(first)
    merged = np.add.reduceat(c, starts)
    kept_groups = g[starts]
    offsets = np.searchsorted(kept_groups, np.arange(ngroups + 1), side="left").astype(np.int64)
    return v[starts], merged.astype(np.int64), offsets


@dataclass(frozen=True, eq=False)
class DistinctTable:
    """See the module docstring. ``right``/``wrong`` are (values, counts, offsets) triples;
    ``groups`` the number of groups (1 without ``--by``)."""

    right: tuple[np.ndarray, np.ndarray, np.ndarray]
    wrong: tuple[np.ndarray, np.ndarray, np.ndarray]
    groups: int = 1

    @property
    def distinct(self) -> int:
        """Entries (distinct values per group and class)."""
        return int(self.right[0].shape[0] + self.wrong[0].shape[0])

    @property
    def n(self) -> int:
        return int(self.right[1].sum() + self.wrong[1].sum())

    @classmethod
    def from_rows(
        cls,
        right: np.ndarray,
        wrong: np.ndarray,
        right_groups: np.ndarray | None = None,
        wrong_groups: np.ndarray | None = None,
        groups: int = 1,
    ) -> DistinctTable:
        """The table of rows given as confidences of right and of wrong answers (and each
        one's group id)."""
        sides = []
        for values, ids in ((right, right_groups), (wrong, wrong_groups)):
            ids = np.zeros(values.shape[0], np.int64) if ids is None else ids.astype(np.int64)
            ones = np.ones(values.shape[0], np.int64)
            values = np.asarray(values, np.float64) + 0.0
            sides.append(_compact(values, ids, ones, groups, runs=False))
        return cls(sides[0], sides[1], groups)

    @classmethod
    def combine(cls, tables: list[DistinctTable], maps: list[np.ndarray], groups: int):
        """The tables' counts added, table i's group j counted as group ``maps[i][j]`` of
        ``groups``, in canonical form (the same whatever the order of the tables)."""
        if (
            len(tables) == 1
            and tables[0].groups == groups
            and np.array_equal(maps[0], np.arange(groups))
        ):
            # a table is in canonical form already (made by _compact, or checked when read
            # from a file): sorting millions of values again would give back the same arrays
            return tables[0]
        sides = []
        for side in (0, 1):
            triples = [t.right if side == 0 else t.wrong for t in tables]
            ids = [
                np.repeat(np.asarray(m, np.int64), np.diff(offsets))
                for (_, _, offsets), m in zip(triples, maps, strict=True)
            ]
            sides.append(
                _compact(
                    np.concatenate([v for v, _, _ in triples]),
                    np.concatenate(ids),
                    np.concatenate([c for _, c, _ in triples]),
                    groups,
                    runs=True,
                )
            )
        return cls(sides[0], sides[1], groups)

    def columns(self, group: int | None = None):
        """The rows the table holds, as :class:`~calibcli.metrics.PredictionColumns` (each
        class sorted by value): all of them, or one group's."""
        from calibcli.metrics import PredictionColumns

        out = []
        for values, counts, offsets in (self.right, self.wrong):
            if group is not None:
                lo, hi = offsets[group], offsets[group + 1]
                values, counts = values[lo:hi], counts[lo:hi]
            out.append(np.repeat(values, counts))
        return PredictionColumns(out[0], out[1])

    def group_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """Each expanded row's group id, in the order :meth:`columns` gives the rows."""
        return tuple(
            np.repeat(np.repeat(np.arange(self.groups), np.diff(offsets)), counts)
            for _, counts, offsets in (self.right, self.wrong)
        )
