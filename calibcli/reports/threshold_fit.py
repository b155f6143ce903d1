"""Where the rows a threshold is chosen on (``threshold --fit``) came from, against the rows it
is evaluated on, checked as a calibrator's ``fitted_on`` is against the rows it maps
(:mod:`calibcli.io.calibrator_checks`), with the same outcomes.

A threshold is a cut on one kind of number. Rows whose confidences were read another way (JSON
Lines rows from another field, lm-eval scores under another multiple-choice normalisation,
OpenAI confidences renormalised over other options) hold other numbers, and where that is so a
summary file's rows cannot be read again: refused, as for a calibrator (``InputError``, exit 2
at the command). Rows of another model, or graded by another notion of a right answer (another
--correct-field, --scorer or --gold-field), are warned of and a --min-coverage gate fails
closed: the threshold's guarantee is of the accuracy of the model and the grading it was chosen
on. Rows of another lm-eval task only get a warning (carrying a threshold over is a use, but
a stated one). Rows of another format, or inspect-ai confidences taken by another mode, get
the warnings of :func:`other_rows`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from calibcli.errors import InputError

CHOICE_FORMATS = ("openai", "openai-evals")
"""The formats whose confidence is an option's probability renormalised over ``--choices``."""

OTHER_MODEL = (
    "the threshold was chosen on another model's rows (see the warning): a threshold on one "
    "model's confidences says nothing of another's"
)
"""Why --min-coverage fails closed on a threshold chosen on another model's rows."""
GRADED_OTHERWISE = (
    "the threshold was chosen on rows graded another way (see the warning): its guarantee is "
    "of another notion of a right answer"
)
"""Why --min-coverage fails closed on a threshold chosen on rows graded another way."""


@dataclass(frozen=True)
class FitOrigin:
    """What the --fit rows' provenance says against the evaluated rows': warnings, and the
    reason a --min-coverage gate fails closed (None: it does not on their account)."""

    notes: tuple[str, ...] = ()
    closed: str | None = None


def fit_origin(fit: Any, evaluated: Any, read: Mapping[str, Any]) -> FitOrigin:
    """The checks of the --fit rows (``fit``, a summary) against the evaluated rows
    (``evaluated``), ``read`` saying how each was read beyond its settings: ``fit`` and
    ``evaluated``, :func:`calibcli.io.read_as` of each side's rows (models, tasks, scorer,
    gold field, answer options), and ``summaries``, the summary files among each side's
    inputs (``fit``, ``evaluated``), whose rows cannot be read again another way. InputError
    (named by the summary files) for rows that hold other numbers; else the warnings and the
    gate's reason."""
    made, seen = read.get("fit") or {}, read.get("evaluated") or {}
    summaries = read.get("summaries") or {}
    sides = (list(summaries.get("fit") or ()), list(summaries.get("evaluated") or ()))
    mine, theirs = _formats(fit), _formats(evaluated)
    refused = _other_groups(fit.settings.by, evaluated.settings.by) or _other_numbers(
        fit.settings, evaluated.settings, made, seen, sides, mine & theirs
    )
    if refused is not None:
        named = sides[0] or sides[1]
        raise InputError(", ".join(named) if named else "--fit", None, refused)
    graded = _graded_otherwise(fit.settings, evaluated.settings, made, seen, mine & theirs)
    task, model = _other_task(made, seen), _other_model(made, seen)
    notes = tuple(n for n in (*graded, task, model) if n)
    closed = OTHER_MODEL if model else (GRADED_OTHERWISE if graded else None)
    return FitOrigin(notes, closed)


def _formats(summary: Any) -> set[str]:
    return {s.format for s in summary.sources if s.format is not None and s.skipped is None}


def _listed(names: Any) -> str:
    return ", ".join(repr(n) for n in names)


def _other_groups(made: str | None, seen: str | None) -> str | None:
    """Why the --fit rows' groups cannot choose the evaluated groups' thresholds: they are
    grouped by another field, and a group named alike would take another field's rows."""
    if None in (made, seen) or made == seen:
        return None
    return (
        f"the --fit rows are grouped by --by {made}, the evaluated rows by --by {seen}: each "
        "group's threshold would be chosen on the rows of another field's group of the same "
        "name; summarize both with one --by"
    )


def _other_numbers(
    made: Any, seen: Any, fit_read: Any, read: Any, sides: tuple[list, list], both: set[str]
) -> str | None:
    """Why a threshold chosen on the --fit rows cannot be held against the evaluated rows'
    confidences, read another way (where both sides hold rows that read the setting), or
    None. Files beside a summary file are read with its settings, so the sides differ only
    where a summary file is among their inputs (``sides``: those of --fit, of the evaluated
    rows), and its rows cannot be read again."""
    compared = [
        ("jsonl", "confidence_field", made.confidence_field, seen.confidence_field),
        ("lm-eval", "mc_norm", made.mc_norm, seen.mc_norm),
    ]
    options = fit_read.get("choices"), read.get("choices")
    if None not in options and sorted(options[0]) != sorted(options[1]):
        compared.append((CHOICE_FORMATS, "choices", ",".join(options[0]), ",".join(options[1])))
    for formats, key, mine, theirs in compared:
        held = bool(both & set(formats)) if isinstance(formats, tuple) else formats in both
        if not held or mine == theirs:
            continue
        option = "--" + key.replace("_", "-")
        if key == "confidence_field":
            what = f"the field {mine!r} (--fit); the evaluated rows were read from the field "
            what += repr(theirs)
        elif key == "mc_norm":
            what = f"{option} {mine} scores (--fit); the evaluated rows are read with {option} "
            what += theirs
        else:
            what = f"confidences renormalised over {option} {mine} (--fit); the evaluated rows "
            what += f"over {option} {theirs}"
        return (
            f"the threshold is chosen on {what}: a cut on one kind of number accepts other "
            "rows held against another, and a summary file's rows cannot be read again another "
            "way: " + _remedy(option, mine, theirs, bool(sides[0]), bool(sides[1]))
        )
    return None


