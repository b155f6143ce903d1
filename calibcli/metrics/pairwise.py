"""Sums of long computed arrays, a slice at a time, bit for bit what numpy's sum of the whole
array gives.

numpy adds a float64 array by pairwise summation: a run of at most 128 values is added in eight
interleaved partial sums, a longer run n is cut at h = n // 2 rounded down to a multiple of 8 and
its halves are added the same way. Cutting where numpy cuts, and handing numpy every part that
fits in a slice, gives the same tree and so the same float, while only one slice of the
summands exists at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["SLICE", "pairwise_sum"]

SLICE = 1 << 16  # summands computed at once; any size >= 128 gives numpy's tree


def pairwise_sum(n: int, piece: Callable[[int, int], np.ndarray], *, size: int = SLICE) -> float:
    """``float(np.sum(x))`` for the float64 array x of length ``n`` whose values [a, b) are
    ``piece(a, b)``, computing at most ``size`` of them at once."""
    if size < 128:
        raise ValueError(f"slices must hold at least 128 values, got {size}")

    def total(a: int, length: int) -> float:
        if length <= size:
            return float(np.add.reduce(piece(a, a + length)))
        half = length // 2
        half -= half % 8
        return total(a, half) + total(a + half, length - half)

    return total(0, n)
