"""Whether rows scored hold rows a calibrator (or a threshold) was fitted on, by content: the
rows' fingerprints (:mod:`calibcli.summaries.fingerprint`), and the rows scored themselves when
they are at hand.

Held-out rows share values with the fitted rows by chance where values repeat (four decimals:
about a fifth of 2,000 rows' values), so a share found counts only beyond what chance would
find (:func:`chance_share`). Two directions are looked at: the fitted rows among the rows scored
(dev scored inside dev + test), and the rows scored among the fitted rows (a slice of the
fitting rows scored as a test), the second only with the rows scored at hand. Rows written
again through a float32 column, or rounded to 4 decimals, hold other doubles than those fitted
on: with the rows scored at hand, both sides are compared under those roundings too.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from calibcli.summaries.fingerprint import (
    ROUNDINGS,
    SAMPLE,
    RowFingerprint,
    among_sorted,
    calibration_hashes,
    rounded_hashes,
    rounded_prints,
    sorted_distinct,
)

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
    """The distinct hashes of kept rows (right and wrong answers) of their exact confidences,
    sorted."""
    right = calibration_hashes(kept.right, np.ones(kept.right.shape[0], bool))
    wrong = calibration_hashes(kept.wrong, np.zeros(kept.wrong.shape[0], bool))
    return sorted_distinct(np.concatenate([right, wrong]))


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
        found = among_sorted(fitted.sample, hashes)
        share = float(found.mean()) if fitted.sample.shape[0] else 0.0
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
    share = float(among_sorted(hashes, fitted.sample).mean())
    chance = chance_share(fitted.distinct(), fitted.rows)
    looked = hashes.shape[0] if sampled else None
    return share if _beyond(share, chance, SLICE_SHARE, looked) else None


def in_sample_note(
    fitted: Any,
    scored: Any,
    what: str,
    consequence: str,
    kept: Any = None,
    *,
    rounded: dict[str, Any] | None = None,
    fitted_kept: Any = None,
    here: str = "scored here",
) -> str | None:
    """A warning when the rows scored contain rows that ``fitted`` (a fingerprint) describes,
    decided by content (the rows' values), not by file names: the same rows exactly (in any
    order); more of the fitted rows' distinct values among the rows scored (dev + test scored
    together) than ``IN_SAMPLE_SHARE`` of those chance would not find; or, with the rows
    scored at hand (``kept``, every row of ``scored``), more of them among the fitted rows
    than ``SLICE_SHARE`` of those chance would not find (a slice of the fitting rows). None
    otherwise, and when either set repeats its values so much that shared values say nothing
    (:meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_rows_apart`).

    With the rows scored at hand, the same is asked again of the rows under each rounding of
    :data:`~calibcli.summaries.fingerprint.ROUNDINGS` (rows written again through float32, or
    rounded): the fitted rows' rounded fingerprints are ``rounded`` (as a calibrator file
    records them), else made from ``fitted_kept`` (every fitted row); without either (a
    calibrator written before them) only the exact values are compared. ``here`` says what
    the command does with the rows (apply's "read here")."""
    at_hand = kept is not None and kept.n == scored.rows
    note = _note(fitted, scored, what, consequence, kept if at_hand else None, here=here)
    if note is not None or not at_hand or not fitted.rows:
        return note
    if rounded is None and fitted_kept is not None and fitted_kept.n == fitted.rows:
        rounded = rounded_prints(fitted_kept.right, fitted_kept.wrong)
    for name, how in ROUNDINGS.items():
        mine = (rounded or {}).get(name)
        if mine is None or mine.rows != fitted.rows:  # not the rows ``fitted`` describes
            continue
        hashes = rounded_hashes(kept.right, kept.wrong, name)
        theirs = RowFingerprint()
        theirs.add(hashes)
        note = _note(mine, theirs, what, consequence, kept, (name, how), here=here, hashes=hashes)
        if note is not None:
            return note
    return None


def rows_in_sample_note(fitted: Any, scored: Any, what: str, consequence: str) -> str | None:
    """:func:`in_sample_note` for two summaries (a threshold's --fit rows and the rows it is
    evaluated on): their fingerprints, and their kept rows when they were kept."""
    return in_sample_note(
        fitted.fingerprint,
        scored.fingerprint,
        what,
        consequence,
        kept=getattr(scored, "kept", None),
        fitted_kept=getattr(fitted, "kept", None),
    )


def _note(
    fitted: Any,
    scored: Any,
    what: str,
    consequence: str,
    kept: Any,
    rounding: tuple[str, str] | None = None,
    *,
    here: str,
    hashes: np.ndarray | None = None,
) -> str | None:
    """:func:`in_sample_note` for one pair of fingerprints, of the exact values or of the
    values under ``rounding`` (its name and how a message says it); ``kept`` the rows scored,
    when at hand, and ``hashes`` their hashes under ``rounding`` (made by the caller, which
    fingerprinted them)."""
    if not fitted.rows or not scored.rows:
        return None
    said = "" if rounding is None else f" ({rounding[1]})"
    if fitted.same_rows(scored):
        return f"the {scored.rows:,} rows {here} are {what}{said}: {consequence}"
    if not (fitted.tells_rows_apart() and scored.tells_rows_apart()):
        return None
    if hashes is not None:
        hashes = sorted_distinct(hashes)
    elif kept is not None:
        hashes = _hashes(kept)
    # a share is of values found, an estimate: held to what the rows allow, as a value several
    # fitted rows share is found whole when any one of them is scored
    share = _fitted_among_scored(fitted, scored, hashes)
    if share is not None:
        share = min(share, scored.rows / fitted.rows)
        return (
            f"about {share:.0%} of {what} ({fitted.rows:,}) are among the {scored.rows:,} "
            f"rows {here}{said}: {consequence}"
        )
    share = _scored_among_fitted(fitted, hashes)
    if share is not None:
        share = min(share, fitted.rows / scored.rows, 1.0)
        return (
            f"about {share:.0%} of the {scored.rows:,} rows {here} are among {what} "
            f"({fitted.rows:,}){said}: {consequence}"
        )
    return None


RECALIBRATED = (
    "the figures after recalibration are in-sample for them and flatter the map; score "
    "held-out rows, or use --recalibrate METHOD --folds K",
    "the figures after recalibration are in-sample and flatter it; score held-out rows, or "
    "use --recalibrate METHOD --folds K",
)
"""What the figures after a calibrator fitted on the rows scored are: said of rows found by
content, and of a file found by name."""


def scored_in_sample(
    calibrators: Any,
    summary: Any,
    files: list[str],
    *,
    here: str = "scored here",
    consequence: tuple[str, str] = RECALIBRATED,
) -> str | None:
    """The warning that the rows scored hold rows the calibrator (a
    :class:`~calibcli.summaries.recalibrate.CalibratorFile`) was fitted on, or None: by content
    (the fingerprints the file records, :func:`in_sample_note`), else, for a file that records
    none, by the files named. The figures after such a calibrator are in-sample and flatter
    it, so a gate on them cannot pass on its word. ``here`` and ``consequence`` (said of rows
    found by content, and of a file found by name) word it for another command than calibrate
    (apply, whose rows would be scored later)."""
    fingerprint = calibrators.fingerprint
    if fingerprint is not None:
        note = in_sample_note(
            fingerprint,
            summary.fingerprint,
            "the rows the calibrator was fitted on",
            consequence[0],
            kept=getattr(summary, "kept", None),
            rounded=calibrators.rounded,
            here=here,
        )
        if note is not None or (
            fingerprint.tells_rows_apart() and summary.fingerprint.tells_rows_apart()
        ):
            return note
    # no fingerprint recorded, or values too coarse for one to tell: the files named decide,
    # a folder or a pattern on either side standing for its files
    fitted = set().union(*(_same_files(f) for f in calibrators.fitted_on.get("files") or []))
    overlap = sorted(f for f in files if f != "-" and _same_files(f) & fitted)
    if not overlap:
        return None
    named = ", ".join(overlap)
    return f"the calibrator was fitted on {named}, which is {here} too: {consequence[1]}"


def _same_files(name: str) -> set[str]:
    """The files a name stands for, compared across runs: a file's resolved path (as given
    when it does not exist), each file in a folder (as a folder is read, not its subfolders'),
    every path a quoted pattern matches."""
    import glob

    path = Path(name)
    if not path.exists() and glob.has_magic(name):
        return set().union(*(_same_files(m) for m in glob.glob(name))) or {name}
    if path.is_dir():
        return {str(p.resolve()) for p in path.iterdir() if p.is_file()} or {name}
    return {str(path.resolve())} if path.exists() else {name}
