"""The cluster bootstrap, cross-fitting and McNemar's test for rows that answer one question (an
inspect-ai run's epochs): drawn, held out and tested by question. Checked against a plain loop
that draws the questions as the docstrings say and computes each replicate's figures on the rows
repeated by their counts (calibration_estimates on repeated rows is itself checked against
loops and scikit-learn in test_estimators.py), against the row bootstrap and row folds of one
row per question when a question's rows are copies, and against Durkalski et al.'s statistic
written with exact fractions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibcli.metrics.bootstrap import bootstrap_intervals, replicate_generator
from calibcli.metrics.core import PredictionColumns, bin_edges
from calibcli.metrics.estimators import calibration_estimates
from calibcli.metrics.paired import mcnemar_clustered, paired_bootstrap
from calibcli.metrics.recalibration import cross_fit

KEYS = ("accuracy", "mean_confidence", "ece", "brier", "mce", "rmsce", "ece_1bin", "nll")


def epochs(questions, k, seed):
    """``questions`` questions answered ``k`` times each: (confidence, correct, label), the
    label a 64-bit hash-like number per question."""
    rng = np.random.default_rng(seed)
    skill = rng.random(questions)  # a question's difficulty is shared by its epochs
    labels = rng.integers(0, 2**63, questions, dtype=np.uint64)
    conf = np.round(np.clip(skill[:, None] + rng.normal(0, 0.1, (questions, k)), 0.01, 0.99), 3)
    correct = rng.random((questions, k)) < skill[:, None]
    return conf.ravel(), correct.ravel(), np.repeat(labels, k)


def reference_replicates(conf, correct, labels, samples, seed, edges):
    """Each replicate's figures as the docstring defines the draw: the distinct labels in
    increasing order, C of them drawn with replacement by replicate r's generator."""
    distinct = sorted(set(labels.tolist()))
    number = {label: i for i, label in enumerate(distinct)}
    of_row = np.array([number[label] for label in labels.tolist()])
    out = []
    for r in range(samples):
        drawn = replicate_generator(seed, r).integers(0, len(distinct), size=len(distinct))
        counts = np.zeros(len(distinct), np.int64)
        for q in drawn:
            counts[q] += 1
        w = counts[of_row]
        rows = PredictionColumns.from_arrays(np.repeat(conf, w), np.repeat(correct, w))
        out.append(calibration_estimates(rows, edges=edges).scalars())
    return out


def percentile(values, level):
    return tuple(np.quantile(np.asarray(values), [(1 - level) / 2, (1 + level) / 2]))


def test_questions_are_drawn_whole_as_the_loop_draws_them():
    conf, correct, labels = epochs(60, 3, seed=1)
    columns = PredictionColumns.from_arrays(conf, correct)
    edges = calibration_estimates(columns).edges
    got = bootstrap_intervals(
        columns,
        samples=60,
        seed=11,
        keys=KEYS,
        clusters=(labels[correct], labels[~correct]),
    ).intervals
    reference = reference_replicates(conf, correct, labels, 60, 11, edges)
    for key in KEYS:
        values = [rep[key] for rep in reference]
        lo, hi = percentile(values, 0.95)
        assert got[key][0] == pytest.approx(lo, rel=1e-9, abs=1e-12), key
        assert got[key][1] == pytest.approx(hi, rel=1e-9, abs=1e-12), key


def test_distinct_labels_give_the_row_bootstrap_exactly():
    conf, correct, _ = epochs(300, 1, seed=2)
    columns = PredictionColumns.from_arrays(conf, correct)
    labels = np.arange(conf.shape[0], dtype=np.uint64)
    plain = bootstrap_intervals(columns, samples=40, seed=3)
    labelled = bootstrap_intervals(
        columns, samples=40, seed=3, clusters=(labels[correct], labels[~correct])
    )
    assert labelled.intervals == plain.intervals
    base, new = (conf, correct), (np.clip(conf * 0.9, 0, 1), correct)
    assert paired_bootstrap(base, new, samples=30, seed=4, clusters=labels) == paired_bootstrap(
        base, new, samples=30, seed=4
    )


