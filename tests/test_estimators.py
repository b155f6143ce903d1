"""The estimator family against independent references.

References: the exact plain-Python loops of tests/reference.py (binned estimators, bin counts,
log loss), scikit-learn (calibration_curve
with equal-mass bins, roc_auc_score, log_loss), the Wilson formula written out by hand, and the
repetition identity "weight w == w copies of the row".
"""

from __future__ import annotations

import bisect
import math

import numpy as np
import pytest
import reference
from sklearn.calibration import calibration_curve
from sklearn.metrics import log_loss as sk_log_loss
from sklearn.metrics import roc_auc_score

from calibcli.metrics.binning import STRATEGIES
from calibcli.metrics.core import BinStats, PredictionColumns
from calibcli.metrics.estimators import (
    SCALAR_KEYS,
    auroc,
    calibration_estimates,
    debiased_rms_calibration_error,
    log_loss,
    max_calibration_error,
    one_bin_ece,
    quantile_edges,
    rms_calibration_error,
    wilson_interval,
)
from calibcli.metrics.methods import BIN_STRATEGIES, names

# --------------------------------------------------------------------------- references


BINNED_KEYS = ("mce", "rmsce", "rmsce_debiased", "ece_1bin")


def sample(n, seed, *, decimals=None, power=1.0):
    """Confidences (optionally rounded, so there are ties) and outcomes ~ Bernoulli(c**power)."""
    rng = np.random.default_rng(seed)
    conf = rng.random(n)
    if decimals is not None:
        conf = np.round(conf, decimals)
    correct = rng.random(n) < conf**power
    return conf, correct


# --------------------------------------------------------------------------- quantile edges


def test_quantile_edges_hand_computed():
    # sorted [0.1, 0.2, 0.4, 0.8]; linear quantile at k/4: h = 3k/4 -> 0.175, 0.3, 0.5
    edges = quantile_edges([0.8, 0.1, 0.4, 0.2], 4)
    assert edges.tolist() == pytest.approx([0.0, 0.175, 0.3, 0.5, 1.0], abs=1e-15)
    assert edges[0] == 0.0 and edges[-1] == 1.0


def test_quantile_edges_merge_ties_and_report_bins_used():
    conf = [0.1] + [0.5] * 8 + [0.9]
    correct = [False] * 5 + [True] * 5
    edges = quantile_edges(conf, 5)
    assert edges.tolist() == [0.0, 0.5, 1.0]  # all four interior quantiles are 0.5
    est = calibration_estimates(PredictionColumns.from_arrays(conf, correct), strategy="quantile")
    est5 = calibration_estimates(
        PredictionColumns.from_arrays(conf, correct), bins=5, strategy="quantile"
    )
    assert est5.bins == 5 and est5.bins_used == 2 and est5.strategy == "quantile"
    # left-closed: the eight 0.5s sit on the edge and belong to the upper bin
    assert est5.stats.count.tolist() == [1, 9]
    assert est.bins_used <= 10


def test_quantile_edges_at_zero_and_one_merge_with_the_ends():
    # quantiles at 1/4, 2/4, 3/4 of eight 0s and two 1s: h = 2.25, 4.5, 6.75 -> all 0
    assert quantile_edges([0.0] * 8 + [1.0] * 2, 4).tolist() == [0.0, 1.0]
    # two 0s and eight 1s: all three quantiles are 1
    assert quantile_edges([0.0] * 2 + [1.0] * 8, 4).tolist() == [0.0, 1.0]
    assert quantile_edges([], 10).tolist() == [0.0, 1.0]


def test_quantile_edges_validate():
    with pytest.raises(ValueError, match=r"confidences\[1\] = 1.5"):
        quantile_edges([0.5, 1.5], 3)
    with pytest.raises(ValueError, match="bins"):
        quantile_edges([0.5], 0)


