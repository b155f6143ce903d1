"""The command-line options shared by calibcli's commands, each declared once.

Annotated aliases (typer's ``Annotated[type, typer.Option(...)]``) and the choice enums; the
commands in :mod:`calibcli.cli` take their parameters from here, so cli.py keeps to wiring.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.cli.given_once import gate_once as _gate_once
from calibcli.cli.given_once import one as one  # the commands take it with the options
from calibcli.io import (
    CALIBRATION_FORMATS,
    FORMATS,
    INSPECT_CONFIDENCES,
    MC_NORMS,
    PERPLEXITY_FORMATS,
)
from calibcli.reports import (
    BIN_STRATEGIES,
    RECALIBRATION_METHODS,
    SELECTION_METHODS,
    Figure,
    floored,
    gateable,
)
from calibcli.reports import options as checks

MAX_BINS, MIN_BOOTSTRAP, MAX_FOLDS = checks.MAX_BINS, checks.MIN_BOOTSTRAP, checks.MAX_FOLDS
MIN_DELTA, MAX_BOOTSTRAP = checks.MIN_DELTA, checks.MAX_BOOTSTRAP


def _choices(name: str, *values: str) -> Any:
    return Enum(name, [(v.replace("-", "_"), v) for v in values], type=str)


# every choice comes from its registry: a new format or normalisation is one entry there
Format = _choices("Format", *PERPLEXITY_FORMATS)
# calibrate and reliability read confidence/correct rows: the token-logprob formats have none
CalibrationFormat = _choices("CalibrationFormat", *CALIBRATION_FORMATS)
# summarize reads either kind of rows
AnyFormat = _choices("AnyFormat", *FORMATS)
McNorm = _choices("McNorm", *MC_NORMS)
Strategy = _choices("Strategy", *(s.name for s in BIN_STRATEGIES))
GateOn = _choices("GateOn", "estimate", "upper")
Method = _choices("Method", *(m.name for m in RECALIBRATION_METHODS))


def _described(choices: Any) -> str:
    """``name: what it does; ...`` for a registry's choices, for an option's help."""
    return "; ".join(f"{c.name}: {c.help.rstrip('.')}" for c in choices) + "."


# An option that decides which rows are read, or how a value is taken from them, decides every
# figure and gate as much as a gate does: given twice, it is refused as a gate is.
READ_ONCE = "give it once: the rows read, and every figure and gate on them, depend on it"


def once(kind: Any, *decls: str, check: Any = None, then: str = READ_ONCE, **options: Any) -> Any:
    """An option given once (:func:`_gate_once`), whose value a command takes with :func:`one`."""
    return _opt(list[kind] | None, *decls, callback=_gate_once(check, then), **options)


def _opt(kind: Any, *decls: str, **options: Any) -> Any:
    """An Annotated option type, so options shared by several commands are declared once."""
    return Annotated[kind, typer.Option(*decls, **options)]


def _number(text: Any) -> float:
    """A number as a gate reads it: Python's float() spelling without its digit separators
    (``0_05`` is 5.0 to float(), a slip for 0.05 that would loosen a gate a hundredfold)."""
    if not isinstance(text, str):  # a default, already a number
        return float(text)
    if "_" in text:
        raise typer.BadParameter(f"{text!r} is not a number")
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number") from None


def _threshold(figure: Figure) -> Any:
    return _opt(
        list[float] | None,
        f"--max-{figure.key.replace('_', '-')}",
        metavar="X",
        parser=_number,
        callback=_gate_once(checks.finite_threshold),
        help=f"Gate: exit 1 unless {figure.gate} <= X.",
    )


def _floor_option(noun: str, help: str) -> Any:
    """A ``--min-NOUN N`` gate option (a whole number of at least 1, given once)."""
    return _opt(
        list[int] | None, f"--min-{noun}", metavar="N", min=1, callback=_gate_once(), help=help
    )


# rows of answers that repeat their questions are counted in questions
_ONCE = (
    "; rows that repeat their questions (an inspect-ai run's epochs, a HELM run's train "
    "trials) count once per question"
)


def _floor(figure: Figure) -> Any:
    return _floor_option(
        figure.floor,
        f"Gate: exit 1 unless at least N {figure.floor} are read (a truncated or limited run "
        f"fails it{_ONCE if figure.key == 'n' else ''}).",
    )


def gate_options(figures: tuple[Figure, ...]) -> Callable[[Callable], Callable]:
    """Give a command one ``--max-KEY`` option per gateable figure of the registry, and one
    ``--min-FLOOR`` option per count with a floor.

    The command declares ``limits`` and ``floors`` parameters instead and receives
    ``{key: threshold}`` for the thresholds given, in registry order (the order of the gate's
    checks), and ``{key: N}`` for the floors given.
    """
    gates, floors = gateable(figures), floored(figures)

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        given = ("limits", "floors")
        params = [p for name, p in signature.parameters.items() if name not in given]
        added = [(f"max_{f.key}", _threshold(f)) for f in gates]
        added += [(f"min_{f.floor}", _floor(f)) for f in floors]
        params += [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
            for name, kind in added
        ]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            limits = {f.key: one(kwargs.pop(f"max_{f.key}")) for f in gates}
            least = {f.key: one(kwargs.pop(f"min_{f.floor}")) for f in floors}
            return command(
                **kwargs,
                limits={k: v for k, v in limits.items() if v is not None},
                floors={k: v for k, v in least.items() if v is not None},
            )

        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return run

    return decorate


Files = Annotated[
    list[str],
    typer.Argument(
        metavar="FILE...",
        show_default=False,
        help="Input files, pooled: JSON Lines, a JSON array or object, inspect-ai .eval logs, "
        "CSV and TSV tables with a header row, any of them compressed (gzip, Zstandard, xz, "
        "bzip2), Parquet and "
        "Arrow tables (calibcli[parquet]); a folder "
        "reads its input files; '-' reads standard input (JSON Lines).",
    ),
]
Name = "NAME"
FormatOpt = once(
    Format, "--format", help="Input format; auto detects it per file from its first row."
)
AnyFormatOpt = once(
    AnyFormat, "--format", help="Input format; auto detects it per file from its first row."
)
CalibrationFormatOpt = once(
    CalibrationFormat, "--format", help="Input format; auto detects it per file from its first row."
)
ScorerOpt = once(
    str,
    "--scorer",
    metavar=Name,
    help="inspect-ai logs: the scorer whose value grades each sample (needed when there are "
    "several; NAME.KEY for one value of a scorer that logs several).",
)
ByOpt = once(
    str,
    "--by",
    metavar="FIELD",
    help="Also report per group of FIELD (a dotted path such as doc.subject; 'task' for lm-eval "
    "files); groups are sorted and the pooled figures stay at the top level.",
)
CalibrateByOpt = once(
    str,
    "--by",
    metavar="FIELD",
    help="Also report per group of FIELD (a dotted path such as doc.subject; 'task' for lm-eval "
    "files); groups are sorted and the pooled figures stay at the top level. With --recalibrate "
    "each group gets its own cross-fitted maps, so the pooled figures after it (and their gates) "
    "are those of per-group maps.",
)
CompareMinRowsOpt = _floor_option(
    "rows",
    "Gate: exit 1 unless at least N rows are compared (the matched pairs; the smaller side with "
    "--unpaired; rows that repeat their questions count once per question).",
)
GateEachOpt = _opt(
    bool, "--gate-each", help="Apply the --max-* and --min-* gates to every --by group too."
)
MinCoverageGateEachOpt = _opt(
    bool, "--gate-each", help="Apply the --min-coverage gate to every --by group too."
)
CompareGateEachOpt = _opt(
    bool,
    "--gate-each",
    help="Apply the --max-increase/--max-decrease gates to every --by group too.",
)
JsonOpt = _opt(bool, "--json", help="Print the JSON report on stdout instead of the table.")
CalibratorJsonOpt = _opt(
    bool, "--json", help="Print the calibrator file on stdout instead of the table."
)


def output_path(value: str) -> Path:
    """An output option's path, refused when it names a folder: ``out/`` (``/.``, ``/..``),
    which Path would make the file ``out``, or an empty one (an unset variable's), which Path
    makes the current folder. ``-`` is standard output (calibcli.cli.staging)."""
    if not value:
        raise typer.BadParameter("the path is empty (is the variable that should hold it set?)")
    if os.path.basename(value) in ("", os.curdir, os.pardir):
        raise typer.BadParameter(f"{value!r} names a folder; give the path of a file to write")
    return Path(value)


# Output paths are taken as given (output_path): typer's Path type would refuse a write-only
# file as "not readable", and drop a trailing slash.
OutputOpt = _opt(
    Path | None,
    "-o",
    "--output",
    metavar="PATH",
    parser=output_path,
    help="Also write the JSON report to PATH (atomically).",
)
CalibratorOutputOpt = _opt(
    Path | None,
    "-o",
    "--output",
    metavar="PATH",
    parser=output_path,
    help="Write the calibrator file to PATH (atomically), for --calibrator and 'calibcli apply'.",
)
QuietOpt = _opt(bool, "--quiet", "-q", help="No progress bar and no 'detected format' line.")
WorkersOpt = _opt(
    int | None,
    "--workers",
    metavar="N",
    min=1,
    envvar="CALIBCLI_WORKERS",
    show_envvar=True,
    help="Processes for reading a large file and for the bootstrap, never more than the CPUs "
    "(1: none; default: 2 on two or more CPUs for files of 32 MB and more, and for a bootstrap "
    "of 20 million resampled rows and more). Results never depend on it.",
)
InspectConfidence = _choices("InspectConfidence", *INSPECT_CONFIDENCES)
InspectConfidenceOpt = once(
    InspectConfidence,
    "--inspect-confidence",
    help="inspect-ai logs: an answer's confidence from its output's token logprobs: the "
    "probability of the token carrying the chosen letter of a multiple_choice answer line "
    "'ANSWER: X' (answer-token), of the whole completion (sequence), of its first token, or the "
    "geometric mean per token; auto: answer-token where a sample has that line, else sequence.",
)
GoldFieldOpt = once(
    str,
    "--gold-field",
    metavar="FIELD",
    show_default=False,
    help="OpenAI chat completions answering multiple choice: the field (dotted path) holding "
    "the right option (its text, or its 0-based index as a JSON integer; an integer whose "
    "digits are also an option is refused as ambiguous); the answer token's top_logprobs, "
    "renormalised over the options, give the confidence.",
)


def _choice_list(value: str | None) -> str | None:
    if value is not None:
        options = [c.strip() for c in value.split(",")]
        if len(options) < 2 or "" in options or len(set(options)) != len(options):
            raise typer.BadParameter(f"{value!r} is not two or more distinct options, e.g. A,B,C")
    return value


ChoicesOpt = once(
    str,
    "--choices",
    metavar="A,B,...",
    check=_choice_list,
    show_default=False,
    help="The answer options recognised as answer tokens in token logprobs (OpenAI responses, "
    "OpenAI evals logs), comma-separated (default A,B,C,D,E).",
)
MAX_LINE_MB = 64  # calibcli.io's MAX_LINE_BYTES, in MiB
MaxLineMbOpt = _opt(
    int,
    "--max-line-mb",
    metavar="N",
    min=1,
    help="Longest input line read, in MiB; a longer line is an error (exit 2) found without "
    "holding the line in memory.",
)


def line_bytes(max_line_mb: int) -> int:
    """--max-line-mb in bytes, the ``max_line_bytes`` the readers take."""
    return max_line_mb << 20


MaxDocumentMbOpt = _opt(
    int | None,
    "--max-document-mb",
    metavar="N",
    min=1,
    show_default=False,
    help="Largest compressed whole document read (a compressed JSON file, Parquet or Arrow "
    "table, an .eval log's member), "
    "in MiB once decompressed (default 256); a larger one is an error (exit 2) found while "
    "inflating it.",
)


def document_bytes(max_document_mb: int | None) -> int | None:
    """--max-document-mb in bytes (None: the readers' own limit)."""
    return None if max_document_mb is None else max_document_mb << 20


SummaryOpt = _opt(
    Path | None,
    "--summary",
    metavar="PATH",
    parser=output_path,
    help="Append a Markdown summary to PATH (for CI job summaries, e.g. $GITHUB_STEP_SUMMARY).",
)
ConfidenceField = once(
    str,
    "--confidence-field",
    metavar=Name,
    show_default=False,
    help="Confidence field (default: confidence, or the field a --calibrator was fitted on).",
)
CorrectField = once(str, "--correct-field", metavar=Name, help="Correctness field.")
# what to do, and why, when a setting that decides a gated figure is given twice
_BINNED = "give it once: the binned figures a gate reads depend on it"
_GUARANTEED = "give it once: the guaranteed threshold a gate reads depends on it"
_RESAMPLED = "give it once: the interval a gate on its upper end reads depends on it"
_RECALIBRATED = (
    "give it once: the figures, and the gates that read them, are those after recalibration"
)
BinsOpt = _opt(
    list[int],
    "--bins",
    metavar="M",
    min=1,
    max=MAX_BINS,
    callback=_gate_once(then=_BINNED),
    help=f"Number of confidence bins (1 to {MAX_BINS:,}).",
)
McNormOpt = once(
    McNorm,
    "--mc-norm",
    help="lm-eval multiple choice: raw, per-character or per-byte normalised loglikelihoods.",
)
PlotOpt = _opt(
    Path | None,
    "--plot",
    metavar="PATH",
    parser=output_path,
    help="Draw the reliability diagram to PATH (.png, .svg or .pdf; needs matplotlib); one "
    "series per file, or per --by group.",
)
HtmlOpt = _opt(
    Path | None,
    "--html",
    metavar="PATH",
    help="Also write the report as one self-contained HTML page to PATH (tables and inline SVG "
    "diagrams; it loads nothing from anywhere).",
    parser=output_path,
)
CoveragePlotOpt = _opt(
    Path | None,
    "--plot",
    metavar="PATH",
    parser=output_path,
    help="Draw the accuracy-coverage curve to PATH (.png, .svg or .pdf; needs matplotlib); one "
    "curve per --by group.",
)
LabelOpt = _opt(
    list[str] | None, "--label", metavar=Name, help="Name of a --plot series (repeat, in order)."
)
# perplexity
NllField = once(str, "--nll-field", metavar=Name, help="Summed NLL of a sequence, in nats.")
TokensField = once(str, "--tokens-field", metavar=Name, help="Token count of a sequence.")
BytesField = once(str, "--bytes-field", metavar=Name, help="UTF-8 byte count (optional).")
WordsField = once(str, "--words-field", metavar=Name, help="Word count (optional).")
LogprobsField = once(
    str, "--logprobs-field", metavar=Name, help="Per-token logprobs list (logprobs format)."
)
# calibrate
StrategyOpt = _opt(
    list[Strategy],
    "--strategy",
    callback=_gate_once(then=_BINNED),
    help=_described(BIN_STRATEGIES),
)
MinBinsOpt = _opt(
    list[int],
    "--min-populated-bins",
    metavar="K",
    min=1,
    callback=_gate_once(then="give it once: it closes the binned gates on too few bins"),
    help="Fewer populated bins than K (capped at --bins) prints a warning and makes a "
    "--max-ece/--max-mce/--max-rmsce/--max-rmsce-debiased gate fail closed.",
)
CiOpt = _opt(
    list[float] | None,
    "--ci",
    metavar="LEVEL",
    parser=_number,
    callback=_gate_once(checks.ci_level, "give it once: under --gate-on upper it sets the gate"),
    help="Add percentile bootstrap intervals at LEVEL (e.g. 0.95) to every estimate.",
)
BootstrapOpt = _opt(
    list[int] | None,
    "--bootstrap",
    metavar="N",
    min=MIN_BOOTSTRAP,
    max=MAX_BOOTSTRAP,
    show_default=False,
    callback=_gate_once(then=_RESAMPLED),
    help=f"Bootstrap resamples for --ci ({MIN_BOOTSTRAP} to {MAX_BOOTSTRAP:,}; default 1000).",
)
SeedOpt = _opt(
    list[int] | None,
    "--seed",
    metavar="S",
    min=0,
    show_default=False,
    callback=_gate_once(then=_RESAMPLED),
    help="Bootstrap seed for --ci (default 0).",
)
BootstrapScheme = _choices("BootstrapScheme", "multinomial", "poisson")
BootstrapSchemeOpt = _opt(
    list[BootstrapScheme],
    "--bootstrap-scheme",
    callback=_gate_once(then=_RESAMPLED),
    help="How --ci resamples: multinomial draws N rows with replacement; poisson weights each "
    "row by a Poisson(1) count drawn from a hash of (seed, resample, the row's id or its "
    "file's content and line), so resamples of shards merge (summarize --bootstrap-samples).",
)
GateOnOpt = _opt(
    list[GateOn] | None,
    "--gate-on",
    callback=_gate_once(),
    help="Gate on the estimate, or on the upper end of the bootstrap interval (implies --ci 0.95 "
    "unless --ci is given).",
)
# recalibration
CalibratorOpt = _opt(
    list[Path] | None,
    "--calibrator",
    metavar="PATH",
    callback=_gate_once(then=_RECALIBRATED),
    help="Recalibrate with a calibrator from 'calibcli fit' first, and show before/after.",
)
RecalibrateOpt = _opt(
    list[Method] | None,
    "--recalibrate",
    callback=_gate_once(then=_RECALIBRATED),
    help="Cross-fit this recalibration on the input itself (see --folds) and show before/after.",
)
FoldsOpt = _opt(
    list[int] | None,
    "--folds",
    metavar="K",
    min=2,
    max=MAX_FOLDS,
    show_default=False,
    callback=_gate_once(then=_RECALIBRATED),
    help=f"Folds for --recalibrate (2 to {MAX_FOLDS}; default 5): each fold is mapped by a "
    "calibrator fitted on the others. A --by group with fewer rows keeps its confidences.",
)
MethodOpt = once(
    Method,
    "--method",
    then="give it once: the calibrator fitted depends on it",
    help="Recalibration method. " + _described(RECALIBRATION_METHODS),
)


# threshold
SelectMethod = _choices("SelectMethod", *(m.name for m in SELECTION_METHODS))
TargetAccuracyOpt = _opt(
    list[float],
    "--target-accuracy",
    metavar="A",
    parser=_number,
    callback=_gate_once(checks.fraction, _GUARANTEED),
    show_default=False,
    help="Accuracy the accepted rows must reach (in (0, 1)).",
)
DeltaOpt = _opt(
    list[float],
    "--delta",
    metavar="D",
    parser=_number,
    callback=_gate_once(checks.delta, _GUARANTEED),
    help="Allowed probability that the guarantee fails (the threshold holds with 1 - D); "
    f"at least {MIN_DELTA:g}.",
)
GridOpt = _opt(
    list[int] | None,
    "--grid",
    metavar="N",
    callback=_gate_once(checks.grid, _GUARANTEED),
    show_default=False,
    help="Learn then Test tests N thresholds fixed before the data, from the highest down: "
    "evenly spaced on log(1 - t) from t = 1 - 1e-6 to t = 0, so they are fine near 1, where "
    "language models put their confidences (default 121: twenty per decade of 1 - t, so "
    "0.99, 0.995 and 0.999 are told apart). 0 tests every distinct confidence instead, where "
    "one early error among the few rows at the top ends the walk.",
)
SelectMethodOpt = _opt(
    list[SelectMethod],
    "--method",
    callback=_gate_once(then=_GUARANTEED),
    help=_described(SELECTION_METHODS),
)
MinCoverageOpt = _opt(
    list[float] | None,
    "--min-coverage",
    metavar="C",
    parser=_number,
    callback=_gate_once(checks.coverage),
    help="Gate: exit 1 unless the guaranteed threshold accepts at least C of the rows.",
)
FullOpt = _opt(bool, "--full", help="Every distinct threshold in the JSON table (not ~20).")
FitOpt = _opt(
    list[str] | None,
    "--fit",
    metavar="FILE",
    help="Choose the threshold on these rows (repeat for several files) and report its realised "
    "coverage and accuracy on FILE...",
)
# compare
IdFieldOpt = once(
    str,
    "--id-field",
    metavar="FIELD",
    show_default=False,
    help="Field (dotted path) identifying a row: a row read twice is refused, and compare "
    "matches BASE and NEW by it; compare --unpaired matches none, and checks each side's ids "
    "on their own (native rows: none, compare's id; lm-eval: the task and doc_id; inspect-ai: "
    "the sample's id and epoch).",
)
AllRunsOpt = _opt(
    bool,
    "--all-runs",
    help="Pool every run given: re-runs of an lm-eval task (other timestamps in the file names; "
    "by default only the newest is read), two files of the same bytes whose rows carry ids "
    "(a copy, or a compressed copy; rows without ids are refused so: give --id-field), rows "
    "whose id was read before, native rows after the first that carry its id (a run appended "
    "to its file again). A path given twice is refused.",
)
MaxIncreaseOpt = _opt(
    list[str] | None,
    "--max-increase",
    metavar="FIGURE=MARGIN",
    help="Gate: exit 1 when NEW's FIGURE (a lower-is-better one: ece, brier, nll, smece, mce, "
    "rmsce, ...) exceeds BASE's by more than MARGIN (repeat for several figures, each once).",
)
MaxDecreaseOpt = _opt(
    list[str] | None,
    "--max-decrease",
    metavar="FIGURE=MARGIN",
    help="Gate: exit 1 when NEW's accuracy or auroc falls below BASE's by more than MARGIN.",
)
UnpairedOpt = _opt(
    bool,
    "--unpaired",
    help="Compare without matching rows (independent bootstraps; wider intervals).",
)
AllowUnmatchedOpt = _opt(
    bool,
    "--allow-unmatched",
    help="Proceed when more than 5% of either side's rows have no partner.",
)
