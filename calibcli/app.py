"""The typer application and what every command shares: reading with exit-2 errors, drawing,
writing the report and summary, and the gate's exit code.

Commands live in calibcli.commands and register themselves on :data:`app`; calibcli.cli holds the
entry point. Heavy modules (numpy, rich, matplotlib) are imported inside the functions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

EXIT_CODES = """\b
Exit codes:
  0  ran, and every requested threshold holds
  1  a gate failed: a --max-* threshold is exceeded, --min-coverage is not reached,
     NEW is worse than BASE by more than a --max-increase/--max-decrease margin, or the
     data cannot support the check (too few populated bins, no rows, zero tokens)
  2  usage error or invalid input: one line on stderr, "Error: FILE:LINE: what is wrong";
     no report is written and an existing -o file is left untouched
  3  internal error (a bug): the traceback is printed"""


def _usage_error_type() -> type[Exception]:
    """The vendored click's UsageError (typer does not export it; BadParameter derives from it)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _OneLineErrors(TyperGroup):
    """A usage error (a bad option value, a missing argument) is one line on stderr, like an
    input error: ``Error: what is wrong (see 'calibcli calibrate -h')``, exit 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        usage_error = _usage_error_type()
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except usage_error as exc:
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" or ctx is None:
                exc.show()  # help for a bare "calibcli", or no context to name
            else:
                typer.echo(f"Error: {exc.format_message()} (see '{ctx.command_path} -h')", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        except Exception as exc:
            if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # any other click exception
                exc.show()
                sys.exit(exc.exit_code)
            raise
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="calibcli",
    cls=_OneLineErrors,
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


def usage_error(message: str) -> typer.Exit:
    """Print ``Error: message`` on stderr; the caller raises the returned Exit(2)."""
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(2)


def read(read: Callable[..., Any], files: list[str], fmt: Any, quiet: bool, **options: Any) -> Any:
    """Run a calibcli.io reader; invalid input becomes exit 2 with its one-line message."""
    from calibcli.io import InputError

    progress = not quiet and sys.stderr is not None and sys.stderr.isatty()
    try:
        with one_blas_thread():
            data = read(files, fmt=fmt.value, progress=progress, **options)
    except InputError as exc:
        raise usage_error(str(exc)) from None
    # Only a non-native detection is announced, one line per file: plain JSONL is the default,
    # and a CI gate's stderr should carry warnings and verdicts, not a line on every run.
    if fmt.value == "auto" and not quiet:
        for name, found in (data.formats or {}).items():
            if found != "jsonl":
                typer.echo(f"detected format: {found} ({name})", err=True)
    return data


def check_calibration_options(fmt: Any, plot: Path | None, labels: list[str] | None) -> None:
    """Refuse what cannot work before any reading, so a typo costs nothing."""
    if labels and plot is None:
        raise usage_error("--label names --plot series; give --plot PATH too")
    if plot is not None:
        from calibcli.plot import image_format

        try:
            image_format(plot)
        except ValueError as exc:
            raise usage_error(f"--plot: {exc}") from None


def read_predictions(
    files: list[str],
    reading: Any,
    *,
    bins: int,
    keep_columns: bool,
    plot: Path | None = None,
    labels: list[str] | None = None,
    per_source: bool = True,
) -> Any:
    """Check the options, then read calibration rows (one part per file when a plot without
    --by will draw them as separate series, unless ``per_source`` is False)."""
    from calibcli.io import read_calibration

    check_calibration_options(reading.fmt, plot, labels)
    return read(
        read_calibration,
        files,
        reading.fmt,
        reading.quiet,
        confidence_field=reading.confidence_field,
        correct_field=reading.correct_field,
        bins=bins,
        keep_columns=keep_columns,
        per_source=per_source and plot is not None and reading.by is None,
        by=reading.by,
        mc_norm=reading.mc_norm.value,
        scorer=reading.scorer,
        inspect_confidence=reading.inspect_confidence.value,
        workers=reading.workers,
        max_line_bytes=reading.max_line_bytes,
    )


def check_outputs(**paths: Path | None) -> None:
    """Refuse output paths that cannot be written (``output=``, ``summary=``, ``plot=``) before
    any input is read: a typo costs nothing and no file is touched."""
    from calibcli.output import OutputError, check_writable

    names = {"output": "report", "summary": "summary", "plot": "plot"}
    for key, path in paths.items():
        if path is None:
            continue
        try:
            check_writable(path, names.get(key, key))
        except OutputError as exc:
            raise usage_error(str(exc)) from None


def picture(report: Any, plot: Path, labels: list[str] | None, *, with_ci: bool) -> bytes:
    """The image --plot asks for: the report's series (one per --by group, else per input
    file), drawn as bytes that :func:`emit` writes with the other outputs."""
    from calibcli.plot import PlotUnavailable, image_format, reliability_image, report_series

    if labels and len(labels) != len(report.series):
        raise usage_error(
            f"--label given {len(labels)} time(s) but the plot has {len(report.series)} series"
        )
    series = report_series(report.series, labels, with_ci=with_ci)
    try:
        return reliability_image(series, image_format(plot))
    except PlotUnavailable as exc:
        raise usage_error(f"--plot: {exc}") from None


def recalibration_options(
    calibrator: Path | None, method: Any, folds: int | None
) -> tuple[Any, str | None]:
    """The calibrator file (loaded and validated) or the cross-fitting method, checked before
    any input is read."""
    if calibrator is not None and method is not None:
        raise usage_error("--calibrator and --recalibrate both recalibrate; give one")
    if folds is not None and method is None:
        raise usage_error(
            "--folds sets up --recalibrate's cross-fitting; give --recalibrate METHOD"
        )
    if calibrator is None:
        return None, None if method is None else method.value
    from calibcli.recalibrate import load

    try:
        return load(calibrator), None
    except ValueError as exc:
        raise usage_error(str(exc)) from None


def recalibrate(
    data: Any,
    calibrators: Any,
    method: str | None,
    *,
    mc_norm: Any = None,
    by: str | None = None,
    **options: Any,
) -> Any:
    """:func:`calibcli.recalibrate.recalibrated`, a failed fit becoming exit 2. For lm-eval
    input, temperature (a calibrator of it, or --recalibrate temperature) scales the choices'
    loglikelihoods, so the rows are read again with every choice's score."""
    from calibcli.recalibrate import MULTICLASS, recalibrated

    choices = None
    wants_choices = method == "temperature" or (
        calibrators is not None and calibrators.method == MULTICLASS
    )
    if data.fmt == "lm-eval" and wants_choices:
        choices = read_choices(options["files"], mc_norm=mc_norm, by=by)
    try:
        return recalibrated(
            data, calibrators=calibrators, method=method, choices=choices, **options
        )
    except ValueError as exc:
        raise usage_error(str(exc)) from None


