"""Comparing two predictors on the same questions: paired tests and bootstrap intervals.

Pure numpy: no I/O, no printing. BASE and NEW are two sets of predictions whose rows are
aligned: row i is the same question on both sides (matching rows by id is the caller's job).
Every figure is reported as NEW − BASE.

* :func:`mcnemar_exact`: McNemar's exact test of accuracy. b = #(BASE right, NEW wrong),
  c = #(BASE wrong, NEW right); under H0 the b + c discordant rows split as Binom(b + c, ½), and
  p = min(1, 2·P[Binom(b + c, ½) <= min(b, c)]), p = 1 when b + c = 0. Exact integer arithmetic
  (the float is that rational number correctly rounded) up to 100,000 discordant rows; above
  that, Loader's (2000) saddle-point form of the binomial probability (relative error < 1e-11).
* :func:`mcnemar_clustered`: the same question when rows come in clusters (an inspect-ai
  sample's epochs), by Durkalski, Palesch, Lipsitz & Rust (2003): with b_k and c_k the
  discordant rows of cluster k and n_k its rows, X² = (Σ_k (b_k − c_k)/n_k)² /
  Σ_k ((b_k − c_k)/n_k)², against χ² with one degree of freedom (p = erfc(√(X²/2))); p = 1
  when no cluster has more rows one way than the other. With one row per cluster X² is
  McNemar's asymptotic (b − c)²/(b + c).
* :func:`delong_test`: DeLong, DeLong & Clarke-Pearson (1988) test of AUROC_NEW − AUROC_BASE when
  both sides share the same correctness (the same positives and negatives), in the O(N log N)
  midrank form of Sun & Xu (2014). Ties count ½.
* :func:`paired_bootstrap`: percentile interval of NEW − BASE for every scalar of
  :func:`~calibcli.metrics.estimators.calibration_estimates`, resampling questions (the same
  row indices on both sides, so what the two predictors share cancels out of the difference).
* :func:`unpaired_bootstrap`: the same with independent resamples of each side (rows need not
  be aligned), for comparison and for sets of different questions.

Resampling recipe (both bootstraps, reproducible in a plain loop). For replicate r = 0..B−1:

* paired: ``idx = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r,)))
  .integers(0, N, size=N)`` — the generator of
  :func:`~calibcli.metrics.bootstrap.replicate_generator` — and row i of the replicate is row
  ``idx[i]`` on both sides;
* unpaired: side s (0 = BASE, 1 = NEW) draws ``.integers(0, N_s, size=N_s)`` from
  ``default_rng(SeedSequence(seed, spawn_key=(r, s)))``, i.e. the two children of replicate r's
  seed sequence, so the sides' streams differ and neither depends on the other's size;
* paired, with ``clusters`` naming each row's question (an inspect-ai run's epochs: one row per
  answer): the C distinct labels numbered in increasing order, ``q = ...integers(0, C,
  size=C)`` from the same generator, and every row of question q is drawn as often as q (the
  same on both sides). When every label is distinct the rows are drawn as above;
* unpaired, with ``clusters`` = (BASE's labels or None, NEW's labels or None): side s with
  labels numbers its C_s distinct labels in increasing order, draws ``q = ...integers(0, C_s,
  size=C_s)`` from its own generator above, and counts every row of question q as often as q
  was drawn; a side without labels, or whose labels are all distinct, draws its rows as above;
* paired, with ``order`` giving each row a distinct integer key: as above with the rows taken
  in increasing key order (``idx[i]`` is the row of the ``idx[i]``-th smallest key), so keys
  that name the questions (their ids' hashes) make the intervals independent of the rows'
  order, and swapping BASE and NEW negates every replicate difference.

Each side's scalars are computed on the resample with the production bootstrap evaluator
(row weights = how often each row was drawn), bins fixed at that side's full-sample edges (as in
:mod:`calibcli.metrics.bootstrap`). The interval is the (1 − level)/2 and (1 + level)/2
quantiles (numpy's linear method; the upper one taken as minus the lower quantile of the
negated differences, so that negated differences give exactly the mirrored interval) of the
replicate differences; replicates where the difference is undefined (nan: either side nan, or
inf − inf) are left out of that figure's interval. A figure with no defined replicate, or whose
full-sample difference is not finite (a side infinite: the replicates that miss the rows making
it so estimate another quantity), gets (nan, nan). The result depends only on (input, seed,
samples), never on ``workers``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.metrics.binning import resolve_edges
from calibcli.metrics.bootstrap import (
    ReplicateEngine,
    replicate_generator,
    run_replicates,
    sorted_quantile,
)
from calibcli.metrics.clusters import cluster_numbers
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import SCALAR_KEYS, calibration_estimates
from calibcli.metrics.mcnemar import (
    ClusteredMcNemarResult,
    McNemarResult,
    identical_correctness,
    mcnemar_clustered,
    mcnemar_exact,
)
from calibcli.metrics.progress import ProgressHook, current_progress, phase
from calibcli.metrics.validation import as_vector, validate_predictions

__all__ = [
    "ClusteredMcNemarResult",
    "DeLongResult",
    "McNemarResult",
    "PairedBootstrapResult",
    "delong_test",
    "identical_correctness",
    "mcnemar_clustered",
    "mcnemar_exact",
    "paired_bootstrap",
    "unpaired_bootstrap",
]

_INDEX = {key: i for i, key in enumerate(SCALAR_KEYS)}


# --------------------------------------------------------------------------- DeLong


@dataclass(frozen=True)
class DeLongResult:
    """DeLong's test of AUROC_NEW − AUROC_BASE on shared outcomes.

    ``covariance`` is the 2×2 matrix S = S10/n_right + S01/n_wrong of (AUROC_BASE, AUROC_NEW);
    ``standard_error`` = sqrt(S00 + S11 − 2·S01) of the difference, ``z`` = difference /
    standard_error, ``p_value`` two-sided from the standard normal. ``degenerate`` is True when
    the standard error is 0: then z = 0 and p = 1 if the difference is 0, else both are nan
    (the normal approximation says nothing).
    """

    auc_base: float
    auc_new: float
    difference: float
    covariance: tuple[tuple[float, float], tuple[float, float]]
    standard_error: float
    z: float
    p_value: float
    degenerate: bool
    n_right: int
    n_wrong: int


_PLACEMENT_BLOCK = 1 << 18  # rows placed at a time (the searches' temporaries stay small)


def _placements_into(
    scores: np.ndarray, positive: np.ndarray, v10: np.ndarray, v01: np.ndarray
) -> None:
    """(V10, V01) of Sun & Xu (2014) written into ``v10`` (m positives) and ``v01`` (n
    negatives), in row order: V10_i = (T_Z,i − T_X,i)/n, V01_j = 1 − (T_Z,j − T_Y,j)/m.

    T_Z are midranks among all rows, T_X among the positives, T_Y among the negatives, so
    T_Z,i − T_X,i is the number of negatives below x_i plus half those tied with it (an exact
    half-integer): each class is sorted once and the other class's scores are placed in it by
    binary search, a block of rows at a time. V10_i is the mean over negatives of ψ(x_i, y_j)
    (1 if x > y, ½ if equal, 0 below) and V01_j the mean over positives of ψ(x_i, y_j).
    """
    m, n = v10.shape[0], v01.shape[0]
    for cls, out, others in ((True, v10, n), (False, v01, m)):
        other = np.sort(scores[~positive] if cls else scores[positive])  # the other class
        at = 0
        for start in range(0, scores.shape[0], _PLACEMENT_BLOCK):
            block = scores[start : start + _PLACEMENT_BLOCK]
            mine = positive[start : start + _PLACEMENT_BLOCK]
            values = block[mine] if cls else block[~mine]
            stop = at + values.shape[0]
            part = out[at:stop]
            np.add(
                np.searchsorted(other, values, side="left"),
                np.searchsorted(other, values, side="right"),
                out=part,
                casting="unsafe",
            )
            part *= 0.5  # T_Z − T_X, exactly
            part /= others
            at = stop
        del other
        if not cls:
            np.subtract(1.0, v01, out=v01)


def _covariance_in_place(rows: np.ndarray) -> np.ndarray:
    """Sample covariance (divisor k − 1) of the rows of a 2×k array, centring them in place."""
    rows -= rows.mean(axis=1, keepdims=True)
    return rows @ rows.T / (rows.shape[1] - 1)


def delong_test(base_conf: object, new_conf: object, correct: object) -> DeLongResult:
    """DeLong's test that two confidence scores have the same AUROC for the same outcomes.

    AUROC_s = mean_i V10_s,i (= mean_j V01_s,j); S = S10/m + S01/n with S10, S01 the sample
    covariance matrices (divisor m − 1, n − 1) of the structural components of the two scores;
    Var(difference) = S00 + S11 − 2·S01, z = (AUROC_NEW − AUROC_BASE)/sqrt(Var),
    p = erfc(|z|/√2). Needs at least two right and two wrong answers (else ValueError).
    """
    base, new, corr = scored_pair(base_conf, new_conf, correct)
    m = int(np.count_nonzero(corr))
    n = corr.shape[0] - m
    if m < 2 or n < 2:
        raise ValueError(
            f"DeLong's test needs at least 2 right and 2 wrong answers, got {m} right and {n} wrong"
        )
    # both sides' components in the two 2×k arrays the covariances are taken of, each side's
    # AUROC read before they are centred in place
    v10, v01 = np.empty((2, m)), np.empty((2, n))
    for side, scores in enumerate((base, new)):
        _placements_into(scores, corr, v10[side], v01[side])
    del base, new
    auc_base, auc_new = float(v10[0].mean()), float(v10[1].mean())
    s = _covariance_in_place(v10) / m
    del v10
    s += _covariance_in_place(v01) / n
    del v01
    difference = auc_new - auc_base
    se, z, p, degenerate = difference_test(difference, s)
    cov = ((float(s[0, 0]), float(s[0, 1])), (float(s[1, 0]), float(s[1, 1])))
    return DeLongResult(auc_base, auc_new, difference, cov, se, z, p, degenerate, m, n)


def scored_pair(
    base_conf: object, new_conf: object, correct: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two scores of the same rows and their outcomes, validated (errors name the side)."""
    try:
        base, corr = validate_predictions(base_conf, correct)
    except ValueError as err:
        raise ValueError(f"base_conf: {err}") from None
    try:
        new, _ = validate_predictions(new_conf, corr)
    except ValueError as err:
        raise ValueError(f"new_conf: {err}") from None
    return base, new, corr


