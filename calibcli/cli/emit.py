"""What every command does last: warnings to stderr, the product to stdout, the report, summary
and picture to their files (all or none), and the gate's verdict as the exit code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from calibcli.cli import github
from calibcli.cli.app import usage_error


def check_outputs(**paths: Path | None) -> None:
    """Refuse output paths that cannot be written (``output=``, ``summary=``, ``plot=``) before
    any input is read: a typo costs nothing and no file is touched."""
    from calibcli.cli.staging import OutputError, check_writable

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
    from calibcli.render.image import (
        PlotUnavailable,
        image_format,
        reliability_image,
        report_series,
    )

    if labels and len(labels) != len(report.series):
        raise usage_error(
            f"--label given {len(labels)} time(s) but the plot has {len(report.series)} series"
        )
    series = report_series(report.series, labels, with_ci=with_ci)
    try:
        return reliability_image(series, image_format(plot))
    except PlotUnavailable as exc:
        raise usage_error(f"--plot: {exc}") from None


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
    from calibcli.cli.staging import OutputError, Staged

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
            from calibcli.render.markdown import markdown

            staged.add(summary, markdown(report.display, files), "summary", append=True)
        if output is not None:
            staged.add(output, text, "report")
        try:
            if json_out:
                sys.stdout.write(text)
            else:
                from calibcli.render.terminal import print_report

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
    github.finished(report)  # annotations and step outputs under GitHub Actions
    if not report.passed:
        raise typer.Exit(1)
