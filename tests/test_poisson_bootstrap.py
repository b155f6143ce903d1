"""The Poisson bootstrap keyed by rows, against independent references.

* the weight function: a pure-Python reimplementation of the documented hash with exact
  rational arithmetic (itself pinned to splitmix64's published outputs), scipy's Poisson CDF,
  and the sampling distribution of a million weights;
* a replicate's state: the rows repeated by their weights, scored by calibration_estimates;
* merging: states of random splits against the state of all rows;
* the single pass: the same brute force for every scalar, scikit-learn's weighted AUROC.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

import calibcli.metrics.poisson as poisson_module
from calibcli.metrics import (
    POISSON_THRESHOLDS,
    SCALAR_KEYS,
    PoissonState,
    PredictionColumns,
    calibration_estimates,
    poisson_intervals,
    replicate_weights,
)

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
NOT_IN_STATE = ("auroc", "smece", "smece_bandwidth")
IN_STATE = tuple(k for k in SCALAR_KEYS if k not in NOT_IN_STATE)


# --------------------------------------------------------------------------- references


def ref_mix(z):
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & MASK
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def ref_weight(seed, replicate, key):
    """The module docstring's weight, in Python integers and exact rationals."""
    salt = ref_mix((ref_mix(seed) + (replicate + 1) * GOLDEN) & MASK)
    u = Fraction(ref_mix(key ^ salt) >> 11, 1 << 53)
    e, partial, count = Fraction(math.exp(-1)), Fraction(0), 0
    while True:  # the inverse CDF: the first j with u < F(j)
        partial += Fraction(1, math.factorial(count))
        if u < e * partial:
            return count
        count += 1


def rows(n, seed, *, decimals_share=0.3, extremes=0.02, infinite=0):
    """(confidences, correct, keys): full precision, some 2-decimal, some exact 0 and 1.

    Exact 0 and 1 go where their loss is finite (0 on wrong answers, 1 on right ones), except
    ``infinite`` wrong answers at 1.
    """
    rng = np.random.default_rng(seed)
    conf = rng.random(n)
    rounded = rng.random(n) < decimals_share
    conf[rounded] = np.round(conf[rounded], 2)
    correct = rng.random(n) < conf**1.3
    extreme = rng.random(n) < extremes
    conf[extreme] = correct[extreme].astype(float)
    conf[np.flatnonzero(~correct)[:infinite]] = 1.0
    keys = rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
    return conf, correct, keys


def state_of(conf, correct, keys, *, groups=None, n_groups=1, bins=10, samples=30, seed=7):
    return PoissonState.from_rows(
        conf[correct],
        conf[~correct],
        keys[correct],
        keys[~correct],
        bins=bins,
        samples=samples,
        seed=seed,
        right_groups=None if groups is None else groups[correct],
        wrong_groups=None if groups is None else groups[~correct],
        groups=n_groups,
    )


def brute_force(conf, correct, keys, seed, replicate, *, bins=10, smooth=False):
    """Scalars of the rows repeated by their weights (None for a replicate of no rows)."""
    w = np.array([ref_weight(seed, replicate, int(k)) for k in keys], dtype=np.int64)
    if not w.any():
        return None
    repeated = PredictionColumns.from_arrays(np.repeat(conf, w), np.repeat(correct, w))
    return calibration_estimates(repeated, bins=bins, smooth=smooth).scalars()


