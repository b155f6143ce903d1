"""Every group's sparse grid histograms at once equal, bit for bit, the one-group histograms
of :func:`calibcli.metrics.smooth.grid_histograms` with their +0.0 cells left out, group by
group, on every stored grid."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.metrics.grid_groups import sparse_grid_histograms
from calibcli.metrics.smooth import grid_histograms, stored_grid_sizes


def _one_group_sparse(right: np.ndarray, wrong: np.ndarray) -> dict[int, tuple]:
    """Each grid's (cells, values) of one group: the dense histograms' cells that are not +0.0
    (a -0.0 is a value of its own)."""
    out = {}
    for m, hist in grid_histograms(right, wrong).items():
        flat = np.ascontiguousarray(hist).reshape(2 * m)
        kept = np.flatnonzero(flat.view(np.uint64))
        out[m] = (kept, flat[kept])
    return out


def _assert_each_group_equal(groups: list[tuple[np.ndarray, np.ndarray]]) -> None:
    want = [_one_group_sparse(r, w) for r, w in groups]
    for m in stored_grid_sizes():
        cells, values, offsets = sparse_grid_histograms(groups, m)
        assert offsets.shape == (len(groups) + 1,) and offsets[0] == 0
        for g, (cells_g, values_g) in enumerate(w[m] for w in want):
            a, b = offsets[g], offsets[g + 1]
            assert np.array_equal(cells[a:b], cells_g), (m, g)
            assert np.array_equal(values[a:b].view(np.uint64), values_g.view(np.uint64)), (m, g)


def _split(conf: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return conf[correct], conf[~correct]


def test_edge_groups():
    rng = np.random.default_rng(5)
    grid = np.linspace(0.0, 1.0, 1001)
    groups = [
        (np.zeros(0), np.zeros(0)),  # no rows
        (np.array([0.3]), np.zeros(0)),  # one row: a part folded run by run
        (np.zeros(0), np.array([0.7])),
        (np.array([0.0, 1.0]), np.array([1.0, 0.0])),  # both ends of the grid
        (np.array([5e-324, 1e-300]), np.array([1.0 - 2**-53])),  # subnormal, just below 1
        (grid[::97].copy(), grid[5::131].copy()),  # on grid points
        (np.full(40, 0.5), np.full(3, 0.25)),  # one cell: folded, its own pass
        # sorted rows in a few cells: folded run by run, whose sums round otherwise than a
        # bincount's (these rows' histograms do, on one of the grids)
        (np.sort(0.5 + np.random.default_rng(40).random(40) * 1e-4), np.zeros(0)),
        (np.zeros(0), np.sort(0.5 + rng.random(200) * 0.02)),
        (np.sort(rng.random(400)), np.sort(rng.random(300))),  # sorted, few runs on coarse grids
        (np.round(rng.random(50), 2), np.round(rng.random(50), 2)),  # repeated cells, unsorted
    ]
    _assert_each_group_equal(groups)


def test_many_small_groups_and_a_long_one():
    rng = np.random.default_rng(11)
    groups = []
    for n in rng.integers(0, 12, 400).tolist():
        conf = rng.random(n)
        groups.append(_split(conf, rng.random(n) < conf))
    conf = rng.random(70_000)  # longer than a block: its own pass
    groups.insert(37, _split(conf, rng.random(70_000) < conf))
    _assert_each_group_equal(groups)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(0.0, 1.0), max_size=12),
            st.lists(st.floats(0.0, 1.0), max_size=12),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_property_batched_equals_one_group(pairs):
    _assert_each_group_equal([(np.array(r, float), np.array(w, float)) for r, w in pairs])


def test_no_groups():
    for m in stored_grid_sizes():
        cells, values, offsets = sparse_grid_histograms([], m)
        assert cells.shape == values.shape == (0,) and offsets.tolist() == [0]
