"""A calibrator file checked against the rows it maps, for ``--calibrator`` and for the Python
API's ``Calibrator.apply``: one set of checks, worded for the option or the keyword that
reads the rows. What the fit could never have recorded is refused as the file is read
(:func:`check_fitted_names`); how the rows were read (:class:`RowsRead`) against what the file
records is refused where the map would score other numbers, and said in a warning where it
was asked for by name or only may not carry over (:func:`calibrator_notes`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RowsRead:
    """How the rows a calibrator maps were read. ``formats``: each file's; ``read_as``:
    :func:`calibcli.io.read_as` of them; ``inspect_given``: the --inspect-confidence asked
    (None: not known), ``inspect_taken`` the mode their confidences took. ``confidence_given``:
    whether the confidence field was asked for by name; when it was not, a field other than
    the calibrator's is that of a summary file, which the rows cannot be read again by.
    ``summarized``: the rows' --by field is a summary file's own. ``api``: words the messages
    for the Python API's keywords (``mc_norm='chars'``) instead of the options."""

    fmt: str
    formats: frozenset[str]
    confidence_field: str
    correct_field: str
    mc_norm: str
    by: str | None = None
    scorer: str | None = None
    gold_field: str | None = None
    inspect_given: str | None = None
    inspect_taken: str | None = None
    read_as: dict[str, Any] = field(default_factory=dict)
    confidence_given: bool = True
    summarized: bool = False
    api: bool = False

    @classmethod
    def of_summary(cls, data: Any, *, confidence_given: bool = True) -> RowsRead:
        """How a summary's rows were read (its settings: a summary file's where it was one;
        the scorer its inspect-ai logs were graded by, ``--scorer`` or the one they hold)."""
        from calibcli.io.provenance import read_as

        settings = data.settings
        found = read_as(data)
        return cls(
            fmt=data.fmt,
            formats=frozenset(data.formats.values()),
            confidence_field=settings.confidence_field,
            correct_field=settings.correct_field,
            mc_norm=settings.mc_norm,
            by=settings.by,
            scorer=found.get("scorer", settings.scorer),
            gold_field=settings.gold_field,
            inspect_given=settings.inspect_confidence,
            inspect_taken=data.inspect_confidence,
            read_as=found,
            confidence_given=confidence_given,
            summarized=True,
        )

    def option(self, name: str, value: Any = None, *, remedy: bool = False) -> str:
        """:func:`option` as these rows' messages spell it."""
        return option(name, value, api=self.api, remedy=remedy)


def option(name: str, value: Any = None, *, api: bool = False, remedy: bool = False) -> str:
    """``--mc-norm chars`` (``--by`` without a value), or the API's ``mc_norm=chars``
    (``mc_norm='chars'`` in a remedy, as it is typed)."""
    if api:
        if value is None:
            return name
        return f"{name}={value!r}" if remedy else f"{name}={value}"
    flag = "--" + name.replace("_", "-")
    return flag if value is None else f"{flag} {value}"


def other_groups(
    calibrators: Any, by: str | None, *, summarized: bool = False, api: bool = False
) -> str | None:
    """Why rows grouped by ``by``, another field than the one a calibrator was fitted per
    group of, cannot take its maps (groups named alike would take another field's maps), or
    None. ``summarized``: ``by`` is a summary file's own, which its rows cannot change."""
    made = calibrators.by
    if None in (made, by) or made == by:
        return None
    fitted, asked = option("by", made, api=api), option("by", by, api=api)
    grouped = f"per {asked}"
    remedy = f"give {option('by', made, api=api, remedy=True)}, or no {option('by', api=api)}"
    remedy += " for its pooled map"
    if summarized:
        grouped += ", as the summary file's rows are grouped"
        remedy = f"fit one per {asked} group, or summarize the files with {fitted}"
    return f"the calibrator was fitted per {fitted} group, not {grouped}: {remedy}"


def other_norm(calibrators: Any, rows: RowsRead) -> str | None:
    """Why lm-eval rows scored with another multiple-choice normalisation cannot take the map
    (alone or among other formats' rows: the lm-eval rows are read with it either way)."""
    norm = calibrators.fitted_on.get("mc_norm")
    if "lm-eval" not in rows.formats or not isinstance(norm, str) or norm == rows.mc_norm:
        return None
    o = rows.option
    return (
        f"the calibrator was fitted on {o('mc_norm', norm)} scores; these rows are read with "
        f"{o('mc_norm', rows.mc_norm)}: give {o('mc_norm', norm, remedy=True)}"
    )


def other_inspect_mode(calibrators: Any, rows: RowsRead) -> str | None:
    """Why inspect-ai rows that took their confidences by another rule than the rows the
    calibrator was fitted on cannot take its map (:func:`~calibcli.summaries.same_rule`): a map
    of whole-sequence probabilities would be applied to first-token ones. Where the mode asked
    is not known, rows whose samples each took one of auto's modes are taken as read with auto."""
    from calibcli.summaries import same_rule

    mode = calibrators.fitted_on.get("inspect_confidence")
    taken = rows.inspect_taken
    if not isinstance(mode, str) or taken is None:
        return None
    given = rows.inspect_given
    if given is None:
        given = "auto" if taken in ("auto", "answer-token", "sequence") else taken
    if same_rule(mode, taken, given):
        return None
    read = given
    if given == "auto":  # auto takes a mode per sample: say which these took
        modes = "answer-token and sequence" if taken == "auto" else taken
        read = f"auto ({modes} on these samples)"
    o = rows.option
    return (
        f"the calibrator was fitted on {o('inspect_confidence', mode)} confidences; these rows "
        f"are read with {o('inspect_confidence', read)}: give "
        f"{o('inspect_confidence', mode, remedy=True)}, or fit a calibrator on these rows"
    )