def close(a, b, rel=1e-12):
    if math.isnan(b) or math.isinf(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return math.isclose(a, b, rel_tol=rel, abs_tol=rel * 1e-3)


def assert_intervals_close(got, expected, keys=SCALAR_KEYS, rel=1e-12):
    for key in keys:
        for a, b in zip(got[key], expected[key], strict=True):
            assert close(a, b, rel), (key, got[key], expected[key])


# --------------------------------------------------------------------------- the weights


def test_reference_mix_is_splitmix64():
    # splitmix64 seeded with 0 outputs mix(k·γ) for k = 1, 2, 3
    outputs = [ref_mix(k * GOLDEN & MASK) for k in (1, 2, 3)]
    assert outputs == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_thresholds_are_the_poisson_cdf():
    assert len(POISSON_THRESHOLDS) == 17
    cdf = scipy_stats.poisson.cdf(np.arange(17), 1.0)
    np.testing.assert_allclose(np.array(POISSON_THRESHOLDS) / 2.0**53, cdf, rtol=0, atol=2e-16)
    assert POISSON_THRESHOLDS[-1] == (1 << 53) - 9


@pytest.mark.parametrize(
    ("seed", "replicate"), [(0, 0), (1, 0), (0, 1), (12345, 999), (MASK, 7), (2**63, 0)]
)
def test_weights_equal_the_reference_hash(seed, replicate):
    rng = np.random.default_rng(seed % 1000 + replicate)
    keys = np.concatenate(
        [
            np.array([0, 1, 2, MASK, 1 << 63], dtype=np.uint64),
            rng.integers(0, 1 << 64, 1500, dtype=np.uint64, endpoint=False),
        ]
    )
    expected = [ref_weight(seed, replicate, int(k)) for k in keys]
    got = replicate_weights(keys, seed, replicate)
    assert got.tolist() == expected
    assert max(expected) >= 4  # the table look-up of the tail is exercised too
    # a pure function of the key: any order, any subset
    perm = rng.permutation(keys.shape[0])
    np.testing.assert_array_equal(replicate_weights(keys[perm], seed, replicate), got[perm])
    np.testing.assert_array_equal(replicate_weights(keys[::7], seed, replicate), got[::7])


@pytest.mark.parametrize("structured", [True, False], ids=["ids", "hashes"])
def test_million_weights_are_poisson_one(structured):
    n = 1_000_000
    if structured:
        keys = np.arange(n, dtype=np.uint64)  # consecutive row ids
    else:
        keys = np.random.default_rng(5).integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
    w = replicate_weights(keys, 3, 0).astype(np.float64)
    # CLT: se(mean) = 1/sqrt(n); se(variance) = sqrt((μ4 − σ⁴)/n) = sqrt(3/n) for Poisson(1)
    assert abs(w.mean() - 1.0) < 5 / math.sqrt(n)
    assert abs(w.var() - 1.0) < 5 * math.sqrt(3 / n)
    observed = np.bincount(w.astype(np.int64), minlength=5)[:4]
    p = scipy_stats.poisson.pmf(np.arange(4), 1.0)
    z = (observed - n * p) / np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(z) < 5), z
    cells = np.append(observed, n - observed.sum())
    expected = n * np.append(p, 1 - p.sum())
    assert scipy_stats.chisquare(cells, expected).pvalue > 1e-6
    # another replicate is independent of this one: correlation within 5 standard errors
    other = replicate_weights(keys, 3, 1).astype(np.float64)
    assert abs(np.corrcoef(w, other)[0, 1]) < 5 / math.sqrt(n)


@pytest.mark.parametrize(
    ("keys", "seed", "message"),
    [
        (np.array([1, -2]), 0, "negative"),
        (np.array([0.5]), 0, "unsigned 64-bit integers"),
        (np.array([1], dtype=np.uint64), -1, "seed"),
        (np.array([1], dtype=np.uint64), 1 << 64, "seed"),
    ],
)
def test_bad_keys_and_seeds_are_refused(keys, seed, message):
    with pytest.raises(ValueError, match=message):
        replicate_weights(keys, seed, 0)


# --------------------------------------------------------------------------- one replicate


