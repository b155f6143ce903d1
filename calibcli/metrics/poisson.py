"""Poisson bootstrap keyed by rows: replicate state that merges across shards.

The multinomial bootstrap of :mod:`calibcli.metrics.bootstrap` draws N rows with replacement,
which ties every row's count to every other row's: it cannot be drawn shard by shard. Here each
row's count in replicate r is an independent Poisson(1) draw, and a pure function of
(seed, r, the row's 64-bit key): the same row gets the same count in any process, shard or row
order, so the per-replicate sums of disjoint shards add up to those of their union. The
replicate's size varies (a Poisson(N) total rather than exactly N), which for large N changes
the intervals by O(1/N) relative to the multinomial scheme. A replicate whose rows all drew 0
has no defined scalar and is left out of every interval (likely only for a handful of rows).

Row weight (all arithmetic on unsigned 64-bit integers, modulo 2**64; ``^`` is xor)::

    mix(z)     = z ^= z >> 30;  z *= 0xBF58476D1CE4E5B9;  z ^= z >> 27;
                 z *= 0x94D049BB133111EB;  z ^= z >> 31;  return z   (splitmix64's finaliser)
    salt(s, r) = mix(mix(s) + (r + 1) * 0x9E3779B97F4A7C15)   seed s < 2**64, replicate r >= 0
    h          = mix(key ^ salt(seed, r))
    m          = h >> 11                                       (top 53 bits: u = m / 2**53)
    weight     = #{j in 0..16 : m >= T[j]},   T[j] = ceil(2**53 · E · Σ_{i<=j} 1/i!)

where E is the double ``math.exp(-1)`` and the product is taken exactly (rationals), so
u >= T[j] / 2**53 exactly when u >= F(j), the Poisson(1) CDF with E for e^-1
(``POISSON_THRESHOLDS`` holds T; T[0] = 3313563428353948, T[16] = 2**53 − 9). Each count has
its Poisson(1) probability to within 2**-53. The table stops at j = 16: weights are at most 17
(P = 9/2**53 ≈ P(X >= 17)), and P(X >= 18) ≈ 5.7e-17 is below u's resolution of 2**-53 ≈ 1.1e-16.

:class:`PoissonState` holds, per group and replicate, what the binned scalars and the NLL need:
per (class, bin) Σw, Σw·c and Σw·c² (wrong answers first), Σw·loss over rows of finite loss and
Σw over rows of infinite loss (a wrong answer at c = 1, a right one at c = 0) — (6·bins + 2)
float64 per replicate and group, 496 bytes at 10 bins. Uniform bins only: quantile edges depend
on the whole data set, so they cannot be fixed before the shards are seen. AUROC and the smooth
ECE need every row and are not in the state; :func:`poisson_intervals` computes every scalar in
one pass over rows held in memory, feeding the same weights to
:class:`~calibcli.metrics.bootstrap.ReplicateEngine`.

Cost: the weights are hashed in blocks of 2**15 rows that stay in cache; the rows are sorted by
(group, class, bin) once, so the sums are ``np.add.reduceat`` over runs. Measured with
``bench/poisson.py`` on the project's 2-core machine while other jobs were running (load ~4, so
upper bounds; the range of two runs), 1,000,000 uniform confidences, 10 bins, CPU time:

                                            per replicate    setup (sorting, engine)
    the weights alone                          6.5–6.6 ms
    PoissonState.from_rows                    11.1–11.5 ms    0.1–0.2 s
    poisson_intervals, every scalar           19.4–21.5 ms    0.3–0.4 s
    bootstrap_intervals (multinomial), all    14.1–17.4 ms    0.2 s

Memory: from_rows holds 24 bytes per row while it runs (confidence, key and log loss, sorted);
poisson_intervals 8 bytes per row (the keys in the engine's order) beyond the engine's own.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from calibcli.metrics.binning import resolve_edges
from calibcli.metrics.bootstrap import (
    BootstrapResult,
    ReplicateEngine,
    run_replicates,
    sorted_quantile,
)
from calibcli.metrics.core import BinStats, PredictionColumns, bin_edges, bin_index
from calibcli.metrics.estimators import SCALAR_KEYS, binned_scalars
from calibcli.metrics.progress import phase
from calibcli.metrics.validation import _as_confidences, as_vector, check_bins, first_bad

__all__ = ["POISSON_THRESHOLDS", "PoissonState", "poisson_intervals", "replicate_weights"]

SCHEME = 1  # version of the weight function above; states of different schemes never merge

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_BLOCK = 1 << 15  # rows hashed and summed at a time (the temporaries stay in cache)
_INDEX = {key: i for i, key in enumerate(SCALAR_KEYS)}
_BINNED = frozenset(SCALAR_KEYS) - {"nll", "auroc", "smece", "smece_bandwidth"}


def _poisson_thresholds() -> tuple[int, ...]:
    """T[j] = ceil(2**53 · E · Σ_{i<=j} 1/i!) for every j with T[j] < 2**53 (j = 0..16)."""
    e, partial, out = Fraction(math.exp(-1)), Fraction(0), []
    for j in range(64):
        partial += Fraction(1, math.factorial(j))
        t = math.ceil(e * partial * (1 << 53))
        if t >= 1 << 53:
            return tuple(out)
        out.append(t)
    raise AssertionError("unreachable: E · e > 1")


POISSON_THRESHOLDS = _poisson_thresholds()
# the thresholds compared with h itself: m >= T  <=>  h >= T << 11
_SCALED = np.array([t << 11 for t in POISSON_THRESHOLDS], dtype=np.uint64)
# mix's steps: z ^= z >> shift, then z *= multiplier (none after the last)
_STEPS = (
    (np.uint64(30), np.uint64(_MIX1)),
    (np.uint64(27), np.uint64(_MIX2)),
    (np.uint64(31), None),
)


def _mix(z: int) -> int:
    """splitmix64's finaliser on a Python int (the replicate salt; the rows use numpy)."""
    z ^= z >> 30
    z = (z * _MIX1) & _MASK
    z ^= z >> 27
    z = (z * _MIX2) & _MASK
    return z ^ (z >> 31)


