"""The options of every command that reads confidence/correct rows, declared once and given
to a command by :func:`reading_options` as one :class:`Reading`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer

from calibcli.cli.options import (
    MAX_LINE_MB,
    AllRunsOpt,
    AnyFormatOpt,
    ByOpt,
    CalibrateByOpt,
    CalibrationFormat,
    CalibrationFormatOpt,
    CalibratorJsonOpt,
    CalibratorOutputOpt,
    ChoicesOpt,
    CompareGateEachOpt,
    ConfidenceField,
    CorrectField,
    CoveragePlotOpt,
    GoldFieldOpt,
    IdFieldOpt,
    InspectConfidence,
    InspectConfidenceOpt,
    MaxDocumentMbOpt,
    MaxLineMbOpt,
    McNorm,
    McNormOpt,
    MinCoverageGateEachOpt,
    QuietOpt,
    ScorerOpt,
    WorkersOpt,
    document_bytes,
    line_bytes,
    one,
)

# ----- the options of every command that reads confidence/correct rows, declared once


@dataclass(frozen=True)
class Reading:
    """How a command reads calibration rows: the values of the options every such command
    shares (see :func:`reading_options`)."""

    fmt: Any
    quiet: bool
    confidence_field: str
    correct_field: str
    mc_norm: Any
    by: str | None
    workers: int | None
    max_line_bytes: int
    scorer: str | None = None
    max_document_bytes: int | None = None
    inspect_confidence: Any = InspectConfidence.auto
    id_field: str | None = None
    all_runs: bool = False
    gold_field: str | None = None
    choices: list[str] | None = None
    # the command's options given on the command line (parameter names, ``bins`` among them),
    # as against left at their defaults: a summary file's settings are taken for the others
    given: frozenset[str] | None = None

    @property
    def confidence_given(self) -> bool:
        """Whether --confidence-field was given (True when what was given is not known)."""
        return self.given is None or "confidence_field" in self.given


_READING_OPTIONS = (
    ("confidence_field", ConfidenceField, None),
    ("correct_field", CorrectField, ("correct",)),
    ("fmt", CalibrationFormatOpt, (CalibrationFormat.auto,)),
    ("mc_norm", McNormOpt, (McNorm.none,)),
    ("scorer", ScorerOpt, None),
    ("inspect_confidence", InspectConfidenceOpt, (InspectConfidence.auto,)),
    ("gold_field", GoldFieldOpt, None),
    ("choices", ChoicesOpt, None),
    ("by", ByOpt, None),
    ("id_field", IdFieldOpt, None),
    ("all_runs", AllRunsOpt, False),
    ("quiet", QuietOpt, False),
    ("workers", WorkersOpt, None),
    ("max_line_mb", MaxLineMbOpt, MAX_LINE_MB),
    ("max_document_mb", MaxDocumentMbOpt, None),
)


# Shared options whose meaning differs by command: (command, parameter) -> its own variant.
_PER_COMMAND = {
    ("threshold", "plot"): CoveragePlotOpt,
    ("threshold", "gate_each"): MinCoverageGateEachOpt,
    ("compare", "gate_each"): CompareGateEachOpt,
    ("fit", "output"): CalibratorOutputOpt,
    ("fit", "json_out"): CalibratorJsonOpt,
    ("summarize", "fmt"): AnyFormatOpt,
    ("calibrate", "by"): CalibrateByOpt,
}


def reading_options(command: Callable) -> Callable:
    """Give a command the options of reading calibration rows (fields, --format, --mc-norm,
    --scorer, --by, -q, --workers, --max-line-mb, --max-document-mb); it declares a
    ``reading`` parameter instead and receives them as one :class:`Reading`. A shared option
    whose help differs for this command (``_PER_COMMAND``) gets the command's own variant."""
    signature = inspect.signature(command, eval_str=True)
    params = [
        p.replace(annotation=_PER_COMMAND.get((command.__name__, name), p.annotation))
        for name, p in signature.parameters.items()
        if name != "reading"
    ]
    params += [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=default,
            annotation=_PER_COMMAND.get((command.__name__, name), kind),
        )
        for name, kind, default in _READING_OPTIONS
    ]
    params.append(
        inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
    )

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        named = given_options(kwargs.pop(_CONTEXT))
        given = {name: _value(kwargs.pop(name)) for name, _, _ in _READING_OPTIONS}
        named_fields({option: given[name] for name, option in _FIELDS.items()})
        confidence_apart(given["confidence_field"] or "confidence", given["correct_field"])
        reading = Reading(
            fmt=given["fmt"],
            quiet=given["quiet"],
            confidence_field=given["confidence_field"] or "confidence",
            correct_field=given["correct_field"],
            mc_norm=given["mc_norm"],
            by=given["by"],
            workers=given["workers"],
            max_line_bytes=line_bytes(given["max_line_mb"]),
            max_document_bytes=document_bytes(given["max_document_mb"]),
            id_field=given["id_field"],
            all_runs=given["all_runs"],
            scorer=given["scorer"],
            inspect_confidence=given["inspect_confidence"],
            gold_field=given["gold_field"],
            choices=None if given["choices"] is None else given["choices"].split(","),
            given=named,
        )
        return command(**kwargs, reading=reading)

    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return run


_CONTEXT = "reading_context"  # the parameter typer gives the click context by

_FIELDS = {
    "confidence_field": "--confidence-field",
    "correct_field": "--correct-field",
    "gold_field": "--gold-field",
    "by": "--by",
    "id_field": "--id-field",
}


def named_fields(values: dict[str, Any]) -> None:
    """A usage error for a field option (``values``: option -> value) given an empty name
    (``--confidence-field ""``, as an unset shell variable gives it), which would read no
    field, or the default one."""
    for option, value in values.items():
        if value == "":
            raise typer.BadParameter("a field name cannot be empty", param_hint=f"'{option}'")


def confidence_apart(confidence_field: str, correct_field: str) -> None:
    """A usage error for a confidence read from the outcome's own field: each row's confidence
    would be its outcome (0 or 1), perfectly calibrated whatever the model answered (ECE 0,
    Brier 0, AUROC 1), and every gate would pass on rows that say nothing of the model."""
    if confidence_field == correct_field:
        raise typer.BadParameter(
            f"{confidence_field!r} is the --correct-field: a confidence read from the outcome it "
            "predicts is perfectly calibrated whatever the model answered",
            param_hint="'--confidence-field'",
        )


def given_options(ctx: Any) -> frozenset[str]:
    """The names of a command's parameters given on the command line (or by an environment
    variable), as against left at their defaults: an option given at its default value is
    given too."""
    return frozenset(
        name
        for name in ctx.params
        if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in _DEFAULTS
    )


_DEFAULTS = ("DEFAULT", "DEFAULT_MAP")


def _value(given: Any) -> Any:
    """An option's value: that of an option given once (a list to click), else as given."""
    return one(given) if isinstance(given, (list, tuple)) else given
