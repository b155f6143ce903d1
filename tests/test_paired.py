"""Paired comparison: McNemar, DeLong and the paired / unpaired bootstrap of NEW − BASE.

References are computed inside the tests, independently of calibcli's numpy code: McNemar from
math.comb over Fractions (and scipy's binomial test), DeLong from the O(n_right·n_wrong)
structural components of DeLong, DeLong & Clarke-Pearson (1988) as plain loops over Fractions,
the bootstraps from a plain loop that redraws the documented indices and scores each resample
with the Fraction references of conftest.py.
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import calibcli.metrics.mcnemar as mcnemar_module
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import SCALAR_KEYS, auroc, calibration_estimates
from calibcli.metrics.paired import (
    delong_test,
    identical_correctness,
    mcnemar_exact,
    paired_bootstrap,
    unpaired_bootstrap,
)

# --------------------------------------------------------------------------- references


def reference_two_sided(b: int, c: int) -> float:
    """min(1, 2·P[Binom(b + c, ½) <= min(b, c)]) as an exact Fraction, then rounded once."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def psi(x: float, y: float) -> Fraction:
    return Fraction(1) if x > y else Fraction(1, 2) if x == y else Fraction(0)


def reference_delong(base, new, correct):
    """Slow DeLong: V10_i = mean_j ψ(x_i, y_j), V01_j = mean_i ψ(x_i, y_j), exact covariances."""
    right = [i for i, y in enumerate(correct) if y]
    wrong = [j for j, y in enumerate(correct) if not y]
    m, n = len(right), len(wrong)
    v10, v01, auc = [], [], []
    for scores in (base, new):
        v10.append([sum(psi(scores[i], scores[j]) for j in wrong) / n for i in right])
        v01.append([sum(psi(scores[i], scores[j]) for i in right) / m for j in wrong])
        auc.append(sum(v10[-1]) / m)

    def cov(rows, r, s, k):
        mr, ms = sum(rows[r]) / k, sum(rows[s]) / k
        return sum((a - mr) * (b - ms) for a, b in zip(rows[r], rows[s], strict=True)) / (k - 1)

    s = [[cov(v10, r, t, m) / m + cov(v01, r, t, n) / n for t in (0, 1)] for r in (0, 1)]
    variance = s[0][0] + s[1][1] - 2 * s[0][1]
    z = float(auc[1] - auc[0]) / math.sqrt(variance) if variance else math.nan
    p = 2.0 * (1.0 - NormalDist().cdf(abs(z))) if variance else math.nan
    return auc, s, variance, z, p


def reference_bin_of(c: float, edges: list[float]) -> int:
    return min(bisect.bisect_right(edges, c) - 1, len(edges) - 2)


def reference_ece(conf, corr, edges) -> Fraction:
    groups = [[] for _ in range(len(edges) - 1)]
    for c, y in zip(conf, corr, strict=True):
        groups[reference_bin_of(c, edges)].append((Fraction(c), int(y)))
    total = Fraction(0)
    for group in groups:
        if group:
            total += abs(sum(c for c, _ in group) - sum(y for _, y in group))
    return total / len(conf)


def reference_auroc(conf, corr) -> float:
    right = [c for c, y in zip(conf, corr, strict=True) if y]
    wrong = [c for c, y in zip(conf, corr, strict=True) if not y]
    if not right or not wrong:
        return math.nan
    return float(sum(psi(a, b) for a in right for b in wrong) / (len(right) * len(wrong)))


def reference_scalars(conf, corr, edges) -> dict[str, float]:
    n = len(conf)
    brier = sum((Fraction(c) - int(y)) ** 2 for c, y in zip(conf, corr, strict=True)) / n
    return {
        "ece": float(reference_ece(conf, corr, edges)),
        "brier": float(brier),
        "accuracy": float(Fraction(sum(int(y) for y in corr), n)),
        "auroc": reference_auroc(conf, corr),
    }


def reference_quantile_edges(conf, bins) -> list[float]:
    interior = [float(np.quantile(np.asarray(conf), k / bins)) for k in range(1, bins)]
    return sorted({0.0, *interior, 1.0})