def replicate_salt(seed: int, replicate: int) -> int:
    """salt(seed, r) = mix(mix(seed) + (r + 1)·0x9E3779B97F4A7C15 mod 2**64)."""
    return _mix((_mix(seed) + (replicate + 1) * _GOLDEN) & _MASK)


class _Drawer:
    """Fills blocks of Poisson weights, reusing its scratch arrays (one per process)."""

    def __init__(self) -> None:
        self.h = np.empty(_BLOCK, dtype=np.uint64)
        self.t = np.empty(_BLOCK, dtype=np.uint64)
        self.b = np.empty(_BLOCK, dtype=bool)

    def draw(self, keys: np.ndarray, salt: np.uint64, out: np.ndarray) -> None:
        """``out`` (uint8, at most _BLOCK rows) = the weights of ``keys`` under ``salt``."""
        n = keys.shape[0]
        h, t, b = self.h[:n], self.t[:n], self.b[:n]
        np.bitwise_xor(keys, salt, out=h)
        for shift, multiplier in _STEPS:
            np.right_shift(h, shift, out=t)
            h ^= t
            if multiplier is not None:
                h *= multiplier
        # counts 0..3 by comparisons (98 % of rows); the rest look the count up in the table
        np.greater_equal(h, _SCALED[0], out=out.view(bool))
        for j in (1, 2):
            np.greater_equal(h, _SCALED[j], out=b)
            out += b
        np.greater_equal(h, _SCALED[3], out=b)
        tail = np.flatnonzero(b)
        if tail.size:
            out[tail] = np.searchsorted(_SCALED, h[tail], side="right")

    def fill(self, keys: np.ndarray, seed: int, replicate: int, out: np.ndarray) -> None:
        salt = np.uint64(replicate_salt(seed, replicate))
        for lo in range(0, keys.shape[0], _BLOCK):
            self.draw(keys[lo : lo + _BLOCK], salt, out[lo : lo + _BLOCK])


