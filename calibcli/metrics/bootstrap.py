"""Percentile bootstrap intervals for every scalar of :func:`calibration_estimates`.

Resampling: replicate r draws N row indices uniformly with replacement (the ordinary
nonparametric bootstrap, i.e. multinomial row counts), from a numpy Generator seeded with
``np.random.SeedSequence(seed).spawn(samples)[r]`` — built directly as
``SeedSequence(seed, spawn_key=(r,))``, which is the same child — so the result depends only on
(input, seed, samples), never on ``workers`` or how replicates are split. Bins stay fixed at the
full-sample edges (uniform, or the full sample's quantile edges). The interval for each scalar is
the (1 − level)/2 and (1 + level)/2 quantiles of its replicates (numpy's linear method; equal
neighbours, including ±inf, are returned as they are). Replicates where a scalar is undefined
(nan, e.g. AUROC of a resample with no wrong answer) are left out of that scalar's interval; a
scalar with no defined replicate gets (nan, nan).

With ``clusters`` labelling each row's question (an inspect-ai run's epochs), replicate r draws
whole questions instead (:mod:`calibcli.metrics.clusters`).

Formulation (no per-row Python work, no N×B matrices). Everything that does not depend on the
weights is computed once: both classes sorted by confidence (wrong answers first), so every bin
and every smooth-ECE grid cell is a contiguous run of rows; the runs sharing class, bin and cell
of the common smooth-ECE grid ("atoms"); per-row log losses; each right answer's insertion points
among the wrong answers. A replicate is then one pass over blocks of 2**16 rows of one class,
each block's work done while it is in cache:

* its draws (multinomial block totals, then uniform draws inside the block; a full block uses
  the 16-bit quarters of the generator's raw 64-bit words, exactly uniform over 2**16 rows);
* Σw, Σw·c, Σw·c² per atom (``np.add.reduceat``), which small bincounts fold into the
  per-bin :class:`BinStats` — so every binned estimator runs the very code of the point
  estimate — and into the smooth-ECE grid histograms (a row at f puts (1 − u) and u on the grid
  points around it, u = f·(m − 1) − cell, and Σw·u, Σw·f·u are linear in the three moments);
* Σw·loss for the NLL;
* AUROC: cumulative counts of the wrong answers (their blocks come first), read at each right
  answer's insertion points: the exact integer Mann–Whitney count, ties as ½.

The smooth ECE then runs relplot's bandwidth bisection (11 bandwidths) on the replicate's grid
histograms. The replicates of a run wait for it in batches of up to 64 (their atom moments held,
at most 4 MB of them), and each batch's searches run side by side
(:func:`~calibcli.metrics.smooth_groups.search_bandwidths`, as the smooth ECE of many --by
groups does): one inverse FFT and one interpolation for the batch's replicates at each step, and
most steps decided by bounds without a transform. Each replicate gets the floats of its own
bisection (:func:`calibcli.metrics.smooth.bandwidth_fixed_point`), whatever its batch. A compare
--by task of 57 tasks (14,000 questions, 200 resamples) took 27.8 s of CPU where one search at a
time took 50.2 s (``make bench-ab-bootstrap``). The kernel spectra and evaluation points depend
only on the bandwidth, so they are computed once per thread and reused by every replicate. The
bisection only ever evaluates σ = 1 and multiples of 1/1024, which use ten grid sizes in all
(``BISECTION_GRID_SIZES``: 1001 points for σ >= 11/1024, finer ones below), so the atoms refine
all ten grids and no bandwidth needs another pass over the rows.

Measured on the project's 2-core machine while other jobs were running (so upper bounds),
N = 1,000,000 rows with uniform confidences, 10 uniform bins, 1,000 resamples, all scalars:

    data                                   workers=1   workers=2   CPU per replicate (smooth ECE)
    miscalibrated, smECE bandwidth ≈ 0.10    13.6 s       9.8 s      14.1 ms (1.2 ms,  9 %)
    calibrated,    smECE bandwidth ≈ 0.004   16.4 s      10.0 s      16.7 ms (5.0 ms, 30 %)

Of the rest, about a third is drawing the counts (multinomial tally), the remainder the
per-block passes. Memory: about 30 bytes per row held while the bootstrap runs (peak ~70 while
setting up), plus scratch: the waiting replicates' atom moments (at most 4 MB), a batch's
spectra (about 5 MB) and, kept by each thread, the kernels tried (32 KB per bandwidth; a
compare --by of 57 groups, 200 resamples, tried 143: 8 MB with their table's spare rows).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.binning import resolve_edges
from calibcli.metrics.core import BinStats, PredictionColumns, bin_index
from calibcli.metrics.estimators import SCALAR_KEYS, binned_scalars
from calibcli.metrics.progress import ProgressHook
from calibcli.metrics.replicates import run_replicates
from calibcli.metrics.smooth import (
    BISECTION_GRID_SIZES,
    eval_points,
    grid_points,
    grid_size,
    histogram_spectra,
    kernel_spectrum,
    smoothed_error,
)
from calibcli.metrics.smooth_groups import Kernels, search_bandwidths

__all__ = ["BootstrapResult", "bootstrap_intervals"]

_DRAW_BLOCK = 1 << 16  # rows per block of the replicate pass (its temporaries stay in cache)
_BUILD_BLOCK = 1 << 18  # rows per block when the engine finds its atoms
_RAW16_BLOCK = 1 << 16  # a block of exactly this many rows draws 16-bit indices from raw words
_SEARCHED = 64  # replicates whose smooth-ECE searches run side by side
_WAITING_BYTES = 4 << 20  # at most this much of their atom moments held meanwhile
_COARSE = grid_size(1.0)  # the grid of every bandwidth from 11/1024 up (1001 points)
# the kernels of the bandwidths the searches tried, shared by every engine a thread runs (the
# searches of many --by groups try much the same ones; a thread's own, since a search adds to
# them as it runs): at most one per multiple of 1/1024, 32 KB each
_SEARCHES = threading.local()

_INDEX = {key: i for i, key in enumerate(SCALAR_KEYS)}


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile intervals ``intervals[key] = (lower, upper)`` for each key of ``SCALAR_KEYS``."""

    level: float
    samples: int
    seed: int
    intervals: dict[str, tuple[float, float]]


