"""platt, isotonic and beta fitted without row-sized temporaries: isotonic against an exact
pool-adjacent-violators in Python fractions and against scikit-learn, on inputs long enough
to be read in several slices; platt and beta on such inputs against scikit-learn, and the
Newton fit's whole-product fallback against its sliced products."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from sklearn.calibration import _SigmoidCalibration
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from calibcli.metrics import fit, fit_columns
from calibcli.metrics import isotonic as isotonic_module
from calibcli.metrics import logistic as logistic_module


def exact_isotonic(conf: np.ndarray, correct: np.ndarray) -> tuple[list[float], list[float]]:
    """The isotonic calibrator's points by a textbook PAV over the distinct confidences, block
    means as exact fractions; each block shows its first and last confidence."""
    totals: dict[float, list[int]] = {}
    for c, y in zip(conf.tolist(), correct.tolist(), strict=True):
        t = totals.setdefault(c, [0, 0])  # -0.0 and 0.0 share a key: the first one seen
        t[0] += int(y)
        t[1] += 1
    blocks: list[list] = []  # [first x, last x, right, rows]
    for x in sorted(totals):
        r, n = totals[x]
        blocks.append([x, x, r, n])
        while len(blocks) > 1 and Fraction(blocks[-2][2], blocks[-2][3]) >= Fraction(
            blocks[-1][2], blocks[-1][3]
        ):
            last = blocks.pop()
            blocks[-1][1] = last[1]
            blocks[-1][2] += last[2]
            blocks[-1][3] += last[3]
    xs, ys = [], []
    for first, last, r, n in blocks:
        for x in (first, last) if last != first else (first,):
            xs.append(x)
            ys.append(float(Fraction(r, n)))
    return xs, ys


def rows(n: int, seed: int, decimals: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.beta(4.0, 1.5, n)
    if decimals is not None:
        conf = np.round(conf, decimals)
    return conf, rng.random(n) < conf * 0.9


@pytest.mark.parametrize(("n", "decimals"), [(150_000, None), (200_000, 3), (140_000, 1)])
def test_isotonic_is_exact_pav_on_long_inputs(n: int, decimals: int | None) -> None:
    conf, correct = rows(n, n, decimals)
    xs, ys = exact_isotonic(conf, correct)
    cal = fit_columns(conf[correct], conf[~correct], method="isotonic")
    assert cal.x.tolist() == xs
    assert cal.y.tolist() == ys
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(conf, correct)
    np.testing.assert_array_equal(cal.x, ref.X_thresholds_)
    np.testing.assert_allclose(cal.y, ref.y_thresholds_, atol=1e-12)


def test_isotonic_cascade_through_the_stack(monkeypatch) -> None:
    # a rising staircase of accuracies then a long wrong run pools back one block at a time
    steps = 3000
    conf = np.linspace(0.01, 0.9, steps * 4)
    correct = (np.arange(conf.size) % 4) < (np.arange(conf.size) * 4 // conf.size)
    conf = np.concatenate([conf, np.linspace(0.91, 0.99, 20_000)])
    correct = np.concatenate([correct, np.zeros(20_000, dtype=bool)])
    xs, ys = exact_isotonic(conf, correct)
    for rounds in (8, 1):  # the default, and the stack after a single vectorised round
        monkeypatch.setattr(isotonic_module, "_ROUNDS_WHILE", rounds)
        cal = fit(conf, correct, method="isotonic")
        assert (cal.x.tolist(), cal.y.tolist()) == (xs, ys)


@pytest.mark.parametrize("first", [-0.0, 0.0])
def test_isotonic_zero_is_shown_as_its_first_row(first: float) -> None:
    conf, correct = rows(70_000, 3)
    conf[[10, 20, 30]] = [first, -first, 0.0]
    correct[[10, 20, 30]] = False
    xs, _ = exact_isotonic(conf, correct)
    cal = fit(conf, correct, method="isotonic")
    assert np.signbit(cal.x[0]) == np.signbit(first) == np.signbit(xs[0])
    right, wrong = conf[correct], conf[~correct]
    split = fit_columns(right, wrong, method="isotonic")
    assert np.signbit(split.x[0]) == np.signbit(first)


def test_platt_on_a_long_input_matches_sklearn() -> None:
    conf, correct = rows(140_000, 5)
    z = np.log(np.clip(conf, 1e-12, 1 - 1e-12)) - np.log1p(-np.clip(conf, 1e-12, 1 - 1e-12))
    ref = _SigmoidCalibration().fit(z, correct)
    cal = fit_columns(conf[correct], conf[~correct], method="platt")
    assert cal.a == pytest.approx(-ref.a_, abs=1e-6)
    assert cal.b == pytest.approx(-ref.b_, abs=1e-6)


def test_beta_on_a_long_input_matches_logistic_regression() -> None:
    conf, correct = rows(140_000, 6)
    c = np.clip(conf, 1e-12, 1 - 1e-12)
    features = np.column_stack([np.log(c), -np.log1p(-c)])
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(features, correct)
    cal = fit_columns(conf[correct], conf[~correct], method="beta")
    assert [cal.a, cal.b] == pytest.approx(ref.coef_[0].tolist(), abs=1e-5)
    assert cal.intercept == pytest.approx(ref.intercept_[0], abs=1e-5)


@pytest.mark.parametrize("method", ["platt", "beta"])
def test_newton_fit_without_sliced_products_is_the_same(monkeypatch, method: str) -> None:
    conf, correct = rows(70_001, 7)
    sliced = fit(conf, correct, method=method).to_dict()
    monkeypatch.setattr(logistic_module, "_PROBED", [False])
    assert fit(conf, correct, method=method).to_dict() == sliced
