"""The row sums a summary keeps per group (:class:`calibcli.summaries.moments.RowMoments`),
made for every group at once, equal what each group's rows give alone: the NLL against the exact
mean of Python's ``math.log`` values (fractions), rounded once, the infinite losses counted by
hand, and the grid histograms bit for bit those of
:func:`calibcli.metrics.smooth.grid_histograms` on the group's rows."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from calibcli.metrics import PredictionColumns
from calibcli.metrics.smooth import grid_histograms
from calibcli.summaries.moments import RowMoments

# confidences that make a loss of 0 (-0.0 for c = 1 right), an infinite loss, a tiny one
EDGES = [0.0, 1.0, 5e-324, 1.0 - 2.0**-53, 0.5, 1e-300]


def _reference(right: list[float], wrong: list[float]) -> tuple[float, int]:
    """(NLL, infinite losses) of one group: the exact mean of the finite losses, one rounding."""
    losses = [-math.log(c) for c in right if c > 0.0]
    losses += [-math.log1p(-c) for c in wrong if c < 1.0]
    infinite = sum(c == 0.0 for c in right) + sum(c == 1.0 for c in wrong)
    n = len(right) + len(wrong)
    if n == 0:
        return math.nan, infinite
    if infinite:
        return math.inf, infinite
    return float(sum(map(Fraction, losses), Fraction(0)) / n), infinite


def _check(groups: list[tuple[list[float], list[float]]]) -> None:
    columns = [
        PredictionColumns(np.array(r, np.float64), np.array(w, np.float64)) for r, w in groups
    ]
    moments = RowMoments.of_columns(columns)
    assert moments.groups == len(groups)
    for g, (right, wrong) in enumerate(groups):
        one = moments.group(g)
        want, infinite = _reference(right, wrong)
        assert int(one.infinite[0]) == infinite, g
        got = one.log_loss(len(right) + len(wrong))
        assert got == want or (math.isnan(got) and math.isnan(want)), (g, got, want)
        dense = grid_histograms(np.array(right, np.float64), np.array(wrong, np.float64))
        for m, grid in one.grids.items():
            assert np.array_equal(grid.dense(0).view(np.uint64), dense[m].view(np.uint64)), (g, m)


def test_edge_rows_and_empty_groups() -> None:
    groups = [
        ([], []),
        ([1.0], []),  # a loss of -0.0, kept as 0
        ([0.0, 0.5], [1.0]),  # two infinite losses
        ([], [0.0, 1.0 - 2.0**-53]),
        (EDGES, EDGES[::-1]),
        ([], []),
        ([0.25] * 40, [0.75] * 3),
    ]
    _check(groups)


def test_no_groups() -> None:
    moments = RowMoments.of_columns([])
    assert moments.groups == 0 and moments.infinite.shape == (0,)


confidence = st.one_of(st.sampled_from(EDGES), st.floats(0.0, 1.0))
group = st.tuples(st.lists(confidence, max_size=12), st.lists(confidence, max_size=12))


@given(st.lists(group, min_size=1, max_size=25))
def test_random_groups(groups: list[tuple[list[float], list[float]]]) -> None:
    _check(groups)


def test_many_groups_cross_chunks() -> None:
    """More rows than one chunk of the exact sums, spread over many groups."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 60, 3000)
    conf = rng.random(int(sizes.sum()))
    conf[rng.integers(0, conf.shape[0], 50)] = 1.0
    correct = rng.random(conf.shape[0]) < 0.7
    groups, start = [], 0
    for size in sizes.tolist():
        c, y = conf[start : start + size], correct[start : start + size]
        groups.append((c[y].tolist(), c[~y].tolist()))
        start += size
    _check(groups)
