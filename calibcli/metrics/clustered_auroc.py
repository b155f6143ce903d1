"""DeLong's test of two AUROCs when the rows come in clusters (a question's epochs).

Obuchowski (1997), "Nonparametric analysis of clustered ROC curve data", Biometrics 53:567–578,
extended to two scores on the same rows. The positives are the right answers (M of them), the
negatives the wrong ones (N); cluster i holds m_i positives and n_i negatives (I clusters, I10
with a positive, I01 with a negative). With each row's structural component (V10 of a
positive: the share of negatives it outranks, ties half; V01 of a negative: the share of
positives that outrank it) summed per cluster, X_i = Σ_j V10 and Y_i = Σ_k V01, and the AUROC θ
of each score:

    S10 = I10 / ((I10 − 1) M) · Σ_i (X_i − m_i θ)(X'_i − m_i θ')
    S01 = I01 / ((I01 − 1) N) · Σ_i (Y_i − n_i θ)(Y'_i − n_i θ')
    S11 = I / (I − 1) · Σ_i (X_i − m_i θ)(Y'_i − n_i θ')
    Cov(θ, θ') = S10 / M + S01 / N + (S11 + S11ᵀ) / (M N)

for the two scores (primes: the other score, or the same one for a variance). With one row
per cluster this is DeLong's covariance exactly (S11 vanishes: no cluster holds both classes),
and k copies of each row give the covariance of one copy each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.metrics.clusters import cluster_numbers
from calibcli.metrics.paired import (
    DeLongResult,
    _placements_into,
    difference_test,
    scored_pair,
)

__all__ = ["ClusteredDeLongResult", "delong_clustered"]


@dataclass(frozen=True)
class ClusteredDeLongResult(DeLongResult):
    """As :class:`~calibcli.metrics.DeLongResult`, with ``questions`` the clusters."""

    questions: int


def delong_clustered(
    base_conf: object, new_conf: object, correct: object, clusters: object
) -> ClusteredDeLongResult:
    """DeLong's test that two confidence scores have the same AUROC for the same outcomes, the
    rows in ``clusters`` (integer labels, one per row): Obuchowski's covariance (module
    docstring), z = (AUROC_NEW − AUROC_BASE)/sqrt(Var), p = erfc(|z|/√2). Needs at least two
    clusters holding a right answer and two holding a wrong one (else ValueError)."""
    base, new, corr = scored_pair(base_conf, new_conf, correct)
    numbers, count = cluster_numbers(clusters)
    if numbers.shape[0] != corr.shape[0]:
        raise ValueError(f"clusters hold {numbers.shape[0]} labels, not {corr.shape[0]}")
    right_of, wrong_of = numbers[corr], numbers[~corr]
    m, n = right_of.shape[0], wrong_of.shape[0]
    m_i = np.bincount(right_of, minlength=count).astype(np.float64)
    n_i = np.bincount(wrong_of, minlength=count).astype(np.float64)
    i10, i01 = int(np.count_nonzero(m_i)), int(np.count_nonzero(n_i))
    if i10 < 2 or i01 < 2:
        raise ValueError(
            "DeLong's test for clustered rows needs at least 2 questions with a right answer and "
            f"2 with a wrong one, got {i10} and {i01}"
        )
    v10, v01 = np.empty((2, m)), np.empty((2, n))
    for side, scores in enumerate((base, new)):
        _placements_into(scores, corr, v10[side], v01[side])
    auc = v10.mean(axis=1)
    # each cluster's summed components, centred by its rows' share of the AUROC
    x = np.stack([np.bincount(right_of, weights=v, minlength=count) for v in v10])
    y = np.stack([np.bincount(wrong_of, weights=v, minlength=count) for v in v01])
    x -= m_i * auc[:, None]
    y -= n_i * auc[:, None]
    s10 = i10 / ((i10 - 1) * m) * (x @ x.T)
    s01 = i01 / ((i01 - 1) * n) * (y @ y.T)
    s11 = count / (count - 1) * (x @ y.T)
    s = s10 / m + s01 / n + (s11 + s11.T) / (m * n)
    auc_base, auc_new = float(auc[0]), float(auc[1])
    difference = auc_new - auc_base
    se, z, p, degenerate = difference_test(difference, s)
    cov = ((float(s[0, 0]), float(s[0, 1])), (float(s[1, 0]), float(s[1, 1])))
    return ClusteredDeLongResult(
        auc_base, auc_new, difference, cov, se, z, p, degenerate, m, n, count
    )
