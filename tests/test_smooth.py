"""Smooth ECE: equality with the authors' package relplot 1.0.3, weights, invariants, validation.

relplot is the reference (test-only dependency): ``relplot.smECE(f, y, return_width=True)``
returns the value and the bandwidth its search chose; calibcli must give the same value to 1e-6
and the same bandwidth (a multiple of 1/1024, so equality is exact).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import relplot
from hypothesis import given
from hypothesis import strategies as st

from calibcli.metrics.smooth import SmoothECE, smooth_ece

TOL = 1e-6


def reference(f, y) -> tuple[float, float]:
    """relplot's smECE and bandwidth, with its default (reflected Gaussian) kernel."""
    assert relplot.config.use_logit_scaling is False
    value, width = relplot.smECE(
        np.asarray(f, dtype=np.float64), np.asarray(y, dtype=np.float64), return_width=True
    )
    return float(value), float(width)


def assert_matches_relplot(f, y) -> SmoothECE:
    expected_value, expected_width = reference(f, y)
    got = smooth_ece(f, y)
    assert got.value == pytest.approx(expected_value, abs=TOL)
    assert got.bandwidth == expected_width
    return got


def _predictor(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = rng.uniform(size=n)
    u = rng.uniform(size=n)
    if kind == "calibrated":
        return f, u < f
    if kind == "overconfident":  # true accuracy below the stated confidence
        return f, u < f**2
    if kind == "underconfident":
        return f, u < np.sqrt(f)
    if kind == "skewed":  # most confidences near 1, as language models report them
        f = rng.beta(8, 1, size=n)
        return f, u < f - 0.05
    if kind == "ties":  # confidences written with one decimal
        f = np.round(f, 1)
        return f, u < f
    if kind == "endpoints":  # many exact 0s and 1s
        f = rng.choice([0.0, 1.0, 0.5, 0.25], size=n, p=[0.3, 0.4, 0.2, 0.1])
        return f, u < 0.6
    if kind == "all_correct":
        return f, np.ones(n, dtype=bool)
    if kind == "all_wrong":
        return f, np.zeros(n, dtype=bool)
    raise AssertionError(kind)


KINDS = [
    "calibrated",
    "overconfident",
    "underconfident",
    "skewed",
    "ties",
    "endpoints",
    "all_correct",
    "all_wrong",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 5, 40, 3000])
def test_matches_relplot_on_seeded_predictors(kind, n):
    f, y = _predictor(kind, n, seed=n * 31 + KINDS.index(kind))
    assert_matches_relplot(f, y)


@pytest.mark.parametrize("kind", ["calibrated", "overconfident"])
def test_matches_relplot_on_200k_rows(kind):
    f, y = _predictor(kind, 200_000, seed=7)
    got = assert_matches_relplot(f, y)
    if kind == "calibrated":  # small bandwidth: the finer grids of the search are exercised
        assert got.bandwidth < 0.01


