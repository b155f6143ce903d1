"""Bootstrap intervals: seeding, determinism, the weighted replicate path, and coverage.

The replicate path is checked against independent references: calibration_estimates on the
rows repeated by their weights (itself checked against loops and scikit-learn in
test_estimators.py) and relplot.smECE for the smooth ECE.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibcli.metrics.bootstrap as bootstrap_module
from calibcli.metrics.bootstrap import bootstrap_intervals, replicate_generator
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import SCALAR_KEYS, calibration_estimates


def sample(n, seed, *, decimals=None, power=1.0):
    rng = np.random.default_rng(seed)
    conf = rng.random(n)
    if decimals is not None:
        conf = np.round(conf, decimals)
    return PredictionColumns.from_arrays(conf, rng.random(n) < conf**power)


def sorted_columns(columns):
    """The same rows with each class sorted, so the engine's layout is a known permutation."""
    return PredictionColumns(np.sort(columns.conf_correct), np.sort(columns.conf_wrong))


def engine_layout(columns, weights):
    """Weights in columns.confidences() order (right first) -> engine order (wrong first)."""
    k = columns.conf_correct.shape[0]
    return np.concatenate([weights[k:], weights[:k]])


def assert_same_scalars(got, expected):
    for i, key in enumerate(SCALAR_KEYS):
        if math.isnan(expected[key]):
            assert math.isnan(got[i]), key
        else:
            assert got[i] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), key


# --------------------------------------------------------------------------- seeding


@pytest.mark.parametrize("r", [0, 1, 7, 99])
def test_replicate_generator_is_the_spawned_child(r):
    child = np.random.SeedSequence(2024).spawn(100)[r]
    expected = np.random.default_rng(child).integers(0, 1 << 62, 5)
    np.testing.assert_array_equal(replicate_generator(2024, r).integers(0, 1 << 62, 5), expected)


def test_same_seed_identical_different_seed_different_workers_irrelevant():
    columns = sample(3000, 1, decimals=2, power=1.3)
    a = bootstrap_intervals(columns, samples=40, seed=5)
    b = bootstrap_intervals(columns, samples=40, seed=5)
    c = bootstrap_intervals(columns, samples=40, seed=6)
    d = bootstrap_intervals(columns, samples=40, seed=5, workers=2)
    assert a == b == d  # tuples of floats compare exactly
    assert a.intervals != c.intervals
    assert list(a.intervals) == list(SCALAR_KEYS)
    assert (a.level, a.samples, a.seed) == (0.95, 40, 5)


def test_full_blocks_draw_exactly_n_rows_spread_evenly():
    # 2 full blocks of 2**16 wrong answers (drawn from raw 16-bit words) plus partial blocks
    n_wrong, n_right = 2 * 65536 + 1000, 70000
    columns = PredictionColumns(np.linspace(0.0, 1.0, n_right), np.linspace(0.0, 1.0, n_wrong))
    engine = bootstrap_module.ReplicateEngine(
        columns, np.array([0.0, 0.5, 1.0]), frozenset({"ece"})
    )
    assert [b.hi - b.lo for b in engine.blocks] == [65536, 65536, 1000, 65536, 4464]
    totals = np.zeros(columns.n)
    for r in range(20):
        counts = engine.draw_counts(replicate_generator(3, r))
        assert counts.sum() == columns.n and counts.min() >= 0
        totals += counts
    # every row is drawn once per replicate on average: each block's mean is 1 (sd ~ 0.001)
    for block in engine.blocks:
        assert totals[block.lo : block.hi].mean() / 20 == pytest.approx(1.0, abs=0.02)
    # and within a full block the draws are uniform: both halves get the same share
    first = totals[:65536]
    assert first[:32768].sum() / first.sum() == pytest.approx(0.5, abs=0.005)


def test_workers_identical_with_full_blocks():
    columns = sample(140_000, 2, power=1.2)
    one = bootstrap_intervals(columns, samples=6, seed=1, keys=["ece", "nll", "auroc"])
    two = bootstrap_intervals(columns, samples=6, seed=1, keys=["ece", "nll", "auroc"], workers=2)
    assert one == two


