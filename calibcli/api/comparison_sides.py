"""What :func:`~calibcli.compare` knows of its two sides given as Predictions, as compare of
the files knows it of its files: the tasks their runs are of, the scorer their inspect-ai logs
were graded by, whether their matched rows ask the same questions, and the reading options
that grade them or compute their confidences (each side is read with its own; the command
reads both one way, and refuses summary files, which hold no rows). The report
(:func:`calibcli.reports.compare_matching.sides_apart`) says so of sides apart and fails every
gate closed on them, as the command's does."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from calibcli.api.predictions import Predictions
from calibcli.summaries import PairedRows

# the formats whose rows are graded by a reading option, and the option (an inspect-ai log's
# scorer is checked with the scorers its logs hold)
_GRADED_BY = (("jsonl", "correct_field"), ("openai", "gold_field"))
# the formats whose confidences a reading option computes, and the option: lm-eval's
# multiple-choice normalisation (acc or acc_norm), inspect-ai's confidence source
_SCORED_BY = (("lm-eval", "mc_norm"), ("inspect-ai", "inspect_confidence"))
# the modes --inspect-confidence auto takes by: sides taken by them otherwise are said by the
# report's own check of the samples (calibcli.reports.compare_sides.taken_two_ways)
_AUTO_MODES = ("auto", "answer-token", "sequence")


@dataclass(frozen=True)
class SidesRows(PairedRows):
    """Compare's rows with what the report checks of its sides: ``tasks`` and ``scorers`` as
    :class:`calibcli.io.compared.TaskedRows` holds them, ``same_questions`` (paired: every
    matched row's document is known on both sides and the two agree) and ``graded`` (each
    reading option that grades the rows and was given otherwise on each side: its name, BASE's
    value, NEW's value), ``scored`` (each reading option that computes the confidences and was
    given otherwise on each side, alike)."""

    tasks: tuple[Any, Any] | None = None
    scorers: tuple[str | None, str | None] | None = None
    same_questions: bool = False
    graded: tuple[tuple[str, Any, Any], ...] = ()
    scored: tuple[tuple[str, Any, Any], ...] = ()
    # a side's scorer was given to read it, not the one its logs hold (the warning says so)
    scorers_given: bool = False


def with_sides(matched: Any, base: Predictions, new: Predictions, *, paired: bool) -> SidesRows:
    """``matched`` with what the sides' files say of them (:class:`SidesRows`); rows given as
    arrays say nothing."""
    found = {f.name: getattr(matched, f.name) for f in fields(PairedRows)}
    if not (base.files and new.files):
        return SidesRows(**found)
    from calibcli.io import side_scorers, side_tasks

    files = _files(base), _files(new)
    tasks = side_tasks(*files)
    same = paired and tasks[0] != tasks[1] and _same_questions(base, new)
    return SidesRows(
        **found,
        tasks=tasks,
        scorers=_scorers(base, new, files, side_scorers),
        same_questions=same,
        graded=_graded(base, new),
        scored=_scored(base, new),
        scorers_given=base.scorer is not None or new.scorer is not None,
    )


def _files(rows: Predictions) -> list[tuple[str, Any]]:
    """Each file a side was read from, with its format, as compare's reader lists them."""
    return [(path, fmt) for path, _, fmt in rows.parts]


def _scorers(base: Predictions, new: Predictions, files: tuple, side_scorers: Any) -> Any:
    """The scorer each side's inspect-ai rows were graded by: the one given to read it, else
    the one its logs hold (:func:`calibcli.io.side_scorers`); None when both were read with
    one scorer given, as ``--scorer`` grades both sides of the command alike."""
    if base.scorer is not None and base.scorer == new.scorer:
        return None
    held = side_scorers(*files, scorer=None)
    return tuple(
        rows.scorer if rows.scorer is not None and _graded_by_scorer(rows) else found
        for rows, found in zip((base, new), held, strict=True)
    )


def _graded_by_scorer(rows: Predictions) -> bool:
    """Whether the rows hold inspect-ai rows (the only ones a scorer grades)."""
    return "inspect-ai" in _formats(rows)


def _graded(base: Predictions, new: Predictions) -> tuple[tuple[str, Any, Any], ...]:
    """The reading options that grade rows of a format both sides hold, given otherwise on
    each side (a JSON Lines row's right answer read from another field)."""
    both = _formats(base) & _formats(new)
    return tuple(
        (option, _value(base, option), _value(new, option))
        for fmt, option in _GRADED_BY
        if fmt in both and _value(base, option) != _value(new, option)
    )


def _scored(base: Predictions, new: Predictions) -> tuple[tuple[str, Any, Any], ...]:
    """The reading options that compute the confidences of rows of a format both sides hold,
    given otherwise on each side (one lm-eval run read as acc on BASE and acc_norm on NEW).
    inspect-ai rows both taken by auto's modes are left to the report, which counts how each
    side's samples were taken."""
    both = _formats(base) & _formats(new)
    found = []
    for fmt, option in _SCORED_BY:
        mine, theirs = getattr(base, option), getattr(new, option)
        if fmt not in both or mine == theirs:
            continue
        if option == "inspect_confidence" and {mine, theirs} <= set(_AUTO_MODES):
            continue
        found.append((option, mine, theirs))
    return tuple(found)


def _value(rows: Predictions, option: str) -> Any:
    """A reading option as the rows were read with it: a field of theirs, or as they record it."""
    return getattr(rows, option, None) or rows.read_as.get(option)


def _formats(rows: Predictions) -> set[str]:
    return {fmt for _, _, fmt in rows.parts if fmt is not None} | {rows.format}


def _same_questions(base: Predictions, new: Predictions) -> bool:
    """Whether every NEW row whose id matches a BASE row's asks, as both rows' documents say,
    the question that BASE row asks (False when a document is not known, or no row matched),
    as compare of the files finds it of runs whose names differ."""
    if not base.documents or not new.documents or base.keys is None or new.keys is None:
        return False
    row_of = {key: i for i, key in enumerate(base.keys)}
    pairs = [(row_of[key], j) for j, key in enumerate(new.keys) if key in row_of]
    return bool(pairs) and all(
        (mine := new.documents.get(j)) is not None and mine == base.documents.get(i)
        for i, j in pairs
    )
