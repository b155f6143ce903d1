"""Each group's rank-sum AUROC from :func:`calibcli.metrics.grouped_rows`, on both of its
search paths (small groups: one search over every group's rows; groups of many rows: a search
per group), against the pair count by hand: the share of (right, wrong) pairs in which the
right answer's confidence is higher, ties counting one half, as an exact fraction."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from calibcli.metrics import grouped, grouped_rows


def _pair_count(right: np.ndarray, wrong: np.ndarray) -> float:
    if not (right.shape[0] and wrong.shape[0]):
        return math.nan
    above = int((right[:, None] > wrong[None, :]).sum())
    ties = int((right[:, None] == wrong[None, :]).sum())
    return float(Fraction(2 * above + ties, 2 * right.shape[0] * wrong.shape[0]))


@pytest.mark.parametrize("search_each", [1, 10**9])  # per group, or over all rows at once
@pytest.mark.parametrize("sorted_rows", [True, False])
def test_auroc_is_the_pair_count(monkeypatch, search_each, sorted_rows):
    monkeypatch.setattr(grouped, "_SEARCH_EACH", search_each)
    rng = np.random.default_rng(7)
    right, wrong = [], []
    for g in range(40):
        a, b = int(rng.integers(0, 300)), int(rng.integers(0, 300))
        if g % 7 == 0:
            a = 0
        values = rng.choice([0.0, 0.25, 0.5, 1.0], a + b) if g % 3 == 0 else rng.random(a + b)
        r, w = values[:a], values[a:]
        if sorted_rows:
            r, w = np.sort(r), np.sort(w)
        right.append(r)
        wrong.append(w)
    _, areas = grouped_rows(right, wrong, sorted_rows=sorted_rows)
    for g, area in enumerate(areas):
        want = _pair_count(right[g], wrong[g])
        assert area == want or (math.isnan(area) and math.isnan(want)), g