# --------------------------------------------------------------------------- the replicate path


@pytest.mark.parametrize("block", [1 << 16, 97])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_replicate_path_equals_point_estimates(monkeypatch, block, strategy):
    monkeypatch.setattr(bootstrap_module, "_DRAW_BLOCK", block)
    columns = sorted_columns(sample(1500, 3, decimals=2, power=1.4))
    point = calibration_estimates(columns, bins=12, strategy=strategy)
    engine = bootstrap_module.ReplicateEngine(columns, point.edges)
    ones = np.ones(columns.n, dtype=np.int64)
    assert_same_scalars(engine.evaluate(ones), point.scalars())
    # integer weights == repetition (what a resample is), bins fixed at the full-sample edges
    w = np.random.default_rng(4).integers(0, 4, columns.n)
    repeated = PredictionColumns.from_arrays(
        np.repeat(columns.confidences(), w), np.repeat(columns.correct(), w)
    )
    expected = calibration_estimates(repeated, edges=point.edges)
    assert_same_scalars(engine.evaluate(engine_layout(columns, w)), expected.scalars())


@pytest.mark.parametrize(("n", "power"), [(2000, 1.6), (40_000, 1.0)])
def test_replicate_smooth_ece_matches_relplot(n, power):
    relplot = pytest.importorskip("relplot")
    columns = sorted_columns(sample(n, 5, decimals=3, power=power))
    value, width = relplot.smECE(
        columns.confidences(), columns.correct().astype(float), return_width=True
    )
    if n > 10_000:  # this case exercises a grid finer than the common 1001 points
        assert width < 0.0107
    engine = bootstrap_module.ReplicateEngine(
        columns, np.array([0.0, 1.0]), frozenset({"smece", "smece_bandwidth"})
    )
    got = engine.evaluate(np.ones(columns.n, dtype=np.int64))
    assert got[SCALAR_KEYS.index("smece")] == pytest.approx(value, abs=1e-9)
    assert got[SCALAR_KEYS.index("smece_bandwidth")] == width


# --------------------------------------------------------------------------- undefined values


def test_infinite_nll_replicates_give_an_infinite_upper_bound():
    # one wrong answer at confidence 1: about 63 % of resamples contain it (nll = inf)
    conf = np.r_[np.linspace(0.2, 0.8, 49), 1.0]
    correct = np.r_[np.ones(49, dtype=bool), False]
    result = bootstrap_intervals(
        PredictionColumns.from_arrays(conf, correct), samples=200, keys=["nll"]
    )
    lo, hi = result.intervals["nll"]
    assert math.isfinite(lo) and hi == math.inf


def test_undefined_auroc_replicates_are_left_out():
    # one wrong answer in 20: about 36 % of resamples have none (auroc undefined)
    conf = np.linspace(0.05, 0.95, 20)
    correct = np.ones(20, dtype=bool)
    correct[3] = False
    result = bootstrap_intervals(
        PredictionColumns.from_arrays(conf, correct), samples=200, keys=["auroc"]
    )
    lo, hi = result.intervals["auroc"]
    assert 0.0 <= lo <= hi <= 1.0
    all_right = PredictionColumns.from_arrays(conf, np.ones(20, dtype=bool))
    lo, hi = bootstrap_intervals(all_right, samples=20, keys=["auroc"]).intervals["auroc"]
    assert math.isnan(lo) and math.isnan(hi)


def test_empty_input_gives_nan_intervals():
    result = bootstrap_intervals(PredictionColumns.from_arrays([], []), samples=10)
    assert list(result.intervals) == list(SCALAR_KEYS)
    assert all(math.isnan(lo) and math.isnan(hi) for lo, hi in result.intervals.values())


