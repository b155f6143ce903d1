"""Whether rows scored hold rows a calibrator (or a threshold) was fitted on, by content: the
rows' fingerprints (:mod:`calibcli.summaries.fingerprint`), and the rows scored themselves when
they are at hand.

Held-out rows share values with the fitted rows by chance where values repeat (four decimals:
about a fifth of 2,000 rows' values), so a share found counts only beyond what chance would
find (:func:`chance_share`). Two directions are looked at: the fitted rows among the rows scored
(dev scored inside dev + test), and the rows scored among the fitted rows (a slice of the
fitting rows scored as a test), the second only with the rows scored at hand.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibcli.summaries.fingerprint import SAMPLE, calibration_hashes

IN_SAMPLE_SHARE = 0.1
"""A share of fitted rows found among the scored rows from which the overlap is named, on rows
whose values never repeat; on rows that repeat some, it is that share of the fitted rows beyond
``CHANCE_WEIGHT`` times the share found by chance (:func:`chance_share`)."""
CHANCE_WEIGHT = 1.5
"""How far the chance share is raised: it is estimated as if every value were as likely as
every other, which falls short of the chance of values drawn unevenly (a model's confidences
crowd some values), by about 15% for four-decimal confidences drawn from Beta(5, 2)."""


def chance_share(distinct: float, rows: int) -> float:
    """About the share of another set's distinct values found by chance among ``rows`` rows
    holding ``distinct`` distinct values, both drawn alike, as if from K equally likely values:
    n rows of K values hold K (1 - exp(-x)) distinct (x = n / K), so x is solved from
    distinct / n = (1 - exp(-x)) / x, and a value is among them with chance 1 - exp(-x)
    (0 for rows that never repeat a value, 1 for rows of one value)."""
    if rows <= 0 or distinct >= rows:
        return 0.0
    ratio = max(distinct, 1.0) / rows
    lo, hi = 0.0, 1.0
    while (1.0 - math.exp(-hi)) / hi > ratio:  # (1 - e^-x) / x falls from 1 as x grows
        hi *= 2.0
        if hi > 1e6:
            return 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if mid == 0.0 or (1.0 - math.exp(-mid)) / mid > ratio:
            lo = mid
        else:
            hi = mid
    return 1.0 - math.exp(-(lo + hi) / 2.0)


SLICE_SHARE = 0.5
"""The share of the rows scored that must be fitted rows beyond chance for a slice of the
fitting rows to be named: the share is measured on the few rows scored whose hashes fall below
the fitted sketch's largest (about 512 x scored / fitted of them), so a wide margin keeps chance
from naming held-out rows."""
SLICE_LOOKED = 20
"""Values looked up below which a share says nothing: rows scored looked up in the fitted
sketch, or, from the sketches alone, fitted values whose presence among the rows scored is
known."""


def _hashes(kept: Any) -> np.ndarray:
    """The distinct hashes of kept rows (right and wrong answers), sorted."""
    right = calibration_hashes(kept.right, np.ones(kept.right.shape[0], bool))
    wrong = calibration_hashes(kept.wrong, np.zeros(kept.wrong.shape[0], bool))
    return np.unique(np.concatenate([right, wrong]))


NOISE_Z = 3.0
"""Standard errors a share measured on a sample of values must clear besides the margin."""


def _beyond(share: float, chance: float, margin: float, sampled: int | None = None) -> bool:
    """Whether ``share`` exceeds ``margin`` of what ``CHANCE_WEIGHT`` times ``chance`` leaves,
    by ``NOISE_Z`` standard errors when it was measured on ``sampled`` values drawn from more
    (a sketch's): a share of a few dozen values swings by several points."""
    chance = min(1.0, CHANCE_WEIGHT * chance)
    noise = 0.0 if not sampled else NOISE_Z * math.sqrt(share * (1.0 - share) / sampled)
    return share > chance + (1.0 - chance) * margin + noise


def _fitted_among_scored(fitted: Any, scored: Any, hashes: np.ndarray | None) -> float | None:
    """The share of the fitted rows' distinct values found among the rows scored, when it is
    beyond chance (else None): each value of the fitted sketch looked up among the rows'
    own hashes when they are at hand, else the sketches' estimate, which says nothing when it
    rests on fewer than ``SLICE_LOOKED`` values (a small fitted set beside a large one)."""
    if hashes is None:
        share, looked = fitted.containment(scored)
        # the scored rows' sketch holds them all (exact), or only some: then a fitted value's
        # presence is known for a few, and those few are a sample
        sampled = looked if scored.sample.shape[0] >= SAMPLE else None
        if sampled is not None and looked < SLICE_LOOKED:
            return None
        chance = chance_share(scored.distinct(), scored.rows)
    else:
        share = float(np.isin(fitted.sample, hashes).mean()) if fitted.sample.shape[0] else 0.0
        chance = chance_share(float(hashes.shape[0]), scored.rows)
        full = fitted.sample.shape[0] >= SAMPLE  # a sample of the fitted values, not all
        sampled = fitted.sample.shape[0] if full else None
    return share if _beyond(share, chance, IN_SAMPLE_SHARE, sampled) else None


def _scored_among_fitted(fitted: Any, hashes: np.ndarray | None) -> float | None:
    """The share of the rows scored found among the fitted rows, when it is beyond chance
    (else None): the sketch holds every fitted value below its largest hash, so each value
    scored below it is looked up exactly; with fewer than ``SLICE_LOOKED`` such values, or
    without the rows scored, None."""
    if hashes is None or not fitted.sample.shape[0]:
        return None
    sampled = fitted.sample.shape[0] >= SAMPLE
    if sampled:
        hashes = hashes[hashes <= fitted.sample[-1]]
    if hashes.shape[0] < SLICE_LOOKED:
        return None
    share = float(np.isin(hashes, fitted.sample).mean())
    chance = chance_share(fitted.distinct(), fitted.rows)
    looked = hashes.shape[0] if sampled else None
    return share if _beyond(share, chance, SLICE_SHARE, looked) else None


def in_sample_note(
    fitted: Any, scored: Any, what: str, consequence: str, kept: Any = None
) -> str | None:
    """A warning when the rows scored contain rows that ``fitted`` (a fingerprint) describes,
    decided by content (the rows' values), not by file names: the same rows exactly (in any
    order); more of the fitted rows' distinct values among the rows scored (dev + test scored
    together) than ``IN_SAMPLE_SHARE`` of those chance would not find; or, with the rows
    scored at hand (``kept``, every row of ``scored``), more of them among the fitted rows
    than ``SLICE_SHARE`` of those chance would not find (a slice of the fitting rows). None
    otherwise, and when either set repeats its values so much that shared values say nothing
    (:meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_rows_apart`)."""
    if not fitted.rows or not scored.rows:
        return None
    if fitted.same_rows(scored):
        return f"the {scored.rows:,} rows scored here are {what}: {consequence}"
    if not (fitted.tells_rows_apart() and scored.tells_rows_apart()):
        return None
    hashes = None if kept is None or kept.n != scored.rows else _hashes(kept)
    share = _fitted_among_scored(fitted, scored, hashes)
    if share is not None:
        return (
            f"about {share:.0%} of {what} ({fitted.rows:,}) are among the {scored.rows:,} "
            f"rows scored here: {consequence}"
        )
    share = _scored_among_fitted(fitted, hashes)
    if share is not None:
        return (
            f"about {share:.0%} of the {scored.rows:,} rows scored here are among {what} "
            f"({fitted.rows:,}): {consequence}"
        )
    return None