def other_field(calibrators: Any, rows: RowsRead) -> tuple[str | None, str | None]:
    """(why the map cannot be applied, or a warning) when JSON Lines rows' confidences were
    read from another field than the rows the calibrator was fitted on: a warning where the
    field was asked for by name, refused where a summary file's rows hold it (they cannot be
    read again from another field). Rows of other formats beside them do not change that."""
    recorded = calibrators.fitted_on.get("confidence_field")
    read = rows.confidence_field
    if "jsonl" not in rows.formats or not isinstance(recorded, str) or recorded == read:
        return None, None
    o = rows.option
    if not rows.confidence_given:
        return (
            f"the calibrator was fitted on the field {recorded!r}; the summary file's rows were "
            f"read from the field {read!r}, and a summary cannot read them again: summarize "
            f"the files with {o('confidence_field', recorded)} (or give "
            f"{o('confidence_field', read)} to map {read!r} with its map)"
        ), None
    if rows.api:
        return None, (
            f"the calibrator was fitted on the field {recorded!r}; it maps {read!r} here, the "
            f"field these rows were read with ({o('confidence_field', read, remedy=True)})"
        )
    return None, (
        f"the calibrator was fitted on the field {recorded!r}; it maps {read!r} here, as "
        "--confidence-field asked"
    )


def calibrator_notes(calibrators: Any, rows: RowsRead, groups: Any = None) -> list[str]:
    """The checks of a calibrator against the rows it maps: ValueError (one line, the
    calibrator file named when it was read from one) for another --by field, multiple-choice
    normalisation, inspect-ai confidence mode or OpenAI --choices, or a summary file's rows of
    another confidence field; else the warnings: another confidence field asked for by name,
    rows of another format (their confidences may be taken another way), graded another way,
    of another task or another model, or a map fitted on several models' rows pooled (the
    commands' gates on the figures after it then fail closed, and the text says so), and for
    the commands, rows that take the pooled map of a file fitted per --by group (``groups``:
    the --by group names read)."""
    from calibcli.io.provenance import (
        graded_otherwise,
        other_choices,
        other_model,
        other_task,
        several_models,
    )
    from calibcli.summaries import pooled_map_note

    fitted, scored = calibrators.fitted_on, rows.read_as
    field_refused, field_note = other_field(calibrators, rows)
    for refused in (
        other_groups(calibrators, rows.by, summarized=rows.summarized, api=rows.api),
        other_norm(calibrators, rows),
        other_inspect_mode(calibrators, rows),
        other_choices(fitted, scored, "choices=" if rows.api else "--choices "),
        field_refused,
    ):
        if refused is not None:
            where = f"{calibrators.path}: " if calibrators.path is not None else ""
            raise ValueError(where + refused)
    notes = [field_note] if field_note else []
    fitted_format = fitted.get("format")
    others = sorted(f for f in rows.formats if f != fitted_format)
    if isinstance(fitted_format, str) and fitted_format != "mixed" and others:
        # another format takes its confidence another way (a softmax over choices, a token's
        # probability, a stated number): the map may not fit these numbers
        notes.append(
            f"the calibrator was fitted on {fitted_format} rows; it maps {', '.join(others)} "
            "rows here, whose confidences may be taken another way"
        )
    given = {"correct_field": rows.correct_field, "scorer": rows.scorer}
    given["gold_field"] = rows.gold_field
    notes += graded_otherwise(fitted, set(rows.formats), given)
    said = (other_task(fitted, scored), other_model(fitted, scored, gated=not rows.api))
    said += (several_models(calibrators, rows.by, groups, gated=not rows.api),)
    if not rows.api:  # the API warns of the pooled map as it maps (Calibrator.apply)
        said += (pooled_map_note(calibrators, rows.by, groups),)
    return notes + [n for n in said if n]


def check_fitted_names(calibrators: Any) -> None:
    """ValueError when a calibrator file's ``fitted_on`` names a setting no reading takes
    (an --mc-norm or --inspect-confidence that is none of their choices, fewer than two
    distinct --choices): a fit never records one, and the remedy the checks give would be an
    option that does not exist."""
    from calibcli.formats import CONFIDENCES, MC_NORMS

    fitted = calibrators.fitted_on
    named = (("mc_norm", MC_NORMS), ("inspect_confidence", CONFIDENCES))
    for key, choices in named:
        value = fitted.get(key)
        if value is not None and value not in choices:
            raise ValueError(
                f"{calibrators.path}: not a calibcli calibrator file: fitted_on.{key} is "
                f"{value!r}, not one of {', '.join(choices)}"
            )
    options = fitted.get("choices")
    if options is not None:
        stripped = [o.strip() for o in options]
        if len(stripped) < 2 or "" in stripped or len(set(stripped)) != len(stripped):
            raise ValueError(
                f"{calibrators.path}: not a calibcli calibrator file: fitted_on.choices is "
                f"{options!r}, not two or more distinct options"
            )