def _stratified(flips: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """99 confidence levels j/100 with exactly j of 100 rows correct, then ``flips`` outcomes
    flipped: as calibrated as data can be, so the bandwidth falls to the search's finest steps."""
    f = np.repeat(np.arange(1, 100) / 100, 100)
    y = np.concatenate([np.arange(100) < j for j in range(1, 100)])
    idx = np.random.default_rng(seed).choice(f.size, flips, replace=False)
    y[idx] = ~y[idx]
    return f, y


@pytest.mark.parametrize(
    ("flips", "seed", "steps"),
    # steps = bandwidth·1024 that relplot chooses: covers every grid size of the search
    # (k ≤ 10 give grids of 1025..5121 points, k ≥ 11 the 1001-point grid)
    [
        (0, 0, 2),
        (20, 2, 3),
        (40, 0, 4),
        (40, 1, 5),
        (60, 0, 6),
        (80, 0, 7),
        (100, 1, 8),
        (140, 0, 9),
        (140, 2, 10),
        (160, 2, 11),
    ],
)
def test_matches_relplot_at_small_bandwidths(flips, seed, steps):
    f, y = _stratified(flips, seed)
    assert reference(f, y)[1] == steps / 1024
    assert_matches_relplot(f, y)


@pytest.mark.parametrize(
    ("f", "y"),
    [
        ([1.0], [False]),
        ([1.0], [True]),
        ([0.0], [True]),
        ([0.0, 1.0], [False, True]),
        ([0.3, 0.3, 0.3], [True, False, True]),
        ([1.0] * 10, [False] * 10),
        ([0.999] * 7 + [0.001] * 3, [True] * 7 + [False] * 3),
    ],
)
def test_matches_relplot_on_hand_made_cases(f, y):
    assert_matches_relplot(np.array(f), np.array(y))


@given(
    st.lists(
        st.tuples(
            st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 0.9, 1.0])),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_matches_relplot_property(rows):
    f = np.array([c for c, _ in rows])
    y = np.array([b for _, b in rows])
    got = assert_matches_relplot(f, y)
    # bounds that hold by construction (see the module docstring)
    assert 0.0 <= got.value < 1.0
    assert 2 / 1024 <= got.bandwidth <= 1.0
    assert (got.bandwidth * 1024).is_integer()
    assert got.value <= got.bandwidth or got.bandwidth == 1.0


def test_value_is_not_bounded_by_one_half():
    # confident and always wrong: smECE approaches 1 (relplot agrees)
    got = assert_matches_relplot(np.ones(50), np.zeros(50, dtype=bool))
    assert got.value > 0.99


def test_weights_equal_repetition():
    rng = np.random.default_rng(3)
    f = np.concatenate([rng.uniform(size=400), [0.0, 1.0, 1.0]])
    y = rng.uniform(size=f.size) < f**1.5
    w = rng.integers(0, 6, size=f.size)
    repeated = smooth_ece(np.repeat(f, w), np.repeat(y, w))
    for weights in (w, w.astype(np.float64)):
        weighted = smooth_ece(f, y, weights=weights)
        assert weighted.value == pytest.approx(repeated.value, abs=1e-12)
        assert weighted.bandwidth == repeated.bandwidth
    # and repetition is what relplot sees
    assert repeated.value == pytest.approx(reference(np.repeat(f, w), np.repeat(y, w))[0], abs=TOL)


def test_unit_weights_change_nothing():
    f, y = _predictor("overconfident", 500, seed=11)
    assert smooth_ece(f, y, weights=np.ones(f.size)) == smooth_ece(f, y)


def test_weights_at_small_bandwidth_equal_repetition():
    # bootstrap-style integer weights on near-calibrated data (finer grids in play)
    f, y = _stratified(40, 1)
    w = np.random.default_rng(5).multinomial(f.size, np.full(f.size, 1 / f.size))
    weighted = smooth_ece(f, y, weights=w)
    expected = reference(np.repeat(f, w), np.repeat(y, w))
    assert weighted.value == pytest.approx(expected[0], abs=TOL)
    assert weighted.bandwidth == expected[1]


def test_permutation_invariance():
    f, y = _predictor("skewed", 5000, seed=13)
    perm = np.random.default_rng(17).permutation(f.size)
    a, b = smooth_ece(f, y), smooth_ece(f[perm], y[perm])
    assert b.value == pytest.approx(a.value, abs=1e-12)
    assert b.bandwidth == a.bandwidth


def test_accepts_lists_and_zero_one_labels():
    f = [0.9, 0.8, 0.7, 0.2, 0.6]
    as_bool = smooth_ece(f, [True, True, False, False, True])
    assert smooth_ece(f, [1, 1, 0, 0, 1]) == as_bool
    assert smooth_ece(np.array(f), np.array([1.0, 1.0, 0.0, 0.0, 1.0])) == as_bool
    assert smooth_ece(f, [1, 1, 0, 0, 1], validate=False) == as_bool


def test_empty_input_and_zero_total_weight():
    empty = smooth_ece([], [])
    assert empty.value == 0.0 and math.isnan(empty.bandwidth)
    zero = smooth_ece([0.2, 0.9], [True, False], weights=[0, 0])
    assert zero.value == 0.0 and math.isnan(zero.bandwidth)


def test_result_is_frozen_with_python_floats():
    got = smooth_ece([0.6, 0.7], [True, False])
    assert type(got.value) is float and type(got.bandwidth) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.value = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("f", "y", "message"),
    [
        ([0.5, 1.5], [True, False], r"confidences\[1\] = 1\.5 is outside \[0, 1\]"),
        ([0.5, -0.1], [True, False], r"confidences\[1\] = -0\.1 is outside \[0, 1\]"),
        ([float("nan"), 0.5], [True, False], r"confidences\[0\] = nan is not a finite number"),
        ([0.5, 0.5], [1, 2], r"correct\[1\] = 2"),
        ([0.5, 0.5, 0.5], [True, False], r"differ in length: 3 != 2"),
        ([[0.5]], [[True]], r"one-dimensional"),
    ],
)
def test_validation_names_position_and_value(f, y, message):
    with pytest.raises(ValueError, match=message):
        smooth_ece(f, y)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1, -1], r"weights\[1\] = -1\.0 is not a finite non-negative number"),
        ([1.0, float("inf")], r"weights\[1\] = inf is not a finite non-negative number"),
        ([1, 2, 3], r"weights must be 1-D of length 2"),
        (["a", "b"], r"weights must be non-negative numbers"),
    ],
)
def test_weight_validation(weights, message):
    with pytest.raises(ValueError, match=message):
        smooth_ece([0.2, 0.4], [True, False], weights=weights)


def test_unvalidated_path_still_checks_lengths():
    with pytest.raises(ValueError, match="equal length"):
        smooth_ece([0.2, 0.4], [True], validate=False)
