"""McNemar's tests of accuracy on paired rows: exact (binomial) and for clustered pairs.

Pure numpy: no I/O, no printing. The tests are described in :mod:`calibcli.metrics.paired`,
which exports them with the other paired tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.metrics.binomial import binomial_half_two_sided
from calibcli.metrics.clusters import cluster_numbers
from calibcli.metrics.validation import as_correct

__all__ = [
    "EXACT_MCNEMAR_LIMIT",
    "ClusteredMcNemarResult",
    "McNemarResult",
    "identical_correctness",
    "mcnemar_clustered",
    "mcnemar_exact",
]

# McNemar p-values are exact up to this many discordant rows (math.comb(n, n/2) takes ~0.1 s)
EXACT_MCNEMAR_LIMIT = 100_000


# --------------------------------------------------------------------------- validation


def _correct_pair(base_correct: object, new_correct: object) -> tuple[np.ndarray, np.ndarray]:
    base = as_correct(base_correct, "base_correct")
    new = as_correct(new_correct, "new_correct")
    if base.shape[0] != new.shape[0]:
        raise ValueError(
            f"base_correct and new_correct differ in length: {base.shape[0]} != {new.shape[0]}"
        )
    return base, new


def identical_correctness(base_correct: object, new_correct: object) -> bool:
    """True when both sides are right on exactly the same rows (aligned, equal lengths)."""
    base, new = _correct_pair(base_correct, new_correct)
    return bool(np.array_equal(base, new))


# --------------------------------------------------------------------------- McNemar


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's exact test: ``b`` rows right→wrong (BASE right, NEW wrong), ``c`` wrong→right,
    ``discordant`` = b + c, and the two-sided exact ``p_value``."""

    b: int
    c: int
    discordant: int
    p_value: float


def mcnemar_exact(base_correct: object, new_correct: object) -> McNemarResult:
    """McNemar's exact (binomial) test that BASE and NEW have the same accuracy.

    p = min(1, 2·P[Binom(b + c, ½) <= min(b, c)]) = min(1, Σ_{k<=min(b,c)} C(b+c, k) / 2^(b+c−1)),
    and p = 1 when b + c = 0. Exact integers, correctly rounded to a float, for b + c up to
    ``EXACT_MCNEMAR_LIMIT``; a saddle-point formula (relative error < 1e-11) above it.
    """
    base, new = _correct_pair(base_correct, new_correct)
    b = int(np.count_nonzero(base & ~new))
    c = int(np.count_nonzero(~base & new))
    return McNemarResult(
        b, c, b + c, binomial_half_two_sided(b + c, min(b, c), exact_limit=EXACT_MCNEMAR_LIMIT)
    )


@dataclass(frozen=True)
class ClusteredMcNemarResult:
    """Durkalski's McNemar test for clustered pairs: ``b``, ``c`` and ``discordant`` counted
    over rows as :class:`McNemarResult`, the ``clusters``, the ``statistic`` X² and its
    ``p_value``."""

    b: int
    c: int
    discordant: int
    clusters: int
    statistic: float
    p_value: float


def mcnemar_clustered(
    base_correct: object, new_correct: object, clusters: object
) -> ClusteredMcNemarResult:
    """McNemar's test that BASE and NEW have the same accuracy when the rows come in
    ``clusters`` (integer labels, one per row): Durkalski et al.'s statistic (module
    docstring)."""
    base, new = _correct_pair(base_correct, new_correct)
    numbers, count = cluster_numbers(clusters)
    if numbers.shape[0] != base.shape[0]:
        raise ValueError(f"clusters hold {numbers.shape[0]} labels, not {base.shape[0]}")
    way = (base & ~new).astype(np.int64) - (~base & new)  # +1 right→wrong, −1 wrong→right
    rows = np.bincount(numbers, minlength=count)
    share = np.bincount(numbers, weights=way, minlength=count) / np.maximum(rows, 1)
    spread = float(np.dot(share, share))
    statistic = float(share.sum()) ** 2 / spread if spread > 0 else 0.0
    b, c = int(np.count_nonzero(way > 0)), int(np.count_nonzero(way < 0))
    p = math.erfc(math.sqrt(statistic / 2.0)) if spread > 0 else 1.0
    return ClusteredMcNemarResult(b, c, b + c, count, statistic, p)
