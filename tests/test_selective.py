"""calibcli.metrics.selective against independent references written in this file.

References: exact binomial sums with fractions.Fraction / math.comb (small n), scipy.stats
(binom, beta) for large n, brute-force averages over every ordering of tied rows
(itertools.permutations) for AURC, E-AURC and selective accuracy, a plain-Python Learn then Test
loop, and a seeded simulation with known true accuracy for the coverage guarantee.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.methods import SELECTION_METHODS, names
from calibcli.metrics.selective import (
    METHODS,
    RiskCoverage,
    accuracy_lower_bound,
    aurc,
    binomial_cdf,
    display_rows,
    e_aurc,
    plug_in_threshold,
    risk_upper_bound,
    select_threshold,
    selective_accuracy,
)

# --------------------------------------------------------------------------- references


def exact_cdf(k, n, p):
    p = Fraction(p)
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(0, k + 1))


def ref_curve(conf, correct):
    """(thresholds descending, accepted, errors) with plain loops."""
    ts = sorted(set(conf), reverse=True)
    acc = [sum(1 for c in conf if c >= t) for t in ts]
    err = [sum(1 for c, y in zip(conf, correct, strict=True) if c >= t and not y) for t in ts]
    return ts, acc, err


def orderings(conf, correct):
    """Every ordering of the rows by descending confidence, ties in every possible order."""
    groups = {}
    for c, y in zip(conf, correct, strict=True):
        groups.setdefault(c, []).append(bool(y))
    blocks = [groups[c] for c in sorted(groups, reverse=True)]
    per_block = [list(itertools.permutations(b)) for b in blocks]
    for combo in itertools.product(*per_block):
        yield [y for block in combo for y in block]


def mean_over_orderings(conf, correct, figure):
    values = [figure(order) for order in orderings(conf, correct)]
    return sum(values, Fraction(0)) / len(values)


def plain_aurc(order):
    n = len(order)
    errors, total = 0, Fraction(0)
    for k, y in enumerate(order, start=1):
        errors += not y
        total += Fraction(errors, k)
    return total / n


def oracle_aurc(order):
    n, e = len(order), sum(1 for y in order if not y)
    return sum((Fraction(max(0, k - (n - e)), k) for k in range(1, n + 1)), Fraction(0)) / n


def top_k_accuracy(order, k):
    return Fraction(sum(order[:k]), k)


def ref_ltt(conf, correct, target, delta):
    """Fixed-sequence LTT with math.comb p-values, skipping thresholds too small to reject."""
    alpha = 1 - Fraction(target)
    answer = None
    for t, n, e in zip(*ref_curve(conf, correct), strict=True):
        if (1 - alpha) ** n > Fraction(delta):
            continue  # zero errors could not reject: not tested
        p = sum(math.comb(n, i) * alpha**i * (1 - alpha) ** (n - i) for i in range(e + 1))
        if p > Fraction(delta):
            break
        answer = t
    return answer


def tied_rows(seed, n=9, levels=3):
    rng = np.random.default_rng(seed)
    conf = rng.integers(1, levels + 1, size=n) / levels
    correct = rng.random(n) < conf
    return conf.tolist(), correct.tolist()


# --------------------------------------------------------------------------- binomial tails


@pytest.mark.parametrize("n", [1, 2, 7, 30, 61])
@pytest.mark.parametrize("p", [0.001, 0.1, 0.37, 0.5, 0.9])
def test_binomial_cdf_matches_exact_sums(n, p):
    for k in range(-1, n + 1):
        want = exact_cdf(k, n, p) if k >= 0 else Fraction(0)
        got = binomial_cdf(k, n, p)
        assert got == pytest.approx(float(want), rel=1e-13, abs=1e-300)


def test_binomial_cdf_edges():
    assert binomial_cdf(0, 0, 0.3) == 1.0
    assert binomial_cdf(2, 5, 0.0) == 1.0
    assert binomial_cdf(4, 5, 1.0) == 0.0
    assert binomial_cdf(5, 5, 1.0) == 1.0
    with pytest.raises(ValueError, match="p must be in"):
        binomial_cdf(1, 3, 1.5)


def test_binomial_cdf_matches_scipy_for_large_n():
    rng = np.random.default_rng(7)
    n = rng.integers(100, 2_000_000, 400)
    p = rng.uniform(0.005, 0.995, 400)
    k = np.clip(np.floor(n * p + rng.normal(0, 3, 400) * np.sqrt(n * p * (1 - p))), 0, n)
    got = binomial_cdf(k, n, p)
    # P(X <= k) = P(Beta(k + 1, n - k) > p). scipy's binom.cdf before 1.16 (what Python 3.10
    # gets) is itself off by up to 6e-11 here (n = 1,535,922, k = 449,708, p = 0.2947: 30-digit
    # sum 8.6048404654334538e-8, binom.cdf 1.15 8.6048404649275e-8); the beta tail is right to
    # 1e-15 with scipy 1.15 and 1.17 alike.
    want = stats.beta.sf(p, k + 1, n - k)
    keep = want > 1e-280
    # The continued fraction loses a little with n: ~1e-13 at n = 1e4, ~1e-11 at n = 1e6.
    np.testing.assert_allclose(got[keep], want[keep], rtol=5e-11)


@pytest.mark.parametrize(("s", "n"), [(1, 1), (3, 5), (0, 4), (9, 10), (10, 10), (17, 40)])
def test_accuracy_lower_bound_small_n_is_the_exact_tail_root(s, n):
    delta = 0.05
    low = accuracy_lower_bound(s, n, delta=delta)
    if s == 0:
        assert low == 0.0
        return

    def tail(x):  # P[Binom(n, x) >= s], exact
        x = Fraction(x)
        return sum(math.comb(n, i) * x**i * (1 - x) ** (n - i) for i in range(s, n + 1))

    assert tail(low) <= Fraction(delta) * (1 + Fraction(1, 10**12))
    assert tail(low * (1 + 1e-12)) > Fraction(delta)
    assert low == pytest.approx(stats.beta.ppf(delta, s, n - s + 1), rel=1e-12)


def test_bounds_match_scipy_beta_quantiles_for_large_n():
    rng = np.random.default_rng(3)
    n = rng.integers(1, 5_000_000, 60)
    s = rng.integers(0, n + 1)
    for delta in (0.05, 0.001):
        low = accuracy_lower_bound(s, n, delta=delta)
        want = np.where(s > 0, stats.beta.ppf(delta, np.maximum(s, 1), n - s + 1), 0.0)
        np.testing.assert_allclose(low, want, rtol=1e-11)
        e = n - s
        up = risk_upper_bound(e, n, delta=delta)
        want_up = np.where(e < n, stats.beta.isf(delta, e + 1, np.maximum(n - e, 1)), 1.0)
        np.testing.assert_allclose(up, want_up, rtol=1e-10)


def test_bound_closed_forms_and_validation():
    assert accuracy_lower_bound(20, 20, delta=0.1) == pytest.approx(0.1 ** (1 / 20), rel=1e-15)
    assert risk_upper_bound(0, 20, delta=0.1) == pytest.approx(1 - 0.1 ** (1 / 20), rel=1e-14)
    assert risk_upper_bound(20, 20, delta=0.1) == 1.0
    for bad in (0, 1, 1.5, -0.1, math.nan, True):
        with pytest.raises(ValueError, match="delta"):
            accuracy_lower_bound(3, 5, delta=bad)
    with pytest.raises(ValueError, match="successes"):
        accuracy_lower_bound(6, 5, delta=0.05)


# --------------------------------------------------------------------------- the curve


def test_curve_counts_match_loops_and_both_constructors_agree():
    conf, correct = tied_rows(1, n=40, levels=6)
    ts, acc, err = ref_curve(conf, correct)
    for curve in (
        RiskCoverage.from_arrays(conf, correct),
        RiskCoverage.from_columns(PredictionColumns.from_arrays(conf, correct)),
    ):
        assert curve.thresholds.tolist() == ts
        assert curve.accepted.tolist() == acc
        assert curve.errors.tolist() == err
        assert curve.accepted.dtype == curve.errors.dtype == np.int64
        assert curve.total == 40
        np.testing.assert_array_equal(curve.coverage, np.array(acc) / 40)


def test_curve_from_columns_leaves_the_columns_alone_unless_reorder_ok():
    columns = PredictionColumns.from_arrays([0.9, 0.2, 0.5, 0.7], [True, False, True, False])
    before = columns.conf_correct.copy()
    RiskCoverage.from_columns(columns)
    np.testing.assert_array_equal(columns.conf_correct, before)
    curve = RiskCoverage.from_columns(columns, reorder_ok=True)
    assert curve.thresholds.tolist() == [0.9, 0.7, 0.5, 0.2]
    assert curve.errors.tolist() == [0, 1, 1, 2]


def test_curve_rejects_bad_input_and_accepts_empty():
    with pytest.raises(ValueError, match="confidences"):
        RiskCoverage.from_arrays([0.2, 1.5], [True, False])
    with pytest.raises(ValueError, match="not in"):
        RiskCoverage.from_columns(PredictionColumns(np.array([math.nan]), np.zeros(0)))
    with pytest.raises(ValueError, match="not a risk-coverage curve"):
        RiskCoverage(np.array([0.5, 0.7]), np.array([1, 2]), np.array([0, 0]), 2)
    empty = RiskCoverage.from_arrays([], [])
    assert empty.total == 0 and empty.thresholds.size == 0
    for figure in (aurc, e_aurc, lambda c: select_threshold(c, target_accuracy=0.9)):
        with pytest.raises(ValueError, match="no rows"):
            figure(empty)


# --------------------------------------------------------------------------- summary figures


@pytest.mark.parametrize("seed", range(6))
def test_aurc_and_e_aurc_average_over_tie_orderings(seed):
    conf, correct = tied_rows(seed, n=8, levels=3)
    curve = RiskCoverage.from_arrays(conf, correct)
    want = mean_over_orderings(conf, correct, plain_aurc)
    assert aurc(curve) == pytest.approx(float(want), rel=1e-13)
    excess = want - oracle_aurc(correct)
    assert e_aurc(curve) == pytest.approx(float(excess), rel=1e-12, abs=1e-15)


def test_aurc_with_large_tied_groups_matches_a_row_loop():
    # Groups longer than the harmonic table exercise the asymptotic difference H(n1) − H(n0).
    rng = np.random.default_rng(5)
    conf = rng.integers(0, 4, 3000) / 3
    correct = rng.random(3000) < 0.7
    curve = RiskCoverage.from_arrays(conf, correct)
    total, n0, e0 = 0.0, 0, 0
    terms = []
    for n1, e1 in zip(curve.accepted.tolist(), curve.errors.tolist(), strict=True):
        g, eps = n1 - n0, e1 - e0
        terms += [(e0 + i * eps / g) / (n0 + i) for i in range(1, g + 1)]
        n0, e0 = n1, e1
    total = math.fsum(terms) / 3000
    assert aurc(curve) == pytest.approx(total, rel=1e-13)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("coverage", [0.1, 0.25, 0.5, 2 / 3, 1.0])
def test_selective_accuracy_averages_over_tie_orderings(seed, coverage):
    conf, correct = tied_rows(seed, n=9, levels=3)
    curve = RiskCoverage.from_arrays(conf, correct)
    k = math.ceil(Fraction(coverage) * 9 - Fraction(1, 10**9))  # 2/3 of 9 rows is 6 rows
    want = mean_over_orderings(conf, correct, lambda order: top_k_accuracy(order, k))
    assert selective_accuracy(curve, coverage) == pytest.approx(float(want), rel=1e-14)


def test_selective_accuracy_rounds_coverage_as_written():
    # 0.1 * 30 is 3.0000000000000004 in floating point; the cut is still 3 rows.
    curve = RiskCoverage.from_arrays(np.arange(30, 0, -1) / 30, [True] * 3 + [False] * 27)
    assert selective_accuracy(curve, 0.1) == 1.0
    assert selective_accuracy(curve, 0.11) == 0.75
    for bad in (0, -0.5, 1.01, math.nan):
        with pytest.raises(ValueError, match="coverage"):
            selective_accuracy(curve, bad)


def test_display_rows_pick_the_first_threshold_at_each_round_coverage():
    curve = RiskCoverage.from_arrays(np.arange(100, 0, -1) / 100, [True] * 100)
    rows = display_rows(curve, rows=4)
    assert rows.tolist() == [24, 49, 74, 99]
    assert (curve.coverage[rows] >= [0.25, 0.5, 0.75, 1.0]).all()
    tied = RiskCoverage.from_arrays([0.9] * 8 + [0.1, 0.2], [True] * 10)
    assert display_rows(tied, rows=20).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="rows"):
        display_rows(curve, rows=0)


# --------------------------------------------------------------------------- threshold choice


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("target", [0.6, 0.8])
def test_ltt_matches_a_plain_python_loop(seed, target):
    rng = np.random.default_rng(seed)
    conf = (rng.integers(1, 41, 200) / 40).tolist()
    correct = (rng.random(200) < np.array(conf) ** 0.5).tolist()
    curve = RiskCoverage.from_arrays(conf, correct)
    got = select_threshold(curve, target_accuracy=target, delta=0.1)
    assert got.threshold == ref_ltt(conf, correct, target, 0.1)
    if got.threshold is not None:
        n, e = got.accepted, got.errors
        assert got.p_value == pytest.approx(float(exact_cdf(e, n, 1 - target)), rel=1e-12)
        assert got.accuracy_lower_bound >= target
        assert got.coverage == n / 200


def test_ltt_on_many_distinct_thresholds_matches_a_plain_loop():
    rng = np.random.default_rng(11)
    conf = rng.random(5000)
    correct = rng.random(5000) < conf
    curve = RiskCoverage.from_arrays(conf, correct)
    got = select_threshold(curve, target_accuracy=0.8, delta=0.05)
    alpha, answer = 0.2, None
    for t, n, e in zip(curve.thresholds, curve.accepted, curve.errors, strict=True):
        if 0.8**n > 0.05:
            continue
        if stats.binom.cdf(e, n, alpha) > 0.05:
            break
        answer = t
    assert got.threshold == answer


def test_sgr_returns_the_best_threshold_that_passed():
    rng = np.random.default_rng(4)
    conf = rng.random(2000)
    correct = rng.random(2000) < conf
    curve = RiskCoverage.from_arrays(conf, correct)
    got = select_threshold(curve, target_accuracy=0.8, method="sgr")
    m = curve.thresholds.size
    steps = math.ceil(math.log2(m))
    assert got.test_level == pytest.approx(0.05 / steps)
    lo, hi, passed = -1, m, []
    for _ in range(steps):  # the bisection written out, p-values from scipy
        mid = (lo + hi) // 2
        p = stats.binom.cdf(curve.errors[mid], curve.accepted[mid], 0.2)
        if p <= 0.05 / steps:
            passed.append(mid)
            lo = mid
        else:
            hi = mid
    assert got.index == max(passed)
    assert got.tests_run == steps
    assert got.accuracy_lower_bound >= 0.8


def test_nothing_passes_gives_none():
    curve = RiskCoverage.from_arrays([0.9, 0.8, 0.7], [True, False, True])
    for method in ("ltt", "sgr"):
        got = select_threshold(curve, target_accuracy=0.99, method=method)
        assert got.threshold is None and got.index is None
        assert got.accepted == 0 and got.coverage == 0.0 and math.isnan(got.accuracy)


def test_plug_in_takes_the_lowest_threshold_meeting_the_target():
    conf = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    correct = [True, False, True, True, True, True, True, False, False, False]
    curve = RiskCoverage.from_arrays(conf, correct)
    got = plug_in_threshold(curve, target_accuracy=0.7)
    # accuracies from the top: 1, .5, .67, .75, .8, .83, .857, .75, .67, .6
    assert got.threshold == 0.2 and got.accuracy == 0.75
    assert plug_in_threshold(curve, target_accuracy=1.0).threshold == 0.9


@pytest.mark.parametrize("bad", [0, 1.0, 1.2, -0.3, math.nan, True, "0.9"])
def test_target_accuracy_is_validated(bad):
    curve = RiskCoverage.from_arrays([0.9, 0.2], [True, False])
    with pytest.raises(ValueError, match="target_accuracy"):
        select_threshold(curve, target_accuracy=bad)


def test_delta_and_method_are_validated():
    curve = RiskCoverage.from_arrays([0.9, 0.2], [True, False])
    with pytest.raises(ValueError, match="delta"):
        select_threshold(curve, target_accuracy=0.9, delta=1.0)
    with pytest.raises(ValueError, match="method"):
        select_threshold(curve, target_accuracy=0.9, method="bonferroni")


def test_selection_methods_are_the_named_ones():
    # the light list the command line reads names exactly the rules select_threshold runs
    assert names(SELECTION_METHODS) == METHODS
    curve = RiskCoverage.from_arrays([0.9, 0.8, 0.7, 0.2], [True, True, True, False])
    for method in METHODS:
        assert select_threshold(curve, target_accuracy=0.5, delta=0.5, method=method).method == (
            method
        )


def test_the_guarantee_holds_in_simulation():
    """1,000 seeded draws of N = 500 rows, c ~ U(0, 1), correct ~ Bernoulli(c): the true accuracy
    above t is (1 + t)/2, so a threshold misses A = 0.8 exactly when t < 0.6."""
    draws, sgr_draws, n_rows, target, delta = 1000, 250, 500, 0.8, 0.05
    rng = np.random.default_rng(20240601)
    conf = rng.random((draws, n_rows))
    correct = rng.random((draws, n_rows)) < conf
    misses = {"ltt": 0, "sgr": 0, "plug-in": 0}
    for i in range(draws):
        curve = RiskCoverage.from_arrays(conf[i], correct[i])
        choices = [
            select_threshold(curve, target_accuracy=target, delta=delta),
            plug_in_threshold(curve, target_accuracy=target),
        ]
        if i < sgr_draws:  # SGR is far from its bound here (Bonferroni over ~9 tests): fewer draws
            choices.append(
                select_threshold(curve, target_accuracy=target, delta=delta, method="sgr")
            )
        for choice in choices:
            if choice.threshold is not None and (1 + choice.threshold) / 2 < target:
                misses[choice.method] += 1
    rates = {k: v / (sgr_draws if k == "sgr" else draws) for k, v in misses.items()}
    print(f"true accuracy below target in: {rates}")
    assert rates["ltt"] <= delta + 3 * math.sqrt(delta * (1 - delta) / draws)
    assert rates["sgr"] <= delta + 3 * math.sqrt(delta * (1 - delta) / sgr_draws)
    assert rates["plug-in"] > 0.2  # the simulation can see a rule without a guarantee fail


# --------------------------------------------------------------------------- properties

rows_strategy = st.lists(
    st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]), st.booleans()),
    min_size=1,
    max_size=60,
)


@given(rows_strategy, st.randoms(use_true_random=False))
def test_curve_is_monotone_and_order_free(rows, rnd):
    conf = [c for c, _ in rows]
    correct = [y for _, y in rows]
    curve = RiskCoverage.from_arrays(conf, correct)
    assert np.all(np.diff(curve.coverage) > 0) and curve.coverage[-1] == 1.0
    assert np.all(np.diff(curve.errors) >= 0)
    assert np.all(np.diff(curve.errors) <= np.diff(curve.accepted))
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    other = RiskCoverage.from_arrays([c for c, _ in shuffled], [y for _, y in shuffled])
    np.testing.assert_array_equal(other.errors, curve.errors)
    for method in ("ltt", "sgr"):
        a = select_threshold(curve, target_accuracy=0.6, delta=0.2, method=method)
        b = select_threshold(other, target_accuracy=0.6, delta=0.2, method=method)
        assert (a.index, a.accepted, a.errors, a.tests_run) == (
            b.index,
            b.accepted,
            b.errors,
            b.tests_run,
        )
    assert aurc(curve) == aurc(other)
    assert 0.0 <= e_aurc(curve) <= aurc(curve) <= 1.0
