"""Many short sums at once: each row's ``math.fsum`` and each run's ``numpy`` sum, compared bit
for bit (value and sign of zero) with the one-at-a-time calls themselves."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.metrics import row_sums
from calibcli.metrics.row_sums import fsum_rows, run_sums


def _same(got: np.ndarray, want: list[float]) -> bool:
    want_a = np.array(want, dtype=np.float64)
    return got.shape == want_a.shape and all(
        (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
        for a, b in zip(got.tolist(), want_a.tolist(), strict=True)
    )


def _fsum_each(terms: np.ndarray) -> list[float]:
    return [math.fsum(row) for row in terms.tolist()]


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
# values that meet at a few magnitudes, so that rows cancel and tie
scaled = st.builds(
    lambda m, e: math.ldexp(m, e),
    st.integers(-(2**53), 2**53),
    st.sampled_from([-1074, -1060, -600, -60, -53, -52, -30, 0, 1, 30, 52, 900]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda width: st.lists(
            st.lists(
                st.one_of(finite, scaled, st.sampled_from([0.0, -0.0])),
                min_size=width,
                max_size=width,
            ),
            min_size=1,
            max_size=30,
        )
    )
)
def test_fsum_rows_is_math_fsum_of_each_row(rows):
    terms = np.array(rows, dtype=np.float64)
    try:
        want = _fsum_each(terms)
    except OverflowError:
        with pytest.raises(OverflowError):
            fsum_rows(terms)
        return
    assert _same(fsum_rows(terms), want)


@pytest.mark.parametrize(
    "row, want",
    [
        ([1.0, 2.0**-53], 1.0),  # a tie: to even
        ([1.0, 2.0**-53, 2.0**-100], 1.0000000000000002),  # just past the tie: up
        ([1.0 + 2.0**-52, 2.0**-53], 1.0000000000000004),  # a tie to even, upwards
        ([1e16, 1.0, -1e16], 1.0),  # cancellation
        ([0.1] * 10, 1.0),  # fsum's own textbook case; a plain sum gives 0.9999999999999999
        ([-0.0, -0.0], 0.0),  # fsum starts from 0.0
        ([0.0, -0.0], 0.0),
        ([5e-324, 5e-324, -5e-324], 5e-324),  # subnormals
        ([math.inf, 1.0], math.inf),
        ([math.nan, 1.0], math.nan),
    ],
)
def test_fsum_rows_known_rows(row, want):
    assert _same(fsum_rows(np.array([row, row])), [want, want])
    assert _same(fsum_rows(np.array([row, row])), _fsum_each(np.array([row, row])))


def test_fsum_rows_raises_what_fsum_raises():
    with pytest.raises(ValueError):
        math.fsum([math.inf, -math.inf])
    with pytest.raises(ValueError):
        fsum_rows(np.array([[1.0, 2.0], [math.inf, -math.inf]]))


def test_fsum_rows_random_tables_and_empty_shapes():
    rng = np.random.default_rng(7)
    for width in (1, 2, 10, 20, 33):
        terms = rng.normal(0.0, 1.0, (5000, width)) * 10.0 ** rng.integers(-20, 20, (5000, width))
        terms[:, width // 2] = -terms[:, 0]  # exact cancellations
        assert _same(fsum_rows(terms), _fsum_each(terms))
    assert fsum_rows(np.zeros((0, 10))).shape == (0,)
    assert _same(fsum_rows(np.zeros((3, 0))), [0.0, 0.0, 0.0])


def _numpy_each(values: np.ndarray, starts: np.ndarray) -> list[float]:
    s = starts.tolist()
    return [float(values[a:b].sum()) for a, b in itertools.pairwise(s)]


def _runs(lengths: list[int]) -> np.ndarray:
    starts = np.zeros(len(lengths) + 1, np.intp)
    np.cumsum(lengths, out=starts[1:])
    return starts


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 300), min_size=1, max_size=12),
    st.integers(0, 2**32 - 1),
    st.floats(0.0, 0.5),
)
def test_run_sums_is_numpys_sum_of_each_run(lengths, seed, zeros):
    rng = np.random.default_rng(seed)
    starts = _runs(lengths)
    values = rng.normal(0.0, 1.0, starts[-1]) * 10.0 ** rng.integers(-12, 12, starts[-1])
    values[rng.random(starts[-1]) < zeros] = -0.0
    assert _same(run_sums(values, starts), _numpy_each(values, starts))


def test_run_sums_edge_runs(monkeypatch):
    lengths = [0, 1, 1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 130, 1000]
    starts = _runs(lengths)
    rng = np.random.default_rng(3)
    values = rng.exponential(1.0, starts[-1])
    values[starts[1] : starts[3]] = -0.0  # runs of one -0.0: numpy gives 0.0
    values[starts[7] : starts[8]] = -0.0  # a run of fifteen -0.0
    values[starts[4]] = math.inf
    want = _numpy_each(values, starts)
    assert _same(run_sums(values, starts), want)
    # a numpy whose short sums differed would be summed run by run: the same floats
    monkeypatch.setattr(row_sums, "_PROBED", [False])
    assert _same(run_sums(values, starts), want)


def test_the_probe_says_whether_short_runs_sum_as_numpy_does():
    # the probe's answer agrees with a fresh comparison on other runs: where it lets the
    # vectorised path run, that path gives numpy's floats
    rng = np.random.default_rng(19)
    lengths = rng.integers(1, 129, 500).tolist()
    starts = _runs(lengths)
    values = rng.normal(0.0, 1.0, starts[-1]) * 10.0 ** rng.integers(-9, 9, starts[-1])
    values[rng.random(starts[-1]) < 0.1] = -0.0
    got = row_sums._short_sums(values, starts[:-1], np.diff(starts))
    agrees = _same(got, _numpy_each(values, starts))
    assert row_sums._numpy_sums_as_documented() == agrees
