"""Perplexity totals of native rows without groups (summed without per-row group ids) against
exact references: Fraction sums of the doubles, and Python integer sums of the counts."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from calibcli.summaries.tables import TotalsTable, join_halves


def _cols(nll: list[float], tokens: list[int], nbytes: list[int] | None = None) -> tuple:
    """A native block's columns: NLL, tokens, bytes (or None), no words nor logprob counts."""
    counts = None if nbytes is None else np.array(nbytes, np.int64)
    return (np.array(nll), np.array(tokens, np.int64), counts, None, None, None, None)


def _add(table: TotalsTable, cols: tuple) -> None:
    table.add(cols, np.isinf(cols[0]))


def test_nll_sum_is_the_double_nearest_the_exact_sum() -> None:
    # 0.1 + 0.2 + 0.3 in floating point is 0.6000000000000001; the exact sum of the three
    # doubles rounds to 0.6
    table = TotalsTable(1)
    _add(table, _cols([0.1, 0.2, 0.3], [1, 1, 1]))
    exact = Fraction(0.1) + Fraction(0.2) + Fraction(0.3)
    assert float(exact) == 0.6
    assert table.nll.to_float()[0] == 0.6


def test_magnitudes_far_apart_and_infinities_counted_not_summed() -> None:
    values = [1e300, 1e-300, 3.5, 2.0**60, np.inf, 5e-324]
    table = TotalsTable(1)
    _add(table, _cols(values, [1, 2, 3, 4, 5, 6]))
    exact = sum(Fraction(v) for v in values if v != np.inf)
    assert table.nll.to_int(0) == exact * 2**1088  # limb 0 counts units of 2**-1088
    assert table.ints[0, 0] == 6  # sequences
    assert table.ints[0, 1] == 1  # the infinite NLL


def test_counts_beyond_float_precision_add_exactly() -> None:
    tokens = [2**52 + 1, 2**52 + 3, 7]
    nbytes = [2**53 - 1, 1, 2**40]
    table = TotalsTable(1)
    _add(table, _cols([1.0, 2.0, 3.0], tokens, nbytes))
    _add(table, _cols([0.5], [2**50], [9]))
    assert join_halves(table.counts[0, 0]) == 2**52 + 1 + 2**52 + 3 + 7 + 2**50
    assert join_halves(table.counts[0, 1]) == 2**53 - 1 + 1 + 2**40 + 9
    assert table.nll.to_float()[0] == 6.5


def test_one_group_and_group_ids_give_the_same_table() -> None:
    rng = np.random.default_rng(3)
    nll = rng.uniform(0, 2000, 70_000)  # more than one chunk of pieces
    tokens = rng.integers(1, 600, 70_000)
    cols = _cols(nll.tolist(), tokens.tolist())
    alone, grouped = TotalsTable(1), TotalsTable(1)
    _add(alone, cols)
    grouped.add(cols, np.isinf(cols[0]), np.zeros(nll.shape[0], np.intp), 1)
    assert (
        alone.nll.to_int(0)
        == grouped.nll.to_int(0)
        == sum(Fraction(v) for v in nll.tolist()) * 2**1088
    )
    assert join_halves(alone.counts[0, 0]) == int(tokens.sum())
    assert np.array_equal(alone.ints, grouped.ints)
