"""Many short sums at once, each bit for bit what the one-at-a-time call gives.

* :func:`fsum_rows`: ``math.fsum`` of every row of a 2-D array. Each row is added with
  error-free transformations (Knuth's TwoSum): the row's exact sum is the running sum plus the
  errors, and the errors are themselves added by TwoSum. Where that second addition lost
  nothing, the running sum and the errors' sum are two doubles whose exact sum is the row's,
  and one IEEE addition rounds it to nearest, ties to even, as ``math.fsum`` does. Else the
  result stands when the exact sum is provably within half a gap of it (a bound on what was
  lost). A row where neither holds (rare: a tie after a lossy second addition, infinities,
  nan) is added by ``math.fsum`` itself. A zero sum is +0.0, as ``math.fsum`` gives it.
* :func:`run_sums`: ``float(values[a:b].sum())`` of every run of a 1-D array. numpy adds to
  0.0 the pairwise sum of the run: fewer than eight values one after another, starting from
  −0.0; up to 128 values in eight interleaved partial sums (value i goes to partial i mod 8
  while whole rows of eight last), combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) +
  (r6 + r7)), the rest then added one by one. That arithmetic is done for
  every run of at most 128 values at once, column by column; longer runs, and a numpy whose
  sums a probe finds to differ, take numpy's own sum run by run.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["fsum_rows", "run_sums"]

_ROWS_AT_ONCE = 1 << 15  # rows added at once: the temporaries stay small


def fsum_rows(terms: np.ndarray) -> np.ndarray:
    """``math.fsum(row)`` of every row of a 2-D float64 array, as a float64 array (the same
    floats; ``math.fsum``'s own errors, e.g. on +inf and -inf in one row, are raised)."""
    terms = np.asarray(terms, dtype=np.float64)
    rows, width = terms.shape
    out = np.empty(rows)
    for a in range(0, rows, _ROWS_AT_ONCE):
        b = min(a + _ROWS_AT_ONCE, rows)
        out[a:b] = _fsum_block(terms[a:b], width)
    return out


def _fsum_block(terms: np.ndarray, width: int) -> np.ndarray:
    rows = terms.shape[0]
    if width == 0:
        return np.zeros(rows)
    s = terms[:, 0].copy()
    errors = np.zeros(rows)  # Σ e_j, itself added by TwoSum
    spill = np.zeros(rows)  # Σ |what adding the e_j rounded away|
    t, u, v, e, f = (np.empty(rows) for _ in range(5))
    with np.errstate(all="ignore"):  # an infinity or a nan fails the proof below
        for j in range(1, width):
            _two_sum(s, terms[:, j], t, v, e)  # t + e = s + x_j
            s, t = t, s
            _two_sum(errors, e, u, v, f)  # u + f = errors + e
            errors, u = u, errors
            spill += np.abs(f)
        total = np.empty(rows)
        _two_sum(s, errors, total, v, e)  # total + e = s + errors = exact sum − Σ f_j
        # every f_j zero: total is the exact sum rounded to nearest, ties to even, as fsum's
        exact = spill == 0.0
        # else |exact sum − total| ≤ |e| + Σ|f_j|, Σ|f_j| ≤ spill·(1 + γ) with γ < width·2**-53
        bound = spill * (1.0 + (width + 2) * 2.0**-52)
        bound += np.abs(e)
        bound *= 1.0 + 2.0**-50  # what the two operations above may have rounded away
        magnitude = np.abs(total)
        half_gap = np.minimum(np.spacing(magnitude), magnitude - np.nextafter(magnitude, 0.0))
        half_gap *= 0.5
        proved = np.isfinite(total) & np.isfinite(spill) & (exact | (bound < half_gap))
    # a zero from exact arithmetic is an exact zero, which fsum gives as +0.0 (IEEE: -0.0 for
    # -0.0 + -0.0)
    total[proved & (total == 0.0)] = 0.0
    if not proved.all():
        fsum = math.fsum
        for i in np.flatnonzero(~proved).tolist():
            total[i] = fsum(terms[i].tolist())
    return total


def _two_sum(a: np.ndarray, b: np.ndarray, s: np.ndarray, v: np.ndarray, e: np.ndarray) -> None:
    """s = fl(a + b) and e = (a + b) − s exactly (Knuth), into ``s`` and ``e``; ``v`` is work
    space. ``s`` must not be ``a`` or ``b``."""
    np.add(a, b, out=s)
    np.subtract(s, a, out=v)  # the part of b that s holds
    np.subtract(s, v, out=e)
    np.subtract(a, e, out=e)  # a's part that s misses
    np.subtract(b, v, out=v)  # b's part that s misses
    e += v


_PAIRWISE_RUN = 128  # numpy adds a run of up to this many values in one block of 8 partials


def run_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``float(values[starts[g] : starts[g + 1]].sum())`` of every run g, as a float64 array
    (``values`` float64 and contiguous; ``starts`` ascending, from 0 to ``len(values)``)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.intp)
    lengths = np.diff(starts)
    out = np.zeros(lengths.shape[0])
    if not _numpy_sums_as_documented():
        for g, (a, b) in enumerate(zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True)):
            out[g] = float(values[a:b].sum())
        return out
    long = lengths > _PAIRWISE_RUN
    for g in np.flatnonzero(long).tolist():
        out[g] = float(values[starts[g] : starts[g + 1]].sum())
    short = np.flatnonzero(~long & (lengths > 0))
    if short.shape[0]:
        out[short] = _short_sums(values, starts[short], lengths[short])
    return out


