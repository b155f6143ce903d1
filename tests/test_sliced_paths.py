"""The slice-at-a-time paths of threshold and fit give what the whole-array computations give,
to the bit: numpy's own sum, a brute-force risk-coverage curve, and each calibrator fitted on
the concatenated rows."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.metrics import (
    PredictionColumns,
    RiskCoverage,
    aurc,
    fit,
    fit_columns,
    plug_in_threshold,
    points_at,
)
from calibcli.metrics import risk_coverage as rc_module
from calibcli.metrics.pairwise import pairwise_sum, pairwise_sums


@pytest.mark.parametrize("n", [1, 7, 8, 127, 128, 129, 1000, 8193, 70_001, 300_000])
@pytest.mark.parametrize("size", [128, 1000, 1 << 16])
def test_pairwise_sum_is_numpys_sum(n: int, size: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * rng.uniform(0, 1e6, n)
    assert pairwise_sum(n, lambda a, b: x[a:b], size=size) == float(np.sum(x))
    both = pairwise_sums(n, lambda a, b: (x[a:b], x[a:b] ** 2), size=size)
    assert both == [float(np.sum(x)), float(np.sum(x**2))]
    assert both[0] / n == float(np.mean(x))


def test_pairwise_sum_refuses_small_slices() -> None:
    with pytest.raises(ValueError, match="at least 128"):
        pairwise_sum(10, lambda a, b: np.zeros(b - a), size=64)


def _brute_curve(conf: np.ndarray, correct: np.ndarray):
    values = np.unique(conf + 0.0)[::-1]
    accepted = np.array([np.count_nonzero(conf >= t) for t in values], dtype=np.int64)
    errors = np.array([np.count_nonzero((conf >= t) & ~correct) for t in values], dtype=np.int64)
    return values, accepted, errors


@pytest.mark.parametrize("slice_rows", [3, 64, 1 << 18])
@pytest.mark.parametrize("decimals", [None, 1, 3])
def test_curve_matches_brute_force(monkeypatch, slice_rows: int, decimals: int | None) -> None:
    monkeypatch.setattr(rc_module, "_SLICE", slice_rows)
    rng = np.random.default_rng(slice_rows + (decimals or 0))
    conf = rng.random(500)
    if decimals is not None:
        conf = np.round(conf, decimals)
    conf[:4] = [0.0, -0.0, 1.0, 1.0]
    correct = rng.random(500) < 0.6
    curve = RiskCoverage.from_arrays(conf, correct)
    values, accepted, errors = _brute_curve(conf, correct)
    assert curve.thresholds.tobytes() == values.tobytes()
    assert curve.accepted.tolist() == accepted.tolist()
    assert curve.errors.tolist() == errors.tolist()
    assert curve.total == 500


def test_curve_range_errors_name_the_value() -> None:
    columns = PredictionColumns(np.array([0.5, 0.25]), np.array([0.1, np.nan, 0.3]))
    with pytest.raises(ValueError, match=r"confidences of wrong answers include .*nan.*, not in"):
        RiskCoverage.from_columns(columns)
    columns = PredictionColumns(np.array([-0.5, 0.2, 1.5]), np.array([0.1]))
    with pytest.raises(ValueError, match=r"confidences of right answers include .*-0.5.*, not in"):
        RiskCoverage.from_columns(columns)
    columns = PredictionColumns(np.array([0.5]), np.array([0.1, 1.5]))
    with pytest.raises(ValueError, match=r"confidences of wrong answers include .*1.5.*, not in"):
        RiskCoverage.from_columns(columns)


def test_figures_read_the_curve_as_arrays_do() -> None:
    rng = np.random.default_rng(5)
    conf = np.round(rng.random(3000), 2)
    correct = rng.random(3000) < conf
    curve = RiskCoverage.from_arrays(conf, correct)
    accuracy = (curve.accepted - curve.errors) / curve.accepted
    ok = np.flatnonzero(accuracy >= 0.8)
    assert plug_in_threshold(curve, target_accuracy=0.8).index == int(ok[-1])
    for t in (1.5, 1.0, 0.555, 0.5, 0.0):
        expected = int(np.searchsorted(-curve.thresholds, -t, side="right")) - 1
        assert points_at(curve.thresholds, t) == expected
    # AURC from its definition: the mean over k of the expected error share of the top k
    # rows, ties broken at random (expected errors grow linearly inside a tied group)
    order = np.argsort(-curve.thresholds)
    assert order.shape[0] == curve.thresholds.shape[0]
    n0 = np.concatenate([[0], curve.accepted[:-1]])
    e0 = np.concatenate([[0], curve.errors[:-1]])
    total = 0.0
    for a, e_a, b, e_b in zip(n0, e0, curve.accepted, curve.errors, strict=True):
        k = np.arange(a + 1, b + 1)
        total += float(np.sum((e_a + (k - a) * (e_b - e_a) / (b - a)) / k))
    assert aurc(curve) == pytest.approx(total / curve.total, rel=1e-12)


@pytest.mark.parametrize("method", ["temperature", "platt", "isotonic", "histogram", "beta"])
@pytest.mark.parametrize("n", [50, 70_001])
def test_fit_columns_is_fit_on_the_concatenated_rows(method: str, n: int) -> None:
    rng = np.random.default_rng(n)
    conf = rng.beta(4.0, 1.5, n)
    conf[:3] = [0.0, 1.0, 0.5]
    correct = rng.random(n) < conf * 0.9
    right, wrong = conf[correct], conf[~correct]
    whole = fit(
        np.concatenate([right, wrong]),
        np.repeat([True, False], [right.size, wrong.size]),
        method=method,
        bins=7,
    )
    assert fit_columns(right, wrong, method=method, bins=7).to_dict() == whole.to_dict()
    probe = rng.random(70_000)
    assert (
        whole.apply(probe).tobytes()
        == np.concatenate([whole.apply(probe[:1000]), whole.apply(probe[1000:])]).tobytes()
    )


def test_fit_columns_keeps_fits_messages() -> None:
    with pytest.raises(ValueError, match="single class"):
        fit_columns(np.array([0.2, 0.7]), np.zeros(0), method="temperature")
    with pytest.raises(ValueError):
        fit_columns(np.array([0.2, 1.7]), np.array([0.4]), method="temperature")
