"""The Newton fit's BLAS products taken a slice of rows at a time: bit for bit numpy's products
of the whole arrays where the probe says so, and the whole arrays where it does not."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from calibcli.metrics import blas, fit, fit_columns
from calibcli.metrics import logistic as logistic_module


@pytest.fixture
def one_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def test_slice_edges_by_hand() -> None:
    # 16 blocks of 7,680 rows per slice; the last slice keeps between one and two blocks
    assert blas.slice_edges(250_000) == [0, 122_880, 238_080, 250_000]
    assert blas.slice_edges(245_760) == [0, 122_880, 238_080, 245_760]
    assert blas.slice_edges(130_559) == [0, 115_200, 130_559]
    assert blas.slice_edges(7_000) == [0, 7_000]


def operands(n: int, k: int, seed: int, scale: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = np.ones((n, k))
    x[:, :-1] = rng.standard_t(3.0, (n, k - 1)) * scale
    w = x * (rng.random(n) * 0.25)[:, None]
    r = rng.random(n) - rng.random(n)
    return x, w, r


@pytest.mark.parametrize(
    ("n", "k", "scale"),
    [(245_760, 2, 1.0), (400_123, 3, 1e-6), (530_001, 2, 40.0), (271_111, 3, 3.0)],
)
def test_sliced_products_are_numpys_whole_products(one_thread, n, k, scale) -> None:
    if not blas.sliced_products():
        pytest.skip("this BLAS does not give the whole products a slice at a time")
    x, w, r = operands(n, k, n, scale)
    weighted = np.empty(x.shape).T  # numpy's call for the fit's weighted copy of x
    weighted.T[:] = w

    def fill(a, b, xs, ws, rs):
        xs[:], ws[:], rs[:] = x[a:b], w[a:b], r[a:b]

    gram, dot = blas.gram_and_dot(n, k, fill)
    assert gram.tobytes() == (weighted @ x).tobytes()
    assert dot.tobytes() == (x.T @ r).tobytes()


def rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conf = rng.beta(4.0, 1.5, n)
    return conf, rng.random(n) < conf * 0.9


@pytest.mark.parametrize("method", ["platt", "beta"])
def test_fit_falls_back_to_whole_products_when_the_probe_fails(
    one_thread, monkeypatch, method
) -> None:
    conf, correct = rows(300_007, 11)
    calls = []
    sliced = blas.gram_and_dot
    monkeypatch.setattr(blas, "gram_and_dot", lambda *a: calls.append(1) or sliced(*a))
    first = fit_columns(conf[correct], conf[~correct], method=method).to_dict()
    assert bool(calls) == blas.sliced_products()

    monkeypatch.setattr(blas, "_PROBED", {})
    monkeypatch.setattr(blas, "_probe", lambda: False)
    calls.clear()
    design = logistic_module.design_matrix((conf,), lambda c: (c,))
    assert design.values.shape == (conf.shape[0], 2)  # the whole matrix, its 1s included
    assert fit_columns(conf[correct], conf[~correct], method=method).to_dict() == first
    assert calls == []


def test_no_sliced_products_without_numpys_openblas(monkeypatch) -> None:
    monkeypatch.setattr(blas, "_LIBRARY", [None])
    assert not blas.sliced_products()
    conf, correct = rows(250_000, 12)
    design = logistic_module.design_matrix((conf,), lambda c: (c, 1.0 - c))
    assert design.values.shape == (conf.shape[0], 3)
    assert fit(conf, correct, method="platt").to_dict()["a"] > 0