def bootstrap_intervals(
    columns: PredictionColumns,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    level: float = 0.95,
    samples: int = 1000,
    seed: int = 0,
    workers: int = 1,
    keys: Iterable[str] | None = None,
    progress: ProgressHook | None = None,
    clusters: tuple[object, object] | None = None,
) -> BootstrapResult:
    """Percentile bootstrap interval of every scalar in :meth:`CalibrationEstimates.scalars`.

    Same input, ``seed`` and ``samples`` give identical intervals whatever ``workers`` is
    (workers > 1 runs replicates in a process pool, fork start method where available). ``keys``
    restricts the intervals to those scalars (default: all of ``SCALAR_KEYS``); the binned ones
    cost little, and leaving out smece/smece_bandwidth, nll or auroc skips their work.
    ``progress(phase, done, total)`` hears the resamples done (:mod:`calibcli.metrics.progress`;
    default: the installed hook, if any). ``clusters`` = (right labels, wrong labels), integers
    aligned with ``columns.conf_correct`` and ``columns.conf_wrong``, names each row's question:
    the questions are resampled whole. See the module docstring for the resampling scheme and
    its cost.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    for name, value, low in (("samples", samples, 1), ("seed", seed, 0), ("workers", workers, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    samples, seed, workers = int(samples), int(seed), int(workers)
    wanted = SCALAR_KEYS if keys is None else tuple(k for k in SCALAR_KEYS if k in set(keys))
    unknown = set() if keys is None else set(keys) - set(SCALAR_KEYS)
    if unknown:
        raise ValueError(f"unknown scalar(s) {', '.join(sorted(unknown))}")
    edges = resolve_edges(columns, bins, strategy)
    if columns.n == 0:
        nan = (math.nan, math.nan)
        return BootstrapResult(float(level), samples, seed, dict.fromkeys(wanted, nan))
    from calibcli.metrics.clusters import clustered_engine

    engine = clustered_engine(columns, edges, frozenset(wanted), clusters)
    replicates = run_replicates(engine, seed, samples, workers, progress=progress)
    q_lo, q_hi = (1.0 - level) / 2.0, (1.0 + level) / 2.0
    intervals = {}
    for key in wanted:
        column = replicates[:, _INDEX[key]]
        values = np.sort(column[~np.isnan(column)])
        if values.size == 0:
            intervals[key] = (math.nan, math.nan)
        else:
            intervals[key] = (sorted_quantile(values, q_lo), sorted_quantile(values, q_hi))
    return BootstrapResult(float(level), samples, seed, intervals)


def replicate_generator(seed: int, replicate: int) -> np.random.Generator:
    """The Generator of replicate r: seeded by ``SeedSequence(seed).spawn(r + 1)[r]``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(replicate,)))


