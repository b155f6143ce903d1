"""The batched smooth ECE of many groups equals the one-group smooth ECE of each, bit for bit.

The reference is :func:`calibcli.metrics.smooth.smooth_ece_split` called group by group (the
function every --by group's smece came from, itself checked against relplot in
tests/test_estimators.py); equality is ``==`` on the floats, never approximate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.metrics import smooth_groups
from calibcli.metrics.smooth import smooth_ece_split
from calibcli.metrics.smooth_groups import smooth_ece_groups


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _assert_each_group_equal(groups) -> list[float]:
    values, bandwidths = smooth_ece_groups(groups)
    assert len(values) == len(bandwidths) == len(groups)
    for g, (right, wrong) in enumerate(groups):
        one = smooth_ece_split(right, wrong)
        assert _same(values[g], one.value), (g, values[g], one.value)
        assert _same(bandwidths[g], one.bandwidth), (g, bandwidths[g], one.bandwidth)
    return bandwidths


def _halves(conf: np.ndarray, correct: np.ndarray, *, ordered: bool):
    right, wrong = conf[correct], conf[~correct]
    if ordered:  # as the --by path hands them over: each class sorted ascending
        right, wrong = np.sort(right), np.sort(wrong)
    return right, wrong


def _edge_groups(rng: np.random.Generator, *, ordered: bool) -> list:
    """One row, one class only, confidences exactly 0 and 1, ties, no rows, and large well
    calibrated groups, whose bandwidth falls below 0.01 (the finer grids)."""
    groups = [
        (np.array([0.7]), np.zeros(0)),
        (np.zeros(0), np.array([0.3])),
        (np.array([1.0]), np.zeros(0)),
        (np.zeros(0), np.array([0.0])),
        (np.array([0.0]), np.array([1.0])),
        (np.zeros(0), np.zeros(0)),
        (np.full(25, 1.0), np.full(5, 1.0)),
        (np.full(10, 0.0), np.full(30, 0.0)),
        (np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0])),
    ]
    for n in (40, 500, 3000):
        conf = rng.random(n)
        groups.append(_halves(conf, np.ones(n, dtype=bool), ordered=ordered))
        groups.append(_halves(conf, np.zeros(n, dtype=bool), ordered=ordered))
        tied = np.round(conf, 1)
        groups.append(_halves(tied, rng.random(n) < tied, ordered=ordered))
    for n in (60_000, 250_000):
        conf = rng.random(n)
        groups.append(_halves(conf, rng.random(n) < conf, ordered=ordered))
    return groups


@pytest.mark.parametrize("ordered", [True, False])
def test_edge_groups_equal_the_one_group_smooth_ece(ordered):
    rng = np.random.default_rng(11)
    bandwidths = _assert_each_group_equal(_edge_groups(rng, ordered=ordered))
    # the large calibrated groups reach the finer grids (bandwidth below 11/1024)
    assert min(b for b in bandwidths if not math.isnan(b)) < 0.01


def test_many_random_groups_across_chunks(monkeypatch):
    monkeypatch.setattr(smooth_groups, "_CHUNK", 7)  # several chunks, one of them partial
    rng = np.random.default_rng(5)
    groups = []
    for g in range(60):
        n = int(rng.integers(0, 800)) if g % 5 else int(rng.integers(0, 3))
        conf = rng.beta(4.0, 1.5, n)
        correct = rng.random(n) < conf * rng.uniform(0.5, 1.0)
        groups.append(_halves(conf, correct, ordered=g % 2 == 0))
    _assert_each_group_equal(groups)


def test_no_groups_and_empty_groups():
    assert smooth_ece_groups([]) == ([], [])
    values, bandwidths = smooth_ece_groups([(np.zeros(0), np.zeros(0))] * 3)
    assert values == [0.0, 0.0, 0.0]
    assert all(math.isnan(b) for b in bandwidths)


def test_known_values():
    # a single right answer at 0.7: every smoothed residual is -0.3 times the density, so
    # smECE_σ is 0.3 less the density floor's share (ε = 1e-4 at each of the 200 points
    # against a density of about one row over 1/1000-wide cells: ~1e-4 relative), just
    # under 0.3 at every σ; the search ends on the smallest multiple of 1/1024 above it
    values, bandwidths = smooth_ece_groups([(np.array([0.7]), np.zeros(0))])
    assert bandwidths == [308 / 1024]
    assert 307 / 1024 < values[0] < 0.3
    assert values[0] == pytest.approx(0.3, rel=2e-4)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=12),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    decimals=st.sampled_from([None, 0, 1, 2]),
)
def test_property_batched_equals_one_group(sizes, seed, decimals):
    rng = np.random.default_rng(seed)
    groups = []
    for n in sizes:
        conf = rng.random(n)
        if decimals is not None:
            conf = np.round(conf, decimals)
        groups.append(_halves(conf, rng.random(n) < conf, ordered=bool(seed % 2)))
    _assert_each_group_equal(groups)


def test_the_row_by_row_interpolation_gives_the_same_floats(monkeypatch):
    # where np.interp would round otherwise than the stacked formula (a build that fuses its
    # multiply and add), the batch interpolates row by row with np.interp itself
    rng = np.random.default_rng(23)
    groups = _edge_groups(rng, ordered=True)
    for n in (50, 700):
        conf = rng.random(n)
        groups.append(_halves(conf, rng.random(n) < conf, ordered=True))
    assert smooth_groups._formula_is_interp()  # on this machine the formula is np.interp's
    stacked = smooth_ece_groups(groups)
    monkeypatch.setattr(smooth_groups, "_formula_is_interp", lambda: False)
    assert smooth_ece_groups(groups) == stacked
    _assert_each_group_equal(groups)


@pytest.mark.parametrize("margin", [0.0, 1e9])
def test_the_denominator_estimate_decides_as_the_transform_does(monkeypatch, margin):
    # margin 0: every step decided from the estimate and the bound wherever they allow;
    # margin 1e9: every step in doubt, so the density is always transformed, as one group does
    monkeypatch.setattr(smooth_groups, "_MARGIN", margin)
    rng = np.random.default_rng(31)
    groups = _edge_groups(rng, ordered=True)
    for n in (30, 400, 2000):
        conf = rng.beta(5.0, 1.0, n)  # overconfident: the bound settles the low steps
        groups.append(_halves(conf, rng.random(n) < conf**2, ordered=True))
    _assert_each_group_equal(groups)