def replicate_weights(keys: object, seed: int, replicate: int) -> np.ndarray:
    """Poisson(1) weight (uint8) of each row key in replicate ``replicate`` (module docstring)."""
    k = _row_keys(keys, "keys")
    seed, replicate = _check_int("seed", seed, 0, 1 << 64), _check_int("replicate", replicate)
    out = np.empty(k.shape[0], dtype=np.uint8)
    _Drawer().fill(k, seed, replicate, out)
    return out


# --------------------------------------------------------------------------- validation


def _check_int(name: str, value: object, low: int = 0, high: int | None = None) -> int:
    ok = not isinstance(value, bool) and isinstance(value, (int, np.integer))
    if not ok or value < low or (high is not None and value >= high):
        bound = f" and < {high}" if high is not None else ""
        raise ValueError(f"{name} must be an integer >= {low}{bound}, got {value!r}")
    return int(value)


def _row_keys(values: object, name: str, n: int | None = None) -> np.ndarray:
    """Row keys as uint64: unsigned integers, or non-negative signed ones."""
    arr = as_vector(values, name)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {n}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be unsigned 64-bit integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and arr.min() < 0:
        i = first_bad(arr < 0)
        raise ValueError(f"{name}[{i}] = {arr[i].item()!r} is negative")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def _group_ids(values: object, name: str, n: int, groups: int) -> np.ndarray:
    if values is None:
        return np.zeros(n, dtype=np.int64)
    arr = as_vector(values, name)
    if arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {n}")
    if arr.size and (arr.dtype == bool or arr.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= groups)
    if bad.any():
        i = first_bad(bad)
        raise ValueError(f"{name}[{i}] = {arr[i].item()!r} is outside [0, {groups})")
    return arr.astype(np.int64, copy=False)


def _check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(level)


# --------------------------------------------------------------------------- shared with the engine


def _bin_stats(edges: np.ndarray, s: np.ndarray) -> BinStats:
    """BinStats of one replicate's (3, 2, bins) moments, as ``ReplicateEngine._bin_stats`` does."""
    s0, s1, s2 = s
    n = np.rint(s0).astype(np.int64)  # exact: integer sums below 2**53
    # right answers (second row) have y = 1, so Σ(c − y)² = Σw − 2Σwc + Σwc² there
    sq_right = np.maximum(s0[1] - 2.0 * s1[1] + s2[1], 0.0)
    return BinStats(edges, n[0] + n[1], n[1], s1[0] + s1[1], s2[0] + s2[1], s1[1], sq_right + s2[0])


def _percentile_intervals(
    replicates: np.ndarray, keys: Iterable[str], level: float
) -> dict[str, tuple[float, float]]:
    """Per scalar, the quantiles of its defined (non-nan) replicates, as bootstrap_intervals."""
    q_lo, q_hi = (1.0 - level) / 2.0, (1.0 + level) / 2.0
    out = {}
    for key in keys:
        column = replicates[:, _INDEX[key]]
        values = np.sort(column[~np.isnan(column)])
        if values.size == 0:
            out[key] = (math.nan, math.nan)
        else:
            out[key] = (sorted_quantile(values, q_lo), sorted_quantile(values, q_hi))
    return out


# --------------------------------------------------------------------------- the state


