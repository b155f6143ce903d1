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

Where the values are too coarse for a shared value to say a row is shared (lm-eval's bf16
loglikelihoods: a hundred distinct confidences in 600 rows), the inputs decide: each input a fit
read (:class:`FittedSource`, after older re-runs were left out) is recorded with its
content's identity and its rows' multiset hash, so an input scored again is found under any name
(a deterministic re-run under another time stamp), and an input the fit did not read is never
taken for one it did because a folder holds both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
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
    evaluated on): their fingerprints, and their kept rows when they were kept; else an input
    of the rows scored that is one the fitted rows were read from, by its bytes or its rows
    (:func:`shared_input_note`), which values too coarse for the fingerprints still tell."""
    note = in_sample_note(
        fitted.fingerprint,
        scored.fingerprint,
        what,
        consequence,
        kept=getattr(scored, "kept", None),
        fitted_kept=getattr(fitted, "kept", None),
    )
    if note is not None:
        return note
    inputs = fitted_sources(getattr(fitted, "sources", ()), resolve=False)
    return shared_input_note(inputs, scored, what, consequence)


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
    content_of: Callable[[str], str] | None = None,
) -> str | None:
    """The warning that the rows scored hold rows the calibrator (a
    :class:`~calibcli.summaries.recalibrate.CalibratorFile`) was fitted on, or None: by content
    (the fingerprints the file records, :func:`in_sample_note`); then by the inputs it records
    its fit read (:func:`shared_input_note`: an input of the same bytes, or of the same rows,
    under any name); and, where it records no fingerprint or the values are too coarse for one
    to tell, by name: the files its fit read against the files read here, never a folder's
    other files. The files read here are ``summary``'s sources, else ``files`` (the files
    read, each known by its bytes' identity through ``content_of``, as
    :func:`calibcli.io.file_content_id` gives it). A calibrator written before it recorded
    its inputs is judged by the files its fit was given, a folder or a pattern on either side
    standing for its files. The figures after such a calibrator are in-sample and flatter it,
    so a gate on them cannot pass on its word. ``here`` and ``consequence`` (said of rows
    found by content, and of a file found by name) word it for another command than
    calibrate (apply, whose rows would be scored later)."""
    fingerprint = calibrators.fingerprint
    what = "the rows the calibrator was fitted on"
    apart = False
    if fingerprint is not None:
        note = in_sample_note(
            fingerprint,
            summary.fingerprint,
            what,
            consequence[0],
            kept=getattr(summary, "kept", None),
            rounded=calibrators.rounded,
            here=here,
        )
        if note is not None:
            return note
        apart = fingerprint.tells_rows_apart() and summary.fingerprint.tells_rows_apart()
    if calibrators.sources is not None:
        # rows read from another field of the same bytes are other rows
        settings, recorded = summary.settings, calibrators.fitted_on
        fields = ("confidence_field", "correct_field")
        alike = all(recorded.get(k, getattr(settings, k)) == getattr(settings, k) for k in fields)
        note = shared_input_note(
            calibrators.sources,
            summary,
            what,
            consequence,
            here=here,
            by_name="the calibrator was fitted on",
            files=files,
            content_of=content_of,
            alike=alike,
        )
        if note is not None or apart:
            return note
        read = [(s.display, s.name) for s in _read(summary)] or [(f, f) for f in files]
        fitted = {_resolved(f.file) for f in calibrators.sources if f.file != "-"}
        overlap = sorted(
            {shown for shown, name in read if name != "-" and _resolved(name) in fitted}
        )
    elif apart:
        return None
    else:
        # a calibrator that does not record its inputs: the files named decide, a folder or
        # a pattern on either side standing for its files
        fitted = set().union(*(_same_files(f) for f in calibrators.fitted_on.get("files") or []))
        overlap = sorted(f for f in files if f != "-" and _same_files(f) & fitted)
    if not overlap:
        return None
    named = ", ".join(overlap)
    return f"the calibrator was fitted on {named}, which is {here} too: {consequence[1]}"


# --------------------------------------------------------------------------- inputs read


@dataclass(frozen=True)
class FittedSource:
    """An input a fit read rows of, as a calibrator file records it under ``sources``:
    ``file``, its resolved path (as given when it was not found; ``-`` for standard input);
    ``content``, the identity of its bytes (:mod:`calibcli.io.content`; None where not
    known); ``rows``, the rows read from it; ``start`` and ``stop``,
    the byte range read (``stop`` None: to its end); ``rows_hash``, the multiset hash of its
    rows and whether equal hashes tell a copy
    (:attr:`~calibcli.summaries.sources.Source.rows_hash`; None where not recorded)."""

    file: str
    content: str | None
    rows: int
    start: int = 0
    stop: int | None = None
    rows_hash: tuple[int, bool] | None = None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"file": self.file}
        if self.content:
            found["content"] = self.content
        found["rows"] = self.rows
        if self.stop is not None:  # a byte range of the file, not all of it
            found["start"], found["stop"] = self.start, self.stop
        if self.rows_hash is not None:
            found["rows_hash"] = [f"{self.rows_hash[0]:016x}", self.rows_hash[1]]
        return found

    @classmethod
    def from_dict(cls, value: Any) -> FittedSource:
        """The source of :meth:`to_dict`; ValueError naming what is wrong."""
        if not isinstance(value, dict) or not isinstance(value.get("file"), str):
            raise ValueError(f"{value!r} names no file")
        file, content = value["file"], value.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"{file}: content {content!r} is not a text")
        rows, start, stop = value.get("rows"), value.get("start", 0), value.get("stop")
        for key, n in (("rows", rows), ("start", start), ("stop", 0 if stop is None else stop)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ValueError(f"{file}: {key} {n!r} is not a count")
        rows_hash = value.get("rows_hash")
        if rows_hash is not None:
            ok = isinstance(rows_hash, list) and len(rows_hash) == 2
            total, apart = rows_hash if ok else (None, None)
            if not (isinstance(total, str) and len(total) == 16 and type(apart) is bool):
                raise ValueError(f"{file}: rows_hash {rows_hash!r} is not [16 hex digits, bool]")
            try:
                rows_hash = int(total, 16), apart
            except ValueError:
                raise ValueError(f"{file}: rows_hash {rows_hash!r} is not hexadecimal") from None
        return cls(file, content or None, rows, start, stop, rows_hash)


def fitted_sources(sources: Iterable[Any], *, resolve: bool = True) -> tuple[FittedSource, ...]:
    """Each input ``sources`` (a summary's) read rows of, as a calibrator file records it: those
    skipped, or read without rows, are not (older re-runs left out are not among a summary's
    sources at all). ``resolve``: name each by its resolved path, as a file read later in
    another folder still compares; else as given. An input that names neither a content nor
    a file (rows given to the Python API as arrays) is not recorded."""
    out = []
    for s in sources:
        if s.skipped is not None or not s.rows:
            continue
        if not s.content and (s.name == "-" or not Path(s.name).is_file()):
            continue
        name = _resolved(s.name) if resolve else s.name
        # the pieces of a file read with --part, merged whole, are the file read whole
        start, stop = (0, None) if s.start == 0 and s.stop == s.size else (s.start, s.stop)
        out.append(FittedSource(name, s.content or None, s.rows, start, stop, s.rows_hash))
    return tuple(out)


def recorded_rows(calibrators: Any) -> dict[str, Any]:
    """What a calibrator file records of the rows it was fitted on, to tell them again: its
    ``fingerprint`` (with the ``rounded`` ones) and the ``sources`` its fit read, each where
    known (a file without them reads as one written before they were recorded)."""
    body: dict[str, Any] = {}
    if calibrators.fingerprint is not None:
        body["fingerprint"] = calibrators.fingerprint.to_dict()
        if calibrators.rounded:
            rounded = {k: v.to_dict() for k, v in calibrators.rounded.items()}
            body["fingerprint"]["rounded"] = rounded
    if calibrators.sources is not None:
        body["sources"] = [s.to_dict() for s in calibrators.sources]
    return body


def read_recorded(body: dict[str, Any]) -> tuple[Any, Any, tuple[FittedSource, ...] | None]:
    """The fingerprint, the rounded fingerprints and the sources a calibrator file's ``body``
    records (:func:`recorded_rows`), each None where it records none; ValueError naming what
    is wrong."""
    from calibcli.summaries.fingerprint import RowFingerprint, rounded_from_dict

    fingerprint = rounded = sources = None
    if "fingerprint" in body:
        fingerprint = RowFingerprint.from_dict(body["fingerprint"])
        rounded = rounded_from_dict(body["fingerprint"])
    if "sources" in body:
        if not isinstance(body["sources"], list):
            raise ValueError('"sources" is not a list')
        try:
            sources = tuple(FittedSource.from_dict(s) for s in body["sources"])
        except ValueError as exc:
            raise ValueError(f'"sources": {exc}') from None
    return fingerprint, rounded, sources


def shared_input_note(
    fitted: Sequence[FittedSource],
    scored: Any,
    what: str,
    consequence: str | tuple[str, str],
    *,
    here: str = "scored here",
    by_name: str | None = None,
    files: Sequence[str] = (),
    content_of: Callable[[str], str] | None = None,
    alike: bool = True,
) -> str | None:
    """A warning when an input the rows ``scored`` (a summary) were read from is one of the
    inputs ``fitted`` the fitted rows were read from, or None: the same bytes (their content's
    identity, the byte ranges read overlapping, :func:`_same_bytes`; ``alike``: both sides'
    rows were read by the same fields), whatever either is named; or the same rows in other
    bytes (their multiset hashes, where the values tell a copy). Where the summary
    records no inputs of its own (rows rewritten by apply, rows given to the Python API), all
    its rows are compared with each fitted input's rows, and named by the one of ``files``
    (those read) that is that input; and each of ``files`` is compared by its bytes' identity,
    given by ``content_of``. ``consequence``: what that means, or
    (said of rows, said of a file: a calibrator's :data:`RECALIBRATED`); ``by_name`` how an
    input read under the same name is said to have been read for the fit ("the calibrator was
    fitted on")."""
    said = (consequence, consequence) if isinstance(consequence, str) else consequence
    fitted_on = by_name or f"{what} include those of"
    inputs = _read(scored)
    if not inputs and content_of is not None:  # the files read, whose rows are not told apart
        inputs = [_File(name, content_of(name)) for name in files if name != "-"]
    for s in inputs:
        for f in fitted:
            bytes_ = _same_bytes(f, s, alike)
            if not (bytes_ or _same_rows(f.rows_hash, f.rows, s.rows_hash, s.rows)):
                continue
            if _resolved(s.name) == _resolved(f.file):
                return f"{fitted_on} {s.display}, which is {here} too: {said[1]}"
            held = "the same bytes" if bytes_ else "the same rows in other bytes"
            return (
                f"{what} include those of {f.file}, and {s.display}, {here}, holds {held}: "
                f"{said[0]}"
            )
    whole = None if scored.fingerprint is None else scored.fingerprint.key()
    for f in fitted if whole is not None else ():
        if not _same_rows(f.rows_hash, f.rows, whole, scored.fingerprint.rows):
            continue
        same = [name for name in files if _resolved(name) == _resolved(f.file)]
        if same:
            return f"{fitted_on} {same[0]}, which is {here} too: {said[1]}"
        return (
            f"{what} include those of {f.file}, and the {scored.fingerprint.rows:,} rows "
            f"{here} are its rows: {said[0]}"
        )
    return None


@dataclass(frozen=True)
class _File:
    """A file read whose rows a summary does not tell apart from other files': its name and
    its bytes' identity, as a source of the whole file that records no rows' hash."""

    name: str
    content: str
    start: int = 0
    stop: int | None = None
    rows: int = 0
    rows_hash: None = None

    @property
    def display(self) -> str:
        return self.name


def _read(summary: Any) -> list[Any]:
    """The inputs a summary read rows of (none for rows summarized from arrays)."""
    return [s for s in getattr(summary, "sources", ()) if s.skipped is None and s.rows]


def _same_rows(
    mine: tuple[int, bool] | None, rows: int, theirs: tuple[int, bool] | None, others: int
) -> bool:
    """Whether two multiset hashes of rows say the same rows: equal, of as many rows, and both
    of values that tell a copy."""
    if mine is None or theirs is None or rows != others:
        return False
    return mine[0] == theirs[0] and mine[1] and theirs[1]


def _same_bytes(fitted: FittedSource, scored: Any, alike: bool) -> bool:
    """Whether a scored input is a fitted one by its bytes: the same content's identity, the
    byte ranges read overlapping, and the rows read from them the same where both record
    their hash over the same range (the bytes read by another field, or another
    --mc-norm, are other rows); else whether both sides were read ``alike``."""
    if not (scored.content and scored.content == fitted.content and _overlap(fitted, scored)):
        return False
    span = (scored.start, scored.stop)
    if span == (0, getattr(scored, "size", None)):  # the pieces of a file merged whole
        span = (0, None)
    hashed = fitted.rows_hash is not None and scored.rows_hash is not None
    if hashed and span == (fitted.start, fitted.stop):
        return fitted.rows_hash[0] == scored.rows_hash[0]
    return alike


def _overlap(fitted: FittedSource, scored: Any) -> bool:
    """Whether the byte ranges read of one input overlap (a range without a stop runs to the
    end): two pieces of a file read with --part are other rows."""
    end = math.inf if fitted.stop is None else fitted.stop
    other_end = math.inf if scored.stop is None else scored.stop
    return fitted.start < other_end and scored.start < end


def _resolved(name: str) -> str:
    """A file's resolved path, compared across folders and runs (as given when it is not
    found, and for standard input)."""
    if name == "-":
        return name
    path = Path(name)
    try:
        return str(path.resolve()) if path.exists() else name
    except OSError:
        return name


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