def test_equal_mass_bins_match_sklearn_calibration_curve():
    # n − 1 = 1001 is coprime with 10, so no interior quantile (h = 1001·k/10) falls exactly on a
    # data point; continuous data then keeps every confidence off every interior edge, and
    # sklearn's right-closed membership agrees with our left-closed one.
    conf, correct = sample(1002, seed=7, power=1.5)
    edges = quantile_edges(conf, 10)
    interior = edges[1:-1]
    assert len(interior) == 9
    assert np.min(np.abs(conf[:, None] - interior[None, :])) > 1e-9
    prob_true, prob_pred = calibration_curve(correct, conf, n_bins=10, strategy="quantile")
    est = calibration_estimates(
        PredictionColumns.from_arrays(conf, correct), bins=10, strategy="quantile"
    )
    populated = est.stats.count > 0  # sklearn drops empty bins (there are none here)
    assert populated.all()
    np.testing.assert_allclose(est.stats.accuracy[populated], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.stats.mean_confidence[populated], prob_pred, rtol=0, atol=1e-12)
    assert est.stats.count.tolist() == reference.counts(conf, correct, edges)[0]


# --------------------------------------------------------------------------- binned estimators


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize(("n", "bins", "seed"), [(60, 20, 1), (500, 10, 2), (7, 15, 3)])
def test_binned_estimators_match_loops(strategy, n, bins, seed):
    conf, correct = sample(n, seed, decimals=2, power=1.3)
    columns = PredictionColumns.from_arrays(conf, correct)
    est = calibration_estimates(columns, bins=bins, strategy=strategy)
    if strategy == "uniform":
        edges = [k / bins for k in range(bins + 1)]
    else:
        interior = np.quantile(conf, [k / bins for k in range(1, bins)]).tolist()
        edges = sorted({0.0, *interior, 1.0})
    assert est.edges.tolist() == list(edges)
    ref = reference.figures(columns.confidences(), columns.correct(), edges)
    for key in BINNED_KEYS:
        assert getattr(est, key) == pytest.approx(ref[key], rel=1e-12, abs=1e-15), key
    assert max_calibration_error(est.stats) == est.mce
    assert rms_calibration_error(est.stats) == est.rmsce
    assert debiased_rms_calibration_error(est.stats) == est.rmsce_debiased
    assert one_bin_ece(est.stats) == est.ece_1bin


def test_debiased_rmsce_hand_computed():
    # two bins of 2: bin 0 holds c = 0.1, 0.3 (y = 0, 1), bin 1 holds c = 0.9, 0.9 (y = 1, 1)
    # bin 0: gap = |0.2 − 0.5| = 0.3, ō(1 − ō)/(n − 1) = 0.25 -> 0.09 − 0.25 = −0.16
    # bin 1: gap = 0.1, ō = 1 -> 0.01; total = ½(−0.16) + ½(0.01) < 0 -> 0
    stats = BinStats.from_arrays([0.1, 0.3, 0.9, 0.9], [0, 1, 1, 1], bins=2)
    assert debiased_rms_calibration_error(stats) == 0.0
    # bin 1 alone: sqrt(0.01) = 0.1, a single row in bin 0 adds nothing but counts in N
    stats = BinStats.from_arrays([0.1, 0.9, 0.9], [0, 1, 1], bins=2)
    assert debiased_rms_calibration_error(stats) == pytest.approx(math.sqrt(2 / 3 * 0.01))
    assert max_calibration_error(stats) == pytest.approx(0.1)
    assert rms_calibration_error(stats) == pytest.approx(math.sqrt((0.01 + 2 * 0.01) / 3))
    assert one_bin_ece(stats) == pytest.approx(abs(1.9 / 3 - 2 / 3))


def test_empty_input():
    est = calibration_estimates(PredictionColumns.from_arrays([], []), strategy="quantile")
    assert est.n == 0 and est.bins_used == 1 and est.populated_bins == 0
    for key in ("ece", "mce", "rmsce", "rmsce_debiased", "ece_1bin", "brier"):
        assert getattr(est, key) == 0.0
    assert math.isnan(est.nll) and math.isnan(est.auroc)
    assert np.isnan(est.accuracy_ci_lower).all() and np.isnan(est.accuracy_ci_upper).all()


