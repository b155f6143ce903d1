"""Row sums that stand in for the rows: what a summary keeps so that the NLL and the smooth ECE
can be measured from it when the rows themselves (or their table of distinct values) are gone.

Per ``--by`` group:

* the NLL: the exact sum of the finite per-row losses (−log c for a right answer, −log(1 − c)
  for a wrong one) as fixed-point limbs (:mod:`calibcli.summaries.exact`), and the number of
  rows whose loss is infinite (a confidence of 1 on a wrong answer, 0 on a right one). The NLL
  read back is the exact sum divided by the rows, rounded once (as the rows give it): the same
  whatever the split and the merge order.
* the smooth ECE's grid histograms (:func:`calibcli.metrics.smooth.grid_histograms`): float
  sums over the rows, so merged histograms equal one pass's to the rounding of the additions
  (parts are merged in a canonical order, so one set of parts gives the same bits whatever the
  order they were named in). 18,966 grid points per group, but a group's rows touch only the
  points around their confidences: the histograms are held sparse (:class:`SparseGrids`), so a
  summary grows with its rows, not with its groups times the grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.summaries.exact import CHUNK, UNIT_EXP, ExactSums, general_pieces


def _group_losses(
    rights: list[np.ndarray], wrongs: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's loss (−log c for a right answer, −log(1 − c) for a wrong one, +inf when c
    is 0 or 1 against its answer) and its group, the right answers of every group first."""
    groups = len(rights)
    lengths = [np.fromiter(map(len, part), np.intp, groups) for part in (rights, wrongs)]
    with np.errstate(divide="ignore"):
        right = -np.log(np.concatenate(rights)) if groups else np.zeros(0)
        wrong = -np.log1p(-np.concatenate(wrongs)) if groups else np.zeros(0)
    ids = np.arange(groups, dtype=np.intp)
    owner = np.concatenate([np.repeat(ids, lengths[0]), np.repeat(ids, lengths[1])])
    return np.concatenate([right, wrong]), owner


class SparseGrids:
    """The (groups, 2, m) histograms of one grid size, keeping only the cells that are not +0.0
    (a -0.0 is kept: it is a value of its own), group by group: ``cells`` the flat index into
    a group's (2, m) histogram (ascending), ``values`` the cell's float, ``offsets`` where each
    group's entries start. :meth:`dense` gives back the very floats of the dense array.

    Adding follows the dense array's ``np.add.at(grid, at, other)``: per cell, the running
    value plus each added cell in the order they were added, one rounding each. Cells of +0.0
    are left out of that too, which changes nothing: a sum that starts at +0.0 never becomes
    -0.0, and adding ±0.0 to anything else returns it unchanged. Added parts are kept aside
    and folded in together when first read, so merging many parts sorts once.
    """

    def __init__(self, m: int, groups: int, cells=None, values=None, offsets=None) -> None:
        self.m = m
        self.groups = groups
        self._cells = np.zeros(0, np.int64) if cells is None else cells
        self._values = np.zeros(0) if values is None else values
        self._offsets = np.zeros(groups + 1, np.int64) if offsets is None else offsets
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    @classmethod
    def of_dense(cls, grid: np.ndarray) -> SparseGrids:
        """The sparse form of a (groups, 2, m) array."""
        groups, _, m = grid.shape
        flat = np.ascontiguousarray(grid, dtype=np.float64).reshape(groups, 2 * m)
        g, cells = np.nonzero(flat.view(np.uint64))  # every value but +0.0, row by row
        offsets = np.searchsorted(g, np.arange(groups + 1)).astype(np.int64)
        return cls(m, groups, cells.astype(np.int64), flat[g, cells], offsets)

    @classmethod
    def of_groups(cls, m: int, hists: list[np.ndarray]) -> SparseGrids:
        """The sparse form of one (2, m) histogram per group, in group order."""
        cells, values, sizes = [], [], [0]
        for hist in hists:
            flat = np.ascontiguousarray(hist, dtype=np.float64).reshape(2 * m)
            kept = np.flatnonzero(flat.view(np.uint64))
            cells.append(kept)
            values.append(flat[kept])
            sizes.append(kept.shape[0])
        out = cls(m, len(hists))
        if hists:
            out._cells = np.concatenate(cells).astype(np.int64)
            out._values = np.concatenate(values)
            out._offsets = np.cumsum(sizes, dtype=np.int64)
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cells, values, offsets), every added part folded in."""
        self._settle()
        return self._cells, self._values, self._offsets

    def add(self, other: SparseGrids, at: np.ndarray) -> None:
        """Add another's histograms: its group j into group ``at[j]`` here."""
        cells, values, offsets = other.arrays()
        owner = np.repeat(np.asarray(at, np.int64)[: other.groups], np.diff(offsets))
        self._pending.append((owner, cells, values))

    def group(self, g: int) -> SparseGrids:
        """Group ``g`` alone."""
        cells, values, offsets = self.arrays()
        a, b = int(offsets[g]), int(offsets[g + 1])
        return SparseGrids(
            self.m, 1, cells[a:b].copy(), values[a:b].copy(), np.array([0, b - a], np.int64)
        )

    def dense(self, g: int) -> np.ndarray:
        """Group ``g``'s (2, m) histogram."""
        cells, values, offsets = self.arrays()
        out = np.zeros(2 * self.m)
        a, b = int(offsets[g]), int(offsets[g + 1])
        out[cells[a:b]] = values[a:b]
        return out.reshape(2, self.m)

    def _settle(self) -> None:
        if not self._pending:
            return
        width = 2 * self.m
        base = np.repeat(np.arange(self.groups, dtype=np.int64), np.diff(self._offsets))
        keys = [base * width + self._cells]
        keys += [owner * width + cells for owner, cells, _ in self._pending]
        added = np.concatenate([values for _, _, values in self._pending])
        self._pending = []
        unique, where = np.unique(np.concatenate(keys), return_inverse=True)
        where = where.reshape(-1)
        total = np.zeros(unique.shape[0])
        nbase = self._cells.shape[0]
        total[where[:nbase]] = self._values  # the running values, -0.0 included
        np.add.at(total, where[nbase:], added)  # one addition at a time, in the order added
        kept = np.flatnonzero(total.view(np.uint64))
        unique, total = unique[kept], total[kept]
        owner = unique // width
        self._cells = unique - owner * width
        self._values = total
        self._offsets = np.searchsorted(owner, np.arange(self.groups + 1)).astype(np.int64)


