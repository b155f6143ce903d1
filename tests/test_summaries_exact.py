"""Exact sums: any split and merge order gives the same integer, read back correctly rounded.

References are Python's exact integers and fractions: ``Fraction(x)`` is a double's exact value
and ``int / int`` is correctly rounded.
"""

from __future__ import annotations

import math
import random
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibcli.summaries.exact import UNIT_EXP, ExactSums, limbs_to_float, sum_to_float

UNIT = Fraction(2) ** UNIT_EXP


def exact_total(values) -> int:
    """Σ values exactly, in units of 2**-1088."""
    total = sum((Fraction(v) for v in values), Fraction(0)) / UNIT
    assert total.denominator == 1
    return int(total)


unit_doubles = st.one_of(
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, 1.0, 5e-324, 2.2250738585072014e-308, 0.5, 1 - 2**-53, 2**-32, 2**-64]),
    st.floats(0.0, 1e-300),
)


def fold(sums, values, cells, ncells, general=False):
    add = sums.add_values if general else sums.add_fractions
    add(np.asarray(cells, np.intp), np.asarray(values, np.float64), ncells)


@given(st.lists(unit_doubles, max_size=60), st.integers(0, 2**32))
def test_fractions_sum_exactly_whatever_the_split(values, seed):
    rng = random.Random(seed)
    cells = [rng.randrange(3) for _ in values]
    one = ExactSums(3)
    fold(one, values, cells, 3)
    # the same rows in random pieces, merged in a random order
    order = list(range(len(values)))
    rng.shuffle(order)
    cuts = sorted(rng.sample(range(len(values) + 1), min(3, len(values) + 1)))
    parts = []
    for a, b in zip([0, *cuts], [*cuts, len(values)], strict=False):
        part = ExactSums(3)
        fold(part, [values[i] for i in order[a:b]], [cells[i] for i in order[a:b]], 3)
        parts.append(part)
    rng.shuffle(parts)
    merged = ExactSums(3)
    for part in parts:
        merged.add(part)
    for c in range(3):
        want = exact_total(v for v, k in zip(values, cells, strict=True) if k == c)
        assert one.to_int(c) == want == merged.to_int(c)
    assert np.array_equal(one.to_float(), merged.to_float())
    lo_a, limbs_a = one.trimmed()
    lo_b, limbs_b = merged.trimmed()
    assert lo_a == lo_b and np.array_equal(limbs_a, limbs_b)  # the same canonical form


@given(st.lists(st.floats(0.0, 1.7e308), max_size=30))
def test_any_finite_values_sum_exactly(values):
    sums = ExactSums(1)
    fold(sums, values, [0] * len(values), 1, general=True)
    want = exact_total(values)
    assert sums.to_int(0) == want
    assert sums.to_float()[0] == sum_to_float(want)


def test_large_integers_and_huge_totals():
    values = [2.0**53, 2.0**60 + 2**8, 1.7e308, 1.7e308, 0.25]
    sums = ExactSums(1)
    fold(sums, values, [0] * 5, 1, general=True)
    assert sums.to_int(0) == exact_total(values)
    assert sums.to_float()[0] == math.inf  # beyond the largest double


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=8), st.integers(0, 60))
def test_rounding_matches_integer_division(limbs, lo):
    """Random limb patterns, including long runs of zeros and ones below the top (ties)."""
    array = np.asarray([limbs], np.float64)
    total = sum(v << (32 * (lo + k)) for k, v in enumerate(limbs))
    assert limbs_to_float(array, lo)[0] == sum_to_float(total)


