"""Shared test configuration.

- Hypothesis runs deterministically (``derandomize=True``, no example database, no deadline)
  with a modest number of examples so the suite stays fast; ``HYPOTHESIS_PROFILE=thorough``
  runs more.
- The ``ref`` fixture exposes exact reference metrics written as plain Python loops over
  ``fractions.Fraction`` (every float is a Fraction exactly), independent of calibcli's numpy code.
  They implement the contract of issue 2 literally: bin k holds k/M <= c < (k+1)/M with the edge
  ``k / M`` as Python computes it, and c = 1.0 in the last bin.
"""

from __future__ import annotations

import bisect
import os
from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import settings

settings.register_profile(
    "calibcli", derandomize=True, max_examples=60, deadline=None, database=None
)
settings.register_profile("thorough", parent=settings.get_profile("calibcli"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "calibcli"))


def reference_bin(confidence: float, bins: int) -> int:
    """Bin of one confidence: the k with k/M <= c < (k+1)/M; 1.0 goes to the last bin."""
    edges = [k / bins for k in range(bins + 1)]
    return min(bisect.bisect_right(edges, confidence) - 1, bins - 1)


def _groups(confidences, correct, bins: int) -> list[list[tuple[Fraction, int]]]:
    groups: list[list[tuple[Fraction, int]]] = [[] for _ in range(bins)]
    for c, y in zip(confidences, correct, strict=True):
        groups[reference_bin(float(c), bins)].append((Fraction(float(c)), int(bool(y))))
    return groups


def reference_reliability(confidences, correct, bins: int):
    """(mean confidence, accuracy, count) per bin as Python lists; 0.0 for empty bins."""
    means, accuracies, counts = [], [], []
    for group in _groups(confidences, correct, bins):
        n = len(group)
        counts.append(n)
        means.append(float(sum(c for c, _ in group) / n) if n else 0.0)
        accuracies.append(float(Fraction(sum(y for _, y in group), n)) if n else 0.0)
    return means, accuracies, counts


def reference_ece_exact(confidences, correct, bins: int) -> tuple[Fraction, int]:
    """Exact ECE = sum_k (n_k / N) |mean conf_k - accuracy_k| and the number of populated bins."""
    total = len(confidences)
    ece, populated = Fraction(0), 0
    for group in _groups(confidences, correct, bins):
        n = len(group)
        if n == 0:
            continue
        populated += 1
        gap = sum(c for c, _ in group) / n - Fraction(sum(y for _, y in group), n)
        ece += Fraction(n, total) * abs(gap)
    return ece, populated


def reference_ece(confidences, correct, bins: int) -> tuple[float, int]:
    ece, populated = reference_ece_exact(confidences, correct, bins)
    return float(ece), populated


def reference_brier_exact(confidences, correct) -> Fraction:
    if len(confidences) == 0:
        return Fraction(0)
    squares = [
        (Fraction(float(c)) - int(bool(y))) ** 2 for c, y in zip(confidences, correct, strict=True)
    ]
    return sum(squares, Fraction(0)) / len(squares)


def reference_decomposition_exact(confidences, correct, bins: int) -> dict[str, Fraction]:
    """Murphy's decomposition with the two within-bin terms of Stephenson, Coelho & Jolliffe (2008).

    reliability = (1/N) sum_k n_k (cbar_k - obar_k)^2
    resolution  = (1/N) sum_k n_k (obar_k - obar)^2
    uncertainty = obar (1 - obar)
    within_bin_variance   = (1/N) sum_k sum_{i in k} (c_i - cbar_k)^2
    within_bin_covariance = (2/N) sum_k sum_{i in k} (c_i - cbar_k)(y_i - obar_k)
    """
    names = (
        "reliability",
        "resolution",
        "uncertainty",
        "within_bin_variance",
        "within_bin_covariance",
        "brier",
    )
    total = len(confidences)
    if total == 0:
        return dict.fromkeys(names, Fraction(0))
    groups = _groups(confidences, correct, bins)
    obar = Fraction(sum(int(bool(y)) for y in correct), total)
    rel = res = wbv = wbc = Fraction(0)
    for group in groups:
        n = len(group)
        if n == 0:
            continue
        cbar = sum(c for c, _ in group) / n
        obar_k = Fraction(sum(y for _, y in group), n)
        rel += n * (cbar - obar_k) ** 2
        res += n * (obar_k - obar) ** 2
        wbv += sum(((c - cbar) ** 2 for c, _ in group), Fraction(0))
        wbc += sum(((c - cbar) * (y - obar_k) for c, y in group), Fraction(0))
    return {
        "reliability": rel / total,
        "resolution": res / total,
        "uncertainty": obar * (1 - obar),
        "within_bin_variance": wbv / total,
        "within_bin_covariance": 2 * wbc / total,
        "brier": reference_brier_exact(confidences, correct),
    }


@pytest.fixture(scope="session")
def ref() -> SimpleNamespace:
    """Exact plain-Python reference metrics (see the module docstring)."""
    return SimpleNamespace(
        bin=reference_bin,
        reliability=reference_reliability,
        ece=reference_ece,
        ece_exact=reference_ece_exact,
        brier_exact=reference_brier_exact,
        decomposition_exact=reference_decomposition_exact,
    )
