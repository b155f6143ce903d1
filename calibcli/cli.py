"""calibcli's command line: options, wiring and exit codes only.

Reading lives in calibcli.io, numbers in calibcli.metrics, reports and gates in calibcli.report,
tables in calibcli.render and pictures in calibcli.diagram / calibcli.plot; all are imported
inside the commands so that ``calibcli --help`` stays fast.
"""

from __future__ import annotations

import math
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_CODES = """\b
Exit codes:
  0  ran, and every requested threshold holds
  1  a gate failed: a --max-* threshold is exceeded, or the data cannot support it
     (fewer populated bins than --min-populated-bins, no rows, zero tokens)
  2  usage error or invalid input: one line on stderr, "Error: FILE:LINE: what is wrong";
     no report is written and an existing -o file is left untouched
  3  internal error (a bug): the traceback is printed"""

app = typer.Typer(
    name="calibcli",
    help="Corpus perplexity, calibration error and Brier score from evaluation dumps (JSONL).",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _choices(name: str, *values: str) -> Any:
    return Enum(name, [(v.replace("-", "_"), v) for v in values], type=str)


Format = _choices("Format", "auto", "jsonl", "lm-eval", "logprobs")
McNorm = _choices("McNorm", "none", "chars", "bytes")
Strategy = _choices("Strategy", "uniform", "quantile")
GateOn = _choices("GateOn", "estimate", "upper")


def _not_nan(value: float | None) -> float | None:
    if value is not None and math.isnan(value):
        raise typer.BadParameter("must be a number, not nan")
    return value


def _ci_level(value: float | None) -> float | None:
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"{value:g} is not a level strictly between 0 and 1, e.g. 0.95")
    return value


def _threshold(metric: str, what: str) -> Any:
    return Annotated[
        float | None,
        typer.Option(
            f"--max-{metric}",
            metavar="X",
            min=0.0,
            callback=_not_nan,
            help=f"Gate: exit 1 unless {what} <= X.",
        ),
    ]


# ----- options shared by several commands
MaxPerplexity = _threshold("perplexity", "the token perplexity")
MaxEce = _threshold("ece", "ECE")
MaxBrier = _threshold("brier", "the Brier score")
MaxMce = _threshold("mce", "MCE")
MaxRmsce = _threshold("rmsce", "RMSCE")
MaxSmece = _threshold("smece", "smooth ECE")
Files = Annotated[
    list[str],
    typer.Argument(
        metavar="FILE",
        help="JSONL files (.gz read transparently), pooled; '-' reads standard input.",
        show_default=False,
    ),
]
FormatOpt = Annotated[
    Format,
    typer.Option("--format", help="Input format; auto detects it from the first row."),
]
ByOpt = Annotated[
    str | None,
    typer.Option(
        "--by",
        metavar="FIELD",
        help="Also report per group of FIELD (a dotted path such as doc.subject; 'task' for "
        "lm-eval files); groups are sorted and the pooled figures stay at the top level.",
    ),
]
GateEachOpt = Annotated[
    bool, typer.Option("--gate-each", help="Apply the --max-* gates to every --by group too.")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the JSON report on stdout instead of the table.")
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "-o", "--output", metavar="PATH", help="Also write the JSON report to PATH (atomically)."
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress bar and no 'detected format' line."),
]
ConfidenceField = Annotated[
    str, typer.Option("--confidence-field", metavar="NAME", help="Field holding the confidence.")
]
CorrectField = Annotated[
    str, typer.Option("--correct-field", metavar="NAME", help="Field holding correctness.")
]
BinsOpt = Annotated[
    int, typer.Option("--bins", metavar="M", min=1, help="Number of confidence bins.")
]
McNormOpt = Annotated[
    McNorm,
    typer.Option(
        "--mc-norm",
        help="lm-eval multiple choice: raw, per-character or per-byte normalised loglikelihoods.",
    ),
]
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        metavar="PATH",
        help="Draw the reliability diagram to PATH (.png, .svg or .pdf; needs calibcli[plot]); "
        "one series per file, or per --by group.",
    ),
]
LabelOpt = Annotated[
    list[str] | None,
    typer.Option("--label", metavar="NAME", help="Name of a --plot series (repeat, in order)."),
]