def read_choices(files: list[str], *, mc_norm: Any, by: str | None) -> Any:
    """lm-eval rows with every choice's score; bad input is exit 2."""
    from calibcli.io import InputError
    from calibcli.io.records import read_choices as read

    try:
        return read(files, mc_norm=getattr(mc_norm, "value", mc_norm) or "none", by=by)
    except InputError as exc:
        raise usage_error(str(exc)) from None


def emit(
    report: Any,
    *,
    json_out: bool,
    output: Path | None,
    summary: Path | None,
    files: list[str],
    by: str | None = None,
    plot: tuple[Path, bytes] | None = None,
    document: str | None = None,
) -> None:
    """Warnings to stderr; the product to stdout; the report (-o), the summary and the picture
    to their files, all or none of them; then the gate's verdict as the exit code.

    ``document`` replaces the JSON report as what -o and --json write (a calibrator file)."""
    from calibcli.output import OutputError, Staged

    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if sys.stdout is None:
        raise usage_error("cannot write to standard output: it is closed")
    text = report.to_json() if document is None else document
    staged = Staged()
    try:
        if plot is not None:
            staged.add(plot[0], plot[1], "plot")
        if summary is not None:
            from calibcli.summary import markdown

            staged.add(summary, markdown(report.display, files), "summary", append=True)
        if output is not None:
            staged.add(output, text, "report")
        try:
            if json_out:
                sys.stdout.write(text)
            else:
                from calibcli.render import print_report

                print_report(report.display or report.body, by=by)
            sys.stdout.flush()
        except BrokenPipeError:  # stdout's reader left (`| head`): not a verdict, so carry on
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError as exc:  # a full disk behind stdout: nothing else is written either
            staged.discard()
            raise usage_error(f"cannot write to standard output: {exc.strerror or exc}") from None
        staged.commit()
    except OutputError as exc:
        raise usage_error(str(exc)) from None
    for failure in report.failures:
        typer.echo(f"gate failed: {failure}", err=True)
    if not report.passed:
        raise typer.Exit(1)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """The estimators make only small BLAS calls; a multi-threaded BLAS pool would spin on the
    core that a reader worker or a bootstrap process needs."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