@pytest.mark.parametrize("bins", [1, 10, 13])
def test_replicates_equal_the_repeated_rows(bins):
    conf, correct, keys = rows(2000, 1, infinite=1)
    state = state_of(conf, correct, keys, bins=bins, samples=12)
    values = state.replicates()
    for r in (0, 1, 11):
        expected = brute_force(conf, correct, keys, 7, r, bins=bins)
        for i, key in enumerate(SCALAR_KEYS):
            if key in NOT_IN_STATE:
                assert math.isnan(values[r, i])
            else:
                assert close(values[r, i], expected[key]), (r, key, values[r, i], expected[key])
    # the wrong answer at 1 makes nll inf exactly in the replicates that weight it
    weights = np.array(
        [ref_weight(7, r, int(keys[(conf == 1.0) & ~correct][0])) for r in range(12)]
    )
    assert weights.min() == 0 < weights.max()
    nll = values[:, SCALAR_KEYS.index("nll")]
    np.testing.assert_array_equal(np.isinf(nll), weights > 0)


def test_blocks_change_no_weight_and_no_sum(monkeypatch):
    conf, correct, keys = rows(3000, 13, infinite=2)
    groups = np.random.default_rng(13).integers(0, 2, conf.shape[0])
    kw = {"groups": groups, "n_groups": 2, "samples": 5}
    one_block = state_of(conf, correct, keys, **kw)
    weights = replicate_weights(keys, 7, 4)
    intervals = single_pass(conf, correct, keys, samples=5, seed=7).intervals
    monkeypatch.setattr(poisson_module, "_BLOCK", 97)  # runs and infinite rows cross blocks
    np.testing.assert_array_equal(replicate_weights(keys, 7, 4), weights)
    many = state_of(conf, correct, keys, **kw)
    np.testing.assert_allclose(many.moments, one_block.moments, rtol=1e-13)
    np.testing.assert_allclose(many.loss, one_block.loss, rtol=1e-13)
    np.testing.assert_array_equal(many.infinite, one_block.infinite)
    assert single_pass(conf, correct, keys, samples=5, seed=7).intervals == intervals
    mine = groups == 1
    expected = brute_force(conf[mine], correct[mine], keys[mine], 7, 3)
    for key in IN_STATE:
        assert close(many.replicates(group=1)[3, SCALAR_KEYS.index(key)], expected[key]), key


def test_each_group_is_its_rows_alone():
    conf, correct, keys = rows(3000, 2)
    groups = np.random.default_rng(3).integers(0, 3, conf.shape[0])
    state = state_of(conf, correct, keys, groups=groups, n_groups=3, samples=4)
    for g in range(3):
        mine = groups == g
        values = state.replicates(group=g)
        expected = brute_force(conf[mine], correct[mine], keys[mine], 7, 2)
        for key in IN_STATE:
            assert close(values[2, SCALAR_KEYS.index(key)], expected[key]), (g, key)
    np.testing.assert_allclose(
        state.pooled().moments, state_of(conf, correct, keys, samples=4).moments, rtol=1e-13
    )


# --------------------------------------------------------------------------- merging


def split_states(conf, correct, keys, parts, rng, **kw):
    part = rng.integers(0, parts, conf.shape[0])
    return [
        state_of(conf[part == p], correct[part == p], keys[part == p], **kw) for p in range(parts)
    ]


def merge_all(states):
    return functools.reduce(lambda a, b: a.merged(b), states)


@pytest.mark.parametrize("parts", [1, 3, 8, 24])
def test_merged_parts_equal_the_whole(parts):
    conf, correct, keys = rows(20_000, 4, infinite=1)
    whole = state_of(conf, correct, keys)
    rng = np.random.default_rng(parts)
    states = split_states(conf, correct, keys, parts, rng)
    merged = merge_all(states)
    for name in ("moments", "loss", "infinite"):
        np.testing.assert_allclose(getattr(merged, name), getattr(whole, name), rtol=1e-12)
    assert_intervals_close(merged.intervals(0.9), whole.intervals(0.9))
    nll = merged.intervals(0.9)["nll"]
    assert math.isfinite(nll[0]) and nll[1] == math.inf  # the wrong answer at 1, weighted or not
    # any arrival order, merged in the caller's canonical order, gives the same bits
    reference = merged.to_arrays()
    for _ in range(20):
        arrived = [(p, states[p]) for p in rng.permutation(parts)]
        again = merge_all([s for _, s in sorted(arrived, key=lambda item: item[0])])
        for name, array in again.to_arrays().items():
            np.testing.assert_array_equal(array, reference[name])


