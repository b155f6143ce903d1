"""Kept rows: every confidence of a set of rows, split by correctness, in input order.

The estimators that need every row (NLL, AUROC, smooth ECE, quantile bins, the bootstrap, the
recalibration fits and the threshold search) read these; every other figure comes from the
bin tables. 8 bytes per row, plus 8 per row for the group ids under ``--by``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


class ColumnBuffer:
    """Growable buffers for the values of right and of wrong answers (float64, or intp ids).

    Capacity comes from a row estimate; unused capacity is allocated but never touched, so it
    costs address space, not resident memory. Estimates are capped at ``MAX_RESERVE`` rows per
    buffer (an allocation far beyond the machine's memory could be refused); growth doubles.
    """

    MAX_RESERVE = 1 << 26  # 512 MB of address space per buffer

    def __init__(self, capacity: int, dtype: str = "float64") -> None:
        cap = min(max(int(capacity), 4096), self.MAX_RESERVE)
        self._bufs = [np.empty(cap, dtype), np.empty(cap, dtype)]  # [right, wrong]
        self._n = [0, 0]

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows in each buffer (a no-op if there is room)."""
        rows = min(int(rows), self.MAX_RESERVE)
        for i in (0, 1):
            self._grow(i, self._n[i] + rows)

    def _grow(self, i: int, need: int) -> None:
        buf = self._bufs[i]
        if need > buf.shape[0]:
            grown = np.empty(max(2 * buf.shape[0], need), buf.dtype)
            grown[: self._n[i]] = buf[: self._n[i]]
            self._bufs[i] = grown

    def claim(self, i: int, k: int) -> np.ndarray:
        """The next ``k`` slots of buffer i (0 right, 1 wrong), counted as filled: the caller
        writes them (a worker's rows are received straight into them)."""
        n = self._n[i]
        self._grow(i, n + k)
        self._n[i] = n + k
        return self._bufs[i][n : n + k]

    def add(self, values: np.ndarray, correct: np.ndarray) -> None:
        self.extend(values[correct], values[~correct])

    def extend(self, right: np.ndarray, wrong: np.ndarray) -> None:
        self.claim(0, right.shape[0])[:] = right
        self.claim(1, wrong.shape[0])[:] = wrong

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self._bufs[0][: self._n[0]], self._bufs[1][: self._n[1]]

    def filled(self) -> tuple[int, int]:
        """How many values each buffer holds."""
        return self._n[0], self._n[1]

    def since(self, i: int, start: int) -> np.ndarray:
        """The values of buffer i from ``start`` on (a view, to rewrite in place)."""
        return self._bufs[i][start : self._n[i]]


class GroupCodes:
    """Each row's group in a block, as a code into ``names``: the group names a reader has met,
    in order of first appearance, a list it extends as it meets new ones (code k is
    ``names[k]``). It reads as the sequence of the rows' names; :meth:`GroupIndex.of` maps the
    codes without building that sequence."""

    __slots__ = ("codes", "names")

    def __init__(self, codes: np.ndarray, names: list[str]) -> None:
        self.codes = codes
        self.names = names

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __getitem__(self, i: int) -> str:
        return self.names[self.codes[i]]

    def __iter__(self):
        return map(self.names.__getitem__, self.codes.tolist())


class GroupIndex:
    """Group names -> dense ids 0, 1, 2, ... in first-seen order."""

    def __init__(self, names: list[str] | tuple[str, ...] = ()) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        # per reader's list of names (GroupCodes.names): that list, and the id here of each
        # of its names met so far
        self._coded: dict[int, tuple[list[str], np.ndarray]] = {}
        self._add(names)

    def __len__(self) -> int:
        return len(self.names)

    def id(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.names)
            self.names.append(name)
        return found

    def _add(self, names: list[str] | tuple[str, ...]) -> None:
        """Give the names not met yet ids, in order of first appearance (as :meth:`id` one
        by one would)."""
        ids = self.ids
        fresh = list(itertools.filterfalse(ids.__contains__, dict.fromkeys(names)))
        ids.update(zip(fresh, range(len(self.names), len(self.names) + len(fresh)), strict=True))
        self.names.extend(fresh)

    def of(self, keys: list[str] | GroupCodes) -> np.ndarray:
        """The id of each row's group (intp)."""
        if isinstance(keys, GroupCodes):
            return self._ids_of(keys.names)[keys.codes]
        first = keys[0]
        if keys.count(first) == len(keys):
            return np.full(len(keys), self.id(first), np.intp)
        self._add(keys)  # new names get ids in order of first appearance
        return np.fromiter(map(self.ids.__getitem__, keys), np.intp, len(keys))

    def _ids_of(self, names: list[str]) -> np.ndarray:
        """The id of each of a reader's names (intp, in its code order); the names it met since
        the last call get ids in that order, which is their order of first appearance."""
        known = self._coded.get(id(names))
        if known is not None and known[1].shape[0] == len(names):
            return known[1]
        done = 0 if known is None else known[1].shape[0]
        new = names[done:]
        self._add(new)
        more = np.fromiter(map(self.ids.__getitem__, new), np.intp, len(new))
        ids = more if known is None else np.concatenate([known[1], more])
        self._coded[id(names)] = (names, ids)  # the list itself is held: its id stays unique
        return ids

    def remap(self, names: list[str] | tuple[str, ...]) -> np.ndarray:
        """Ids here of another index's names, in its id order (new names are added)."""
        self._add(names)
        return np.fromiter(map(self.ids.__getitem__, names), np.intp, len(names))


@dataclass(frozen=True, eq=False)
class RowColumns:
    """Kept rows: the confidences of right and of wrong answers in input order and, under
    ``--by``, each one's group id (an index into the summary's group names); when the reading
    asked for them, each one's 64-bit key (:func:`calibcli.summaries.ids.line_keys`)."""

    right: np.ndarray
    wrong: np.ndarray
    right_groups: np.ndarray | None = None
    wrong_groups: np.ndarray | None = None
    right_keys: np.ndarray | None = None
    wrong_keys: np.ndarray | None = None

    @property
    def keyed(self) -> bool:
        return self.right_keys is not None and self.wrong_keys is not None

    def keys_by_group(self, groups: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(right keys, wrong keys) per group id, split as :meth:`by_group` splits the rows."""
        assert self.right_keys is not None and self.wrong_keys is not None
        empty = np.zeros(0, np.intp)
        rights = split_by_group(
            self.right_keys, self.right_groups if self.right_groups is not None else empty, groups
        )
        wrongs = split_by_group(
            self.wrong_keys, self.wrong_groups if self.wrong_groups is not None else empty, groups
        )
        return list(zip(rights, wrongs, strict=True))

    @property
    def n(self) -> int:
        return int(self.right.shape[0] + self.wrong.shape[0])

    def columns(self):
        """All rows as :class:`~calibcli.metrics.core.PredictionColumns` (no copy)."""
        from calibcli.metrics import PredictionColumns

        return PredictionColumns(self.right, self.wrong)

    def by_group(self, groups: int) -> list:
        """PredictionColumns per group id (one sort per class; views of the sorted copies)."""
        from calibcli.metrics import PredictionColumns

        empty = np.zeros(0, np.intp)
        rights = split_by_group(
            self.right, self.right_groups if self.right_groups is not None else empty, groups
        )
        wrongs = split_by_group(
            self.wrong, self.wrong_groups if self.wrong_groups is not None else empty, groups
        )
        return [PredictionColumns(r, w) for r, w in zip(rights, wrongs, strict=True)]


def split_by_group(values: np.ndarray, ids: np.ndarray, groups: int) -> list[np.ndarray]:
    """``values`` split by group id (one stable sort): views of one sorted copy, in id order,
    each group's rows in input order."""
    # numpy's stable sort of 16-bit integers is a radix sort: several times faster than of intp
    order = np.argsort(ids.astype(np.uint16) if groups <= 1 << 16 else ids, kind="stable")
    ordered = values[order]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=groups))))
    return [ordered[bounds[g] : bounds[g + 1]] for g in range(groups)]
