"""calibcli's command line: wiring and exit codes only.

Option declarations live in calibcli.options, the figures each command reports in
calibcli.figures, reading in calibcli.io, numbers in calibcli.metrics, reports in calibcli.report,
gates in calibcli.gate, files in calibcli.output, tables in calibcli.render and pictures in
calibcli.diagram / calibcli.plot; all but the options and figures are imported inside the
commands so that ``calibcli --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.figures import CALIBRATION, PERPLEXITY
from calibcli.options import (
    BinsOpt,
    BootstrapOpt,
    ByOpt,
    BytesField,
    CiOpt,
    ConfidenceField,
    CorrectField,
    Files,
    Format,
    FormatOpt,
    GateEachOpt,
    GateOn,
    GateOnOpt,
    JsonOpt,
    LabelOpt,
    LogprobsField,
    McNorm,
    McNormOpt,
    MinBinsOpt,
    NllField,
    OutputOpt,
    PlotOpt,
    QuietOpt,
    SeedOpt,
    Strategy,
    StrategyOpt,
    SummaryOpt,
    TokensField,
    WordsField,
    WorkersOpt,
    gate_options,
)

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


def _read(read: Callable[..., Any], files: list[str], fmt: Any, quiet: bool, **options: Any) -> Any:
    """Run a calibcli.io reader; invalid input becomes exit 2 with its one-line message."""
    from calibcli.io import InputError

    progress = not quiet and sys.stderr.isatty()
    try:
        data = read(files, fmt=fmt.value, progress=progress, **options)
    except InputError as exc:
        raise _usage_error(str(exc)) from None
    # Only a non-native detection is announced: plain JSONL is the default, and a CI gate's
    # stderr should carry warnings and verdicts, not a line on every run.
    if fmt is Format.auto and data.fmt != "jsonl" and not quiet:
        typer.echo(f"detected format: {data.fmt}", err=True)
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


def _read_predictions(
    files: list[str],
    *,
    fmt: Any,
    quiet: bool,
    confidence_field: str,
    correct_field: str,
    bins: int,
    mc_norm: Any,
    by: str | None,
    plot: Path | None,
    labels: list[str] | None,
    keep_columns: bool,
    workers: int | None,
) -> Any:
    """calibrate's and reliability's reading: check the options, then read the rows (one part
    per file when a plot without --by will draw them as separate series)."""
    from calibcli.io import read_calibration

    _check_calibration_options(fmt, plot, labels)
    return _read(
        read_calibration,
        files,
        fmt,
        quiet,
        confidence_field=confidence_field,
        correct_field=correct_field,
        bins=bins,
        keep_columns=keep_columns,
        per_source=plot is not None and by is None,
        by=by,
        mc_norm=mc_norm.value,
        workers=workers,
    )


def _plot(report: Any, plot: Path, labels: list[str] | None, *, with_ci: bool) -> None:
    """Draw the report's series (one per --by group, else per input file) to ``plot``."""
    from calibcli.plot import PlotUnavailable, plot_reliability, report_series

    if labels and len(labels) != len(report.series):
        raise _usage_error(
            f"--label given {len(labels)} time(s) but the plot has {len(report.series)} series"
        )
    try:
        plot_reliability(report_series(report.series, labels, with_ci=with_ci), plot)
    except PlotUnavailable as exc:
        raise _usage_error(f"--plot: {exc}") from None
    except OSError as exc:
        raise _usage_error(f"{plot}: cannot write the plot: {exc.strerror or exc}") from None


def _write(path: Path, what: str, write: Callable[[], None]) -> None:
    try:
        write()
    except OSError as exc:
        raise _usage_error(f"{path}: cannot write the {what}: {exc.strerror or exc}") from None


