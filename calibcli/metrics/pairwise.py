"""Sums of long computed arrays, a slice at a time, bit for bit what numpy's sum of the whole
array gives.

numpy adds a float64 array by pairwise summation: a run of at most 128 values is added in eight
interleaved partial sums, a longer run n is cut at h = n // 2 rounded down to a multiple of 8 and
its halves are added the same way. Cutting where numpy cuts, and handing numpy every part that
fits in a slice, gives the same tree and so the same float, while only one slice of the
summands exists at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["SLICE", "pairwise_sum", "pairwise_sums"]

SLICE = 1 << 16  # summands computed at once; any size >= 128 gives numpy's tree


def pairwise_sum(n: int, piece: Callable[[int, int], np.ndarray], *, size: int = SLICE) -> float:
    """``float(np.sum(x))`` for the float64 array x of length ``n`` whose values [a, b) are
    ``piece(a, b)``, computing at most ``size`` of them at once."""
    return pairwise_sums(n, lambda a, b: (piece(a, b),), size=size)[0]


def pairwise_sums(
    n: int, pieces: Callable[[int, int], Sequence[np.ndarray]], *, size: int = SLICE
) -> list[float]:
    """:func:`pairwise_sum` of several arrays computed together: ``pieces(a, b)`` gives the
    values [a, b) of each."""
    if size < 128:
        raise ValueError(f"slices must hold at least 128 values, got {size}")
    if n > size and not _numpy_cuts_as_documented():
        return _whole(pieces, n, size)
    return _total(pieces, 0, n, size)


_PROBED: list[bool] = []


def _numpy_cuts_as_documented() -> bool:
    """Whether this numpy adds a long array in the one tree described above. Some numpy
    versions add a long contiguous array in buffer-sized runs one after another instead; there
    the sum is taken over the whole array (its memory, the same float)."""
    if not _PROBED:
        rng = np.random.default_rng(0)
        same = True
        for n in (8193, 70001, 300000):
            x = rng.normal(0.0, 1e6, n)
            piece = lambda a, b, x=x: (x[a:b],)  # noqa: E731
            same = same and float(np.add.reduce(x)) == _total(piece, 0, n, 128)[0]
        _PROBED.append(same)
    return _PROBED[0]


def _whole(pieces: Callable, n: int, size: int) -> list[float]:
    parts = [pieces(a, min(a + size, n)) for a in range(0, n, size)]
    return [float(np.add.reduce(np.concatenate(column))) for column in zip(*parts, strict=True)]


def _total(pieces: Callable, a: int, length: int, size: int) -> list[float]:
    if length <= size:
        return [float(np.add.reduce(x)) for x in pieces(a, a + length)]
    half = length // 2
    half -= half % 8
    left, right = _total(pieces, a, half, size), _total(pieces, a + half, length - half, size)
    return [x + y for x, y in zip(left, right, strict=True)]