class _SortedRows:
    """Rows sorted by (group, class, bin) and cut into blocks of _BLOCK rows: each block hashes
    its keys and sums its "segments" (the runs of one (group, class, bin) inside it)."""

    def __init__(
        self,
        conf_w: np.ndarray,
        conf_r: np.ndarray,
        keys: np.ndarray,
        group: np.ndarray,
        edges: np.ndarray,
        groups: int,
    ) -> None:
        n_w, n = conf_w.shape[0], conf_w.shape[0] + conf_r.shape[0]
        bins = self.bins = edges.shape[0] - 1
        self.groups = groups
        conf = np.concatenate([conf_w, conf_r])
        loss = np.empty(n)
        with np.errstate(divide="ignore"):
            np.negative(np.log1p(-conf_w), out=loss[:n_w])
            np.negative(np.log(conf_r), out=loss[n_w:])
        run = (group * 2 + (np.arange(n) >= n_w)) * bins + bin_index(conf, edges)
        order = np.argsort(run, kind="stable")
        run, self.conf, self.keys, self.loss = run[order], conf[order], keys[order], loss[order]
        del order, conf, loss
        infinite = np.flatnonzero(np.isinf(self.loss))
        self.loss[infinite] = 0.0
        self.infinite_group = run[infinite] // (2 * bins)
        change = np.zeros(n, dtype=bool)
        change[::_BLOCK] = True
        change[1:] |= run[1:] != run[:-1]
        segments = np.flatnonzero(change)
        self.segment_run = run[segments]
        self.segment_group = self.segment_run // (2 * bins)
        bounds = np.append(np.arange(0, n, _BLOCK), n)
        s_at = np.searchsorted(segments, bounds).tolist()
        i_at = np.searchsorted(infinite, bounds).tolist()
        lohi, self.blocks = bounds.tolist(), []
        for b, (lo, hi) in enumerate(itertools.pairwise(lohi)):
            seg, inf = slice(*s_at[b : b + 2]), slice(*i_at[b : b + 2])
            self.blocks.append((lo, hi, seg, segments[seg] - lo, inf, infinite[inf] - lo))
        self.sums = np.empty((4, segments.shape[0]))  # Σw, Σwc, Σwc², Σw·loss per segment
        self.infinite_w = np.empty(infinite.shape[0])
        self.drawer = _Drawer()
        self.counts = np.empty(_BLOCK, dtype=np.uint8)
        self.w = np.empty(_BLOCK)
        self.wl = np.empty(_BLOCK)

    def replicate(self, state: PoissonState, r: int) -> None:
        """Fill replicate ``r`` of every group of ``state``."""
        salt, sums = np.uint64(replicate_salt(state.seed, r)), self.sums
        for lo, hi, seg, starts, inf, inf_rows in self.blocks:
            size, c = hi - lo, self.conf[lo:hi]
            cnt, w, wl = self.counts[:size], self.w[:size], self.wl[:size]
            self.drawer.draw(self.keys[lo:hi], salt, cnt)
            self.infinite_w[inf] = cnt[inf_rows]
            np.copyto(w, cnt)
            sums[0, seg] = np.add.reduceat(w, starts)
            np.multiply(w, self.loss[lo:hi], out=wl)
            sums[3, seg] = np.add.reduceat(wl, starts)
            np.multiply(w, c, out=w)
            sums[1, seg] = np.add.reduceat(w, starts)
            np.multiply(w, c, out=w)
            sums[2, seg] = np.add.reduceat(w, starts)
        groups, bins = self.groups, self.bins
        for k in range(3):
            moment = np.bincount(self.segment_run, weights=sums[k], minlength=groups * 2 * bins)
            state.moments[:, r, k] = moment.reshape(groups, 2, bins)
        state.loss[:, r] = np.bincount(self.segment_group, weights=sums[3], minlength=groups)
        state.infinite[:, r] = np.bincount(
            self.infinite_group, weights=self.infinite_w, minlength=groups
        )