def _emit(
    report: Any,
    *,
    json_out: bool,
    output: Path | None,
    summary: Path | None,
    files: list[str],
    by: str | None = None,
) -> None:
    """Warnings to stderr, report to -o (and --summary) and stdout, then the gate's verdict."""
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    text = report.to_json()
    if output is not None:
        from calibcli.output import write_atomic

        _write(output, "report", lambda: write_atomic(output, text))
    if summary is not None:
        from calibcli.summary import append_summary

        _write(summary, "summary", lambda: append_summary(summary, report.body, files))
    try:
        if json_out:
            sys.stdout.write(text)
        else:
            from calibcli.render import print_report

            print_report(report.display or report.body, by=by)
        sys.stdout.flush()
    except BrokenPipeError:  # stdout's reader left (`| head`): not a verdict, so carry on
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    for failure in report.failures:
        typer.echo(f"gate failed: {failure}", err=True)
    if not report.passed:
        raise typer.Exit(1)


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """The estimators make only small BLAS calls; a multi-threaded BLAS pool would spin on the
    core that a reader worker or a bootstrap process needs."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ----- commands


@app.command(epilog=EXIT_CODES)
@gate_options(PERPLEXITY)
def perplexity(
    files: Files,
    nll_field: NllField = "nll",
    tokens_field: TokensField = "tokens",
    bytes_field: BytesField = "bytes",
    words_field: WordsField = "words",
    logprobs_field: LogprobsField = "logprobs",
    fmt: FormatOpt = Format.auto,
    by: ByOpt = None,
    gate_each: GateEachOpt = False,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    limits: dict[str, float] | None = None,
) -> None:
    """Corpus perplexity: exp(total NLL / total tokens), pooled over every sequence.

    Rows: {"nll": summed NLL in nats, "tokens": count}; optional "bytes" and "words" add bits per
    byte, byte perplexity and word perplexity. A --max-perplexity gate fails closed on no rows,
    zero tokens, or input without token counts.
    """
    from calibcli.gate import Gate
    from calibcli.io import read_perplexity
    from calibcli.report import perplexity_report

    if gate_each and by is None:
        raise _usage_error("--gate-each needs --by FIELD")
    data = _read(
        read_perplexity,
        files,
        fmt,
        quiet,
        nll_field=nll_field,
        tokens_field=tokens_field,
        bytes_field=bytes_field,
        words_field=words_field,
        logprobs_field=logprobs_field,
        by=by,
        workers=workers,
    )
    result = perplexity_report(data, Gate(limits or {}, each=gate_each))
    _emit(result, json_out=json_out, output=output, summary=summary, files=files, by=by)


@app.command(epilog=EXIT_CODES)
@gate_options(CALIBRATION)
def calibrate(
    files: Files,
    confidence_field: ConfidenceField = "confidence",
    correct_field: CorrectField = "correct",
    bins: BinsOpt = 10,
    strategy: StrategyOpt = Strategy.uniform,
    min_populated_bins: MinBinsOpt = 3,
    ci: CiOpt = None,
    bootstrap: BootstrapOpt = 1000,
    seed: SeedOpt = 0,
    gate_on: GateOnOpt = GateOn.estimate,
    fmt: FormatOpt = Format.auto,
    mc_norm: McNormOpt = McNorm.none,
    by: ByOpt = None,
    gate_each: GateEachOpt = False,
    plot: PlotOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    limits: dict[str, float] | None = None,
) -> None:
    """Calibration: ECE, Brier (decomposed), MCE, RMSCE, smooth ECE, NLL, AUROC and more.

    Rows: {"confidence": number in [0, 1], "correct": true|false|0|1}. Warns when fewer than
    --min-populated-bins bins are populated, and when the median populated bin holds fewer than
    30 predictions (binned estimates are then noisy: prefer smece or rmsce_debiased and
    --gate-on upper). Warnings never fail a gate; too few populated bins and no rows do.
    """
    from calibcli.gate import Gate
    from calibcli.report import Bootstrap, calibrate_report

    if gate_each and by is None:
        raise _usage_error("--gate-each needs --by FIELD")
    if gate_on is GateOn.upper and ci is None:
        ci = 0.95
    data = _read_predictions(
        files,
        fmt=fmt,
        quiet=quiet,
        confidence_field=confidence_field,
        correct_field=correct_field,
        bins=bins,
        mc_norm=mc_norm,
        by=by,
        plot=plot,
        labels=label,
        keep_columns=True,
        workers=workers,
    )
    boot = Bootstrap(ci, bootstrap, seed, workers) if ci is not None else None
    with _one_blas_thread():
        result = calibrate_report(
            data,
            bins=bins,
            strategy=strategy.value,
            min_bins=min_populated_bins,
            bootstrap=boot,
            gate=Gate(limits or {}, gate_on.value, gate_each),
            reorder_ok=True,  # the reader's fresh buffers: nothing else needs their row order
        )
    del data  # the columns are no longer needed; the report holds everything shown
    if plot is not None:
        _plot(result, plot, label, with_ci=boot is not None)
    _emit(result, json_out=json_out, output=output, summary=summary, files=files, by=by)


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
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Reliability diagram data: per bin, its range, count, mean confidence, accuracy with a
    Wilson 95% interval and the gap, then the diagram drawn in the terminal.

    Warns when fewer than 3 bins are populated (capped at --bins) or the median populated bin
    holds fewer than 30 predictions.
    """
    from calibcli.report import reliability_report

    data = _read_predictions(
        files,
        fmt=fmt,
        quiet=quiet,
        confidence_field=confidence_field,
        correct_field=correct_field,
        bins=bins,
        mc_norm=mc_norm,
        by=by,
        plot=plot,
        labels=label,
        keep_columns=False,
        workers=workers,
    )
    result = reliability_report(data)
    if plot is not None:
        _plot(result, plot, label, with_ci=True)
    _emit(result, json_out=json_out, output=output, summary=summary, files=files, by=by)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: exit 0/1/2 as the commands decide, 3 for any crash."""
    try:
        app(args=argv, prog_name="calibcli")
    except SystemExit:
        raise
    except Exception:  # a bug, never a verdict on the data: show it so it can be reported
        traceback.print_exc()
        sys.exit(3)
