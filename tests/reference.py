"""Slow exact references for the tests: plain Python over fractions.Fraction, bisect and math.

Nothing here imports calibcli: these functions are the independent side of every comparison.
Each float is turned into the Fraction it holds exactly, so sums, means and squared gaps carry
no rounding; a figure is rounded once, when it is returned as a float (the ``*_exact`` functions
return the Fraction itself). Only logarithms, exponentials and square roots go through math.

Binning (the contract calibcli documents): ``bins`` is either a number M of equal-width bins,
whose edges are ``k / M`` as Python computes it, or the list of edges itself. Bin k holds
``edges[k] <= c < edges[k + 1]``; a confidence at or above the last edge (c = 1.0) goes to the
last bin. Empty bins are kept.

Confidences and outcomes may be Python or numpy sequences; an outcome is right when
``bool(y)`` is true.
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist

Bins = int | Sequence[float]


def edges(bins: Bins) -> list[float]:
    """The bin edges: ``[k / M for k in 0..M]`` for a number M, else the given edges."""
    if isinstance(bins, numbers.Integral):
        return [k / int(bins) for k in range(int(bins) + 1)]
    return [float(e) for e in bins]


def bin_index(confidence: float, bins: Bins) -> int:
    """The k with edges[k] <= c < edges[k + 1]; c at or above the last edge is in the last bin."""
    return _index(float(confidence), edges(bins))


def _index(confidence: float, bounds: list[float]) -> int:
    return min(bisect.bisect_right(bounds, confidence) - 1, len(bounds) - 2)


def groups(confidences, correct, bins: Bins) -> list[list[tuple[Fraction, int]]]:
    """The rows of each bin as (exact confidence, 0 or 1), in input order."""
    bounds = edges(bins)
    out: list[list[tuple[Fraction, int]]] = [[] for _ in range(len(bounds) - 1)]
    for c, y in zip(confidences, correct, strict=True):
        out[_index(float(c), bounds)].append((Fraction(float(c)), int(bool(y))))
    return out


def counts(confidences, correct, bins: Bins) -> tuple[list[int], list[int]]:
    """(rows, right answers) per bin."""
    grouped = groups(confidences, correct, bins)
    return [len(g) for g in grouped], [sum(y for _, y in g) for g in grouped]


def reliability(confidences, correct, bins: Bins):
    """(mean confidence, accuracy, count) per bin as Python lists; 0.0 for empty bins."""
    means, accuracies, sizes = [], [], []
    for group in groups(confidences, correct, bins):
        n = len(group)
        sizes.append(n)
        means.append(float(sum(c for c, _ in group) / n) if n else 0.0)
        accuracies.append(float(Fraction(sum(y for _, y in group), n)) if n else 0.0)
    return means, accuracies, sizes


def ece_exact(confidences, correct, bins: Bins) -> tuple[Fraction, int]:
    """ECE = sum_k (n_k / N) |mean conf_k - accuracy_k| and the number of populated bins."""
    total = len(confidences)
    ece, populated = Fraction(0), 0
    for group in groups(confidences, correct, bins):
        n = len(group)
        if n == 0:
            continue
        populated += 1
        gap = sum(c for c, _ in group) / n - Fraction(sum(y for _, y in group), n)
        ece += Fraction(n, total) * abs(gap)
    return ece, populated


def ece(confidences, correct, bins: Bins) -> tuple[float, int]:
    """:func:`ece_exact` with the ECE rounded to a float."""
    value, populated = ece_exact(confidences, correct, bins)
    return float(value), populated


def brier_exact(confidences, correct) -> Fraction:
    """Brier score (1/N) sum_i (c_i - y_i)^2; 0 for no rows."""
    if len(confidences) == 0:
        return Fraction(0)
    squares = [
        (Fraction(float(c)) - int(bool(y))) ** 2 for c, y in zip(confidences, correct, strict=True)
    ]
    return sum(squares, Fraction(0)) / len(squares)


def decomposition_exact(confidences, correct, bins: Bins) -> dict[str, Fraction]:
    """Murphy's decomposition with the two within-bin terms of Stephenson, Coelho & Jolliffe (2008).

    reliability = (1/N) sum_k n_k (cbar_k - obar_k)^2
    resolution  = (1/N) sum_k n_k (obar_k - obar)^2
    uncertainty = obar (1 - obar)
    within_bin_variance   = (1/N) sum_k sum_{i in k} (c_i - cbar_k)^2
    within_bin_covariance = (2/N) sum_k sum_{i in k} (c_i - cbar_k)(y_i - obar_k)
    brier = reliability - resolution + uncertainty + within_bin_variance + within_bin_covariance
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
    obar = Fraction(sum(int(bool(y)) for y in correct), total)
    rel = res = wbv = wbc = Fraction(0)
    for group in groups(confidences, correct, bins):
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
        "brier": brier_exact(confidences, correct),
    }


