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
        if not (0 <= e[0] <= n[0] and n[0] > 0 and int(n[-1]) == self.total and _steps_ok(t, n, e)):
            raise ValueError(
                "not a risk-coverage curve: thresholds must decrease strictly, accepted must "
                "increase strictly to total, errors grow by at most the rows added"
            )

    @classmethod
    def from_arrays(cls, confidences: object, correct: object) -> RiskCoverage:
        """The curve of rows given as confidences in [0, 1] and correctness (bool or 0/1)."""
        conf, corr = validate_predictions(confidences, correct)
        return cls._from_split(conf[corr], conf[~corr])

    @classmethod
    def from_columns(cls, columns: PredictionColumns, *, reorder_ok: bool = False) -> RiskCoverage:
        """The curve of :class:`PredictionColumns` (right/wrong confidences), without
        concatenating them. The two arrays are only read, so ``reorder_ok`` (kept for callers
        that offer their arrays) changes nothing. Values outside [0, 1] raise ValueError.
        """
        return cls._from_split(columns.conf_correct, columns.conf_wrong)

    @classmethod
    def _from_split(cls, right: np.ndarray, wrong: np.ndarray) -> RiskCoverage:
        right = np.asarray(right, dtype=np.float64)
        wrong = np.asarray(wrong, dtype=np.float64)
        for name, arr in (("right", right), ("wrong", wrong)):
            # the lowest value and the highest, NaN counting as the highest
            if arr.size:
                low, high = np.fmin.reduce(arr), np.max(arr)
                if not (low >= 0.0 and high <= 1.0):
                    raise ValueError(
                        f"confidences of {name} answers include "
                        f"{(low if not low >= 0.0 else high)!r}, not in [0, 1]"
                    )
        keys = _keys(right, wrong)
        # One in-place sort of N keys: the value's bit pattern (monotone for non-negative
        # doubles) with "wrong" in the lowest bit. Everything after it is a pass over the
        # sorted keys in slices, so the only arrays of a row's size are the keys and the curve.
        keys.sort()
        return cls._from_sorted_keys(keys, int(wrong.shape[0]))

    @classmethod
    def _from_sorted_keys(cls, keys: np.ndarray, n_wrong: int) -> RiskCoverage:
        total = int(keys.shape[0])
        # ascending group k starts at row s_k; from the top it is point m − 1 − k, accepting
        # the N − s_k rows at or above it, of which W − (wrong rows below s_k) are wrong
        m = 0
        for a, b in _slices(total):
            m += _group_starts(keys, a, b, None if a == 0 else keys[a - 1] >> 1).shape[0]
        accepted = np.empty(m, dtype=np.int64)
        errors = np.empty(m, dtype=np.int64)
        k = 0
        wrong_below = 0
        previous = None  # the value of the row before the slice (the slices overwrite it)
        for a, b in _slices(total):
            starts = _group_starts(keys, a, b, previous)
            previous = keys[b - 1] >> 1
            wrong = (keys[a:b] & 1).astype(np.int64)
            below = np.cumsum(wrong)
            below -= wrong
            below += wrong_below
            wrong_below += int(wrong.sum())
            g = starts.shape[0]
            accepted[m - k - g : m - k] = (total - starts)[::-1]
            errors[m - k - g : m - k] = (n_wrong - below[starts - a])[::-1]
            # the value of each group, written over the keys already read (k + g <= b)
            keys[k : k + g] = keys[starts] >> 1
            k += g
        keys.resize((m,), refcheck=False)  # gives back the rows past the last group
        _reverse(keys)
        return cls(keys.view(np.float64), accepted, errors, total)

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


_SLICE = 1 << 18  # rows per slice of the passes over the sorted keys


def _slices(n: int, size: int = _SLICE):
    for a in range(0, n, size):
        yield a, min(a + size, n)


def _steps_ok(t: np.ndarray, n: np.ndarray, e: np.ndarray) -> bool:
    """Whether, from each point to the next, t falls strictly, n rises strictly and e rises
    by at most what n does (checked a slice at a time: no row-sized temporaries)."""
    for a, b in _slices(t.shape[0] - 1):
        dn = n[a + 1 : b + 1] - n[a:b]
        de = e[a + 1 : b + 1] - e[a:b]
        if not (
            bool(np.all(t[a + 1 : b + 1] < t[a:b]))
            and bool(np.all(dn > 0))
            and bool(np.all(de >= 0))
            and bool(np.all(de <= dn))
        ):
            return False
    return True


def _keys(right: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    """Sort keys for doubles in [0, 1], right then wrong: the bit pattern (−0.0 folded into
    0.0), shifted left one bit with 1 in the lowest bit for a wrong answer; 1.0 is 0x3FF0...,
    so the shift stays below 2**63."""
    n_right = right.shape[0]
    keys = np.empty(n_right + wrong.shape[0], dtype=np.int64)
    as_float = keys.view(np.float64)
    for source, values, offset in ((0, right, 0), (1, wrong, n_right)):
        for a, b in _slices(values.shape[0]):
            part = keys[offset + a : offset + b]
            np.add(values[a:b], 0.0, out=as_float[offset + a : offset + b])
            np.left_shift(part, 1, out=part)
            if source:
                np.bitwise_or(part, 1, out=part)
    return keys


def _group_starts(keys: np.ndarray, a: int, b: int, previous: object) -> np.ndarray:
    """The rows in [a, b) of sorted ``keys`` whose value differs from the row before (whose
    value is ``previous``, None before the first row)."""
    bits = keys[a:b] >> 1
    first = np.empty(b - a, dtype=bool)
    first[:1] = True if previous is None else bits[:1] != previous
    np.not_equal(bits[1:], bits[:-1], out=first[1:])
    return np.flatnonzero(first) + a


def _reverse(values: np.ndarray) -> None:
    """Reverse ``values`` in place, a slice at a time."""
    n = values.shape[0]
    for a, b in _slices(n // 2):
        low = values[a:b].copy()
        values[a:b] = values[n - b : n - a][::-1]
        values[n - b : n - a] = low[::-1]


def require_rows(curve: RiskCoverage) -> None:
    """Refuse an empty curve: its figures and thresholds are undefined."""
    if curve.total == 0:
        raise ValueError("the risk-coverage curve has no rows")