# --------------------------------------------------------------------------- row-wise estimators


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_loss_matches_sklearn_and_loop(seed):
    conf, correct = sample(300, seed)
    conf = np.clip(conf, 0.01, 0.99)
    columns = PredictionColumns.from_arrays(conf, correct)
    got = log_loss(columns)
    assert got == pytest.approx(sk_log_loss(correct, conf), rel=1e-12)
    assert got == pytest.approx(reference.log_loss(conf, correct), rel=1e-12)


def test_log_loss_does_not_depend_on_the_rows_order():
    # the float sum of many losses depends on the order of the additions; the NLL must not
    # (a report with a bootstrap keeps the rows in their order, one without may sort them)
    conf, correct = sample(5000, 3)
    rng = np.random.default_rng(4)
    first = log_loss(PredictionColumns.from_arrays(conf, correct))
    for _ in range(5):
        order = rng.permutation(conf.shape[0])
        assert log_loss(PredictionColumns.from_arrays(conf[order], correct[order])) == first
    assert first == pytest.approx(reference.log_loss(conf, correct), rel=1e-13)


def test_log_loss_infinite_cases():
    # c == 1 on a wrong answer, c == 0 on a right one: infinite, never clamped
    assert log_loss(PredictionColumns.from_arrays([1.0, 0.5], [False, True])) == math.inf
    assert log_loss(PredictionColumns.from_arrays([0.0, 0.5], [True, True])) == math.inf
    # the certain and right answers cost nothing
    got = log_loss(PredictionColumns.from_arrays([1.0, 0.0, 0.5], [True, False, True]))
    assert got == pytest.approx(math.log(2) / 3)
    # a zero weight removes the infinite row (weights follow "right answers first")
    columns = PredictionColumns.from_arrays([0.5, 1.0], [True, False])
    assert log_loss(columns, weights=[1, 0]) == pytest.approx(math.log(2))
    assert math.isnan(log_loss(PredictionColumns.from_arrays([], [])))


@pytest.mark.parametrize("decimals", [None, 1, 2])
def test_auroc_matches_sklearn(decimals):
    conf, correct = sample(400, 5, decimals=decimals)
    columns = PredictionColumns.from_arrays(conf, correct)
    assert auroc(columns) == pytest.approx(roc_auc_score(correct, conf), rel=1e-12)


def test_auroc_weighted_matches_sklearn():
    conf, correct = sample(300, 6, decimals=1)
    columns = PredictionColumns.from_arrays(conf, correct)
    w = np.random.default_rng(9).integers(0, 4, columns.n)
    expected = roc_auc_score(columns.correct(), columns.confidences(), sample_weight=w)
    assert auroc(columns, weights=w) == pytest.approx(expected, rel=1e-12)
    wf = w + 0.25
    expected = roc_auc_score(columns.correct(), columns.confidences(), sample_weight=wf)
    assert auroc(columns, weights=wf) == pytest.approx(expected, rel=1e-12)


def test_auroc_hand_computed_and_degenerate():
    # right: 0.8, 0.5; wrong: 0.5, 0.2 -> pairs: (0.8>0.5) 1, (0.8>0.2) 1, (0.5=0.5) ½, (0.5>0.2) 1
    columns = PredictionColumns.from_arrays([0.8, 0.5, 0.5, 0.2], [1, 1, 0, 0])
    assert auroc(columns) == 3.5 / 4
    assert math.isnan(auroc(PredictionColumns.from_arrays([0.3, 0.4], [1, 1])))
    assert math.isnan(auroc(PredictionColumns.from_arrays([0.3, 0.4], [0, 0])))
    assert math.isnan(auroc(columns, weights=[0, 0, 1, 1]))


# --------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (45, 50), (1, 1)])
@pytest.mark.parametrize(("level", "z"), [(0.95, 1.959963984540054), (0.9, 1.6448536269514722)])
def test_wilson_interval_by_hand(k, n, level, z):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = wilson_interval(k, n, level)
    assert float(lo) == pytest.approx(max(0.0, centre - half), abs=1e-12)
    assert float(hi) == pytest.approx(min(1.0, centre + half), abs=1e-12)