def difference_test(difference: float, s: np.ndarray) -> tuple[float, float, float, bool]:
    """(standard error, z, p, degenerate) of ``difference`` = AUROC_NEW − AUROC_BASE given
    their 2×2 covariance ``s``: Var = S00 + S11 − 2·S01, z = difference/sqrt(Var), p =
    erfc(|z|/√2); with Var = 0, z = 0 and p = 1 when the difference is 0, else both nan."""
    variance = float(s[0, 0] + s[1, 1] - 2.0 * s[0, 1])
    if variance > 0.0:
        se = math.sqrt(variance)
        z = difference / se
        return se, z, math.erfc(abs(z) / math.sqrt(2.0)), False
    return 0.0, *((0.0, 1.0) if difference == 0.0 else (math.nan, math.nan)), True


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class PairedBootstrapResult:
    """Point values of both sides, their difference NEW − BASE, and its percentile interval.

    Each dict is keyed as :data:`~calibcli.metrics.estimators.SCALAR_KEYS` (restricted to the
    requested keys, in that order). ``defined[key]`` is how many of the ``samples`` replicates
    had a defined difference (the others are left out of the interval). ``paired`` tells which
    resampling produced the intervals.
    """

    paired: bool
    level: float
    samples: int
    seed: int
    n_base: int
    n_new: int
    base: dict[str, float]
    new: dict[str, float]
    difference: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    defined: dict[str, int]