@dataclass(frozen=True, eq=False)
class PoissonState:
    """Mergeable replicate state of a set of rows (see the module docstring).

    ``moments[g, r, k, c, b]``: group g, replicate r, k = Σw, Σw·c, Σw·c²; class c (0 = wrong,
    1 = right answers), uniform bin b. ``loss[g, r]``: Σw·loss over rows of finite loss;
    ``infinite[g, r]``: Σw over rows of infinite loss. All float64.
    """

    bins: int
    samples: int
    seed: int
    moments: np.ndarray
    loss: np.ndarray
    infinite: np.ndarray

    def __post_init__(self) -> None:
        check_bins(self.bins)
        _check_int("samples", self.samples, 1)
        _check_int("seed", self.seed, 0, 1 << 64)
        g = self.moments.shape[0] if self.moments.ndim == 5 else -1
        if g < 1 or self.moments.shape != (g, self.samples, 3, 2, self.bins):
            raise ValueError(
                f"moments have shape {self.moments.shape}, expected (groups, "
                f"{self.samples}, 3, 2, {self.bins})"
            )
        for name in ("loss", "infinite"):
            if getattr(self, name).shape != (g, self.samples):
                raise ValueError(
                    f"{name} has shape {getattr(self, name).shape}, expected ({g}, {self.samples})"
                )

    @property
    def groups(self) -> int:
        return int(self.moments.shape[0])

    @property
    def edges(self) -> np.ndarray:
        return bin_edges(self.bins)

    @classmethod
    def empty(cls, *, bins: int, samples: int, seed: int, groups: int = 1) -> PoissonState:
        """The state of no rows (the zero of :meth:`merged`)."""
        bins, samples = check_bins(bins), _check_int("samples", samples, 1)
        seed, groups = _check_int("seed", seed, 0, 1 << 64), _check_int("groups", groups, 1)
        shape = (groups, samples)
        return cls(
            bins, samples, seed, np.zeros((*shape, 3, 2, bins)), np.zeros(shape), np.zeros(shape)
        )

    @classmethod
    def from_rows(
        cls,
        right: object,
        wrong: object,
        right_keys: object,
        wrong_keys: object,
        *,
        bins: int,
        samples: int,
        seed: int,
        right_groups: object = None,
        wrong_groups: object = None,
        groups: int = 1,
    ) -> PoissonState:
        """The state of rows given by class: ``right`` / ``wrong`` the confidences of right and
        wrong answers, ``*_keys`` their 64-bit row keys, ``*_groups`` their group ids in
        [0, groups) (default: all in group 0)."""
        state = cls.empty(bins=bins, samples=samples, seed=seed, groups=groups)
        conf_r, conf_w = _as_confidences(right, "right"), _as_confidences(wrong, "wrong")
        n_r, n_w = conf_r.shape[0], conf_w.shape[0]
        if n_r + n_w == 0:
            return state
        keys = [_row_keys(wrong_keys, "wrong_keys", n_w), _row_keys(right_keys, "right_keys", n_r)]
        group = [
            _group_ids(wrong_groups, "wrong_groups", n_w, state.groups),
            _group_ids(right_groups, "right_groups", n_r, state.groups),
        ]
        rows = _SortedRows(
            conf_w, conf_r, np.concatenate(keys), np.concatenate(group), state.edges, state.groups
        )
        with phase("bootstrap sums", state.samples) as advance:  # the installed hook, if any
            for r in range(state.samples):
                rows.replicate(state, r)
                advance(r + 1)
        return state

    # ----- merging

    def merged(
        self,
        other: PoissonState,
        at_self: Sequence[int] | np.ndarray | None = None,
        at_other: Sequence[int] | np.ndarray | None = None,
        groups: int | None = None,
    ) -> PoissonState:
        """The state of both sets of rows, group ids mapped into a common numbering.

        ``at_self[g]`` is the common id of this state's group g (``at_other`` likewise; default
        the identity); ``groups`` the number of common groups (default: the largest id + 1).
        Sums are added in a fixed order (this state's, then the other's), so merging the same
        states in the same order gives identical arrays.
        """
        for name in ("bins", "samples", "seed"):
            if getattr(self, name) != getattr(other, name):
                raise ValueError(
                    f"cannot merge states of different {name}: "
                    f"{getattr(self, name)} != {getattr(other, name)}"
                )
        maps = [
            _group_map(at, state.groups, name)
            for at, state, name in ((at_self, self, "at_self"), (at_other, other, "at_other"))
        ]
        needed = 1 + max(int(m.max()) for m in maps)
        groups = needed if groups is None else _check_int("groups", groups, 1)
        if needed > groups:
            raise ValueError(f"group id {needed - 1} is outside [0, {groups})")
        out = PoissonState.empty(
            bins=self.bins, samples=self.samples, seed=self.seed, groups=groups
        )
        for at, state in zip(maps, (self, other), strict=True):
            for g, target in enumerate(at.tolist()):  # whole groups at a time, in id order
                out.moments[target] += state.moments[g]
                out.loss[target] += state.loss[g]
                out.infinite[target] += state.infinite[g]
        return out

    def group(self, g: int) -> PoissonState:
        """The state of group ``g`` alone (one group)."""
        g = _check_int("group", g, 0, self.groups)
        return self._single(self.moments[g], self.loss[g], self.infinite[g])

    def pooled(self) -> PoissonState:
        """The state of every row, groups summed (one group)."""
        return self._single(
            self.moments.sum(axis=0), self.loss.sum(axis=0), self.infinite.sum(axis=0)
        )

    def _single(self, moments, loss, infinite) -> PoissonState:
        copies = (a[None].copy() for a in (moments, loss, infinite))
        return PoissonState(self.bins, self.samples, self.seed, *copies)

    # ----- scalars

    def replicates(self, group: int | None = None) -> np.ndarray:
        """(samples, len(SCALAR_KEYS)): each replicate's scalars, nan where undefined.

        The binned scalars come from :func:`binned_scalars` on the replicate's BinStats; nll is
        inf when a row of infinite loss has weight, else Σw·loss / Σw; auroc and the smooth ECE
        are nan (the state cannot hold them), and so is every scalar of a replicate of no rows.
        """
        state = self.pooled() if group is None else self.group(group)
        edges = self.edges
        out = np.full((self.samples, len(SCALAR_KEYS)), math.nan)
        for r in range(self.samples):
            stats = _bin_stats(edges, state.moments[0, r])
            total = int(stats.count.sum())
            if not total:
                continue
            for key, value in binned_scalars(stats, _BINNED).items():
                out[r, _INDEX[key]] = value
            infinite = state.infinite[0, r] > 0
            out[r, _INDEX["nll"]] = math.inf if infinite else float(state.loss[0, r]) / total
        return out

    def intervals(self, level: float, group: int | None = None) -> dict[str, tuple[float, float]]:
        """Percentile interval of every key of ``SCALAR_KEYS`` ((nan, nan) for auroc, smece,
        smece_bandwidth), from :meth:`replicates` as :func:`bootstrap_intervals` forms them."""
        level = _check_level(level)
        return _percentile_intervals(self.replicates(group), SCALAR_KEYS, level)

    # ----- serialisation

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Little-endian arrays: ``meta`` = [scheme, bins, samples, seed, groups] (uint64) and
        the three sums (float64), whose shapes ``meta`` determines."""
        meta = [SCHEME, self.bins, self.samples, self.seed, self.groups]
        out = {"meta": np.array(meta, dtype="<u8")}
        for name in ("moments", "loss", "infinite"):
            out[name] = np.ascontiguousarray(getattr(self, name), dtype="<f8")
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, object]) -> PoissonState:
        """The state :meth:`to_arrays` gave (the sums may be flat, e.g. read from raw bytes)."""
        meta = np.asarray(arrays["meta"]).astype(np.uint64)
        if meta.shape != (5,):
            raise ValueError(f"meta must hold 5 numbers, got shape {meta.shape}")
        scheme, bins, samples, seed, groups = (int(v) for v in meta)
        if scheme != SCHEME:
            raise ValueError(f"state of weight scheme {scheme}, this version reads {SCHEME}")
        shapes = {"moments": (groups, samples, 3, 2, bins), "loss": (groups, samples)}
        shapes["infinite"] = shapes["loss"]
        sums = {}
        for name, shape in shapes.items():
            arr = np.asarray(arrays[name], dtype="<f8")
            if arr.size != math.prod(shape):
                raise ValueError(f"{name} holds {arr.size} values, expected {math.prod(shape)}")
            sums[name] = arr.reshape(shape).astype(np.float64)
        return cls(bins, samples, seed, **sums)


def _group_map(at: object, groups: int, name: str) -> np.ndarray:
    """A state's group ids in the common numbering (identity when not given)."""
    if at is None:
        return np.arange(groups)
    return _group_ids(at, name, groups, 1 << 62)