def test_wilson_interval_arrays_and_empty_bins():
    lo, hi = wilson_interval(np.array([0, 2, 0]), np.array([0, 4, 3]))
    assert math.isnan(lo[0]) and math.isnan(hi[0])
    assert lo[1] < 0.5 < hi[1] and lo[2] == 0.0
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, level=1.0)


def test_estimates_carry_wilson_bounds_per_bin():
    conf, correct = sample(200, 11)
    est = calibration_estimates(PredictionColumns.from_arrays(conf, correct), bins=20)
    lo, hi = wilson_interval(est.stats.sum_correct, est.stats.count)
    np.testing.assert_array_equal(est.accuracy_ci_lower, lo)
    np.testing.assert_array_equal(est.accuracy_ci_upper, hi)
    assert est.accuracy_ci_lower.shape == (20,)


# --------------------------------------------------------------------------- the family


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_weights_equal_repetition_for_every_estimator(strategy):
    conf, correct = sample(150, 12, decimals=2, power=1.2)
    columns = PredictionColumns.from_arrays(conf, correct)
    w = np.random.default_rng(13).integers(0, 4, columns.n)
    repeated = PredictionColumns.from_arrays(
        np.repeat(columns.confidences(), w), np.repeat(columns.correct(), w)
    )
    weighted = calibration_estimates(columns, bins=8, strategy=strategy, weights=w)
    copies = calibration_estimates(repeated, bins=8, strategy=strategy)
    np.testing.assert_array_equal(weighted.edges, copies.edges)
    assert weighted.n == copies.n == int(w.sum())
    a, b = weighted.scalars(), copies.scalars()
    assert list(a) == list(SCALAR_KEYS)
    for key in SCALAR_KEYS:
        if math.isnan(b[key]):
            assert math.isnan(a[key]), key
        else:
            assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key
    np.testing.assert_array_equal(weighted.stats.count, copies.stats.count)
    np.testing.assert_allclose(weighted.accuracy_ci_lower, copies.accuracy_ci_lower, atol=1e-12)


def test_estimates_fields_and_scalars():
    conf, correct = sample(500, 14, power=1.4)
    columns = PredictionColumns.from_arrays(conf, correct)
    est = calibration_estimates(columns, bins=10)
    assert (est.n, est.bins, est.bins_used, est.strategy) == (500, 10, 10, "uniform")
    assert est.populated_bins == 10
    assert est.brier == pytest.approx(np.mean((conf - correct) ** 2), rel=1e-12)
    assert est.accuracy == pytest.approx(correct.mean()) and est.mean_confidence == pytest.approx(
        conf.mean()
    )
    assert est.ece_1bin == pytest.approx(abs(conf.mean() - correct.mean()), abs=1e-15)
    scalars = est.scalars()
    assert "populated_bins" not in scalars and "bins_used" not in scalars
    assert all(isinstance(v, float) for v in scalars.values())
    assert scalars["brier_decomposition.reliability"] == est.decomposition["reliability"]
    assert est.rmsce_debiased <= est.rmsce and est.mce >= est.ece
    with pytest.raises(ValueError, match="strategy"):
        calibration_estimates(columns, strategy="equal")


def test_bin_strategies_are_the_named_ones():
    # the light list the command line reads names exactly the strategies the estimators bin by
    assert names(BIN_STRATEGIES) == STRATEGIES
    columns = PredictionColumns.from_arrays([0.1, 0.4, 0.45, 0.9], [False, True, False, True])
    for strategy in STRATEGIES:
        assert calibration_estimates(columns, bins=2, strategy=strategy).strategy == strategy


def test_smooth_ece_matches_relplot_when_available():
    pytest.importorskip("calibcli.metrics.smooth")
    relplot = pytest.importorskip("relplot")
    conf, correct = sample(800, 15, power=1.5)
    est = calibration_estimates(PredictionColumns.from_arrays(conf, correct))
    columns = PredictionColumns.from_arrays(conf, correct)
    value, width = relplot.smECE(
        columns.confidences(), columns.correct().astype(float), return_width=True
    )
    assert est.smece == pytest.approx(value, abs=1e-6)
    assert est.smece_bandwidth == pytest.approx(width, abs=1e-12)


