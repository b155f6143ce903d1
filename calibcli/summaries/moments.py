"""Row sums that stand in for the rows: what a summary keeps so that the NLL and the smooth ECE
can be measured from it when the rows themselves (or their table of distinct values) are gone.

Per ``--by`` group:

* the NLL: the exact sum of the finite per-row losses (−log c for a right answer, −log(1 − c)
  for a wrong one) as fixed-point limbs (:mod:`calibcli.summaries.exact`), and the number of
  rows whose loss is infinite (a confidence of 1 on a wrong answer, 0 on a right one). The NLL
  read back is the nearest double to the exact sum, divided by the rows: the same whatever the
  split and the merge order.
* the smooth ECE's grid histograms (:func:`calibcli.metrics.smooth.grid_histograms`): float
  sums over the rows, so merged histograms equal one pass's to the rounding of the additions
  (parts are merged in a canonical order, so one set of parts gives the same bits whatever the
  order they were named in). 18,966 grid points in all: about 300 KB per group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.summaries.exact import CHUNK, ExactSums, general_pieces, limbs_to_float


def _losses(right: np.ndarray, wrong: np.ndarray) -> tuple[np.ndarray, int]:
    """The finite per-row losses and the number of infinite ones."""
    with np.errstate(divide="ignore"):
        loss = np.concatenate([-np.log(right), -np.log1p(-wrong)])
    infinite = np.isinf(loss)
    return loss[~infinite] + 0.0, int(infinite.sum())  # + 0.0: -0.0 (c = 1 right) is 0


@dataclass(eq=False)
class RowMoments:
    """See the module docstring. ``nll`` holds one exact sum per group; ``infinite`` the rows
    of infinite loss per group; ``grids`` maps each grid size m to a (groups, 2, m) array."""

    groups: int
    nll: ExactSums
    infinite: np.ndarray
    grids: dict[int, np.ndarray]

    @classmethod
    def empty(cls, groups: int) -> RowMoments:
        from calibcli.metrics import stored_grid_sizes

        grids = {m: np.zeros((groups, 2, m)) for m in stored_grid_sizes()}
        return cls(groups, ExactSums(groups, lo=30, depth=4), np.zeros(groups, np.int64), grids)

    @classmethod
    def of_columns(cls, columns: list[Any]) -> RowMoments:
        """The moments of rows given per group as
        :class:`~calibcli.metrics.PredictionColumns`."""
        from calibcli.metrics import grid_histograms

        out = cls.empty(len(columns))
        for g, cols in enumerate(columns):
            right, wrong = cols.conf_correct, cols.conf_wrong
            loss, infinite = _losses(right, wrong)
            out.infinite[g] = infinite
            cells = np.full(min(loss.shape[0], CHUNK), g, np.intp)
            for start in range(0, loss.shape[0], CHUNK):
                part = loss[start : start + CHUNK]
                out.nll.add_pieces(general_pieces(part), cells[: part.shape[0]], len(columns))
            for m, hist in grid_histograms(right, wrong).items():
                out.grids[m][g] = hist
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
            np.add.at(grid, at, other.grids[m][: other.groups])

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
        grids = {m: grid[g : g + 1].copy() for m, grid in self.grids.items()}
        return RowMoments(1, nll, self.infinite[g : g + 1].copy(), grids)

    # ----- figures of a one-group set of moments

    def log_loss(self, n: int) -> float:
        """Mean NLL of the ``n`` rows (inf when a loss is infinite, nan without rows)."""
        if n == 0:
            return float("nan")
        if self.infinite[0]:
            return float("inf")
        lo, limbs = self.nll.trimmed()
        total = float(limbs_to_float(limbs[:1], lo)[0]) if limbs.shape[1] else 0.0
        return total / n

    def smooth_ece(self) -> tuple[float, float]:
        """(smECE, bandwidth) of the rows (0.0 and nan without rows)."""
        from calibcli.metrics import smooth_ece_from_grids

        result = smooth_ece_from_grids({m: grid[0] for m, grid in self.grids.items()})
        return float(result.value), float(result.bandwidth)