def sorted_quantile(values: np.ndarray, q: float) -> float:
    """numpy's linear-method quantile of sorted values; equal neighbours (even inf) as they are."""
    h = (values.shape[0] - 1) * q
    i = math.floor(h)
    frac = h - i
    a = float(values[i])
    if frac == 0.0 or i + 1 >= values.shape[0]:
        return a
    b = float(values[i + 1])
    if a == b:
        return a
    return a + frac * (b - a)


# --------------------------------------------------------------------------- replicate loop

# --------------------------------------------------------------------------- one replicate


@dataclass(frozen=True)
class _Block:
    """A cache-sized run of rows of one class, and what lies inside it."""

    lo: int
    hi: int
    right: bool  # right answers (else wrong ones)
    atom_lo: int
    atom_hi: int
    atom_starts: np.ndarray  # atom starts relative to lo
    tied_lo: int  # range of ``tied`` (indices of tied right answers) inside this block
    tied_hi: int
    infinite: np.ndarray  # rows (relative to lo) whose log loss is infinite


class ReplicateEngine:
    """Everything that does not depend on the replicate's weights, computed once.

    Row layout: wrong answers sorted by confidence, then right answers sorted by confidence, cut
    into blocks of at most 2**16 rows of one class. A replicate makes one pass over the blocks:
    each block's counts are drawn and folded into atom moments, the NLL sum and the AUROC count
    while the block is in cache (the wrong answers come first, so their cumulative counts are
    complete when the right answers need them).
    """

    def __init__(
        self, columns: PredictionColumns, edges: np.ndarray, wanted: frozenset[str] | None = None
    ) -> None:
        n_wrong = columns.conf_wrong.shape[0]
        conf = np.empty(columns.n)
        conf[:n_wrong] = columns.conf_wrong
        conf[n_wrong:] = columns.conf_correct
        conf[:n_wrong].sort()
        conf[n_wrong:].sort()
        self._build(conf, n_wrong, edges, wanted)

    @classmethod
    def from_layout(
        cls, conf: np.ndarray, n_wrong: int, edges: np.ndarray, wanted: frozenset[str] | None
    ) -> ReplicateEngine:
        """The engine of rows already in its layout: ``conf`` holds the ``n_wrong`` wrong
        answers sorted by confidence, then the right ones sorted; the engine keeps that array
        itself (no copy)."""
        engine = cls.__new__(cls)
        engine._build(conf, n_wrong, edges, wanted)
        return engine

    def _build(
        self, conf: np.ndarray, n_wrong: int, edges: np.ndarray, wanted: frozenset[str] | None
    ) -> None:
        self.wanted = frozenset(SCALAR_KEYS) if wanted is None else wanted
        # each row's question (engine layout) and their number, when questions are drawn whole
        self.cluster_of: np.ndarray | None = None
        self.clusters = 0
        wrong, right = conf[:n_wrong], conf[n_wrong:]
        self.n_wrong = n_wrong
        n = self.n = conf.shape[0]
        self.edges = edges
        self.bins = edges.shape[0] - 1
        self.conf = conf
        is_right = np.zeros(n, dtype=bool)
        is_right[n_wrong:] = True

        loss = np.empty(n)
        with np.errstate(divide="ignore"):
            # -log1p(-c) and -log(c), computed in place (no temporaries the size of a class)
            wrong_loss, right_loss = loss[:n_wrong], loss[n_wrong:]
            np.negative(wrong, out=wrong_loss)
            np.log1p(wrong_loss, out=wrong_loss)
            np.negative(wrong_loss, out=wrong_loss)
            np.log(right, out=right_loss)
            np.negative(right_loss, out=right_loss)
        infinite_loss = np.flatnonzero(np.isinf(loss))
        loss[infinite_loss] = 0.0
        self.loss = loss

        # AUROC: where each right answer falls among the sorted wrong answers (32-bit where
        # they fit: this is held for the whole bootstrap)
        index = np.int32 if n < 2**31 else np.intp
        self.below = np.searchsorted(wrong, right, side="left").astype(index)
        not_above = np.searchsorted(wrong, right, side="right").astype(index)
        self.tied = np.flatnonzero(not_above > self.below)
        self.tied_below = self.below[self.tied]
        self.tied_not_above = not_above[self.tied]
        del not_above

        bounds = np.unique(
            np.concatenate(
                [np.arange(0, n_wrong, _DRAW_BLOCK), np.arange(n_wrong, n, _DRAW_BLOCK), [n]]
            )
        )
        self.block_sizes = np.diff(bounds)
        # atoms: runs sharing block, class, bin and cell of every smooth-ECE grid (~42,000 runs
        # at most, so a replicate's grid histograms never need another pass over the rows)
        # (a block of rows at a time, each with the row before it, so that no row-length
        # temporary is made beside the engine's own arrays)
        change = np.zeros(n, dtype=bool)
        change[bounds[:-1]] = True
        for lo in range(0, n, _BUILD_BLOCK):
            start, stop = max(lo - 1, 0), min(lo + _BUILD_BLOCK, n)
            values, part = self.conf[start:stop], change[start + 1 : stop]
            keys = bin_index(values, edges)
            part |= keys[1:] != keys[:-1]
            for m in BISECTION_GRID_SIZES:
                keys = self._cells(m, values)
                part |= keys[1:] != keys[:-1]
        atoms = np.flatnonzero(change)
        del change
        self.n_atoms = atoms.shape[0]
        right_atom = is_right[atoms]
        at_atoms = self.conf[atoms]
        self.atom_bin = bin_index(at_atoms, edges) + self.bins * right_atom
        self.atom_cell = {
            m: self._cells(m, at_atoms) + (m - 1) * right_atom for m in BISECTION_GRID_SIZES
        }
        atom_bounds = np.searchsorted(atoms, bounds)
        tied_bounds = np.searchsorted(self.tied, np.maximum(bounds - n_wrong, 0))
        self.blocks = [
            _Block(
                lo=int(lo),
                hi=int(hi),
                right=bool(lo >= n_wrong),
                atom_lo=int(a_lo),
                atom_hi=int(a_hi),
                atom_starts=atoms[a_lo:a_hi] - lo,
                tied_lo=int(t_lo),
                tied_hi=int(t_hi),
                infinite=infinite_loss[(infinite_loss >= lo) & (infinite_loss < hi)] - lo,
            )
            for lo, hi, a_lo, a_hi, t_lo, t_hi in zip(
                bounds[:-1],
                bounds[1:],
                atom_bounds[:-1],
                atom_bounds[1:],
                tied_bounds[:-1],
                tied_bounds[1:],
                strict=True,
            )
        ]

        self._kernels: dict[tuple[float, int], np.ndarray] = {}
        self._eval_points: dict[float, np.ndarray] = {}
        self._grids: dict[int, np.ndarray] = {}
        self._scratch: dict[str, np.ndarray] = {}

    # ----- driving

    def run(self, seed: int, start: int, stop: int) -> np.ndarray:
        out = np.empty((stop - start, len(SCALAR_KEYS)))
        draws = (self._drawer(replicate_generator(seed, r)) for r in range(start, stop))
        self.evaluate_each(draws, out)
        return out

    def draw_counts(self, rng: np.random.Generator) -> np.ndarray:
        """The row counts (engine row layout) of the resample this generator draws: N rows
        drawn uniformly with replacement, as :meth:`run` draws replicate r with its generator."""
        draw = self._drawer(rng)
        counts = np.empty(self.n, dtype=np.int64)
        for b, block in enumerate(self.blocks):
            draw(b, block, counts[block.lo : block.hi])
        return counts

    def _drawer(self, rng: np.random.Generator):
        """Draw function filling one block's counts, after drawing the block totals.

        Two exact stages: how many of the N draws land in each block (multinomial, probability
        ∝ block size), then that many uniform draws inside each block. A full block has 2**16
        rows, so its draws are the 16-bit quarters of the generator's raw 64-bit output —
        exactly uniform, four per word — and the tally stays in cache.

        With questions (:mod:`~calibcli.metrics.clusters`), C of them are drawn with
        replacement at once and each row takes its question's count.
        """
        if self.cluster_of is not None:
            c, cluster_of = self.clusters, self.cluster_of
            drawn = np.bincount(rng.integers(0, c, size=c), minlength=c)

            def take(b: int, block: _Block, out: np.ndarray) -> None:
                np.take(drawn, cluster_of[block.lo : block.hi], out=out)

            return take
        n, sizes = self.n, self.block_sizes
        per_block = rng.multinomial(n, sizes / n) if sizes.shape[0] > 1 else [n]
        bits = rng.bit_generator

        def draw(b: int, block: _Block, out: np.ndarray) -> None:
            size, k = block.hi - block.lo, int(per_block[b])
            if size == _RAW16_BLOCK:
                raw = bits.random_raw((k + 3) // 4).astype("<u8", copy=False)
                draws = raw.view("<u2")[:k]
            else:
                draws = rng.integers(0, size, k)
            out[...] = 0
            np.add.at(out, draws, 1)

        return draw

    def evaluate(self, counts: np.ndarray) -> np.ndarray:
        """Scalars of the rows weighted by integer ``counts`` given in the engine's row layout."""
        out = np.empty((1, len(SCALAR_KEYS)))
        self.evaluate_each([self.weighing(counts)], out)
        return out[0]

    def weighing(self, counts: np.ndarray) -> Callable[[int, _Block, np.ndarray], None]:
        """The block filler (as :meth:`evaluate_each` takes them) of integer ``counts`` given in
        the engine's row layout, copied now: the caller may reuse its array."""
        counts = np.array(counts, dtype=np.int64)

        def copy(b: int, block: _Block, out: np.ndarray) -> None:
            out[...] = counts[block.lo : block.hi]

        return copy

    def evaluate_each(self, fillers: Iterable[Callable | None], out: np.ndarray) -> None:
        """Row i of ``out`` takes the scalars (``SCALAR_KEYS`` order, unwanted ones nan) of
        replicate i, whose weights ``fillers`` gives as a function filling a block's counts
        (:meth:`_drawer`, :meth:`weighing`); a None leaves its row as it is. A filler is called
        before the next is asked for.

        The replicates' smooth-ECE bandwidth searches run side by side, up to a few dozen at a
        time (:func:`~calibcli.metrics.smooth_groups.search_bandwidths`): each replicate gets
        the floats its own search gives, whatever the others are, and far fewer numpy calls."""
        smooth = bool(self.wanted & {"smece", "smece_bandwidth"})
        # each waiting replicate holds a copy of its atom moments (24 bytes per atom)
        batch = max(1, min(_SEARCHED, _WAITING_BYTES // (24 * max(self.n_atoms, 1))))
        waiting: list[tuple[int, np.ndarray]] = []
        for i, filler in enumerate(fillers):
            if filler is None:
                continue
            moments = self._evaluate(filler, out[i])
            if smooth:
                waiting.append((i, moments.copy()))
                if len(waiting) == batch:
                    self._search(waiting, out)
                    waiting = []
        if waiting:
            self._search(waiting, out)

    def _search(self, waiting: list[tuple[int, np.ndarray]], out: np.ndarray) -> None:
        """The smooth ECE and its bandwidth of the waiting replicates, into their rows of out."""
        curves = [_SmoothReplicate(self, moments) for _, moments in waiting]
        histograms = np.stack([curve._histograms(_COARSE) for curve in curves])
        kernels = getattr(_SEARCHES, "kernels", None)
        if kernels is None:
            kernels = _SEARCHES.kernels = Kernels()
        values, bandwidths = search_bandwidths(curves, histograms, kernels)
        rows = [i for i, _ in waiting]
        out[rows, _INDEX["smece_bandwidth"]] = bandwidths
        out[rows, _INDEX["smece"]] = values

    def _evaluate(self, block_counts, out: np.ndarray) -> np.ndarray:
        """One pass over the blocks: every scalar but the smooth ECE into ``out`` (``SCALAR_KEYS``
        order, unwanted ones and the smooth ECE nan); returns the atom moments (scratch, valid
        until the next pass), from which the smooth ECE is found."""
        wanted = self.wanted
        want_nll, want_auroc = "nll" in wanted, "auroc" in wanted
        block_ints = self._buffer("block_counts", min(self.n, _DRAW_BLOCK), np.int64)
        moments = self._buffer("moments", 3 * self.n_atoms, np.float64).reshape(3, self.n_atoms)
        scratch = self._buffer("block", min(self.n, _DRAW_BLOCK), np.float64)
        cum = self._buffer("cum_wrong", self.n_wrong + 1, np.int64)
        cum[0] = 0
        loss_parts: list[float] = []
        twice_u = 0
        infinite = False
        for b, block in enumerate(self.blocks):
            lo, hi = block.lo, block.hi
            cnt = block_ints[: hi - lo]
            block_counts(b, block, cnt)
            if block.infinite.size and cnt[block.infinite].any():
                infinite = True
            w = scratch[: hi - lo]
            np.copyto(w, cnt)
            atoms, starts = slice(block.atom_lo, block.atom_hi), block.atom_starts
            moments[0, atoms] = np.add.reduceat(w, starts)
            if want_nll:
                loss_parts.append(float(np.einsum("i,i", w, self.loss[lo:hi])))
            conf = self.conf[lo:hi]
            np.multiply(w, conf, out=w)
            moments[1, atoms] = np.add.reduceat(w, starts)
            np.multiply(w, conf, out=w)
            moments[2, atoms] = np.add.reduceat(w, starts)
            if not want_auroc:
                continue
            if not block.right:  # cumulative counts of the wrong answers, prefixed by 0
                running = cum[lo]
                np.cumsum(cnt, out=cum[lo + 1 : hi + 1])
                cum[lo + 1 : hi + 1] += running
                continue
            r_lo, r_hi = lo - self.n_wrong, hi - self.n_wrong
            twice_u += 2 * int(np.einsum("i,i", cnt, cum[self.below[r_lo:r_hi]]))
            if block.tied_hi > block.tied_lo:
                ties = slice(block.tied_lo, block.tied_hi)
                gap = cum[self.tied_not_above[ties]] - cum[self.tied_below[ties]]
                twice_u += int(np.einsum("i,i", cnt[self.tied[ties] - r_lo], gap))

        out[...] = math.nan
        stats = self._bin_stats(moments)
        for key, value in binned_scalars(stats, wanted).items():
            out[_INDEX[key]] = value
        total = int(stats.count.sum())
        total_right = int(stats.sum_correct.sum())
        if want_nll and total:
            if infinite:
                out[_INDEX["nll"]] = math.inf
            else:
                out[_INDEX["nll"]] = math.fsum(loss_parts) / total
        if want_auroc and total_right and total > total_right:
            out[_INDEX["auroc"]] = twice_u / (2 * total_right * (total - total_right))
        return moments

    def _buffer(self, name: str, size: int, dtype: type) -> np.ndarray:
        """A scratch array reused across replicates (allocated on first use, per process)."""
        buf = self._scratch.get(name)
        if buf is None:
            buf = self._scratch[name] = np.empty(size, dtype=dtype)
        return buf

    def _bin_stats(self, moments: np.ndarray) -> BinStats:
        m = self.bins
        s0, s1, s2 = (
            np.bincount(self.atom_bin, weights=s, minlength=2 * m).reshape(2, m) for s in moments
        )
        count = np.rint(s0).astype(np.int64)  # exact: integer sums below 2**53
        # right answers (second row) have y = 1, so Σ(c − y)² = Σw − 2Σwc + Σwc² there
        right_sq_error = np.maximum(s0[1] - 2.0 * s1[1] + s2[1], 0.0)
        return BinStats(
            self.edges,
            count[0] + count[1],
            count[1],
            s1[0] + s1[1],
            s2[0] + s2[1],
            s1[1],
            right_sq_error + s2[0],
        )

    # ----- smooth-ECE support

    @staticmethod
    def _cells(m: int, conf: np.ndarray) -> np.ndarray:
        cells = (conf * (m - 1)).astype(np.intp)  # conf >= 0, so truncation is floor
        np.minimum(cells, m - 2, out=cells)
        return cells

    # σ- and m-only pieces of smooth.smoothed_error, cached across replicates (per process)

    def kernel_spectrum(self, sigma: float, m: int, size: int) -> np.ndarray:
        cached = self._kernels.get((sigma, m))
        if cached is None:
            cached = self._kernels[(sigma, m)] = kernel_spectrum(sigma, m, size)
        return cached

    def grid(self, m: int) -> np.ndarray:
        cached = self._grids.get(m)
        if cached is None:
            cached = self._grids[m] = grid_points(m)
        return cached

    def eval_points(self, sigma: float) -> np.ndarray:
        cached = self._eval_points.get(sigma)
        if cached is None:
            cached = self._eval_points[sigma] = eval_points(sigma)
        return cached


class _SmoothReplicate:
    """smECE of one replicate: calibcli.metrics.smooth's algorithm on its per-atom moments."""

    def __init__(self, engine: ReplicateEngine, moments: np.ndarray) -> None:
        self.engine = engine
        self.atom_moments = moments
        self.spectra: dict[int, tuple[int, np.ndarray]] = {}

    def error(self, sigma: float) -> float:
        engine = self.engine
        m = grid_size(sigma)
        size, spectra = self._grid_spectra(m)
        kernel = engine.kernel_spectrum(sigma, m, size)
        return smoothed_error(spectra, size, kernel, engine.grid(m), engine.eval_points(sigma))

    def _grid_spectra(self, m: int) -> tuple[int, np.ndarray]:
        cached = self.spectra.get(m)
        if cached is None:
            cached = self.spectra[m] = histogram_spectra(self._histograms(m))
        return cached

    def _histograms(self, m: int) -> np.ndarray:
        """(2, m): density Σw·hat_j(f) and residual Σw·(f − y)·hat_j(f) on the grid j/(m − 1)."""
        engine = self.engine
        keys, moments = engine.atom_cell[m], self.atom_moments
        s0, s1, s2 = (
            np.bincount(keys, weights=s, minlength=2 * (m - 1)).reshape(2, m - 1) for s in moments
        )
        j = np.arange(m - 1, dtype=np.float64)
        u = (m - 1) * s1 - j * s0  # Σw·u, u = f·(m − 1) − cell
        cu = (m - 1) * s2 - j * s1  # Σw·f·u
        y = np.array([[0.0], [1.0]])  # first row: wrong answers
        r = (s1 - y * s0).sum(axis=0)  # Σw·(f − y)
        ru = (cu - y * u).sum(axis=0)  # Σw·(f − y)·u
        s0, u = s0.sum(axis=0), u.sum(axis=0)
        out = np.zeros((2, m))
        out[0, :-1] = s0 - u
        out[0, 1:] += u
        out[1, :-1] = r - ru
        out[1, 1:] += ru
        return out