# --------------------------------------------------------------------------- reorder_ok / stats


def _mann_whitney_twice_u(conf, correct):
    """2U counted from sorted lists with bisect (an independent loop over the right answers)."""
    wrong = sorted(float(c) for c, y in zip(conf, correct, strict=True) if not y)
    return sum(
        bisect.bisect_left(wrong, float(c)) + bisect.bisect_right(wrong, float(c))
        for c, y in zip(conf, correct, strict=True)
        if y
    )


@pytest.mark.parametrize(
    ("n", "decimals", "power"),
    [
        (400, None, 1.0),
        (400, 2, 1.0),
        (1000, 1, 0.3),  # mostly right: the wrong answers are the search keys
        (1000, 1, 4.0),  # mostly wrong: the right answers are the search keys
        (300_000, 3, 1.0),  # several blocks of keys, many ties across block boundaries
    ],
)
def test_auroc_reorder_ok_matches_sklearn_and_an_exact_count(n, decimals, power):
    conf, correct = sample(n, 21, decimals=decimals, power=power)
    columns = PredictionColumns.from_arrays(conf, correct)
    n_right = int(correct.sum())
    exact = _mann_whitney_twice_u(conf, correct) / (2 * n_right * (n - n_right))
    got = auroc(columns, reorder_ok=True)
    assert got == exact  # integer count: bit-identical
    assert got == auroc(PredictionColumns.from_arrays(conf, correct))
    assert got == pytest.approx(roc_auc_score(correct, conf), rel=1e-12)
    # the halves were sorted in place and keep their values
    assert np.all(np.diff(columns.conf_correct) >= 0) and np.all(np.diff(columns.conf_wrong) >= 0)
    assert np.array_equal(columns.conf_correct, np.sort(conf[correct]))
    assert np.array_equal(columns.conf_wrong, np.sort(conf[~correct]))


def test_auroc_reorder_ok_degenerate_and_read_only():
    assert math.isnan(auroc(PredictionColumns.from_arrays([0.3, 0.4], [1, 1]), reorder_ok=True))
    assert math.isnan(auroc(PredictionColumns.from_arrays([], []), reorder_ok=True))
    right, wrong = np.array([0.8, 0.5]), np.array([0.5, 0.2])
    right.flags.writeable = False
    columns = PredictionColumns(right, wrong)
    assert auroc(columns, reorder_ok=True) == 3.5 / 4  # a read-only half is sorted as a copy
    assert right.tolist() == [0.8, 0.5]
    with pytest.raises(ValueError, match="reorder_ok"):
        auroc(columns, weights=[1, 1, 1, 1], reorder_ok=True)