def rng_for(seed, key):
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def reference_bootstrap(base, new, *, paired, samples, seed, level, edges):
    """The documented recipe in a plain loop; intervals by numpy's linear percentile."""
    keys = ("ece", "brier", "auroc", "accuracy")
    diffs = {k: [] for k in keys}
    for r in range(samples):
        if paired:
            idx = rng_for(seed, (r,)).integers(0, len(base[0]), size=len(base[0]))
            draws = (idx, idx)
        else:
            draws = tuple(
                rng_for(seed, (r, s)).integers(0, len(side[0]), size=len(side[0]))
                for s, side in enumerate((base, new))
            )
        values = [
            reference_scalars([conf[i] for i in idx], [corr[i] for i in idx], side_edges)
            for (conf, corr), idx, side_edges in zip((base, new), draws, edges, strict=True)
        ]
        for k in keys:
            d = values[1][k] - values[0][k]
            if not math.isnan(d):
                diffs[k].append(d)
    q = [(1 - level) / 2, (1 + level) / 2]
    return {k: tuple(np.quantile(np.asarray(v), q).tolist()) for k, v in diffs.items()}, diffs


def two_sides(n, seed, *, decimals=2):
    """Two correlated predictors on the same n questions (NEW answers some others right)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n)
    base_conf = np.round(np.clip(truth + rng.normal(0, 0.15, n), 0, 1), decimals)
    new_conf = np.round(np.clip(base_conf + rng.normal(0.05, 0.05, n), 0, 1), decimals)
    u = rng.random(n)
    return (base_conf.tolist(), (u < truth).tolist()), (
        new_conf.tolist(),
        (u < truth + 0.1).tolist(),
    )


def assert_same_floats(a: dict, b: dict):
    assert list(a) == list(b)
    for key in a:
        x, y = np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float)
        np.testing.assert_array_equal(x, y, err_msg=key)  # nan equals nan here


# --------------------------------------------------------------------------- McNemar


def test_mcnemar_hand_computed():
    # base right/new wrong once, base wrong/new right six times: p = 2·(1 + 7)/2^7 = 1/8
    base = [1, 0, 0, 0, 0, 0, 0, 1, 0]
    new = [0, 1, 1, 1, 1, 1, 1, 1, 0]
    result = mcnemar_exact(base, new)
    assert (result.b, result.c, result.discordant, result.p_value) == (1, 6, 7, 0.125)


def test_mcnemar_no_discordant_and_balanced_give_one():
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]).p_value == 1.0
    assert mcnemar_exact([], []).p_value == 1.0
    assert mcnemar_exact([1, 0, 1, 0], [0, 1, 0, 1]).p_value == 1.0


@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=300))
def test_mcnemar_matches_exact_binomial(rows):
    base = [a for a, _ in rows]
    new = [b for _, b in rows]
    b = sum(1 for x, y in rows if x and not y)
    c = sum(1 for x, y in rows if y and not x)
    result = mcnemar_exact(np.array(base, dtype=bool), np.array(new, dtype=bool))
    assert (result.b, result.c, result.discordant) == (b, c, b + c)
    assert result.p_value == reference_two_sided(b, c)  # correctly rounded: exactly equal
    assert mcnemar_exact(np.array(new, dtype=bool), np.array(base, dtype=bool)).p_value == (
        result.p_value
    )


@pytest.mark.parametrize(("b", "c"), [(0, 1), (0, 60), (400, 520), (1490, 1510), (1999, 2001)])
def test_mcnemar_large_counts_exact(b, c):
    base = np.r_[np.ones(b, bool), np.zeros(c, bool)]
    assert mcnemar_exact(base, ~base).p_value == reference_two_sided(b, c)


@pytest.mark.parametrize(("b", "c"), [(1, 40), (17, 30), (400, 520), (1490, 1510), (1999, 2001)])
def test_mcnemar_saddle_point_path_for_huge_counts(monkeypatch, b, c):
    monkeypatch.setattr(mcnemar_module, "EXACT_MCNEMAR_LIMIT", 0)
    base = np.r_[np.ones(b, bool), np.zeros(c, bool)]
    got = mcnemar_exact(base, ~base).p_value
    assert got == pytest.approx(reference_two_sided(b, c), rel=1e-11)


def test_mcnemar_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    for b, c in [(3, 11), (25, 40), (120, 90)]:
        base = np.r_[np.ones(b, bool), np.zeros(c, bool)]
        expected = stats.binomtest(min(b, c), b + c, 0.5).pvalue
        assert mcnemar_exact(base, ~base).p_value == pytest.approx(expected, rel=1e-12)


def test_mcnemar_and_identical_correctness_validate():
    with pytest.raises(ValueError, match="differ in length: 2 != 3"):
        mcnemar_exact([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match=r"new_correct\[1\] = 2"):
        mcnemar_exact([1, 0], [1, 2])
    assert identical_correctness([1, 0, 1], [True, False, True])
    assert not identical_correctness([1, 0, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="differ in length"):
        identical_correctness([1], [1, 0])


# --------------------------------------------------------------------------- DeLong


@pytest.mark.parametrize(("n", "decimals", "seed"), [(40, 1, 0), (57, 2, 1), (90, None, 2)])
def test_delong_matches_slow_structural_components(n, decimals, seed):
    rng = np.random.default_rng(seed)
    truth = rng.random(n)
    correct = rng.random(n) < truth
    base = np.clip(truth + rng.normal(0, 0.3, n), 0, 1)
    new = np.clip(truth + rng.normal(0, 0.2, n), 0, 1)
    if decimals is not None:  # ties within and across classes
        base, new = np.round(base, decimals), np.round(new, decimals)
    result = delong_test(base, new, correct)
    auc, s, _, z, p = reference_delong(base.tolist(), new.tolist(), correct.tolist())
    assert result.auc_base == pytest.approx(float(auc[0]), abs=1e-12)
    assert result.auc_new == pytest.approx(float(auc[1]), abs=1e-12)
    assert result.difference == pytest.approx(float(auc[1] - auc[0]), abs=1e-12)
    for r in (0, 1):
        for t in (0, 1):
            assert result.covariance[r][t] == pytest.approx(float(s[r][t]), abs=1e-10, rel=1e-10)
    assert result.z == pytest.approx(z, abs=1e-10, rel=1e-10)
    assert result.p_value == pytest.approx(p, abs=1e-10)
    assert not result.degenerate
    assert (result.n_right, result.n_wrong) == (int(correct.sum()), int((~correct).sum()))
    # the AUCs are calibcli's AUROC of each side
    assert result.auc_base == pytest.approx(auroc(PredictionColumns.from_arrays(base, correct)))


@given(
    st.lists(
        st.tuples(
            st.integers(0, 10).map(lambda k: k / 10),
            st.integers(0, 10).map(lambda k: k / 10),
            st.booleans(),
        ),
        min_size=4,
        max_size=30,
    )
)
def test_delong_swapping_sides_negates_z(rows):
    base = [a for a, _, _ in rows]
    new = [b for _, b, _ in rows]
    correct = [y for _, _, y in rows]
    if sum(correct) < 2 or len(correct) - sum(correct) < 2:
        return
    forward, backward = delong_test(base, new, correct), delong_test(new, base, correct)
    assert forward.difference == -backward.difference
    assert forward.standard_error == pytest.approx(backward.standard_error, abs=1e-15)
    if not forward.degenerate:
        assert forward.z == pytest.approx(-backward.z, rel=1e-9, abs=1e-12)
        assert forward.p_value == pytest.approx(backward.p_value, rel=1e-9, abs=1e-12)
        assert 0.0 <= forward.p_value <= 1.0


def test_delong_degenerate_cases():
    correct = [1, 1, 1, 0, 0, 0]
    same = [0.9, 0.8, 0.4, 0.5, 0.2, 0.1]
    result = delong_test(same, same, correct)
    assert result.degenerate and (result.z, result.p_value, result.standard_error) == (0, 1, 0)
    # perfect separation against all ties: every structural component shifts by the same ½
    result = delong_test([0.9, 0.8, 0.7, 0.3, 0.2, 0.1], [0.5] * 6, correct)
    assert result.degenerate and result.difference == -0.5
    assert math.isnan(result.z) and math.isnan(result.p_value)


def test_delong_validates():
    with pytest.raises(ValueError, match="at least 2 right and 2 wrong answers, got 1 right"):
        delong_test([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], [1, 0, 0])
    with pytest.raises(ValueError, match=r"new_conf: confidences\[1\] = 1.5 is outside"):
        delong_test([0.1, 0.2, 0.3, 0.4], [0.1, 1.5, 0.3, 0.4], [1, 0, 1, 0])
    with pytest.raises(ValueError, match="differ in length"):
        delong_test([0.1, 0.2], [0.1, 0.2, 0.3], [1, 0])


# --------------------------------------------------------------------------- bootstraps

KEYS = ("ece", "brier", "auroc", "accuracy")


@pytest.mark.parametrize(("n", "seed", "level"), [(30, 3, 0.95), (60, 11, 0.9)])
def test_paired_bootstrap_matches_plain_loop(n, seed, level):
    import reference as ref

    base, new = two_sides(n, seed)
    got = paired_bootstrap(base, new, samples=50, seed=seed, level=level, keys=KEYS)
    edges = [k / 10 for k in range(11)]
    expected, _ = reference_bootstrap(
        base, new, paired=True, samples=50, seed=seed, level=level, edges=(edges, edges)
    )
    assert set(got.intervals) == set(KEYS)  # in the registry's order, not the request's
    for key in KEYS:
        assert got.intervals[key] == pytest.approx(expected[key], abs=1e-12), key
    # the point values are the full-sample figures, checked against conftest's references
    for side, values in ((base, got.base), (new, got.new)):
        assert values["ece"] == pytest.approx(ref.ece(*side, 10)[0], abs=1e-15)
        assert values["brier"] == pytest.approx(float(ref.brier_exact(*side)), abs=1e-15)
    assert got.difference["brier"] == pytest.approx(got.new["brier"] - got.base["brier"])
    assert (got.paired, got.samples, got.seed, got.level, got.n_base, got.n_new) == (
        True,
        50,
        seed,
        level,
        n,
        n,
    )
    assert got.defined == dict.fromkeys(KEYS, 50)


def test_paired_bootstrap_quantile_bins_stay_at_full_sample_edges():
    base, new = two_sides(45, 5)
    got = paired_bootstrap(base, new, samples=40, seed=2, bins=5, strategy="quantile", keys=KEYS)
    edges = (reference_quantile_edges(base[0], 5), reference_quantile_edges(new[0], 5))
    expected, _ = reference_bootstrap(
        base, new, paired=True, samples=40, seed=2, level=0.95, edges=edges
    )
    for key in KEYS:
        assert got.intervals[key] == pytest.approx(expected[key], abs=1e-12), key


def test_unpaired_bootstrap_matches_plain_loop():
    base, new = two_sides(50, 8)
    new = (new[0][:37], new[1][:37])  # unpaired sides may differ in size
    got = unpaired_bootstrap(base, new, samples=50, seed=4, keys=KEYS)
    edges = [k / 10 for k in range(11)]
    expected, _ = reference_bootstrap(
        base, new, paired=False, samples=50, seed=4, level=0.95, edges=(edges, edges)
    )
    assert not got.paired and (got.n_base, got.n_new) == (50, 37)
    for key in KEYS:
        assert got.intervals[key] == pytest.approx(expected[key], abs=1e-12), key


def test_undefined_replicates_are_left_out():
    # one wrong answer in five: some resamples have no wrong answer, so no AUROC
    base = ([0.9, 0.8, 0.7, 0.6, 0.2], [1, 1, 1, 1, 0])
    new = ([0.95, 0.5, 0.75, 0.6, 0.4], [1, 1, 1, 1, 0])
    got = paired_bootstrap(base, new, samples=60, seed=1, keys=KEYS)
    edges = [k / 10 for k in range(11)]
    expected, diffs = reference_bootstrap(
        base, new, paired=True, samples=60, seed=1, level=0.95, edges=(edges, edges)
    )
    assert 0 < got.defined["auroc"] == len(diffs["auroc"]) < 60
    assert got.intervals["auroc"] == pytest.approx(expected["auroc"], abs=1e-12)


def test_point_values_are_calibration_estimates():
    base, new = two_sides(80, 9)
    got = paired_bootstrap(base, new, samples=5, seed=0, bins=7, strategy="quantile")
    for side, values in ((base, got.base), (new, got.new)):
        point = calibration_estimates(
            PredictionColumns.from_arrays(*side), bins=7, strategy="quantile"
        )
        assert_same_floats(values, point.scalars())
    assert list(got.intervals) == list(SCALAR_KEYS)


def test_identical_sides_give_zero_differences():
    base, _ = two_sides(70, 12)
    got = paired_bootstrap(base, base, samples=30, seed=3)
    for key in SCALAR_KEYS:
        if got.defined[key]:
            assert got.intervals[key] == (0.0, 0.0), key
            assert got.difference[key] == 0.0, key


def test_deterministic_and_independent_of_workers():
    base, new = two_sides(120, 13)
    for run in (paired_bootstrap, unpaired_bootstrap):
        a = run(base, new, samples=24, seed=7, keys=("ece", "nll", "smece"))
        b = run(base, new, samples=24, seed=7, keys=("ece", "nll", "smece"), workers=2)
        c = run(base, new, samples=24, seed=8, keys=("ece", "nll", "smece"))
        assert_same_floats(a.intervals, b.intervals)
        assert a.intervals["ece"] != c.intervals["ece"]


def test_paired_interval_is_much_narrower_for_correlated_predictors():
    # NEW is BASE shifted up on the same questions: what they share cancels when paired
    rng = np.random.default_rng(21)
    n = 1500
    truth = rng.uniform(0.05, 0.95, n)
    correct = rng.random(n) < truth
    base_conf = np.clip(truth + rng.normal(0, 0.2, n), 0.01, 0.99)
    new_conf = np.clip(base_conf + 0.04, 0.01, 0.99)
    options = {"samples": 200, "seed": 5, "keys": ("ece", "brier")}
    paired = paired_bootstrap((base_conf, correct), (new_conf, correct), **options)
    unpaired = unpaired_bootstrap((base_conf, correct), (new_conf, correct), **options)
    for key in ("ece", "brier"):
        width = paired.intervals[key][1] - paired.intervals[key][0]
        unpaired_width = unpaired.intervals[key][1] - unpaired.intervals[key][0]
        assert 0 < width < 0.5 * unpaired_width, key
        assert paired.difference[key] == unpaired.difference[key]


def test_bootstrap_validation():
    base = ([0.2, 0.7, 0.9], [0, 1, 1])
    with pytest.raises(ValueError, match="paired rows must align: base has 3 rows, new 2"):
        paired_bootstrap(base, ([0.2, 0.7], [0, 1]))
    with pytest.raises(ValueError, match=r"new: confidences\[0\] = -0.1 is outside"):
        paired_bootstrap(base, ([-0.1, 0.7, 0.9], [0, 1, 1]))
    with pytest.raises(ValueError, match="base has no rows"):
        unpaired_bootstrap(([], []), base)
    with pytest.raises(ValueError, match=r"must be a pair \(confidences, correct\)"):
        paired_bootstrap([0.2, 0.7, 0.9], base)
    with pytest.raises(ValueError, match="unknown scalar"):
        paired_bootstrap(base, base, keys=["ece", "sharpness"])
    with pytest.raises(ValueError, match="samples must be an integer >= 1"):
        paired_bootstrap(base, base, samples=0)
    with pytest.raises(ValueError, match="level must be in"):
        paired_bootstrap(base, base, level=1.0)