def test_copies_of_each_question_give_the_bootstrap_of_one_row_each():
    # k identical rows per question, drawn whole: every replicate weighs the questions as the
    # row bootstrap of one row per question does (same generator, C = N questions)
    conf, correct, labels = epochs(200, 1, seed=5)
    other = np.round(np.clip(conf * 0.8 + 0.1, 0, 1), 3)
    order = np.argsort(labels)  # labels number the questions in increasing order
    conf, correct, other, labels = conf[order], correct[order], other[order], labels[order]
    once = paired_bootstrap((conf, correct), (other, correct), samples=50, seed=6, keys=KEYS)
    k = 4
    repeated = paired_bootstrap(
        (np.repeat(conf, k), np.repeat(correct, k)),
        (np.repeat(other, k), np.repeat(correct, k)),
        samples=50,
        seed=6,
        keys=KEYS,
        clusters=np.repeat(labels, k),
    )
    for key in KEYS:
        for a, b in zip(repeated.intervals[key], once.intervals[key], strict=True):
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12), key
    # drawn one by one, the copies look like 4x the questions: the interval is about half as wide
    narrow = paired_bootstrap(
        (np.repeat(conf, k), np.repeat(correct, k)),
        (np.repeat(other, k), np.repeat(correct, k)),
        samples=50,
        seed=6,
        keys=("brier",),
    ).intervals["brier"]
    wide = once.intervals["brier"]
    assert (narrow[1] - narrow[0]) < 0.7 * (wide[1] - wide[0])


def test_paired_questions_are_drawn_whole_as_the_loop_draws_them():
    conf, correct, labels = epochs(50, 2, seed=7)
    new_conf = np.round(np.clip(conf + 0.05, 0.01, 0.99), 3)
    got = paired_bootstrap(
        (conf, correct), (new_conf, correct), samples=40, seed=8, keys=KEYS, clusters=labels
    )
    edges = bin_edges(10)  # each side's uniform edges
    base = reference_replicates(conf, correct, labels, 40, 8, edges)
    new = reference_replicates(new_conf, correct, labels, 40, 8, edges)
    for key in KEYS:
        diffs = [n[key] - b[key] for b, n in zip(base, new, strict=True)]
        diffs = [d for d in diffs if not math.isnan(d)]
        lo, hi = percentile(diffs, 0.95)
        assert got.intervals[key][0] == pytest.approx(lo, rel=1e-9, abs=1e-12), key
        assert got.intervals[key][1] == pytest.approx(hi, rel=1e-9, abs=1e-12), key


def test_workers_do_not_change_the_clustered_intervals():
    conf, correct, labels = epochs(80, 3, seed=9)
    columns = PredictionColumns.from_arrays(conf, correct)
    clusters = (labels[correct], labels[~correct])
    one = bootstrap_intervals(columns, samples=24, seed=1, clusters=clusters, workers=1)
    two = bootstrap_intervals(columns, samples=24, seed=1, clusters=clusters, workers=2)
    assert one.intervals == two.intervals


@pytest.mark.parametrize(
    ("clusters", "message"),
    [
        ((np.zeros(3, np.uint64), np.zeros(1, np.uint64)), "right clusters hold 3 labels, not 2"),
        ((np.zeros(2), np.zeros(2)), "must be integers"),
    ],
)
def test_labels_are_checked(clusters, message):
    columns = PredictionColumns.from_arrays(np.array([0.2, 0.7, 0.9, 0.4]), [1, 1, 0, 0])
    with pytest.raises(ValueError, match=message):
        bootstrap_intervals(columns, samples=5, clusters=clusters)


# --------------------------------------------------------------------------- cross-fitting