@pytest.mark.parametrize("given_stats", [True, False])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reorder_ok_and_given_stats_change_no_figure(strategy, given_stats):
    conf, correct = sample(200_000, 22, decimals=4, power=1.3)
    plain = calibration_estimates(PredictionColumns.from_arrays(conf, correct), strategy=strategy)
    columns = PredictionColumns.from_arrays(conf, correct)
    # uniform statistics: used only for that strategy
    given = BinStats.from_arrays(conf, correct, bins=10) if given_stats else None
    fast = calibration_estimates(columns, strategy=strategy, stats=given, reorder_ok=True)
    for key, value in plain.scalars().items():
        assert fast.scalars()[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    assert np.array_equal(fast.edges, plain.edges)
    assert np.array_equal(fast.stats.count, plain.stats.count)
    assert np.array_equal(fast.stats.sum_correct, plain.stats.sum_correct)
    for name in ("sum_conf", "sum_conf_sq", "sum_conf_correct", "sum_sq_error"):
        assert getattr(fast.stats, name) == pytest.approx(getattr(plain.stats, name), rel=1e-13)
    reused = given_stats and strategy == "uniform"
    assert (fast.stats is given) == reused
    # references: scikit-learn and the loops above
    assert fast.auroc == pytest.approx(roc_auc_score(correct, conf), rel=1e-12)
    assert fast.nll == pytest.approx(sk_log_loss(correct, conf), rel=1e-12)
    assert np.all(np.diff(columns.conf_wrong) >= 0)


def test_given_stats_of_other_rows_are_refused_and_weights_forbid_reordering():
    conf, correct = sample(50, 23)
    columns = PredictionColumns.from_arrays(conf, correct)
    other = BinStats.from_arrays(conf[:40], correct[:40])
    with pytest.raises(ValueError, match="stats hold 40 rows"):
        calibration_estimates(columns, stats=other)
    with pytest.raises(ValueError, match="reorder_ok"):
        calibration_estimates(columns, weights=np.ones(50), reorder_ok=True)
    # with weights, given (unweighted) statistics are not used
    w = np.random.default_rng(3).integers(0, 3, 50)
    est = calibration_estimates(columns, weights=w, stats=BinStats.from_arrays(conf, correct))
    assert est.n == int(w.sum())


def test_smooth_ece_of_sorted_halves_matches_relplot():
    pytest.importorskip("calibcli.metrics.smooth")
    relplot = pytest.importorskip("relplot")
    conf, correct = sample(50_000, 24, power=1.5)  # long runs per grid cell once sorted
    est = calibration_estimates(PredictionColumns.from_arrays(conf, correct), reorder_ok=True)
    value, width = relplot.smECE(conf, correct.astype(float), return_width=True)
    assert est.smece == pytest.approx(value, abs=1e-6)
    assert est.smece_bandwidth == pytest.approx(width, abs=1e-12)


@pytest.mark.parametrize(
    ("weighted", "ordered", "power"),
    [(False, False, 2.0), (True, False, 2.0), (False, True, 2.0), (False, True, 1.0)],
)
def test_smooth_ece_of_two_halves_equals_smooth_ece_of_the_rows(weighted, ordered, power):
    # sorted halves are folded run by run; power 1.0 (a calibrated sample: bandwidth below
    # 0.01) also exercises the finer grids
    smooth = pytest.importorskip("calibcli.metrics.smooth")
    conf, correct = sample(70_000, 25, power=power)  # a block boundary inside each half
    if ordered:
        order = np.argsort(conf, kind="stable")
        conf, correct = conf[order], correct[order]
    w = np.random.default_rng(4).integers(0, 3, conf.size).astype(float) if weighted else None
    whole = smooth.smooth_ece(conf, correct, weights=w)
    split = smooth.smooth_ece_split(
        conf[correct],
        conf[~correct],
        weights_correct=None if w is None else w[correct],
        weights_wrong=None if w is None else w[~correct],
    )
    assert split.value == pytest.approx(whole.value, rel=1e-12)
    assert split.bandwidth == whole.bandwidth
    empty = smooth.smooth_ece_split(np.zeros(0), np.zeros(0))
    assert empty.value == 0.0 and math.isnan(empty.bandwidth)


@pytest.mark.parametrize("seed", range(6))
def test_quantile_edges_of_sorted_halves_are_numpys_quantiles(seed):
    # reorder_ok with equal-mass bins takes the quantiles from the sorted halves by bisection;
    # they must be the very doubles np.quantile gives on all rows (else rows change bins)
    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 7, 100, 2501):
        conf = rng.random(n)
        if seed % 2:
            conf = np.round(conf, 1)  # ties, merged edges
        correct = rng.random(n) < conf
        for bins in (1, 2, 7, 10, 33):
            expected = np.quantile(conf, np.arange(1, bins, dtype=np.float64) / bins)
            expected = np.unique(np.concatenate([[0.0], expected, [1.0]]))
            columns = PredictionColumns.from_arrays(conf, correct)
            est = calibration_estimates(columns, bins=bins, strategy="quantile", reorder_ok=True)
            assert np.array_equal(est.edges, expected), (n, bins)
            ref = reference.figures(conf, correct, expected)
            for key in BINNED_KEYS:
                assert getattr(est, key) == pytest.approx(ref[key], rel=1e-12, abs=1e-15)