def _short_sums(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """numpy's sum of runs of 1 to 128 values, all runs at once: 0.0 plus their pairwise
    sums."""
    out = np.full(starts.shape[0], -0.0)
    # fewer than eight values: added one after another, from -0.0
    few = np.flatnonzero(lengths < 8)
    if few.shape[0]:
        out[few] = _sequential(values, starts[few], lengths[few], out[few])
    more = np.flatnonzero(lengths >= 8)
    if more.shape[0]:
        s, n = starts[more], lengths[more]
        blocks = n - n % 8  # values taken by the eight partials
        r = [values[s + j] for j in range(8)]
        for i in range(8, int(blocks.max()), 8):
            live = np.flatnonzero(blocks > i)
            for j in range(8):
                r[j][live] += values[s[live] + i + j]
        combined = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        out[more] = _sequential(values, s + blocks, n % 8, combined)
    out += 0.0  # numpy's reduction starts from the identity: a sum of -0.0s is 0.0
    return out


def _sequential(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray, total: np.ndarray
) -> np.ndarray:
    """``total`` plus each run's ``counts`` values from ``starts``, one after another."""
    for i in range(int(counts.max()) if counts.shape[0] else 0):
        live = np.flatnonzero(counts > i)
        total[live] += values[starts[live] + i]
    return total


_PROBED: list[bool] = []


def _numpy_sums_as_documented() -> bool:
    """Whether this numpy's sum of a short float64 run is the arithmetic of
    :func:`_short_sums` (probed once on runs of every length up to 128, signed zeros among
    them); if not, every run is summed by numpy itself."""
    if not _PROBED:
        rng = np.random.default_rng(0)
        lengths = np.tile(np.arange(_PAIRWISE_RUN + 1), 3)
        starts = np.zeros(lengths.shape[0] + 1, np.intp)
        np.cumsum(lengths, out=starts[1:])
        values = rng.normal(0.0, 1.0, starts[-1]) * 10.0 ** rng.integers(-8, 9, starts[-1])
        values[rng.random(starts[-1]) < 0.05] = -0.0
        values[starts[-lengths.shape[0] // 3 - 1] :] = -0.0  # the last runs: -0.0 only
        got = _short_sums(values, starts[:-1][lengths > 0], lengths[lengths > 0])
        want = [float(values[a:b].sum()) for a, b in itertools.pairwise(starts.tolist()) if b > a]
        _PROBED.append(bool(np.array_equal(got, np.array(want))) and _same_signs(got, want))
    return _PROBED[0]


def _same_signs(got: np.ndarray, want: list[float]) -> bool:
    return bool((np.signbit(got) == np.signbit(np.array(want))).all())