@pytest.mark.parametrize(
    "total",
    [
        (1 << 53) + 1,  # a tie between two doubles: to even
        (1 << 53) + 3,  # a tie: to even, upward
        (1 << 54) + 2,
        (1 << 54) + 3,
        (1 << 120) + (1 << 67) + 1,  # the sticky bit is in a low limb
        (1 << 120) + (1 << 67),  # an exact tie far below the top
        (1 << 96) - 1,  # all ones: rounds up to a power of two
        2**200 - 2**140,
        5 << 14,  # 5 * 2**-1074: subnormal, exact
        sys.maxsize,
    ],
)
def test_rounding_edge_cases(total):
    limbs, k, n = [], 0, total
    while n:
        limbs.append(n & 0xFFFFFFFF)
        n >>= 32
        k += 1
    array = np.asarray([limbs], np.float64)
    assert limbs_to_float(array, 0)[0] == sum_to_float(total)


def test_a_confidence_sum_needs_few_limbs():
    rng = np.random.default_rng(0)
    values = rng.random(100_000)
    sums = ExactSums(1)
    sums.add_fractions(np.zeros(values.shape[0], np.intp), values, 1)
    _, limbs = sums.trimmed()
    assert limbs.shape[1] <= 5
    assert sums.to_int(0) == exact_total(values.tolist())
    assert sums.to_float()[0] == math.fsum(values)  # fsum is correctly rounded too


@given(
    st.lists(st.tuples(unit_doubles, st.integers(0, 5)), max_size=60),
    st.lists(st.integers(0, 3), min_size=6, max_size=6),
)
def test_packed_sums_add_exactly_into_chosen_cells(rows, target):
    """Packed (uint32) limbs, added into chosen cells, merged into repeated cells and past
    the packing threshold: each cell's sum is the exact Fraction sum, read back as fsum."""
    from calibcli.summaries.exact import PACK_CELLS, fraction_pieces

    values = np.asarray([v for v, _ in rows], np.float64)
    cells = np.asarray([c for _, c in rows], np.intp)
    sums = ExactSums(6)
    sums.pack()
    for a in range(0, len(rows), 7):  # steps touching a few distinct cells each
        touched, inverse = np.unique(cells[a : a + 7], return_inverse=True)
        if touched.shape[0]:
            sums.add_pieces(fraction_pieces(values[a : a + 7]), inverse, touched.shape[0], touched)
    assert sums.packed and sums.limbs.dtype == np.uint32
    for c in range(6):
        mine = [float(v) for v, k in zip(values, cells, strict=True) if k == c]
        assert sums.to_int(c) == exact_total(mine)
        assert sums.to_float()[c] == math.fsum(mine)
    # several cells into one, twice over, into a table large enough to add packed
    at = np.asarray(target, np.intp)
    big = ExactSums(PACK_CELLS)
    assert big.packed
    for _ in range(2):
        big.add(sums, at=at)
    small = ExactSums(4)  # float64 limbs: the same sums
    for _ in range(2):
        small.add(sums, at=at)
    for t in range(4):
        mine = [float(v) for v, k in zip(values, cells, strict=True) if target[k] == t] * 2
        assert big.to_int(t) == small.to_int(t) == exact_total(mine)
        assert big.to_float()[t] == small.to_float()[t] == math.fsum(mine)
    lo_a, limbs_a = big.trimmed()  # the same canonical form either way
    lo_b, limbs_b = small.trimmed()
    assert lo_a == lo_b and np.array_equal(limbs_a[:4], limbs_b[:4])


def test_packed_limbs_carry_into_a_new_top_limb():
    """Limbs near 2**32 in every cell: adding carries out of the top limb, widening the window."""
    from calibcli.summaries.exact import ONE_LIMB

    sums = ExactSums(3, lo=ONE_LIMB, depth=1)
    sums.pack()
    sums.limbs[:] = 2**32 - 1
    other = ExactSums(3, lo=ONE_LIMB, depth=1)
    other.limbs[:] = [[1.0], [2.0], [2.0**32 - 1]]
    sums.add(other, at=np.arange(3))
    assert sums.packed
    want = [2**32 - 1 + 1, 2**32 - 1 + 2, 2 * (2**32 - 1)]
    for c in range(3):
        assert sums.to_int(c) == want[c] << (32 * ONE_LIMB)
        assert sums.to_float()[c] == float(want[c])