def test_groups_are_remapped_into_a_common_numbering():
    conf, correct, keys = rows(6000, 5)
    rng = np.random.default_rng(6)
    names = np.array(["x", "y", "z"])[rng.integers(0, 3, conf.shape[0])]
    in_a = np.where(
        names == "x", True, np.where(names == "z", False, rng.random(conf.shape[0]) < 0.5)
    )
    # part a holds groups x, y (ids 0, 1); part b holds y, z (ids 0, 1)
    a_ids = np.where(names[in_a] == "x", 0, 1)
    b_ids = np.where(names[~in_a] == "y", 0, 1)
    a = state_of(conf[in_a], correct[in_a], keys[in_a], groups=a_ids, n_groups=2)
    b = state_of(conf[~in_a], correct[~in_a], keys[~in_a], groups=b_ids, n_groups=2)
    merged = a.merged(b, [0, 1], [1, 2], 3)
    assert merged.groups == 3
    for g, name in enumerate("xyz"):
        mine = names == name
        alone = state_of(conf[mine], correct[mine], keys[mine])
        np.testing.assert_allclose(merged.group(g).moments, alone.moments, rtol=1e-12)
        assert_intervals_close(merged.intervals(0.95, group=g), alone.intervals(0.95))
    whole = state_of(conf, correct, keys)
    assert_intervals_close(merged.intervals(0.95), whole.intervals(0.95))
    # several groups mapped onto one add up: all onto 0 is the pooled state
    zero = PoissonState.empty(bins=10, samples=30, seed=7)
    np.testing.assert_allclose(
        merged.merged(zero, [0, 0, 0], [0], 1).moments, merged.pooled().moments, rtol=1e-13
    )


def test_merge_refuses_other_settings_and_serialises_compactly():
    conf, correct, keys = rows(500, 8)
    state = state_of(conf, correct, keys, samples=20)
    for other in (
        state_of(conf, correct, keys, samples=21),
        state_of(conf, correct, keys, samples=20, seed=8),
        state_of(conf, correct, keys, samples=20, bins=11),
    ):
        with pytest.raises(ValueError, match="cannot merge states of different"):
            state.merged(other)
    with pytest.raises(ValueError, match="outside"):
        state.merged(state, [0], [3], 2)
    # raw little-endian bytes round-trip; at most 2 KB per replicate and group at 10 bins
    arrays = state.to_arrays()
    raw = {name: np.frombuffer(a.tobytes(), dtype=a.dtype) for name, a in arrays.items()}
    back = PoissonState.from_arrays(raw)
    for name, array in back.to_arrays().items():
        np.testing.assert_array_equal(array, arrays[name])
    sums = sum(a.nbytes for name, a in arrays.items() if name != "meta")
    assert sums / (state.samples * state.groups) == 496 <= 2048
    arrays["meta"] = np.array([2, 10, 20, 7, 1], dtype="<u8")
    with pytest.raises(ValueError, match="weight scheme 2"):
        PoissonState.from_arrays(arrays)


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.floats(0.0, 1.0),
            st.booleans(),
            st.integers(0, MASK),
            st.booleans(),
        ),
        max_size=25,
    ),
    bins=st.integers(1, 6),
)
def test_merge_of_any_split_is_the_whole(data, bins):
    conf = np.array([d[0] for d in data], dtype=np.float64)
    correct = np.array([d[1] for d in data], dtype=bool)
    keys = np.array([d[2] for d in data], dtype=np.uint64)
    left = np.array([d[3] for d in data], dtype=bool)
    kw = {"bins": bins, "samples": 6}
    whole = state_of(conf, correct, keys, **kw)
    a = state_of(conf[left], correct[left], keys[left], **kw)
    b = state_of(conf[~left], correct[~left], keys[~left], **kw)
    merged = a.merged(b)
    np.testing.assert_allclose(merged.moments, whole.moments, rtol=1e-12, atol=1e-300)
    assert_intervals_close(merged.intervals(0.8), whole.intervals(0.8))