def _remedy(option: str, mine: str, theirs: str, fit_summary: bool, summary: bool) -> str:
    """How to read both sides one way: give the one summary file's value, which the files of
    the other side are then read with too, or summarize its inputs again."""
    again = f"summarize the --fit inputs again with {option} {theirs}"
    if fit_summary and not summary:
        return f"give {option} {mine} to read the evaluated files so too, or {again}"
    if summary and not fit_summary:
        return (
            f"give {option} {theirs} to read the --fit files so too, or summarize the "
            f"evaluated inputs again with {option} {mine}"
        )
    return f"{again}, or the evaluated ones with {option} {mine}"


def _other_model(made: Mapping[str, Any], seen: Mapping[str, Any]) -> str | None:
    """A warning when the evaluated rows are of models the --fit rows' runs do not name (rows
    whose runs name no model say nothing), as :func:`calibcli.io.other_model` says of a
    calibrator; names compared as written."""
    chosen_on = [m for m in made.get("models") or () if m]
    others = sorted(set(seen.get("models") or ()) - set(chosen_on) - {""})
    if not chosen_on or not others:
        return None
    return (
        f"the threshold was chosen on rows of model {_listed(chosen_on)} (--fit); the evaluated "
        f"rows are of model {_listed(others)}, as their runs name them: a threshold on one "
        "model's confidences says nothing of another's, so a --min-coverage gate fails closed; "
        "choose the threshold on this model's rows"
    )


def _other_task(made: Mapping[str, Any], seen: Mapping[str, Any]) -> str | None:
    """A warning when the evaluated rows are of lm-eval tasks the --fit rows are not of."""
    tasks = sorted(set(seen.get("tasks") or ()) - set(made.get("tasks") or ()))
    if not made.get("tasks") or not tasks:
        return None
    return (
        f"the threshold was chosen on rows of task {_listed(made['tasks'])} (--fit); it is "
        f"evaluated on rows of task {_listed(tasks)}, and a threshold may not carry over to "
        "another task"
    )


def _graded_otherwise(
    made: Any, seen: Any, fit_read: Mapping[str, Any], read: Mapping[str, Any], both: set[str]
) -> list[str]:
    """Warnings for evaluated rows graded another way than the --fit rows: JSON Lines rows by
    another --correct-field, inspect-ai samples by another --scorer, OpenAI responses against
    another --gold-field (where both sides hold rows of that format, and say it)."""
    compared = (
        ("jsonl", "--correct-field", made.correct_field, seen.correct_field),
        ("inspect-ai", "--scorer", fit_read.get("scorer"), read.get("scorer")),
        ("openai", "--gold-field", fit_read.get("gold_field"), read.get("gold_field")),
    )
    notes = []
    for fmt, option, mine, theirs in compared:
        if fmt not in both or not isinstance(mine, str) or not isinstance(theirs, str):
            continue
        if mine != theirs:
            notes.append(
                f"the threshold was chosen on rows graded by {option} {mine} (--fit); the "
                f"evaluated rows are graded by {option} {theirs}: its guarantee is of the "
                "accuracy by another notion of a right answer, so a --min-coverage gate fails "
                "closed; grade both sides alike"
            )
    return notes


def other_rows(fit: Any, summary: Any) -> list[str]:
    """A warning when the evaluated rows are of another format than the --fit rows the threshold
    was chosen on: their confidences may be taken another way (a softmax over choices, a token's
    probability, a stated number), and a threshold is a cut on one kind of number; held against
    another kind it accepts other rows."""
    out = []
    chosen_on, others = _formats(fit), sorted(_formats(summary) - _formats(fit))
    if chosen_on and others:
        out.append(
            f"the threshold was chosen on {', '.join(sorted(chosen_on))} rows (--fit) and is "
            f"evaluated on {', '.join(others)} rows, whose confidences may be taken another way"
        )
    # inspect-ai rows of both: --inspect-confidence auto takes the answer token's probability
    # where a sample has an answer line, else the sequence's, so the two may differ in kind
    taken, evaluated = fit.inspect_confidence, summary.inspect_confidence
    if taken is not None and evaluated is not None and taken != evaluated:
        out.append(
            f"the threshold was chosen on inspect-ai confidences taken by {taken} (--fit) and "
            f"is evaluated on ones taken by {evaluated}, another kind of number: give "
            "--inspect-confidence to take both one way"
        )
    return out
