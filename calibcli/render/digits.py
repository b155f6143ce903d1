"""How many decimals a column of numbers needs so that values that differ print differently.

Thresholds a risk–coverage table lists are distinct confidences; from bf16 loglikelihoods two
of them can be 1e-8 apart, and at the usual four decimals both print as ``0.7982`` while they
accept different rows. A column is therefore printed with the fewest decimals (at least the
usual ones) at which every pair of distinct finite values prints differently; 17 decimals tell
any two doubles in [0, 1] apart, so the search always ends."""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

MOST = 17


def distinct_decimals(values: Iterable[Any], least: int = 4) -> int:
    """The fewest decimals, at least ``least`` and at most 17, at which the distinct finite
    floats among ``values`` all print differently (``f"{x:.{d}f}"``)."""
    finite = sorted({v for v in values if isinstance(v, float) and math.isfinite(v)})
    for digits in range(least, MOST + 1):
        shown = [f"{v:.{digits}f}" for v in finite]
        if all(a != b for a, b in pairwise(shown)):
            return digits
    return MOST


def threshold_decimals(values: Iterable[Any], least: int = 4) -> int:
    """The decimals for a column of thresholds: as :func:`distinct_decimals`, and as many as
    keep each apart from 0 and 1. A threshold of 0.99998 rounded to ``1.0000`` reads as "accept
    only rows at confidence 1", and one of 0.00004 as ``0.0000`` as "accept every row"."""
    return distinct_decimals([0.0, 1.0, *values], least)


LARGE = 1e15
"""Past this magnitude a float is shown in scientific notation: its fixed-point digits would
fill a table's column (a perplexity of exp(700) has 305) with no more meaning than its
first ones."""


def fixed(x: float, digits: int = 4) -> str:
    """A float to ``digits`` decimals, or, at a magnitude of :data:`LARGE` or more, to
    ``digits`` decimals of its scientific notation (``1.1188e+150``)."""
    return f"{x:.{digits}e}" if abs(x) >= LARGE and math.isfinite(x) else f"{x:.{digits}f}"


def as_given(value: float) -> str:
    """A limit as the user gave it: a float as short as it reads back exactly (``0.05``,
    ``0.04139``, ``0.999999999``, never rounded to ``0.0500`` or ``1``), a count whole with
    thousands separators, as the counts it is compared with are shown."""
    if isinstance(value, int):
        return f"{value:,}"
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def gate_decimals(values: Iterable[Any], limit: Any, least: int = 4) -> int:
    """The decimals, at least ``least``, for a gate check's values beside its limit shown
    :func:`as_given`: as many as make each value, as shown, compare with the limit as the
    value does: above it, below it, or equal. An ECE of 0.05004 against ``--max-ece 0.05``
    reads ``0.05004`` (at 4 decimals, ``0.0500`` would seem to pass), and one of exactly
    0.04139 against ``0.04139`` reads ``0.04139``, not ``0.0414``."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        return least
    return max((_reads_as(v, float(limit), least) for v in values), default=least)


def _reads_as(value: Any, limit: float, least: int) -> int:
    """The fewest decimals from ``least`` at which ``value`` shown by :func:`fixed` compares
    with ``limit`` as ``value`` itself does (17 at most)."""
    if not isinstance(value, float) or not (math.isfinite(value) and math.isfinite(limit)):
        return least
    side = (value > limit) - (value < limit)
    for digits in range(least, MOST + 1):
        shown = float(fixed(value, digits))
        if (shown > limit) - (shown < limit) == side:
            return digits
    return MOST