def test_keys_and_validation():
    columns = sample(100, 6)
    result = bootstrap_intervals(columns, samples=20, keys=["brier", "ece"])
    assert list(result.intervals) == ["ece", "brier"]  # report order
    for kwargs in ({"level": 1.0}, {"level": 0}, {"samples": 0}, {"seed": -1}, {"workers": 0}):
        with pytest.raises(ValueError):
            bootstrap_intervals(columns, **kwargs)
    with pytest.raises(ValueError, match="unknown"):
        bootstrap_intervals(columns, keys=["ece", "accuracy_ci"])
    with pytest.raises(ValueError, match="strategy"):
        bootstrap_intervals(columns, strategy="width")


def test_intervals_are_ordered_and_bracket_unbiased_estimates():
    columns = sample(2000, 7, power=1.3)
    point = calibration_estimates(columns, strategy="quantile").scalars()
    result = bootstrap_intervals(columns, samples=200, strategy="quantile")
    for key, (lo, hi) in result.intervals.items():
        assert lo <= hi, key
    for key in ("brier", "accuracy", "mean_confidence", "nll", "auroc"):
        lo, hi = result.intervals[key]
        assert lo < point[key] < hi, key


# --------------------------------------------------------------------------- coverage


def test_coverage_of_known_truths():
    """Coverage of the 95 % percentile intervals over 150 seeded repetitions (n = 200 rows,
    100 resamples each).

    Calibrated predictor, c ~ U(0, 1), y ~ Bernoulli(c): the population values are known in
    closed form — accuracy = E[c] = 1/2, Brier = E[c(1 − c)] = 1/6, NLL = E[−c ln c −
    (1 − c) ln(1 − c)] = 1/2, AUROC = P(c_right > c_wrong) = ∫ 2x(2x − x²) dx = 5/6.
    Its ECE target is 0, which binned ECE (never negative, biased upward) cannot cover, so ECE
    coverage is measured on a miscalibrated predictor, y ~ Bernoulli(c²), where every bin's gap
    has the same sign and the population ECE of 10 equal-width bins is E[c] − E[c²] = 1/6
    (computed below bin by bin as a check).

    Measured when written: accuracy 0.947, Brier 0.927, NLL 0.920, AUROC 0.940, ECE (c²) 0.927.
    For the calibrated predictor's zero targets: the ECE interval never reaches 0 (0.0), the
    debiased RMSCE interval does in 0.847 of repetitions (its estimate is clipped at 0).
    """
    bins = 10
    pop_ece = sum(
        abs((a + b) / 2 - (a * a + a * b + b * b) / 3) / bins
        for a, b in ((k / bins, (k + 1) / bins) for k in range(bins))
    )
    assert pop_ece == pytest.approx(1 / 6)
    truths = {"accuracy": 0.5, "brier": 1 / 6, "nll": 0.5, "auroc": 5 / 6}
    keys = [*truths, "ece", "rmsce_debiased"]
    hits = dict.fromkeys([*truths, "ece_miscalibrated", "ece_zero", "rmsce_debiased_zero"], 0)
    reps, n, samples = 150, 200, 100
    for rep in range(reps):
        rng = np.random.default_rng([77, rep])
        conf = rng.random(n)
        u = rng.random(n)
        calibrated = bootstrap_intervals(
            PredictionColumns.from_arrays(conf, u < conf), samples=samples, seed=rep, keys=keys
        ).intervals
        for key, truth in truths.items():
            lo, hi = calibrated[key]
            hits[key] += lo <= truth <= hi
        hits["ece_zero"] += calibrated["ece"][0] <= 0.0
        hits["rmsce_debiased_zero"] += calibrated["rmsce_debiased"][0] <= 0.0
        lo, hi = bootstrap_intervals(
            PredictionColumns.from_arrays(conf, u < conf * conf),
            samples=samples,
            seed=rep,
            keys=["ece"],
        ).intervals["ece"]
        hits["ece_miscalibrated"] += lo <= pop_ece <= hi
    coverage = {key: count / reps for key, count in hits.items()}
    for key in [*truths, "ece_miscalibrated"]:
        assert 0.85 <= coverage[key] <= 0.99, (key, coverage)
    assert coverage["ece_zero"] <= 0.05, coverage  # the documented upward bias of binned ECE
    assert coverage["rmsce_debiased_zero"] >= 0.7, coverage  # the debiased estimator does not