# --------------------------------------------------------------------------- one pass, every scalar


class _PoissonReplicates:
    """Replicates of :class:`ReplicateEngine` weighted by the rows' Poisson counts.

    ``keys`` follow the engine's row layout (wrong answers sorted by confidence, then right
    ones); ``run`` has the engine's signature, so bootstrap's process pool drives it.
    """

    def __init__(self, engine: ReplicateEngine, keys: np.ndarray) -> None:
        self.engine = engine
        self.keys = keys

    def run(self, seed: int, start: int, stop: int) -> np.ndarray:
        out = np.full((stop - start, len(SCALAR_KEYS)), math.nan)
        counts = np.empty(self.keys.shape[0], dtype=np.uint8)
        drawer = _Drawer()

        def weighing(r: int) -> Callable | None:  # no rows: no defined scalar (row left nan)
            drawer.fill(self.keys, seed, r, counts)
            return self.engine.weighing(counts) if counts.any() else None

        self.engine.evaluate_each(map(weighing, range(start, stop)), out)
        return out


def poisson_intervals(
    columns: PredictionColumns,
    right_keys: object,
    wrong_keys: object,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    level: float = 0.95,
    samples: int = 1000,
    seed: int = 0,
    workers: int = 1,
    keys: Iterable[str] | None = None,
) -> BootstrapResult:
    """Poisson bootstrap interval of every scalar, AUROC and smooth ECE included, in one pass.

    ``right_keys`` / ``wrong_keys`` are the 64-bit keys of ``columns.conf_correct`` /
    ``conf_wrong``, row for row. Each replicate weights the rows by their Poisson counts and
    evaluates them with :class:`ReplicateEngine`; with uniform bins the binned and NLL intervals
    are those of :meth:`PoissonState.intervals` (to rounding). ``keys`` restricts the scalars as
    in :func:`bootstrap_intervals`; ``workers`` changes the speed, never the result.
    """
    level = _check_level(level)
    samples = _check_int("samples", samples, 1)
    seed = _check_int("seed", seed, 0, 1 << 64)
    workers = _check_int("workers", workers, 1)
    asked = set(SCALAR_KEYS if keys is None else keys)
    if asked - set(SCALAR_KEYS):
        raise ValueError(f"unknown scalar(s) {', '.join(sorted(asked - set(SCALAR_KEYS)))}")
    wanted = tuple(k for k in SCALAR_KEYS if k in asked)
    right, wrong = columns.conf_correct, columns.conf_wrong
    k_right = _row_keys(right_keys, "right_keys", right.shape[0])
    k_wrong = _row_keys(wrong_keys, "wrong_keys", wrong.shape[0])
    edges = resolve_edges(columns, bins, strategy)
    if columns.n == 0:
        return BootstrapResult(level, samples, seed, dict.fromkeys(wanted, (math.nan, math.nan)))
    engine = ReplicateEngine(columns, edges, frozenset(wanted))
    # the engine sorts each class by confidence; tied rows are interchangeable to it, so any
    # sorting permutation carries the keys to the right rows
    order_w = np.argsort(wrong, kind="stable")
    order_r = np.argsort(right, kind="stable")
    if not np.array_equal(engine.conf, np.concatenate([wrong[order_w], right[order_r]])):
        raise RuntimeError(
            "ReplicateEngine's row layout is not (wrong, right) sorted by confidence"
        )
    layout_keys = np.concatenate([k_wrong[order_w], k_right[order_r]])
    del order_w, order_r
    replicates = run_replicates(_PoissonReplicates(engine, layout_keys), seed, samples, workers)
    return BootstrapResult(level, samples, seed, _percentile_intervals(replicates, wanted, level))
