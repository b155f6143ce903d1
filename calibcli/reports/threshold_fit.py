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
a stated one). Rows of another format get the warning of :func:`other_rows`.

inspect-ai confidences taken by another rule than the --fit rows' (:func:`~calibcli.summaries.
same_rule`, as for a calibrator) are refused where the two sides were read with other
--inspect-confidence modes, which a summary file's rows cannot be read again in; where both
were read with one mode (``auto``, which takes the answer token's probability where a sample
has an answer line, else the sequence's), the rows took their confidences by one rule, so the
two kinds they hold are warned of and a --min-coverage gate fails closed. Either way the
remedy named is one that the inputs as given can follow."""

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
OTHER_INSPECT_MODE = (
    "the threshold was chosen on inspect-ai confidences taken another way (see the warning): a "
    "cut on one kind of number accepts other rows held against another"
)
"""Why --min-coverage fails closed on a threshold chosen on inspect-ai confidences of another
kind than those it is evaluated on."""
AUTO_MODES = ("auto", "answer-token", "sequence")
"""The modes inspect-ai rows read with ``auto`` take (``auto``: both, on several samples)."""


@dataclass(frozen=True)
class FitOrigin:
    """What the --fit rows' provenance says against the evaluated rows': warnings, and the
    reason a --min-coverage gate fails closed (None: it does not on their account)."""

    notes: tuple[str, ...] = ()
    closed: str | None = None
    others: str | None = None  # the reason but for another model's rows (a group of one model)


def fit_origin(fit: Any, evaluated: Any, read: Mapping[str, Any]) -> FitOrigin:
    """The checks of the --fit rows (``fit``, a summary) against the evaluated rows
    (``evaluated``), ``read`` saying how each was read beyond its settings: ``fit`` and
    ``evaluated``, :func:`calibcli.io.read_as` of each side's rows (models, tasks, scorer,
    gold field, answer options), and ``summaries``, the summary files among each side's
    inputs (``fit``, ``evaluated``), whose rows cannot be read again another way; and, from
    the Python API, ``inspect_confidence`` (each side's mode, auto resolved, as its
    Predictions hold it: the summaries it builds record none) and ``api`` (remedies spelled as
    its arguments). InputError (named by the summary files) for rows that hold other numbers;
    else the warnings and the gate's reason."""
    made, seen = read.get("fit") or {}, read.get("evaluated") or {}
    summaries = read.get("summaries") or {}
    sides = (list(summaries.get("fit") or ()), list(summaries.get("evaluated") or ()))
    mine, theirs = _formats(fit), _formats(evaluated)
    refused = _other_groups(fit.settings.by, evaluated.settings.by, sides) or _other_numbers(
        fit.settings, evaluated.settings, made, seen, sides, mine & theirs
    )
    if refused is not None:
        named = sides[0] or sides[1]
        raise InputError(", ".join(named) if named else "--fit", None, refused)
    modes = _inspect_modes(fit, evaluated, read.get("inspect_confidence"))
    api = bool(read.get("api"))
    taken_otherwise, two_kinds = None, False
    if modes is not None:
        refused = _other_mode(*modes, sides, api)
        if refused is not None:  # each side's summary files hold the mode they were read in
            named = [*sides[0], *sides[1]]
            raise InputError(", ".join(named) if named else "--fit", None, refused)
        taken_otherwise, two_kinds = _taken_otherwise(*modes, sides, api)
    graded = _graded_otherwise(fit.settings, evaluated.settings, made, seen, mine & theirs)
    task, model = _other_task(made, seen), _other_model(made, seen)
    notes = tuple(n for n in (taken_otherwise, *graded, task, model) if n)
    others = GRADED_OTHERWISE if graded else (OTHER_INSPECT_MODE if two_kinds else None)
    return FitOrigin(notes, OTHER_MODEL if model else others, others)


def other_model_sections(fit: Any, summary: Any, closed: str | None) -> frozenset | None:
    """Where a --min-coverage gate fails closed on a threshold chosen on another model's rows
    (``closed``: :func:`fit_origin`'s reason; :data:`OTHER_MODEL`), by section (a group's name,
    None for the pooled figures); None where every section does, as the report's reason.

    Where the evaluated rows are several models' (``mixed``) under --by, a group known to be
    one model's is held against the model of its own --fit rows, not against the models of
    other groups' rows: it fails closed unless the --fit rows of its group are known to be
    that same model's. Under --by task a group is one model's when its files name one
    (``single_model``, each side's ``groups_known.models``); the pooled figures and the other
    groups fail closed as several models' rows all the same. Under --by model each group is
    the rows of the model it is named for where every source on its side records that model
    so (each side's ``groups_known.named``); the pooled figures pool the models' rows, chosen
    on the --fit rows of some of them."""
    if closed != OTHER_MODEL or not getattr(summary, "mixed", None):
        return None
    by = getattr(getattr(summary, "settings", None), "by", None)
    mine, theirs = getattr(fit, "groups_known", None), getattr(summary, "groups_known", None)
    if by == "model":
        same = set(getattr(mine, "named", ())) & set(getattr(theirs, "named", ()))
        return frozenset({None, *(summary.group_names or ())}) - same
    made = getattr(mine, "models", None) or {}
    seen = getattr(theirs, "models", None) or {}
    apart = getattr(summary, "single_model", frozenset())
    return frozenset(g for g in apart if g not in seen or made.get(g) != seen[g])


def _formats(summary: Any) -> set[str]:
    return {s.format for s in summary.sources if s.format is not None and s.skipped is None}


def _listed(names: Any) -> str:
    return ", ".join(repr(n) for n in names)


def _other_groups(made: str | None, seen: str | None, sides: tuple[list, list]) -> str | None:
    """Why the --fit rows' groups cannot choose the evaluated groups' thresholds: grouped by
    another field, a group named alike would take another field's rows; grouped where the
    evaluated rows are not, or not where they are, each group's threshold would be chosen on
    rows of every group, or on groups the evaluated rows are not split into. Both sides are
    read with one --by, so they differ only where a summary file holds its own (``sides``:
    those of --fit, of the evaluated rows), whose rows cannot be grouped again."""
    if made == seen:
        return None
    if made is not None and seen is not None:
        return (
            f"the --fit rows are grouped by --by {made}, the evaluated rows by --by {seen}: "
            "each group's threshold would be chosen on the rows of another field's group of "
            "the same name; summarize both with one --by"
        )
    if made is None:
        why = "each group's threshold would be chosen on the --fit rows of every group"
    else:
        why = "the threshold would be chosen on groups the evaluated rows are not split into"
    ways = []
    if sides[0] and not sides[1] and made is not None:  # the evaluated files take --by given
        ways.append(f"give --by {made} to read the evaluated files so too")
    if sides[1] and not sides[0] and seen is not None:  # the --fit files take the same --by
        ways.append(f"give --by {seen} to read the --fit files so too")
    if sides[0]:
        ways.append(f"summarize the --fit inputs again {_grouped_by(seen)}")
    if sides[1]:
        again = "the evaluated ones" if sides[0] else "summarize the evaluated inputs again"
        ways.append(f"{again} {_grouped_by(made)}")
    return (
        f"the --fit rows are {_grouping(made)}, the evaluated rows {_grouping(seen)}: {why}; "
        + (", or ".join(ways) or "group both sides alike")
    )


def _grouping(by: str | None) -> str:
    return "not grouped" if by is None else f"grouped by --by {by}"


def _grouped_by(by: str | None) -> str:
    return "without --by" if by is None else f"with --by {by}"


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
        "model's confidences says nothing of another's, so a --min-coverage gate on them fails "
        "closed; choose the threshold on this model's rows"
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
    another kind it accepts other rows. (inspect-ai confidences taken by another mode are
    :func:`fit_origin`'s.)"""
    chosen_on, others = _formats(fit), sorted(_formats(summary) - _formats(fit))
    if not chosen_on or not others:
        return []
    return [
        f"the threshold was chosen on {', '.join(sorted(chosen_on))} rows (--fit) and is "
        f"evaluated on {', '.join(others)} rows, whose confidences may be taken another way"
    ]


def fit_only_groups(fit_groups: Any, summary: Any) -> list[str]:
    """A warning naming the --by groups found only in the --fit rows (``fit_groups``, by name):
    no section of their own, yet the pooled threshold was chosen on their rows too."""
    from calibcli.reports.report import GROUPS_NAMED

    views = summary.by_group()
    evaluated = set() if views is None else {str(name) for name in views}
    only = [g for g in fit_groups or () if views is not None and str(g) not in evaluated]
    if not only:
        return []
    listed = ", ".join(f"{str(g)!r} ({fit_groups[g].n:,} rows)" for g in only[:GROUPS_NAMED])
    listed += f" and {len(only) - GROUPS_NAMED:,} more" if len(only) > GROUPS_NAMED else ""
    one = len(only) == 1
    which = "group" if one else f"{len(only):,} groups"
    text = f"the --fit input's {which} {listed} {'has' if one else 'have'} no evaluated rows: "
    text += f"{'it is' if one else 'they are'} not reported, but the pooled threshold was chosen "
    return [text + f"on {'its' if one else 'their'} rows too"]


@dataclass(frozen=True)
class _Mode:
    """How one side's inspect-ai rows took their confidences: ``asked``, the
    --inspect-confidence mode they were read with (``known``: recorded, not inferred from
    ``taken``), and ``taken``, auto resolved (:func:`~calibcli.summaries.joined_mode`)."""

    asked: str
    taken: str
    known: bool = True

    def read(self) -> str:
        """The mode as the messages name it: auto with the modes its samples took, or where
        the mode asked is not known, the one they took."""
        if not self.known:
            return self.taken
        if self.asked != "auto":
            return self.asked
        both = "answer-token and sequence" if self.taken == "auto" else self.taken
        return f"auto ({both} on these samples)"

    def one_way(self) -> str | None:
        """A mode that reads rows into this side's kind of number, not auto's per-sample
        choice (None: these rows took both of auto's)."""
        return next((m for m in (self.asked, self.taken) if m != "auto"), None)


def _inspect_modes(fit: Any, evaluated: Any, recorded: Any) -> tuple[_Mode, _Mode] | None:
    """Each side's :class:`_Mode` where both hold inspect-ai rows whose modes are known:
    ``recorded`` (the API's, ``{"fit": taken, "evaluated": taken}``; the mode asked inferred
    from it), else each summary's own (its settings' mode, and its sources')."""
    if recorded is not None:
        pairs = [(None, recorded.get("fit")), (None, recorded.get("evaluated"))]
    else:
        pairs = [(s.settings.inspect_confidence, s.inspect_confidence) for s in (fit, evaluated)]
    if any(taken is None for _, taken in pairs):
        return None
    made, seen = (
        _Mode(_asked(asked, taken), taken, _asked(asked, taken) == asked) for asked, taken in pairs
    )
    return made, seen


def _asked(asked: str | None, taken: str) -> str:
    """The mode rows that took ``taken`` were read with: ``asked`` where it is one that gives
    ``taken``, else auto for one of auto's modes (as a calibrator's check takes it), else the
    mode itself."""
    if asked == taken or (asked == "auto" and taken in AUTO_MODES):
        return asked
    return "auto" if taken in AUTO_MODES else taken


def _other_mode(made: _Mode, seen: _Mode, sides: tuple[list, list], api: bool) -> str | None:
    """Why a threshold chosen on the --fit rows' inspect-ai confidences cannot be held against
    the evaluated rows': read with another --inspect-confidence mode, they took theirs by
    another rule (:func:`~calibcli.summaries.same_rule`), as a calibrator's check refuses
    them; or None."""
    from calibcli.summaries import same_rule

    if made.asked == seen.asked or same_rule(made.taken, seen.taken, seen.asked):
        return None
    o = _spelled(api)
    why = "a cut on one kind of number accepts other rows held against another"
    if not api:
        why += ", and a summary file's rows cannot be read again another way"
    return (
        f"the threshold is chosen on {o(made.read())} confidences (--fit); the evaluated rows "
        f"are read with {o(seen.read())}: {why}: {_mode_remedy(made, seen, sides, api)}"
    )


def _mode_remedy(made: _Mode, seen: _Mode, sides: tuple[list, list], api: bool) -> str:
    """How to read both sides one way, where the inputs as given allow it: a side's files read
    in the other side's summary file's own mode (given here, the one it can be read with), or
    a side's inputs summarized again (read again, from the API) in a mode that takes the other
    side's kind of number (not auto's per-sample choice)."""
    o = _spelled(api, remedy=True)
    mine, theirs = made.one_way(), seen.one_way()
    if api:
        ways = [f"read the evaluated rows with {o(mine)}" if mine else None]
        ways.append(f"read the fit rows with {o(theirs)}" if theirs else None)
    elif sides[0] and sides[1]:
        ways = [f"summarize the --fit inputs again with {o(theirs)}" if theirs else None]
        again = "the evaluated ones" if theirs else "summarize the evaluated inputs again"
        ways.append(f"{again} with {o(mine)}" if mine else None)
    elif sides[0]:  # the evaluated files are read with the mode given here
        given = made.asked != "auto"
        ways = [f"give {o(made.asked)} to read the evaluated files so too" if given else None]
        ways.append(f"summarize the --fit inputs again with {o(theirs)}" if theirs else None)
    else:  # the --fit files are read with the mode given here
        given = seen.asked != "auto"
        ways = [f"give {o(seen.asked)} to read the --fit files so too" if given else None]
        ways.append(f"summarize the evaluated inputs again with {o(mine)}" if mine else None)
    return ", or ".join(w for w in ways if w)


def _taken_otherwise(
    made: _Mode, seen: _Mode, sides: tuple[list, list], api: bool
) -> tuple[str | None, bool]:
    """A warning when the evaluated inspect-ai rows took their confidences another way than
    the --fit rows and are not refused for it (read with one mode: auto's per-sample choice),
    with how to take both one way that the inputs as given can follow; and whether the two are
    of another kind
    (:func:`~calibcli.summaries.same_rule`), on whose account a --min-coverage gate fails
    closed (evaluated rows that took both of auto's modes fail every gate closed on their
    own, with that reason)."""
    from calibcli.summaries import same_rule

    if made.taken == seen.taken:
        return None, False
    one_way = " to take both one way"
    if api:
        advice = f"read both sides with one inspect_confidence other than 'auto'{one_way}"
    elif sides[0] and sides[1]:
        advice = (
            "summarize the inputs of both sides again with one --inspect-confidence other "
            f"than auto{one_way}"
        )
    elif sides[0] or sides[1]:
        which, other = ("--fit", "evaluated") if sides[0] else ("evaluated", "--fit")
        advice = (
            f"summarize the {which} inputs again with one --inspect-confidence other than "
            f"auto, and give it here to read the {other} files so too"
        )
    else:  # both sides read in this run, with the one --inspect-confidence given
        advice = f"give --inspect-confidence{one_way}"
    return (
        f"the threshold was chosen on inspect-ai confidences taken by {made.taken} (--fit) and "
        f"is evaluated on ones taken by {seen.taken}, another kind of number: {advice}"
    ), seen.taken != "auto" and not same_rule(made.taken, seen.taken, seen.asked)


def _spelled(api: bool, *, remedy: bool = False) -> Any:
    """``--inspect-confidence MODE``, or the API's ``inspect_confidence=MODE``
    (``inspect_confidence='MODE'`` in a remedy, as it is typed)."""

    def spelled(mode: str) -> str:
        if not api:
            return f"--inspect-confidence {mode}"
        return f"inspect_confidence={mode!r}" if remedy else f"inspect_confidence={mode}"

    return spelled
