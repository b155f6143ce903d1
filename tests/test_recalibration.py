"""Recalibration maps against independent references.

References: scikit-learn (``_SigmoidCalibration`` on the logits for platt, ``IsotonicRegression``
for isotonic, unpenalised ``LogisticRegression`` for beta), scipy's bounded scalar minimiser on
the NLL written out with ``np.logaddexp`` / ``scipy.special.logsumexp`` (temperature, multiclass
temperature), plain-Python loops with fractions.Fraction (the histogram map here, ECE and bins
from tests/reference.py), and refitting each cross-fitting fold by hand.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import reference
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from sklearn.calibration import _SigmoidCalibration
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from calibcli.metrics.calibrators import BINARY_CALIBRATORS
from calibcli.metrics.core import expected_calibration_error
from calibcli.metrics.methods import RECALIBRATION_METHODS, names
from calibcli.metrics.recalibration import (
    EPS,
    METHODS,
    RECALIBRATORS,
    T_MAX,
    T_MIN,
    BetaCalibrator,
    HistogramCalibrator,
    IsotonicCalibrator,
    MulticlassTemperatureCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    cross_fit,
    cross_fit_multiclass_temperature,
    fit,
    fit_multiclass_temperature,
    fold_assignment,
    from_dict,
    pack_choices,
)

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
TOL = 1e-6


# --------------------------------------------------------------------------- references


def ref_logit(c):
    c = np.clip(np.asarray(c, dtype=np.float64), EPS, 1 - EPS)
    return np.log(c / (1 - c))


def ref_temperature(c, y):
    """argmin over T of the mean binary NLL of σ(z/T), by scipy on log T."""
    z = ref_logit(c)
    s = np.where(y, 1.0, -1.0)

    def nll(log_t):
        return float(np.mean(np.logaddexp(0.0, -s * z / math.exp(log_t))))

    res = minimize_scalar(
        nll,
        bounds=(math.log(T_MIN), math.log(T_MAX)),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return math.exp(res.x)


def ref_logistic(features, y):
    lr = LogisticRegression(C=np.inf, tol=1e-14, max_iter=100_000)
    lr.fit(features, y)
    return lr.coef_[0], lr.intercept_[0]


def ref_beta_features(c):
    c = np.clip(np.asarray(c, dtype=np.float64), EPS, 1 - EPS)
    return np.column_stack([np.log(c), -np.log(1 - c)])


def sample(seed, n=400, power=1.5, ties=None):
    """Confidences from Beta(5, 2); an answer is right with probability c**power."""
    rng = np.random.default_rng(seed)
    c = rng.beta(5, 2, n)
    if ties is not None:
        c = np.round(c, ties)
    return c, rng.random(n) < c**power


def read_jsonl(path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return (
        np.array([r["confidence"] for r in rows]),
        np.array([r["correct"] for r in rows], dtype=bool),
    )


# --------------------------------------------------------------------------- each method


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_temperature_matches_scipy(seed):
    c, y = sample(seed, power=2.5)
    cal = fit(c, y, method="temperature")
    assert isinstance(cal, TemperatureCalibrator)
    t = ref_temperature(c, y)
    assert cal.temperature == pytest.approx(t, rel=TOL, abs=0)
    grid = np.linspace(0, 1, 101)
    expected = 1 / (1 + np.exp(-ref_logit(grid) / t))
    np.testing.assert_allclose(cal.apply(grid), expected, atol=TOL, rtol=0)


def test_temperature_bounds():
    c = np.array([0.9, 0.8, 0.2, 0.1])
    # confidences that separate the classes perfectly: T shrinks to its lower bound
    assert fit(c, [1, 1, 0, 0], method="temperature").temperature == T_MIN
    # confidences ranked backwards: the best T > 0 flattens everything, its upper bound
    assert fit(c, [0, 0, 1, 1], method="temperature").temperature == T_MAX


@pytest.mark.parametrize(("seed", "ties"), [(0, None), (1, None), (2, 2), (3, None)])
def test_platt_matches_sklearn_sigmoid_calibration(seed, ties):
    c, y = sample(seed, power=0.7 + seed, ties=ties)
    z = ref_logit(c)
    ref = _SigmoidCalibration().fit(z, y)
    cal = fit(c, y, method="platt")
    assert isinstance(cal, PlattCalibrator)
    assert cal.a == pytest.approx(-ref.a_, abs=TOL)
    assert cal.b == pytest.approx(-ref.b_, abs=TOL)
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(cal.apply(grid), ref.predict(ref_logit(grid)), atol=TOL)


@pytest.mark.parametrize(("seed", "ties"), [(0, None), (1, 2), (2, 1), (3, 3)])
def test_isotonic_matches_sklearn(seed, ties):
    c, y = sample(seed, n=300, power=1 + seed / 2, ties=ties)
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(c, y)
    cal = fit(c, y, method="isotonic")
    assert isinstance(cal, IsotonicCalibrator)
    np.testing.assert_array_equal(cal.x, ref.X_thresholds_)
    np.testing.assert_allclose(cal.y, ref.y_thresholds_, atol=TOL)
    grid = np.concatenate([np.linspace(0, 1, 1001), c])
    np.testing.assert_allclose(cal.apply(grid), ref.predict(grid), atol=TOL)


def test_isotonic_one_class_and_one_point():
    cal = fit([0.2, 0.7, 0.7], [True, True, True], method="isotonic")
    assert cal.to_dict() == {"x": [0.2, 0.7], "y": [1.0, 1.0]}
    one = fit([0.4, 0.4], [True, False], method="isotonic")
    assert one.to_dict() == {"x": [0.4], "y": [0.5]}
    np.testing.assert_array_equal(one.apply([0.0, 0.4, 1.0]), [0.5, 0.5, 0.5])


@pytest.mark.parametrize("bins", [1, 3, 10, 15])
def test_histogram_matches_plain_loop(bins):
    c, y = sample(4, n=200)
    c = np.concatenate([c, [0.0, 0.3, 1.0, 0.29]])
    y = np.concatenate([y, [False, True, True, False]])
    cal = fit(c, y, method="histogram", bins=bins)
    assert isinstance(cal, HistogramCalibrator)
    groups = [[] for _ in range(bins)]
    for ci, yi in zip(c.tolist(), y.tolist(), strict=True):
        groups[reference.bin_index(ci, bins)].append(int(yi))
    accuracy = [float(Fraction(sum(g), len(g))) if g else None for g in groups]
    assert cal.to_dict() == {"accuracy": accuracy}
    grid = [*np.linspace(0, 1, 301).tolist(), 0.3, 0.29, 0.7]
    in_bin = [accuracy[reference.bin_index(g, bins)] for g in grid]
    expected = [g if a is None else a for g, a in zip(grid, in_bin, strict=True)]
    np.testing.assert_array_equal(cal.apply(grid), expected)


def test_histogram_empty_bins_keep_identity():
    cal = fit([0.05, 0.05, 0.95], [True, False, True], method="histogram", bins=10)
    assert cal.to_dict()["accuracy"] == [0.5] + [None] * 8 + [1.0]
    np.testing.assert_array_equal(cal.apply([0.0, 0.35, 0.5, 0.9, 1.0]), [0.5, 0.35, 0.5, 1, 1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_matches_unpenalised_logistic_regression(seed):
    c, y = sample(seed, n=500, power=1.2 + seed / 2)
    coef, intercept = ref_logistic(ref_beta_features(c), y)
    assert coef[0] > 0 and coef[1] > 0  # the case without refits
    cal = fit(c, y, method="beta")
    assert isinstance(cal, BetaCalibrator)
    assert [cal.a, cal.b, cal.intercept] == pytest.approx([*coef, intercept], abs=TOL)
    grid = np.linspace(0, 1, 101)
    eta = ref_beta_features(grid) @ coef + intercept
    np.testing.assert_allclose(cal.apply(grid), 1 / (1 + np.exp(-eta)), atol=TOL)


@pytest.mark.parametrize(("a", "b", "drop"), [(-1.0, 2.0, 0), (2.0, -1.0, 1)])
def test_beta_refits_without_a_negative_slope(a, b, drop):
    rng = np.random.default_rng(7)
    c = rng.uniform(0.02, 0.98, 4000)
    x = ref_beta_features(c)
    y = rng.random(c.shape[0]) < 1 / (1 + np.exp(-(x @ [a, b])))
    full, _ = ref_logistic(x, y)
    assert full[drop] < 0  # the full fit has the offending slope
    keep = 1 - drop
    coef, intercept = ref_logistic(x[:, [keep]], y)
    assert coef[0] > 0
    cal = fit(c, y, method="beta")
    slopes = [cal.a, cal.b]
    assert slopes[drop] == 0.0
    assert slopes[keep] == pytest.approx(coef[0], abs=TOL)
    assert cal.intercept == pytest.approx(intercept, abs=TOL)
    assert np.all(np.diff(cal.apply(np.linspace(0, 1, 201))) >= 0)


def test_beta_with_both_slopes_negative_is_the_base_rate():
    # right answers get rarer as confidence rises: no non-decreasing beta map fits better
    rng = np.random.default_rng(8)
    c = rng.uniform(0.02, 0.98, 2000)
    y = rng.random(c.shape[0]) < 1 - c
    full, _ = ref_logistic(ref_beta_features(c), y)
    assert full[0] < 0 and full[1] < 0
    cal = fit(c, y, method="beta")
    assert (cal.a, cal.b) == (0.0, 0.0)
    np.testing.assert_allclose(cal.apply([0.1, 0.9]), [y.mean()] * 2, rtol=1e-12)


def test_beta_on_separable_data_raises():
    with pytest.raises(ValueError, match="beta fit did not converge"):
        fit([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0, 0, 0, 1, 1, 1], method="beta")


# --------------------------------------------------------------------------- the point of it


def test_recalibration_fixes_the_overconfident_sample():
    # fit on the first half, score the second
    c, y = read_jsonl(SAMPLE / "overconfident.jsonl")
    half = c.shape[0] // 2
    before = reference.ece(c[half:], y[half:], 10)[0]
    assert before == pytest.approx(0.265, abs=0.005)
    ece = {}
    for method in METHODS:
        cal = fit(c[:half], y[:half], method=method)
        ece[method] = reference.ece(cal.apply(c[half:]), y[half:], 10)[0]
        got = expected_calibration_error(cal.apply(c[half:]), y[half:])[0]
        assert got == pytest.approx(ece[method], abs=1e-12)
    # The sample states c = 1 - 0.4(1 - p): every confidence is >= 0.6 while the accuracy is
    # 0.56. σ(z/T) keeps 0.5 where it is, so the NLL-optimal T (> 1) softens but cannot shift
    # the mass below 0.6: ECE falls by more than half, not to ~0. The maps with an intercept
    # (platt, beta) or a free shape (isotonic, histogram) bring it under 0.05.
    t = ref_temperature(c[:half], y[:half])
    assert fit(c[:half], y[:half], method="temperature").temperature == pytest.approx(t, rel=TOL)
    assert t > 1
    softened = 1 / (1 + np.exp(-ref_logit(c[half:]) / t))
    assert ece["temperature"] == pytest.approx(reference.ece(softened, y[half:], 10)[0], abs=1e-9)
    assert ece["temperature"] < before / 2
    for method in ("platt", "beta", "isotonic", "histogram"):
        assert ece[method] < 0.05, method


# --------------------------------------------------------------------------- multiple choice


def ragged_rows(seed, rows=120):
    """Per row 2–5 choice loglikelihoods; the gold choice tends to have the largest."""
    rng = np.random.default_rng(seed)
    out, gold = [], []
    for _ in range(rows):
        k = int(rng.integers(2, 6))
        ll = rng.normal(-8.0, 3.0, k)
        g = int(rng.integers(0, k))
        ll[g] += rng.exponential(2.0)
        out.append(ll.tolist())
        gold.append(g)
    return out, gold


@pytest.mark.parametrize("seed", [0, 1])
def test_multiclass_temperature_matches_scipy(seed):
    rows, gold = ragged_rows(seed)

    def nll(log_t):
        t = math.exp(log_t)
        return sum(
            logsumexp(np.array(r) / t) - r[g] / t for r, g in zip(rows, gold, strict=True)
        ) / len(rows)

    ref = minimize_scalar(
        nll, bounds=(math.log(T_MIN), math.log(T_MAX)), method="bounded", options={"xatol": 1e-12}
    )
    t_ref = math.exp(ref.x)
    values, offsets = pack_choices(rows)
    cal = fit_multiclass_temperature(values, offsets, gold)
    assert cal.temperature == pytest.approx(t_ref, rel=TOL)
    top = [max(math.exp(v / t_ref - logsumexp(np.array(r) / t_ref)) for v in r) for r in rows]
    np.testing.assert_allclose(cal.apply(values, offsets), top, atol=TOL)
    probs = cal.probabilities(values, offsets)
    np.testing.assert_allclose(np.add.reduceat(probs, offsets[:-1]), 1.0, atol=1e-12)


def test_multiclass_is_stable_for_large_loglikelihoods_and_single_choices():
    values, offsets = pack_choices([[-1000.0, -1001.0], [-5000.0], [-3.0, -3.0, -4.0]])
    np.testing.assert_array_equal(offsets, [0, 2, 3, 6])
    cal = MulticlassTemperatureCalibrator(2.0)
    e = math.exp(-0.5)
    np.testing.assert_allclose(
        cal.apply(values, offsets), [1 / (1 + e), 1.0, 1 / (2 + e)], rtol=1e-14
    )
    assert fit_multiclass_temperature(values, offsets, [0, 0, 2]).temperature == T_MAX


@pytest.mark.parametrize(
    ("values", "offsets", "gold", "message"),
    [
        ([-1.0, -2.0], [0, 2], [2], r"gold\[0\] = 2 is not a choice index of row 0"),
        ([-1.0, math.nan], [0, 2], [0], r"loglikelihoods\[1\] = nan"),
        ([-1.0, -2.0], [0, 1], [0], "end at len"),
        ([-1.0, -2.0], [0, 0, 2], [0, 0], "row 0 has no choices"),
        ([-1.0, -2.0], [0, 2], [0, 1], "length 1"),
        ([-1.0, -1.0], [0, 2], [0], "every row's choices tie"),
    ],
)
def test_multiclass_validation(values, offsets, gold, message):
    with pytest.raises(ValueError, match=message):
        fit_multiclass_temperature(values, offsets, gold)


# --------------------------------------------------------------------------- cross-fitting


def test_fold_assignment_is_a_seeded_even_split():
    fold = fold_assignment(23, folds=5, seed=3)
    perm = np.random.default_rng(3).permutation(23)
    for k, rows in enumerate(np.array_split(perm, 5)):
        assert sorted(np.flatnonzero(fold == k).tolist()) == sorted(rows.tolist())
    assert sorted(np.bincount(fold).tolist()) == [4, 4, 5, 5, 5]


@pytest.mark.parametrize("method", METHODS)
def test_cross_fit_maps_each_row_by_the_other_folds(method):
    c, y = sample(11, n=150, power=1.4)
    out = cross_fit(c, y, method=method, folds=4, seed=5)
    perm = np.random.default_rng(5).permutation(c.shape[0])
    for held in np.array_split(perm, 4):
        train = np.setdiff1d(np.arange(c.shape[0]), held)
        if method == "isotonic":
            ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
            expected = ref.fit(c[train], y[train]).predict(c[held])
        else:
            expected = fit(c[train], y[train], method=method).apply(c[held])
        np.testing.assert_allclose(out[held], expected, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_cross_fit_never_sees_the_row_it_maps(method):
    c, y = sample(12, n=120)
    fold = fold_assignment(120, folds=3, seed=0)
    out = cross_fit(c, y, method=method, folds=3)
    flipped = y.copy()
    flipped[fold == 1] = ~flipped[fold == 1]  # outcomes of fold 1 change...
    again = cross_fit(c, flipped, method=method, folds=3)
    # ...and so may fold 0 and 2's maps, but not fold 1's own
    np.testing.assert_array_equal(again[fold == 1], out[fold == 1])


@pytest.mark.parametrize("folds", [0, 1, 7, True, 2.0])
def test_cross_fit_refuses_bad_folds(folds):
    with pytest.raises(ValueError, match="folds"):
        cross_fit(np.linspace(0.1, 0.9, 6), [0, 1, 0, 1, 0, 1], method="isotonic", folds=folds)


def test_cross_fit_names_the_fold_that_cannot_be_fitted():
    c = [0.1, 0.2, 0.3, 0.9]
    with pytest.raises(ValueError, match=r"fold \d of 4: platt cannot be fitted on a single"):
        cross_fit(c, [1, 1, 1, 0], method="platt", folds=4)


def test_cross_fit_multiclass_refits_each_fold_on_the_other_rows():
    rows, gold = ragged_rows(3, rows=60)
    values, offsets = pack_choices(rows)
    out = cross_fit_multiclass_temperature(values, offsets, gold, folds=3, seed=2)
    perm = np.random.default_rng(2).permutation(len(rows))
    for held in np.array_split(perm, 3):
        train = sorted(set(range(len(rows))) - set(held.tolist()))
        cal = fit_multiclass_temperature(
            *pack_choices([rows[i] for i in train]), [gold[i] for i in train]
        )
        expected = cal.apply(*pack_choices([rows[i] for i in held]))
        np.testing.assert_allclose(out[held], expected, atol=1e-12)
    with pytest.raises(ValueError, match="folds = 61 exceeds"):
        cross_fit_multiclass_temperature(values, offsets, gold, folds=61)


# --------------------------------------------------------------------------- serialisation


CALIBRATORS = [
    TemperatureCalibrator(1.7),
    PlattCalibrator(0.8, -0.25),
    IsotonicCalibrator(np.array([0.1, 0.4, 0.9]), np.array([0.0, 0.5, 0.75])),
    HistogramCalibrator(np.array([0.25, np.nan, 0.5, 1.0])),
    BetaCalibrator(1.5, 0.25, -0.5),
    MulticlassTemperatureCalibrator(0.6),
]


def test_calibrators_accept_lists_and_are_immutable():
    iso = IsotonicCalibrator([0.2, 0.6], [0.1, 0.9])
    np.testing.assert_allclose(iso.apply([0.0, 0.4, 1.0]), [0.1, 0.5, 0.9])
    with pytest.raises(ValueError, match="read-only"):
        iso.x[0] = 0.3
    hist = HistogramCalibrator([0.5, None])
    assert hist.to_dict() == {"accuracy": [0.5, None]}


@pytest.mark.parametrize("cal", CALIBRATORS, ids=lambda c: c.method)
def test_round_trip_through_json(cal):
    params = json.loads(json.dumps(cal.to_dict(), allow_nan=False))
    again = from_dict(cal.method, params)
    assert type(again) is type(cal)
    assert again.to_dict() == cal.to_dict()
    if cal.method == "multiclass_temperature":
        values, offsets = pack_choices([[-1.0, -2.0, -4.0]])
        np.testing.assert_array_equal(again.apply(values, offsets), cal.apply(values, offsets))
    else:
        grid = np.linspace(0, 1, 57)
        np.testing.assert_array_equal(again.apply(grid), cal.apply(grid))


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("sigmoid", {"a": 1.0, "b": 0.0}, "unknown calibration method 'sigmoid'"),
        ("temperature", {"temperature": 0.0}, "'temperature' must be > 0"),
        ("temperature", {"temperature": -2}, "'temperature' must be > 0"),
        ("temperature", {"temperature": math.nan}, "must be finite"),
        ("temperature", {"temperature": True}, "must be a number"),
        ("temperature", {"temperature": "1.5"}, "must be a number"),
        ("temperature", {}, r"missing \['temperature'\]"),
        ("platt", {"a": 1.0, "b": 0.0, "c": 2.0}, r"unexpected \['c'\]"),
        ("platt", {"a": math.inf, "b": 0.0}, "'a' must be finite"),
        ("platt", [1.0, 0.0], "must be a mapping"),
        ("isotonic", {"x": [0.1, 0.1], "y": [0.0, 1.0]}, r"increase strictly; x\[1\]"),
        ("isotonic", {"x": [0.1, 0.2], "y": [0.5, 0.4]}, r"must not decrease; y\[1\]"),
        ("isotonic", {"x": [0.1, 0.2], "y": [0.5]}, "equal length"),
        ("isotonic", {"x": [], "y": []}, "non-empty"),
        ("isotonic", {"x": [0.1, 1.2], "y": [0.0, 1.0]}, "'x' must lie in"),
        ("isotonic", {"x": [0.1, None], "y": [0.0, 1.0]}, r"x\[1\] must be a number"),
        ("isotonic", {"x": "0.1", "y": [0.0]}, "list of numbers"),
        ("histogram", {"accuracy": []}, "one entry per bin"),
        ("histogram", {"accuracy": [0.5, 1.5]}, r"\[0, 1\]"),
        ("beta", {"a": -0.1, "b": 1.0, "intercept": 0.0}, "'a' must be >= 0"),
        ("beta", {"a": 1.0, "b": -1.0, "intercept": 0.0}, "'b' must be >= 0"),
        ("multiclass_temperature", {"temperature": 0}, "must be > 0"),
    ],
)
def test_from_dict_validates(method, params, message):
    with pytest.raises(ValueError, match=message):
        from_dict(method, params)


# --------------------------------------------------------------------------- input validation


@pytest.mark.parametrize("method", METHODS)
def test_fit_refuses_empty_and_nan(method):
    with pytest.raises(ValueError, match="no rows"):
        fit([], [], method=method)
    with pytest.raises(ValueError, match=r"confidences\[1\] = nan"):
        fit([0.2, math.nan], [0, 1], method=method)
    with pytest.raises(ValueError, match="differ in length"):
        fit([0.2, 0.3], [0], method=method)


@pytest.mark.parametrize("method", ["temperature", "platt", "beta"])
@pytest.mark.parametrize(("correct", "which"), [([1, 1, 1], "right"), ([0, 0, 0], "wrong")])
def test_two_class_methods_refuse_a_single_class(method, correct, which):
    with pytest.raises(ValueError, match=f"{method} cannot be fitted on a single class.*{which}"):
        fit([0.2, 0.5, 0.8], correct, method=method)


def test_fit_refuses_bad_method_bins_and_degenerate_inputs():
    with pytest.raises(ValueError, match="unknown calibration method 'sigmoid'"):
        fit([0.5], [1], method="sigmoid")
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        fit([0.5], [1], method="histogram", bins=0)
    with pytest.raises(ValueError, match=r"every confidence is 0\.5"):
        fit([0.5, 0.5], [0, 1], method="temperature")
    with pytest.raises(ValueError, match="every confidence is the same"):
        fit([0.7, 0.7], [0, 1], method="platt")
    with pytest.raises(ValueError, match="three distinct"):
        fit([0.7, 0.2, 0.7], [0, 1, 1], method="beta")


@pytest.mark.parametrize("cal", CALIBRATORS[:5], ids=lambda c: c.method)
def test_apply_validates_and_keeps_shape(cal):
    with pytest.raises(ValueError, match=r"confidences\[2\] = 1.5 is outside"):
        cal.apply([0.1, 0.2, 1.5])
    with pytest.raises(ValueError, match="is not a finite number"):
        cal.apply([math.nan])
    assert cal.apply(np.full((2, 3), 0.4)).shape == (2, 3)
    with pytest.raises(ValueError, match=r"^confidence = -0.5 is outside"):
        cal.apply(-0.5)
    ends = cal.apply([0.0, 1.0])
    assert np.all(np.isfinite(ends)) and np.all((ends >= 0) & (ends <= 1))


# --------------------------------------------------------------------------- the registry


def test_registry_has_one_calibrator_per_named_method():
    # the light list the command line reads, and the implementations, name the same methods
    assert METHODS == names(RECALIBRATION_METHODS) == tuple(RECALIBRATORS)
    assert [cls.method for cls in BINARY_CALIBRATORS] == list(METHODS)
    for name, entry in RECALIBRATORS.items():
        assert entry.method.name == entry.calibrator.method == name
        assert entry.method.help and "\n" not in entry.method.help


@pytest.mark.parametrize("method", RECALIBRATION_METHODS, ids=lambda m: m.name)
def test_two_class_flag_is_what_fitting_requires(method):
    c = [0.2, 0.4, 0.6, 0.9]
    if method.two_class:
        with pytest.raises(ValueError, match="single class"):
            fit(c, [1, 1, 1, 1], method=method.name)
    else:  # one class maps every row to its accuracy
        np.testing.assert_array_equal(fit(c, [1, 1, 1, 1], method=method.name).apply(c), 1.0)


# --------------------------------------------------------------------------- properties


rows = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.booleans()), min_size=2, max_size=60)


@given(rows, st.sampled_from(["temperature", "isotonic", "histogram"]))
def test_maps_stay_in_unit_interval_and_monotone_methods_do_not_decrease(data, method):
    c = np.array([r[0] for r in data])
    y = np.array([r[1] for r in data])
    assume(y.any() and not y.all() and np.any(np.abs(c - 0.5) > 1e-9))
    cal = fit(c, y, method=method)
    grid = np.sort(np.concatenate([np.linspace(0, 1, 201), c]))
    out = cal.apply(grid)
    assert np.all((out >= 0) & (out <= 1))
    if method != "histogram":
        assert np.all(np.diff(out) >= 0)
    again = from_dict(method, json.loads(json.dumps(cal.to_dict(), allow_nan=False)))
    np.testing.assert_array_equal(again.apply(grid), out)


@given(rows)
def test_isotonic_is_invariant_to_row_order(data):
    c = np.array([r[0] for r in data])
    y = np.array([r[1] for r in data])
    a = fit(c, y, method="isotonic").to_dict()
    b = fit(c[::-1], y[::-1], method="isotonic").to_dict()
    assert a == b
