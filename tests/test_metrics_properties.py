"""Property tests (hypothesis) of calibcli.metrics.core: ranges, invariances, shard merging and the
exact Brier decomposition, checked on random data against the plain-Python references of
tests/reference.py."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import reference
from hypothesis import given
from hypothesis import strategies as st

from calibcli.metrics.core import (
    BinStats,
    CalibrationReport,
    PerplexityResult,
    PredictionColumns,
    StatsAccumulator,
    bin_edges,
    bin_index,
    brier_decomposition,
    brier_score,
    expected_calibration_error,
    perplexity,
    reliability_diagram,
)

# Bin edges of the usual bin counts and the doubles right next to them: where binning bugs live.
EDGES = sorted({k / m for m in (5, 10, 15, 50, 100) for k in range(m + 1)})
NEAR_EDGES = sorted(
    {float(np.nextafter(e, 0.0)) for e in EDGES if e > 0}
    | {float(np.nextafter(e, 1.0)) for e in EDGES if e < 1}
)
confidence = st.one_of(
    st.floats(0.0, 1.0),
    st.sampled_from(EDGES),
    st.sampled_from(NEAR_EDGES),
)
rows = st.lists(st.tuples(confidence, st.booleans()), max_size=60)
nonempty_rows = st.lists(st.tuples(confidence, st.booleans()), min_size=1, max_size=60)
bin_counts = st.one_of(st.integers(1, 20), st.sampled_from([50, 100]))

STAT_FIELDS = ("sum_conf", "sum_conf_sq", "sum_conf_correct", "sum_sq_error")


def columns_of(data):
    confidences = np.array([c for c, _ in data], dtype=np.float64)
    correct = np.array([y for _, y in data], dtype=bool)
    return confidences, correct


def assert_stats_match(got: BinStats, want: BinStats) -> None:
    """Counts exactly; float sums to 1e-12 relative / 1e-15 absolute."""
    assert got.edges.tolist() == want.edges.tolist()
    assert got.count.tolist() == want.count.tolist()
    assert got.sum_correct.tolist() == want.sum_correct.tolist()
    for name in STAT_FIELDS:
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-12, atol=1e-15)


def decomposition_residual(d: dict) -> float:
    return (
        d["reliability"]
        - d["resolution"]
        + d["uncertainty"]
        + d["within_bin_variance"]
        - d["within_bin_covariance"]
        - d["brier"]
    )


@given(rows, bin_counts)
def test_ece_is_in_unit_interval_and_matches_reference(data, bins):
    confidences, correct = columns_of(data)
    ece, populated = expected_calibration_error(confidences, correct, bins=bins)
    assert 0.0 <= ece <= 1.0
    want_ece, want_populated = reference.ece(confidences, correct, bins)
    assert abs(ece - want_ece) <= 1e-12
    assert populated == want_populated
    assert populated <= min(bins, len(data))


@given(rows, bin_counts)
def test_reliability_matches_reference_binning(data, bins):
    confidences, correct = columns_of(data)
    mean_confidence, accuracy, count = reliability_diagram(confidences, correct, bins=bins)
    assert all(
        isinstance(a, np.ndarray) and a.shape == (bins,) for a in (mean_confidence, accuracy)
    )
    want_mean, want_accuracy, want_count = reference.reliability(confidences, correct, bins)
    assert count.tolist() == want_count
    assert int(count.sum()) == len(data)
    np.testing.assert_allclose(mean_confidence, want_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(accuracy, want_accuracy, rtol=0, atol=1e-12)
    expected_bins = [reference.bin_index(float(c), bins) for c in confidences]
    assert bin_index(confidences, bin_edges(bins)).tolist() == expected_bins


@given(rows, bin_counts, st.randoms(use_true_random=False))
def test_permutation_invariance(data, bins, random):
    confidences, correct = columns_of(data)
    order = list(range(len(data)))
    random.shuffle(order)
    shuffled_c, shuffled_y = confidences[order], correct[order]
    ece, populated = expected_calibration_error(confidences, correct, bins=bins)
    ece_s, populated_s = expected_calibration_error(shuffled_c, shuffled_y, bins=bins)
    assert populated == populated_s
    assert abs(ece - ece_s) <= 1e-12
    assert abs(brier_score(confidences, correct) - brier_score(shuffled_c, shuffled_y)) <= 1e-12
    _, _, count = reliability_diagram(confidences, correct, bins=bins)
    _, _, count_s = reliability_diagram(shuffled_c, shuffled_y, bins=bins)
    assert count.tolist() == count_s.tolist()
    d, d_s = (
        brier_decomposition(confidences, correct, bins=bins),
        brier_decomposition(shuffled_c, shuffled_y, bins=bins),
    )
    for key in d:
        assert abs(d[key] - d_s[key]) <= 1e-12, key


@given(st.lists(rows, min_size=1, max_size=5), bin_counts)
def test_shard_statistics_merge_to_the_pooled_result(shards, bins):
    pooled_c, pooled_y = columns_of([row for shard in shards for row in shard])
    pooled = BinStats.from_arrays(pooled_c, pooled_y, bins=bins)
    parts = [BinStats.from_arrays(*columns_of(shard), bins=bins) for shard in shards]
    merged = parts[0]
    added = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
        added = added + part
    accumulator = StatsAccumulator(bins=bins)
    for part in parts:
        accumulator.add(part)
    for combined in (merged, added, accumulator.result()):
        assert_stats_match(combined, pooled)
        assert combined.n == pooled.n == len(pooled_c)
        assert abs(combined.ece() - pooled.ece()) <= 1e-12
        assert abs(combined.brier() - pooled.brier()) <= 1e-12
    # The accumulator does not depend on the order the shards arrive in.
    backwards = StatsAccumulator(bins=bins)
    for part in reversed(parts):
        backwards.add(part)
    assert_stats_match(backwards.result(), pooled)


@given(rows, bin_counts)
def test_decomposition_identity_and_reference(data, bins):
    confidences, correct = columns_of(data)
    d = brier_decomposition(confidences, correct, bins=bins)
    assert abs(decomposition_residual(d)) <= 1e-12
    want = reference.decomposition_exact(confidences, correct, bins)
    for key, value in want.items():
        assert abs(d[key] - float(value)) <= 1e-12, key
    obar = Fraction(int(correct.sum()), len(data)) if len(data) else Fraction(0)
    assert abs(d["uncertainty"] - float(obar * (1 - obar))) <= 1e-12
    assert abs(d["brier"] - brier_score(confidences, correct)) <= 1e-12
    assert d["reliability"] >= 0.0 and d["resolution"] >= 0.0
    assert d["within_bin_variance"] >= -1e-15


@given(nonempty_rows)
def test_one_bin_ece_is_the_overall_gap(data):
    confidences, correct = columns_of(data)
    ece, populated = expected_calibration_error(confidences, correct, bins=1)
    gap = abs(math.fsum(confidences) / len(data) - int(correct.sum()) / len(data))
    assert abs(ece - gap) <= 1e-12
    assert populated == 1
    report = CalibrationReport.from_predictions(confidences, correct, bins=1)
    assert abs(abs(report.mean_confidence - report.accuracy) - gap) <= 1e-12


@given(
    st.lists(st.tuples(confidence, st.booleans(), st.integers(0, 4)), max_size=40),
    bin_counts,
)
def test_integer_weights_equal_repeated_rows(data, bins):
    confidences = np.array([c for c, _, _ in data], dtype=np.float64)
    correct = np.array([y for _, y, _ in data], dtype=bool)
    weights = np.array([w for _, _, w in data], dtype=np.int64)
    weighted = BinStats.from_arrays(confidences, correct, bins=bins, weights=weights)
    repeated = BinStats.from_arrays(
        np.repeat(confidences, weights), np.repeat(correct, weights), bins=bins
    )
    assert_stats_match(weighted, repeated)
    assert weighted.n == repeated.n == int(weights.sum())
    assert abs(weighted.ece() - repeated.ece()) <= 1e-12
    assert abs(weighted.brier() - repeated.brier()) <= 1e-12


@given(st.lists(rows, min_size=1, max_size=4))
def test_prediction_columns_round_trip(shards):
    pooled_c, pooled_y = columns_of([row for shard in shards for row in shard])
    columns = PredictionColumns.from_arrays(pooled_c, pooled_y)
    assert columns.n == len(pooled_c) and type(columns.n) is int
    assert columns.conf_correct.dtype == np.float64 and columns.conf_wrong.dtype == np.float64
    assert sorted(columns.conf_correct.tolist()) == sorted(pooled_c[pooled_y].tolist())
    assert sorted(columns.conf_wrong.tolist()) == sorted(pooled_c[~pooled_y].tolist())
    confidences, correct = columns.confidences(), columns.correct()
    assert confidences.dtype == np.float64 and correct.dtype == bool
    n_correct = int(pooled_y.sum())
    assert correct.tolist() == [True] * n_correct + [False] * (len(pooled_c) - n_correct)
    pairs = sorted(zip(confidences.tolist(), correct.tolist(), strict=True))
    assert pairs == sorted(zip(pooled_c.tolist(), pooled_y.tolist(), strict=True))
    parts = [PredictionColumns.from_arrays(*columns_of(shard)) for shard in shards]
    joined = PredictionColumns.concat(parts)
    assert joined.n == columns.n
    joined_pairs = sorted(
        zip(joined.confidences().tolist(), joined.correct().tolist(), strict=True)
    )
    assert joined_pairs == pairs


@given(
    st.lists(
        st.tuples(st.floats(0.0, 50.0), st.integers(1, 1000)),
        max_size=30,
    )
)
def test_perplexity_is_token_weighted(sequences):
    nll = [x for x, _ in sequences]
    tokens = [t for _, t in sequences]
    result = PerplexityResult.from_token_nll(nll, tokens)
    assert result.sequences == len(sequences)
    assert result.total_tokens == sum(tokens)
    if not sequences:
        assert math.isnan(result.perplexity)
        return
    mean = math.fsum(nll) / sum(tokens)
    assert abs(result.mean_nll - mean) <= 1e-12 * max(1.0, mean)
    assert math.isclose(result.perplexity, math.exp(mean), rel_tol=1e-12)
    assert math.isclose(perplexity(nll, tokens), math.exp(mean), rel_tol=1e-12)
    assert result.perplexity >= 1.0
    assert abs(result.bits_per_token - mean / math.log(2.0)) <= 1e-12 * max(1.0, mean)
