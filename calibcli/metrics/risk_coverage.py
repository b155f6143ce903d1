"""The risk–coverage curve: at every distinct confidence t_j, from the highest down, how many
rows a threshold t_j accepts and how many of them are wrong, in exact integer counts.

Pure numpy: no I/O, no printing. :mod:`calibcli.metrics.selective` chooses thresholds on it and
computes its summary figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.validation import validate_predictions

__all__ = ["RiskCoverage"]


@dataclass(frozen=True, eq=False)
class RiskCoverage:
    """The risk–coverage curve at every distinct confidence, from the highest down.

    ``thresholds[j]`` = t_j (float64, strictly decreasing), ``accepted[j]`` = n_j = #{c >= t_j}
    and ``errors[j]`` = e_j = #{c >= t_j, wrong} (int64, exact counts), ``total`` = N. The last
    threshold is the lowest confidence, so ``accepted[-1] == total``. Group j (the rows tied at
    confidence t_j) has g_j = n_j − n_{j−1} rows and e_j − e_{j−1} errors (n_{−1} = e_{−1} = 0).
    A curve with no rows has m = 0 and ``total`` = 0.
    """

    thresholds: np.ndarray
    accepted: np.ndarray
    errors: np.ndarray
    total: int

    def __post_init__(self) -> None:
        t, n, e = self.thresholds, self.accepted, self.errors
        if not (t.ndim == n.ndim == e.ndim == 1 and t.shape == n.shape == e.shape):
            raise ValueError("thresholds, accepted and errors must be 1-D arrays of equal length")
        if n.dtype != np.int64 or e.dtype != np.int64:
            raise ValueError("accepted and errors must be int64 counts")
        if t.shape[0] == 0:
            if self.total != 0:
                raise ValueError(f"a curve without thresholds has no rows, got total={self.total}")
            return
        dn, de = np.diff(n), np.diff(e)
        if not (
            0 <= e[0] <= n[0]
            and n[0] > 0
            and bool(np.all(t[1:] < t[:-1]))
            and bool(np.all(dn > 0))
            and bool(np.all(de >= 0))
            and bool(np.all(de <= dn))
            and int(n[-1]) == self.total
        ):
            raise ValueError(
                "not a risk-coverage curve: thresholds must decrease strictly, accepted must "
                "increase strictly to total, errors grow by at most the rows added"
            )

    @classmethod
    def from_arrays(cls, confidences: object, correct: object) -> RiskCoverage:
        """The curve of rows given as confidences in [0, 1] and correctness (bool or 0/1)."""
        conf, corr = validate_predictions(confidences, correct)
        return cls._from_split(conf[corr], conf[~corr], sort_in_place=True)

    @classmethod
    def from_columns(cls, columns: PredictionColumns, *, reorder_ok: bool = False) -> RiskCoverage:
        """The curve of :class:`PredictionColumns` (right/wrong confidences), without
        concatenating them. ``reorder_ok=True`` sorts the two arrays in place instead of copying
        (the caller no longer needs their order). Values outside [0, 1] raise ValueError.
        """
        return cls._from_split(columns.conf_correct, columns.conf_wrong, sort_in_place=reorder_ok)

    @classmethod
    def _from_split(
        cls, right: np.ndarray, wrong: np.ndarray, *, sort_in_place: bool
    ) -> RiskCoverage:
        right = _sorted(np.asarray(right, dtype=np.float64), sort_in_place)
        wrong = _sorted(np.asarray(wrong, dtype=np.float64), sort_in_place)
        for name, arr in (("right", right), ("wrong", wrong)):
            # NaN sorts last, so the two ends decide the range check.
            if arr.size and not (arr[0] >= 0.0 and arr[-1] <= 1.0):
                bad = arr[0] if not arr[0] >= 0.0 else arr[-1]
                raise ValueError(f"confidences of {name} answers include {bad!r}, not in [0, 1]")
        n_right, n_wrong = right.shape[0], wrong.shape[0]
        # Distinct values and run lengths of each sorted array, then a merge keyed on the bit
        # pattern of the value (monotone for non-negative doubles) with the source in the lowest
        # bit: a stable sort of two concatenated sorted runs is a linear merge.
        right_values, right_counts = _runs(right)
        wrong_values, wrong_counts = _runs(wrong)
        keys = np.concatenate([_key(right_values, 0), _key(wrong_values, 1)])
        counts = np.concatenate([right_counts, wrong_counts])
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        del order
        is_wrong = (keys & 1).astype(bool)
        bits = keys >> 1
        first = np.empty(keys.shape[0], dtype=bool)
        first[:1] = True
        np.not_equal(bits[1:], bits[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        group_rows = np.add.reduceat(counts, starts) if starts.size else counts
        group_errors = (
            np.add.reduceat(np.where(is_wrong, counts, 0), starts) if starts.size else counts
        )
        thresholds = np.ascontiguousarray(bits[starts][::-1]).view(np.float64)
        accepted = np.cumsum(group_rows[::-1])
        errors = np.cumsum(group_errors[::-1])
        return cls(thresholds, accepted, errors, n_right + n_wrong)

    @property
    def coverage(self) -> np.ndarray:
        """n_j / N."""
        return self.accepted / self.total if self.total else np.zeros(0)

    @property
    def risk(self) -> np.ndarray:
        """e_j / n_j."""
        return self.errors / self.accepted

    @property
    def accuracy(self) -> np.ndarray:
        """1 − e_j / n_j, computed as (n_j − e_j) / n_j."""
        return (self.accepted - self.errors) / self.accepted


def _sorted(values: np.ndarray, in_place: bool) -> np.ndarray:
    if in_place and values.flags.writeable:
        values.sort()
        return values
    return np.sort(values)


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of a sorted array and how often each occurs (int64)."""
    if values.shape[0] == 0:
        return values, np.zeros(0, dtype=np.int64)
    first = np.empty(values.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(starts, append=values.shape[0]).astype(np.int64)
    return values[starts], counts


def _key(values: np.ndarray, source: int) -> np.ndarray:
    """Sort keys for doubles in [0, 1]: the bit pattern (−0.0 folded into 0.0), shifted left one
    bit with ``source`` in the lowest bit; 1.0 is 0x3FF0..., so the shift stays below 2**63."""
    return ((values + 0.0).view(np.int64) << 1) | source


def require_rows(curve: RiskCoverage) -> None:
    """Refuse an empty curve: its figures and thresholds are undefined."""
    if curve.total == 0:
        raise ValueError("the risk-coverage curve has no rows")