def paired_bootstrap(
    base: tuple[object, object],
    new: tuple[object, object],
    *,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    bins: int = 10,
    strategy: str = "uniform",
    keys: Iterable[str] | None = None,
    workers: int = 1,
    clusters: object | None = None,
    order: object | None = None,
    stats: tuple[Any, Any] | None = None,
) -> PairedBootstrapResult:
    """Percentile interval of NEW − BASE for each scalar, resampling questions in pairs.

    ``base`` and ``new`` are (confidences, correct) of the same N >= 1 questions in the same
    order. Replicate r draws ``idx = replicate_generator(seed, r).integers(0, N, size=N)`` and
    applies it to both sides (see the module docstring). ``keys`` restricts the figures
    (default: all of ``SCALAR_KEYS``); leaving out smece/smece_bandwidth saves most of the work.
    ``clusters`` (integers, one per row) names each row's question when a question has several
    rows: the questions are drawn whole (see the module docstring). ``order`` (distinct
    integers, one per row) fixes the order in which rows are drawn, whatever order they come in.
    ``stats`` (BASE's, NEW's) are each side's per-bin statistics, given to
    :func:`calibration_estimates` for the point values (exact sums: the figures of the rows
    whatever their order).
    """
    return _bootstrap_difference(
        base, new, True, samples, seed, level, bins, strategy, keys, workers, clusters, order, stats
    )