def test_cross_fit_holds_a_question_s_rows_out_together():
    # three copies of each question: held out by question, each copy is mapped as the single
    # row is by the folds of one row per question (labels 0..N-1 number the questions in row
    # order, so the questions' permutation is the rows'); held out by row, a copy of every
    # held-out answer sits in training and the out-of-fold ECE is flattered
    rng = np.random.default_rng(0)
    conf = rng.random(400)
    correct = rng.random(400) < conf**2
    once = cross_fit(conf, correct, method="histogram", folds=5, seed=0)
    k = 3
    labels = np.repeat(np.arange(400), k)
    copies = cross_fit(
        np.repeat(conf, k), np.repeat(correct, k), method="histogram", seed=0, clusters=labels
    )
    np.testing.assert_array_equal(copies, np.repeat(once, k))
    leaky = cross_fit(np.repeat(conf, k), np.repeat(correct, k), method="histogram", seed=0)

    def ece(values, y):
        return calibration_estimates(PredictionColumns.from_arrays(values, y)).ece

    assert ece(leaky, np.repeat(correct, k)) < 0.5 * ece(once, correct)


def test_cross_fit_with_distinct_labels_is_the_row_folds():
    conf, correct, _ = epochs(200, 1, seed=12)
    labels = np.arange(conf.shape[0])[::-1].copy()
    plain = cross_fit(conf, correct, method="platt", folds=4, seed=2)
    labelled = cross_fit(conf, correct, method="platt", folds=4, seed=2, clusters=labels)
    np.testing.assert_array_equal(plain, labelled)


def test_cross_fit_needs_as_many_questions_as_folds():
    conf, correct, labels = epochs(3, 4, seed=13)
    with pytest.raises(ValueError, match=r"folds = 5 exceeds the number of questions \(3\)"):
        cross_fit(conf, correct, method="isotonic", folds=5, clusters=labels)


# --------------------------------------------------------------------------- McNemar


def durkalski(base, new, labels):
    """Durkalski et al. (2003), written from the paper's definition with exact fractions:
    (Σ_k (b_k − c_k)/n_k)² / Σ_k ((b_k − c_k)/n_k)² over the clusters k."""
    from fractions import Fraction

    per = {}
    for b, n, label in zip(base, new, labels, strict=True):
        rows, way = per.get(label, (0, 0))
        per[label] = (rows + 1, way + (1 if b and not n else -1 if n and not b else 0))
    shares = [Fraction(way, rows) for rows, way in per.values()]
    spread = sum(s * s for s in shares)
    return (sum(shares) ** 2 / spread) if spread else Fraction(0)


def test_clustered_mcnemar_follows_its_definition():
    rng = np.random.default_rng(21)
    labels = rng.integers(0, 40, 200)  # 40 clusters of unequal sizes
    base = rng.random(200) < 0.6
    new = np.where(rng.random(200) < 0.3, ~base, base)
    got = mcnemar_clustered(base, new, labels)
    expected = durkalski(base.tolist(), new.tolist(), labels.tolist())
    assert got.statistic == pytest.approx(float(expected), rel=1e-12)
    assert got.p_value == pytest.approx(math.erfc(math.sqrt(float(expected) / 2)), rel=1e-12)
    assert (got.b, got.c, got.clusters) == (
        int(np.sum(base & ~new)),
        int(np.sum(~base & new)),
        len(set(labels.tolist())),
    )


def test_one_row_per_cluster_is_mcnemar_s_chi_square_and_copies_change_nothing():
    base = np.array([1, 1, 1, 0, 0, 1, 0, 1, 1, 0], bool)
    new = np.array([0, 0, 1, 1, 0, 0, 1, 1, 0, 0], bool)
    b, c = 4, 2  # right→wrong, wrong→right
    once = mcnemar_clustered(base, new, np.arange(10))
    assert once.statistic == pytest.approx((b - c) ** 2 / (b + c))
    copies = mcnemar_clustered(np.repeat(base, 3), np.repeat(new, 3), np.repeat(np.arange(10), 3))
    assert (copies.b, copies.c, copies.clusters) == (12, 6, 10)
    assert copies.statistic == pytest.approx(once.statistic, rel=1e-12)
    assert copies.p_value == pytest.approx(once.p_value, rel=1e-12)


def test_clustered_mcnemar_without_a_leaning_cluster_is_p_one():
    same = mcnemar_clustered([1, 0, 1], [1, 0, 1], [5, 5, 6])
    assert (same.statistic, same.p_value, same.discordant) == (0.0, 1.0, 0)