@dataclass(eq=False)
class RowMoments:
    """See the module docstring. ``nll`` holds one exact sum per group; ``infinite`` the rows
    of infinite loss per group; ``grids`` maps each grid size m to the groups' histograms."""

    groups: int
    nll: ExactSums
    infinite: np.ndarray
    grids: dict[int, SparseGrids]

    @classmethod
    def empty(cls, groups: int) -> RowMoments:
        from calibcli.metrics import stored_grid_sizes

        grids = {m: SparseGrids(m, groups) for m in stored_grid_sizes()}
        return cls(groups, ExactSums(groups, lo=30, depth=4), np.zeros(groups, np.int64), grids)

    @classmethod
    def of_columns(cls, columns: list[Any]) -> RowMoments:
        """The moments of rows given per group as
        :class:`~calibcli.metrics.PredictionColumns`."""
        from calibcli.metrics import interleaved, sparse_grid_histograms, stored_grid_sizes

        groups = len(columns)
        out = cls.empty(groups)
        rights = [np.asarray(cols.conf_correct, np.float64) for cols in columns]
        wrongs = [np.asarray(cols.conf_wrong, np.float64) for cols in columns]
        # every group's losses at once, right answers then wrong ones: the loss is elementwise,
        # and the sums are exact, so neither the grouping nor the order of the additions shows
        loss, owner = _group_losses(rights, wrongs)
        infinite = np.isinf(loss)
        out.infinite[:] = np.bincount(owner[infinite], minlength=groups)
        finite = ~infinite
        loss, owner = loss[finite] + 0.0, owner[finite]  # + 0.0: -0.0 (c = 1 right) is 0
        for start in range(0, loss.shape[0], CHUNK):
            part = loss[start : start + CHUNK]
            out.nll.add_pieces(general_pieces(part), owner[start : start + CHUNK], groups)
        if groups:  # every group's histograms of each grid at once, kept sparse
            pairs = list(zip(rights, wrongs, strict=True))
            rows = interleaved(pairs)
            for m in stored_grid_sizes():
                out.grids[m] = SparseGrids(m, groups, *sparse_grid_histograms(pairs, m, rows))
        return out

    def merged(
        self, other: RowMoments, at_self: np.ndarray, at_other: np.ndarray, groups: int
    ) -> RowMoments:
        """Both sets of moments, group ids mapped into a common numbering (``at_*``: this and
        the other's group j -> the common id)."""
        out = RowMoments.empty(groups)
        out.add(self, at_self)
        out.add(other, at_other)
        return out

    def add(self, other: RowMoments, at: np.ndarray) -> None:
        """Add another set of moments: its group j into group ``at[j]`` here."""
        self.nll.add(other.nll, at=np.asarray(at, np.intp))
        np.add.at(self.infinite, at, other.infinite[: other.groups])
        for m, grid in self.grids.items():
            grid.add(other.grids[m], at)

    def pooled(self) -> RowMoments:
        """Every group as one."""
        out = RowMoments.empty(1)
        out.add(self, np.zeros(self.groups, np.intp))
        return out

    def group(self, g: int) -> RowMoments:
        """Group ``g`` alone."""
        lo, limbs = self.nll.trimmed()
        nll = ExactSums(1, lo, max(limbs.shape[1], 1))
        nll.limbs[:, : limbs.shape[1]] = limbs[g : g + 1]
        grids = {m: grid.group(g) for m, grid in self.grids.items()}
        return RowMoments(1, nll, self.infinite[g : g + 1].copy(), grids)

    # ----- figures of a one-group set of moments

    def log_loss(self, n: int) -> float:
        """Mean NLL of the ``n`` rows (inf when a loss is infinite, nan without rows)."""
        if n == 0:
            return float("nan")
        if self.infinite[0]:
            return float("inf")
        # the exact sum over the rows, divided and rounded once, as the rows themselves give it
        # (the nearest double to the sum, divided, would round twice: a last digit apart)
        return self.nll.to_int(0) / (n << -UNIT_EXP)

    def smooth_ece(self) -> tuple[float, float]:
        """(smECE, bandwidth) of the rows (0.0 and nan without rows)."""
        from calibcli.metrics import smooth_ece_from_grids

        result = smooth_ece_from_grids({m: grid.dense(0) for m, grid in self.grids.items()})
        return float(result.value), float(result.bandwidth)