# --------------------------------------------------------------------------- the single pass


def single_pass(conf, correct, row_keys, **kw):
    columns = PredictionColumns.from_arrays(conf, correct)
    return poisson_intervals(columns, row_keys[correct], row_keys[~correct], **kw)


def quantiles(values, level):
    values = np.array([v for v in values if not math.isnan(v)])
    if values.size == 0:
        return (math.nan, math.nan)
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def test_single_pass_equals_state_and_workers_are_irrelevant():
    conf, correct, keys = rows(5000, 9, infinite=1)
    one = single_pass(conf, correct, keys, samples=8, seed=7, level=0.9)
    two = single_pass(conf, correct, keys, samples=8, seed=7, level=0.9, workers=2)
    assert one == two
    state = state_of(conf, correct, keys, samples=8)
    assert_intervals_close(one.intervals, state.intervals(0.9), IN_STATE)
    assert all(math.isfinite(v) for k in NOT_IN_STATE for v in one.intervals[k])


def test_single_pass_every_scalar_against_brute_force():
    conf, correct, keys = rows(300, 10)
    samples, level = 25, 0.9
    got = single_pass(conf, correct, keys, samples=samples, seed=3, level=level, bins=8)
    per_replicate = [
        brute_force(conf, correct, keys, 3, r, bins=8, smooth=True) for r in range(samples)
    ]
    for key in SCALAR_KEYS:
        expected = quantiles([s[key] for s in per_replicate], level)
        rel = 1e-9 if key.startswith("smece") else 1e-12  # as test_bootstrap's smooth ECE
        assert_intervals_close(got.intervals, {key: expected}, (key,), rel)
    # scikit-learn's weighted AUROC, replicate by replicate
    aucs = []
    for r in range(samples):
        w = replicate_weights(keys, 3, r)
        aucs.append(roc_auc_score(correct, conf, sample_weight=w))
    assert_intervals_close(got.intervals, {"auroc": quantiles(aucs, level)}, ("auroc",))


def test_single_pass_edge_cases():
    empty = np.zeros(0)
    none = single_pass(empty, empty.astype(bool), empty.astype(np.uint64), samples=5)
    assert all(math.isnan(v) for pair in none.intervals.values() for v in pair)
    state = state_of(empty, empty.astype(bool), empty.astype(np.uint64), samples=5)
    assert all(math.isnan(v) for pair in state.intervals(0.95).values() for v in pair)
    # one class only: no AUROC, the rest defined
    conf, _, keys = rows(400, 11)
    right = np.ones(400, dtype=bool)
    only = single_pass(conf, right, keys, samples=10, seed=7)
    assert all(math.isnan(v) for v in only.intervals["auroc"])
    assert_intervals_close(
        only.intervals, state_of(conf, right, keys, samples=10).intervals(0.95), IN_STATE
    )
    # two rows: some replicates weight neither and are left out
    conf, correct = np.array([0.3, 0.8]), np.array([False, True])
    keys = np.array([11, 12], dtype=np.uint64)
    got = single_pass(conf, correct, keys, samples=40, seed=7, level=0.5, keys=["ece", "nll"])
    assert list(got.intervals) == ["ece", "nll"]
    state = state_of(conf, correct, keys, samples=40).intervals(0.5)
    values = [brute_force(conf, correct, keys, 7, r) for r in range(40)]
    assert any(v is None for v in values)
    for key in ("ece", "nll"):
        expected = quantiles([v[key] for v in values if v is not None], 0.5)
        assert_intervals_close(got.intervals, {key: expected}, (key,))
        assert_intervals_close(state, {key: expected}, (key,))