def figures(confidences, correct, bins: Bins = 10) -> dict:
    """Every binned figure of a non-empty sample, as floats rounded once from exact values.

    accuracy, mean_confidence, brier; ece = sum_k (n_k/N) |gap_k|, populated_bins;
    mce = max_k |gap_k| over populated bins; rmsce = sqrt(sum_k (n_k/N) gap_k^2);
    rmsce_debiased = sqrt(max(0, sum_{k: n_k >= 2} (n_k/N) (gap_k^2 - obar_k (1 - obar_k)
    / (n_k - 1)))); ece_1bin = |mean confidence - accuracy|; decomposition (see
    :func:`decomposition_exact`); per_bin = (cbar_k, obar_k, n_k), (None, None, 0) when empty;
    edges.
    """
    grouped = groups(confidences, correct, bins)
    total = len(confidences)
    accuracy = Fraction(sum(int(bool(y)) for y in correct), total)
    mean_conf = sum((Fraction(float(c)) for c in confidences), Fraction(0)) / total
    ece = mce = ms = ms_debiased = Fraction(0)
    per_bin = []
    for group in grouped:
        n = len(group)
        if n == 0:
            per_bin.append((None, None, 0))
            continue
        cbar = sum(c for c, _ in group) / n
        obar = Fraction(sum(y for _, y in group), n)
        gap = abs(cbar - obar)
        per_bin.append((float(cbar), float(obar), n))
        ece += Fraction(n, total) * gap
        mce = max(mce, gap)
        ms += Fraction(n, total) * gap**2
        if n >= 2:
            ms_debiased += Fraction(n, total) * (gap**2 - obar * (1 - obar) / (n - 1))
    decomposition = decomposition_exact(confidences, correct, bins)
    return {
        "n": total,
        "accuracy": float(accuracy),
        "mean_confidence": float(mean_conf),
        "ece": float(ece),
        "populated_bins": sum(1 for g in grouped if g),
        "brier": float(decomposition["brier"]),
        "mce": float(mce),
        "rmsce": math.sqrt(ms),
        "rmsce_debiased": math.sqrt(max(Fraction(0), ms_debiased)),
        "ece_1bin": float(abs(mean_conf - accuracy)),
        "decomposition": {key: float(value) for key, value in decomposition.items()},
        "per_bin": per_bin,
        "edges": edges(bins),
    }


def log_loss(confidences, correct) -> float:
    """(1/N) sum_i -ln(c_i if right else 1 - c_i), summed with math.fsum (ln(1 - c) as
    math.log1p(-c)); inf when c_i = 1 on a wrong answer or 0 on a right one."""
    terms = []
    for c, y in zip(confidences, correct, strict=True):
        c = float(c)
        if (c == 0.0 and bool(y)) or (c == 1.0 and not bool(y)):
            return math.inf
        terms.append(-math.log(c) if bool(y) else -math.log1p(-c))
    return math.fsum(terms) / len(terms)


def auroc(confidences, correct) -> float | None:
    """Probability that a right answer's confidence beats a wrong one's (ties count half), by
    comparing every pair; None when one class is missing."""
    right = [float(c) for c, y in zip(confidences, correct, strict=True) if bool(y)]
    wrong = [float(c) for c, y in zip(confidences, correct, strict=True) if not bool(y)]
    if not right or not wrong:
        return None
    twice_wins = sum(2 if r > w else 1 if r == w else 0 for r in right for w in wrong)
    return float(Fraction(twice_wins, 2 * len(right) * len(wrong)))


def estimates(confidences, correct, bins: Bins = 10) -> dict:
    """:func:`figures` plus ``nll`` (:func:`log_loss`) and ``auroc`` (:func:`auroc`)."""
    out = figures(confidences, correct, bins)
    out["nll"] = log_loss(confidences, correct)
    out["auroc"] = auroc(confidences, correct)
    return out


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k successes in n, clipped to [0, 1]:
    (p + z^2/2n -/+ z sqrt(p(1 - p)/n + z^2/4n^2)) / (1 + z^2/n), z = Phi^-1(1/2 + level/2)."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def perplexity(nlls, tokens) -> dict:
    """Corpus figures of per-sequence negative log-likelihoods (nats) and token counts:
    total_nll, total_tokens, mean_nll = total_nll / total_tokens, perplexity = exp(mean_nll),
    bits_per_token = mean_nll / ln 2."""
    total_nll = sum((Fraction(float(x)) for x in nlls), Fraction(0))
    total_tokens = sum(int(t) for t in tokens)
    mean_nll = float(total_nll / total_tokens)
    return {
        "total_nll": float(total_nll),
        "total_tokens": total_tokens,
        "mean_nll": mean_nll,
        "perplexity": math.exp(mean_nll),
        "bits_per_token": mean_nll / math.log(2.0),
    }


def top_softmax(loglikelihoods) -> float:
    """The largest softmax probability of a list of log-likelihoods: 1 / sum_j exp(l_j - max l)."""
    top = max(loglikelihoods)
    return 1.0 / math.fsum(math.exp(x - top) for x in loglikelihoods)