def _version(value: bool) -> None:
    if value:
        from calibcli import __version__

        typer.echo(f"calibcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Corpus perplexity, calibration error and Brier score from evaluation dumps (JSONL)."""


# ----- helpers


def _usage_error(message: str) -> typer.Exit:
    """Print ``Error: message`` on stderr; the caller raises the returned Exit(2)."""
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(2)


def _read(reader: str, files: list[str], fmt: Format, quiet: bool, **options: Any) -> Any:
    """Run a calibcli.io reader; invalid input becomes exit 2 with its one-line message."""
    from calibcli import io

    progress = not quiet and sys.stderr.isatty()
    try:
        data = getattr(io, reader)(files, fmt=fmt.value, progress=progress, **options)
    except io.InputError as exc:
        raise _usage_error(str(exc)) from None
    detected = getattr(data, "fmt", None)
    if fmt is Format.auto and detected not in (None, "jsonl") and not quiet:
        typer.echo(f"detected format: {detected}", err=True)
    return data


def _check_calibration_options(fmt: Any, plot: Path | None, labels: list[str] | None) -> None:
    """Refuse what cannot work before any reading, so a typo costs nothing."""
    if fmt is Format.logprobs:
        raise _usage_error(
            "--format logprobs has no confidence/correct rows; use calibcli perplexity"
        )
    if labels and plot is None:
        raise _usage_error("--label names --plot series; give --plot PATH too")
    if plot is not None:
        from calibcli.plot import image_format

        try:
            image_format(plot)
        except ValueError as exc:
            raise _usage_error(f"--plot: {exc}") from None


def _plot(data: Any, plot: Path, labels: list[str] | None, *, with_ci: bool) -> None:
    """One series per --by group, else per input file, drawn by calibcli.plot."""
    from calibcli.plot import PlotUnavailable, plot_reliability
    from calibcli.render import diagram_series, plot_parts

    parts = plot_parts(data)
    if labels and len(labels) != len(parts):
        raise _usage_error(
            f"--label given {len(labels)} time(s) but the plot has {len(parts)} series"
        )
    try:
        plot_reliability(diagram_series(parts, labels, with_ci=with_ci), plot)
    except PlotUnavailable as exc:
        raise _usage_error(f"--plot: {exc}") from None
    except OSError as exc:
        raise _usage_error(f"{plot}: cannot write the plot: {exc.strerror or exc}") from None


def _emit(report: Any, *, json_out: bool, output: Path | None, render: Any) -> None:
    """Warnings to stderr, report to -o and stdout (JSON or table), then the gate's verdict."""
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    text = report.to_json()
    if output is not None:
        from calibcli.report import write_atomic

        try:
            write_atomic(output, text)
        except OSError as exc:
            raise _usage_error(
                f"{output}: cannot write the report: {exc.strerror or exc}"
            ) from None
    if json_out:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        render(report.body)
    for failure in report.failures:
        typer.echo(f"gate failed: {failure}", err=True)
    if not report.passed:
        raise typer.Exit(1)


# ----- commands


@app.command(epilog=EXIT_CODES)
def perplexity(
    files: Files,
    nll_field: Annotated[
        str, typer.Option("--nll-field", metavar="NAME", help="Summed NLL of a sequence, nats.")
    ] = "nll",
    tokens_field: Annotated[
        str, typer.Option("--tokens-field", metavar="NAME", help="Token count of a sequence.")
    ] = "tokens",
    bytes_field: Annotated[
        str, typer.Option("--bytes-field", metavar="NAME", help="UTF-8 byte count (optional).")
    ] = "bytes",
    words_field: Annotated[
        str, typer.Option("--words-field", metavar="NAME", help="Word count (optional).")
    ] = "words",
    logprobs_field: Annotated[
        str,
        typer.Option(
            "--logprobs-field", metavar="NAME", help="Per-token logprobs list (logprobs format)."
        ),
    ] = "logprobs",
    fmt: FormatOpt = Format.auto,
    by: ByOpt = None,
    gate_each: GateEachOpt = False,
    max_perplexity: MaxPerplexity = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Corpus perplexity: exp(total NLL / total tokens), pooled over every sequence.

    Rows: {"nll": summed NLL in nats, "tokens": count}; optional "bytes" and "words" add bits per
    byte, byte perplexity and word perplexity. A --max-perplexity gate fails closed on no rows,
    zero tokens, or input without token counts.
    """
    from calibcli import render, report

    if gate_each and by is None:
        raise _usage_error("--gate-each needs --by FIELD")
    data = _read(
        "read_perplexity",
        files,
        fmt,
        quiet,
        nll_field=nll_field,
        tokens_field=tokens_field,
        bytes_field=bytes_field,
        words_field=words_field,
        logprobs_field=logprobs_field,
        by=by,
    )
    gate = report.Gate(
        {"perplexity": max_perplexity} if max_perplexity is not None else {}, each=gate_each
    )
    result = report.perplexity_report(data, gate)
    _emit(
        result,
        json_out=json_out,
        output=output,
        render=lambda body: render.print_perplexity(body, by),
    )


@app.command(epilog=EXIT_CODES)
def calibrate(
    files: Files,
    confidence_field: ConfidenceField = "confidence",
    correct_field: CorrectField = "correct",
    bins: BinsOpt = 10,
    strategy: Annotated[
        Strategy,
        typer.Option("--strategy", help="Equal-width bins, or equal-mass (quantile) bins."),
    ] = Strategy.uniform,
    min_populated_bins: Annotated[
        int,
        typer.Option(
            "--min-populated-bins",
            metavar="K",
            min=1,
            help="Fewer populated bins than K (capped at --bins) prints a warning and makes a "
            "--max-ece/--max-mce/--max-rmsce gate fail closed.",
        ),
    ] = 3,
    max_ece: MaxEce = None,
    max_brier: MaxBrier = None,
    max_mce: MaxMce = None,
    max_rmsce: MaxRmsce = None,
    max_smece: MaxSmece = None,
    ci: Annotated[
        float | None,
        typer.Option(
            "--ci",
            metavar="LEVEL",
            callback=_ci_level,
            help="Add percentile bootstrap intervals at LEVEL (e.g. 0.95) to every estimate.",
        ),
    ] = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", metavar="N", min=1, help="Bootstrap resamples for --ci.")
    ] = 1000,
    seed: Annotated[
        int, typer.Option("--seed", metavar="S", min=0, help="Bootstrap seed for --ci.")
    ] = 0,
    gate_on: Annotated[
        GateOn,
        typer.Option(
            "--gate-on",
            help="Gate on the estimate, or on the upper end of the bootstrap interval "
            "(implies --ci 0.95 unless --ci is given).",
        ),
    ] = GateOn.estimate,
    fmt: FormatOpt = Format.auto,
    mc_norm: McNormOpt = McNorm.none,
    by: ByOpt = None,
    gate_each: GateEachOpt = False,
    plot: PlotOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Calibration: ECE, Brier (decomposed), MCE, RMSCE, smooth ECE, NLL, AUROC and more.

    Rows: {"confidence": number in [0, 1], "correct": true|false|0|1}. Warns when fewer than
    --min-populated-bins bins are populated, and when the median populated bin holds fewer than
    30 predictions (binned estimates are then noisy: prefer smece or rmsce_debiased and
    --gate-on upper). Warnings never fail a gate; too few populated bins and no rows do.
    """
    from calibcli import render, report

    if gate_each and by is None:
        raise _usage_error("--gate-each needs --by FIELD")
    _check_calibration_options(fmt, plot, label)
    if gate_on is GateOn.upper and ci is None:
        ci = 0.95
    data = _read(
        "read_calibration",
        files,
        fmt,
        quiet,
        confidence_field=confidence_field,
        correct_field=correct_field,
        bins=bins,
        keep_columns=True,
        per_source=plot is not None and by is None,
        by=by,
        mc_norm=mc_norm.value,
    )
    thresholds = {"ece": max_ece, "brier": max_brier, "mce": max_mce, "rmsce": max_rmsce}
    thresholds["smece"] = max_smece
    gate = report.Gate(
        {k: v for k, v in thresholds.items() if v is not None}, gate_on.value, gate_each
    )
    boot = report.Bootstrap(ci, bootstrap, seed) if ci is not None else None
    result = report.calibrate_report(
        data,
        bins=bins,
        strategy=strategy.value,
        min_bins=min_populated_bins,
        bootstrap=boot,
        gate=gate,
    )
    if plot is not None:
        _plot(data, plot, label, with_ci=boot is not None)
    _emit(
        result,
        json_out=json_out,
        output=output,
        render=lambda body: render.print_calibrate(body, by),
    )


@app.command(epilog=EXIT_CODES)
def reliability(
    files: Files,
    confidence_field: ConfidenceField = "confidence",
    correct_field: CorrectField = "correct",
    bins: BinsOpt = 10,
    fmt: FormatOpt = Format.auto,
    mc_norm: McNormOpt = McNorm.none,
    by: ByOpt = None,
    plot: PlotOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Reliability diagram data: per bin, its range, count, mean confidence, accuracy with a
    Wilson 95% interval and the gap, then the diagram drawn in the terminal.

    Warns when fewer than 3 bins are populated (capped at --bins) or the median populated bin
    holds fewer than 30 predictions.
    """
    from calibcli import render, report

    _check_calibration_options(fmt, plot, label)
    data = _read(
        "read_calibration",
        files,
        fmt,
        quiet,
        confidence_field=confidence_field,
        correct_field=correct_field,
        bins=bins,
        per_source=plot is not None and by is None,
        by=by,
        mc_norm=mc_norm.value,
    )
    result = report.reliability_report(data)
    if plot is not None:
        _plot(data, plot, label, with_ci=True)

    def draw(body: dict[str, Any]) -> None:
        from calibcli.diagram import DiagramSeries, render_diagram

        series = DiagramSeries.from_stats(data.stats, label="")
        render.print_reliability(body, render_diagram(series), by)

    _emit(result, json_out=json_out, output=output, render=draw)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: exit 0/1/2 as the commands decide, 3 for any crash."""
    try:
        app(args=argv, prog_name="calibcli")
    except SystemExit:
        raise
    except Exception:  # a bug, never a verdict on the data: show it so it can be reported
        traceback.print_exc()
        sys.exit(3)