def unpaired_bootstrap(
    base: tuple[object, object],
    new: tuple[object, object],
    *,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    bins: int = 10,
    strategy: str = "uniform",
    keys: Iterable[str] | None = None,
    workers: int = 1,
    clusters: tuple[object | None, object | None] | None = None,
    stats: tuple[Any, Any] | None = None,
) -> PairedBootstrapResult:
    """Percentile interval of NEW − BASE for each scalar, resampling each side independently.

    Side s (0 = BASE, 1 = NEW, each N_s >= 1 rows, lengths may differ) draws
    ``.integers(0, N_s, size=N_s)`` from ``default_rng(SeedSequence(seed, spawn_key=(r, s)))``
    in replicate r. ``clusters`` (BASE's labels, NEW's labels; either may be None) names each
    row's question on a side whose rows repeat their questions: that side draws its questions
    whole (see the module docstring). Otherwise as :func:`paired_bootstrap`.
    """
    return _bootstrap_difference(
        base, new, False, samples, seed, level, bins, strategy, keys, workers, clusters, stats=stats
    )


def _side(pair: object, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        conf, corr = pair  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (confidences, correct)") from None
    try:
        conf, corr = validate_predictions(conf, corr)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    if conf.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    return conf, corr


def _check_options(samples: object, seed: object, workers: object, level: object) -> None:
    if not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    for name, value, low in (("samples", samples, 1), ("seed", seed, 0), ("workers", workers, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _wanted_keys(keys: Iterable[str] | None) -> tuple[str, ...]:
    if keys is None:
        return SCALAR_KEYS
    keys = set(keys)
    unknown = keys - set(SCALAR_KEYS)
    if unknown:
        raise ValueError(f"unknown scalar(s) {', '.join(sorted(unknown))}")
    return tuple(k for k in SCALAR_KEYS if k in keys)


def _bootstrap_difference(
    base: object,
    new: object,
    paired: bool,
    samples: int,
    seed: int,
    level: float,
    bins: int,
    strategy: str,
    keys: Iterable[str] | None,
    workers: int,
    clusters: object | None = None,
    order: object | None = None,
    stats: tuple[Any, Any] | None = None,
) -> PairedBootstrapResult:
    _check_options(samples, seed, workers, level)
    wanted = _wanted_keys(keys)
    sides = [_side(base, "base"), _side(new, "new")]
    if paired and sides[0][0].shape[0] != sides[1][0].shape[0]:
        raise ValueError(
            f"paired rows must align: base has {sides[0][0].shape[0]} rows, "
            f"new {sides[1][0].shape[0]}"
        )
    # each side's (question number of each row, their count); None: its rows drawn one by one
    questions = _side_questions(clusters, paired, [conf.shape[0] for conf, _ in sides])
    place = None if order is None else _places(order, sides[0][0].shape[0])
    # One side at a time: its point values, its engine and its replicates, the engine freed
    # before the other side's is built (a paired replicate's draws are a function of (seed, r)
    # alone, so the NEW side draws them again rather than both engines being held at once)
    points, side_replicates = [], []
    hook = current_progress(None)
    with phase("bootstrap resamples", int(samples), hook) as advance:
        for s, (conf, corr) in enumerate(sides):
            columns = PredictionColumns.from_arrays(conf, corr, validate=False)
            edges = resolve_edges(columns, bins, strategy)
            given = None if stats is None else stats[s]  # exact sums: row order cannot show
            estimates = calibration_estimates(columns, bins=bins, strategy=strategy, stats=given)
            scalars = estimates.scalars()
            points.append({key: scalars[key] for key in wanted})
            del columns, estimates, scalars  # the evaluator makes its own layout of the rows
            side = _SideEvaluator(conf, corr, edges, frozenset(wanted), questions[s], place)
            runner = _SideRunner(side, paired, s)
            watch = None if hook is None else _half(advance, s, int(samples))
            side_replicates.append(
                run_replicates(runner, int(seed), int(samples), int(workers), progress=watch)
            )
            del runner, side
    with np.errstate(invalid="ignore"):  # inf − inf is undefined: nan, left out
        replicates = np.subtract(side_replicates[1], side_replicates[0])
    del side_replicates
    with np.errstate(invalid="ignore"):
        difference = {key: float(np.float64(points[1][key]) - points[0][key]) for key in wanted}
    q_lo = (1.0 - level) / 2.0
    intervals, defined = {}, {}
    for key in wanted:
        column = replicates[:, _INDEX[key]]
        values = np.sort(column[~np.isnan(column)])
        defined[key] = int(values.shape[0])
        if values.size == 0 or not math.isfinite(difference[key]):
            intervals[key] = (math.nan, math.nan)
        else:  # the upper end as the lower one of the negated values: mirrored exactly
            upper = -sorted_quantile(np.negative(values[::-1]), q_lo)
            intervals[key] = (sorted_quantile(values, q_lo), upper)
    return PairedBootstrapResult(
        paired=paired,
        level=float(level),
        samples=int(samples),
        seed=int(seed),
        n_base=int(sides[0][0].shape[0]),
        n_new=int(sides[1][0].shape[0]),
        base=points[0],
        new=points[1],
        difference=difference,
        intervals=intervals,
        defined=defined,
    )


class _SideEvaluator:
    """One side's scalars for row counts given in its own row order.

    Wraps the bootstrap's replicate engine, whose rows are the wrong answers sorted by
    confidence, then the right answers sorted by confidence: ``order`` maps that layout back to
    the side's rows (rows with equal confidence and outcome are interchangeable there).
    """

    def __init__(
        self,
        conf: np.ndarray,
        corr: np.ndarray,
        edges: np.ndarray,
        wanted: frozenset[str],
        questions: tuple[np.ndarray, int] | None = None,
        place: np.ndarray | None = None,
    ) -> None:
        # The engine's layout is built here, one class at a time, into the array the engine
        # keeps; row numbers are 32-bit where they fit (the order is held for the whole run)
        n = conf.shape[0]
        index = np.int32 if n < 2**31 else np.intp
        order = np.empty(n, index)
        layout = np.empty(n)
        at = 0
        # each class's rows in draw order, so rows of equal confidence keep it in the layout
        drawn = None if place is None else np.argsort(place).astype(index, copy=False)
        for right in (False, True):
            if drawn is None:
                rows = (np.flatnonzero(corr) if right else np.flatnonzero(~corr)).astype(index)
            else:
                rows = drawn[corr[drawn] == right]
            stop = at + rows.shape[0]
            part = layout[at:stop]
            np.take(conf, rows, out=part)
            np.take(rows, np.argsort(part, kind="stable"), out=order[at:stop])
            part.sort()  # the values np.sort gives (the engine's own sort of a class)
            del rows
            if not right:
                n_wrong = stop
            at = stop
        # without questions, each layout row's place in the draw (``place``: each row's)
        self.order = order if place is None or questions is not None else place[order]
        self.n = n
        self.questions = questions  # (each row's question number, their count)
        self.engine = ReplicateEngine.from_layout(layout, n_wrong, edges, wanted)

    def weighing(self, rng: np.random.Generator) -> Callable:
        """The engine's block filler of N rows drawn with replacement:
        ``rng.integers(0, N, size=N)`` in the draw's order of rows, tallied, read in the engine's
        layout (:meth:`ReplicateEngine.evaluate_each` gives their scalars); with questions,
        C questions drawn, each row counted as often as its question."""
        if self.questions is not None:
            numbers, c = self.questions
            counts = np.bincount(rng.integers(0, c, size=c), minlength=c)[numbers]
            return self.engine.weighing(counts[self.order])
        counts = np.bincount(rng.integers(0, self.n, size=self.n), minlength=self.n)
        return self.engine.weighing(counts[self.order])


def _side_questions(clusters: object | None, paired: bool, rows: list[int]) -> list[Any]:
    """Each side's (question number of each row, their count) from ``clusters`` (paired: one
    set of labels for both sides; unpaired: a pair, BASE's and NEW's, either None), or None
    for a side without labels or whose labels are all distinct (its rows drawn one by one)."""
    if clusters is None:
        return [None, None]
    if paired:
        return [_numbered(clusters, "clusters", rows[0])] * 2
    try:
        given = tuple(clusters)  # type: ignore[call-overload]
    except TypeError:
        given = ()
    if len(given) != 2:
        raise ValueError("unpaired clusters must be a pair (BASE's labels, NEW's labels)")
    return [
        None if labels is None else _numbered(labels, f"clusters[{s}]", n)
        for s, (labels, n) in enumerate(zip(given, rows, strict=True))
    ]


def _numbered(labels: object, name: str, n: int) -> tuple[np.ndarray, int] | None:
    """The labels' question numbers and count (:func:`cluster_numbers`) for ``n`` rows, None
    when every label is distinct; ValueError naming ``name`` when they are not ``n``."""
    numbers, count = cluster_numbers(labels, name)
    if numbers.shape[0] != n:
        raise ValueError(f"{name} hold {numbers.shape[0]} labels, not {n}")
    return None if count == numbers.shape[0] else (numbers, count)


def _places(order: object, n: int) -> np.ndarray:
    """Each row's place in increasing order of its key in ``order`` (distinct integers)."""
    keys = as_vector(order, "order")
    if keys.shape[0] != n or (keys.size and keys.dtype.kind not in "iu"):
        raise ValueError(f"order must hold {n} integers, got {keys.shape[0]} of {keys.dtype}")
    ranked = np.argsort(keys, kind="stable")
    if np.any(keys[ranked[1:]] == keys[ranked[:-1]]):
        raise ValueError("order must hold distinct keys")
    place = np.empty(n, np.int32 if n < 2**31 else np.intp)
    place[ranked] = np.arange(n, dtype=place.dtype)
    return place


def _side_generator(seed: int, replicate: int, side: int) -> np.random.Generator:
    """Side s's generator in unpaired replicate r: ``SeedSequence(seed, spawn_key=(r, s))``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(replicate, side)))


def _half(advance: Callable[[int], None], side: int, samples: int) -> ProgressHook:
    """Side s's replicates as the second half (s = 1) or the first of one phase's progress."""

    def hook(_name: str, done: int, _total: int) -> None:
        if side or done:  # the phase itself reported its start
            advance((side * samples + done) // 2)

    return hook


class _SideRunner:
    """Replicates [start, stop) of one side's scalars (the interface the bootstrap's worker
    pool runs): paired, the rows drawn by replicate r's generator, the same on both sides;
    unpaired, by side s's own generator of replicate r."""

    def __init__(self, side: _SideEvaluator, paired: bool, index: int) -> None:
        self.side, self.paired, self.index = side, paired, index

    def run(self, seed: int, start: int, stop: int) -> np.ndarray:
        out = np.empty((stop - start, len(SCALAR_KEYS)))
        if self.paired:
            rngs = (replicate_generator(seed, r) for r in range(start, stop))
        else:
            rngs = (_side_generator(seed, r, self.index) for r in range(start, stop))
        self.side.engine.evaluate_each(map(self.side.weighing, rngs), out)
        return out
