"""The whole-array paths of a grouped bin table give the bits of the exact sums: the pooled
table (limbs summed over the groups), the reordering of groups, the (groups x bins) arrays and
the reading back of many cells in slices, each against sums made with Python's exact integers
and fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.summaries.exact import ExactSums, limbs_to_float, sum_to_float
from calibcli.summaries.tables import BinTable

confidences = st.floats(0.0, 1.0, allow_nan=False) | st.sampled_from([0.0, 1.0, 5e-324, 0.5])
rows = st.lists(st.tuples(confidences, st.booleans(), st.integers(0, 6)), min_size=1, max_size=60)


def table_of(data, bins, groups=7):
    conf = np.array([c for c, _, _ in data])
    correct = np.array([y for _, y, _ in data])
    ids = np.array([g for _, _, g in data], np.intp)
    table = BinTable(bins, groups)
    table.add(conf, correct, ids, groups)
    return table


def exact_bins(data, bins, keep=lambda g: True):
    """Per bin: count, right answers, and the nearest doubles of the exact sums of the doubles
    c, c*c, c*y and (c - y)**2 (each square rounded once, as a row's is)."""
    edges = BinTable(bins).edges
    out = [[0, 0, Fraction(0), Fraction(0), Fraction(0), Fraction(0)] for _ in range(bins)]
    for c, y, g in data:
        if not keep(g):
            continue
        k = min(int(np.searchsorted(edges, c, side="right")) - 1, bins - 1)
        cell = out[k]
        cell[0] += 1
        cell[1] += int(y)
        cell[2] += Fraction(c)
        cell[3] += Fraction(c * c)
        cell[4] += Fraction(c) * int(y)
        cell[5] += Fraction((1.0 - c) ** 2 if y else c * c)
    return [[a, b, *(float(v) for v in rest)] for a, b, *rest in out]


def fields(stats):
    return [
        [int(stats.count[k]), int(stats.sum_correct[k]), *(float(f[k]) for f in floats(stats))]
        for k in range(stats.count.shape[0])
    ]


def floats(stats):
    return (stats.sum_conf, stats.sum_conf_sq, stats.sum_conf_correct, stats.sum_sq_error)


@settings(max_examples=60, deadline=None)
@given(rows, st.sampled_from([1, 3, 10]))
def test_pooled_table_is_the_exact_sum_of_every_row(data, bins):
    assert fields(table_of(data, bins).stats()) == exact_bins(data, bins)


@settings(max_examples=60, deadline=None)
@given(rows, st.sampled_from([1, 4, 10]))
def test_group_tables_hold_each_groups_exact_sums(data, bins):
    table = table_of(data, bins)
    tables = table.group_tables()
    for g, stats in enumerate(table.group_stats()):
        assert fields(stats) == exact_bins(data, bins, keep=lambda h, g=g: h == g)
        assert tables.count[g].tolist() == stats.count.tolist()
        assert tables.sum_conf[g].tolist() == stats.sum_conf.tolist()


@settings(max_examples=60, deadline=None)
@given(rows, st.permutations(range(7)))
def test_reordered_table_moves_each_group_whole(data, order):
    table = table_of(data, 10)
    moved = table.reordered(np.array(order, np.intp))
    for g, stats in enumerate(moved.group_stats()):
        old = order.index(g)
        assert fields(stats) == exact_bins(data, 10, keep=lambda h, old=old: h == old)


def test_many_cells_read_back_in_slices_as_python_integer_division():
    rng = np.random.default_rng(5)
    cells = 70_000  # more than one slice
    limbs = np.floor(rng.random((cells, 5)) * 2.0**32)
    limbs[rng.random(cells) < 0.1] = 0.0  # some empty sums
    limbs[::7, 3:] = 0.0  # and some short ones
    got = limbs_to_float(limbs, 30)
    sums = ExactSums(cells, 30, 5)
    sums.limbs[:] = limbs
    for c in [*rng.integers(0, cells, 400).tolist(), 0, cells - 1]:
        assert got[c] == sum_to_float(sums.to_int(c))
