"""What every command does last: warnings to stderr, the product to stdout, the report, summary
and picture to their files (all or none), and the gate's verdict as the exit code.

Every output is rendered from the report's JSON as written (``json.loads(report.to_json())``),
so what a saved report renders to later is exactly what the command showed.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from calibcli.cli import github
from calibcli.cli.app import say, usage_error, warn


@dataclass(frozen=True)
class Plot:
    """What ``--plot`` asks for: the image's path, its series' names, whether to draw the
    per-bin accuracy intervals."""

    path: Path
    labels: list[str] | None = None
    with_ci: bool = True


def check_outputs(**paths: Path | None) -> None:
    """Refuse output paths that cannot be written (``output=``, ``summary=``, ``plot=``,
    ``html=``) before any input is read: a typo costs nothing and no file is touched."""
    from calibcli.cli.staging import OutputError, check_writable

    names = {"output": "report", "summary": "summary", "plot": "plot", "html": "HTML report"}
    for key, path in paths.items():
        if path is None or github.is_step_summary(path):  # checked already, and only a warning
            continue
        try:
            check_writable(path, names.get(key, key))
        except OutputError as exc:
            raise usage_error(str(exc)) from None


MAX_SERIES = 7
"""Series one picture draws at most: one colour of the palette each, and a legend that leaves
room for the axes (matplotlib collapses them with dozens of entries)."""


def _largest(
    sections: dict[str, Any], sizes: dict[str, int], labels: list[str] | None
) -> tuple[dict[str, Any], list[str] | None, str | None]:
    """The sections a picture draws: all of them, or the ``MAX_SERIES`` with the most rows
    (ties in the report's order), kept in the report's order, with their labels and a
    warning naming what was drawn."""
    if len(sections) <= MAX_SERIES:
        return sections, labels, None
    names = list(sections)
    ranked = sorted(range(len(names)), key=lambda i: -sizes.get(names[i], 0))
    kept = sorted(ranked[:MAX_SERIES])
    drawn = {names[i]: sections[names[i]] for i in kept}
    shown = [labels[i] for i in kept] if labels else None
    listed = ", ".join(shown or ["<stdin>" if n == "-" else n for n in drawn])
    note = (
        f"--plot draws the {MAX_SERIES} series with the most rows of {len(names)} ({listed}); "
        "the report holds them all"
    )
    return drawn, shown, note


def picture(shown: dict[str, Any], plot: Plot) -> tuple[bytes, str | None]:
    """The image ``--plot`` asks for, drawn from the report body: the accuracy–coverage curves
    of a threshold report, else the reliability diagram of the report's series (one per --by
    group, the two sides of a comparison, before and after a recalibration, or one per file),
    at most ``MAX_SERIES`` of them; and the warning that says which were left out, if any.
    Series are named as the tables name them (:func:`~calibcli.render.digits.group_cell`): no
    two alike, and one with a lone surrogate (which matplotlib cannot draw) as its literal."""
    from calibcli.render import (
        PlotUnavailable,
        coverage_image,
        coverage_sections,
        group_cell,
        image_format,
        reliability_image,
        reliability_sections,
        report_series,
    )

    fmt = image_format(plot.path)
    try:
        if shown["command"] == "threshold":
            curves = coverage_sections(shown)
            groups = shown.get("groups") or {}
            sizes = {group_cell(name): groups.get(name, {}).get("n", 0) for name in curves}
            curves = {group_cell(name): curve for name, curve in curves.items()}
            curves, _, note = _largest(curves, sizes, None)
            return coverage_image(curves, fmt), note
        sections = {group_cell(k): section for k, section in reliability_sections(shown).items()}
        if plot.labels and len(plot.labels) != len(sections):
            raise usage_error(
                f"--label given {len(plot.labels)} time(s) but the plot has {len(sections)} series"
            )
        sizes = {name: section.get("n", 0) for name, section in sections.items()}
        sections, labels, note = _largest(sections, sizes, plot.labels)
        series = report_series(sections, labels, with_ci=plot.with_ci)
        return reliability_image(series, fmt), note
    except PlotUnavailable as exc:
        raise usage_error(f"--plot: {exc}") from None


class _Captured(io.StringIO):
    """Text printed for stdout, held: rich sees stdout's encoding and whether it is a
    terminal, so it lays out and colours the text as it would have printed it."""

    def __init__(self, stdout: Any) -> None:
        super().__init__()
        self._stdout = stdout

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stdout, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return self._stdout.isatty()


def _tables(shown: dict[str, Any]) -> str:
    """The tables of a report as text, as print_report would print them on stdout: where a
    runner reads stdout, they are looked at before they are printed (github.guarded)."""
    from calibcli.render import print_report

    held = _Captured(sys.stdout)
    with contextlib.redirect_stdout(held):
        print_report(shown)
    return held.getvalue()


def emit(
    report: Any,
    *,
    json_out: bool,
    output: Path | None,
    summary: Path | None,
    files: list[str],
    by: str | None = None,
    plot: Plot | None = None,
    document: str | None = None,
    html: Path | None = None,
) -> None:
    """Warnings to stderr; the product to stdout; the report (-o), the summary, the picture and
    the HTML page to their files, all or none of them; then the gate's verdict as the exit code.

    ``document`` replaces the JSON report as what -o and --json write (a calibrator file)."""
    import json

    from calibcli.cli.staging import OutputError, Staged
    from calibcli.reports import as_shown

    # --json alone writes the report piece by piece, never holding its whole text (the table
    # of 100,000 --by groups is about 200 MB of it)
    stream = json_out and document is None and output is None
    stream = stream and plot is None and summary is None and html is None
    stream = stream and hasattr(report, "json_pieces")
    report_text = None if stream else report.to_json()
    # what the renderers read; a --json run without a picture or summary needs none of it
    needs_shown = not json_out or plot is not None or summary is not None
    shown = as_shown(json.loads(report_text)) if needs_shown else None
    image, drawn = (None, None) if plot is None else picture(shown, plot)
    for warning in report.warnings:
        say(f"warning: {warning}")
    if drawn is not None:
        warn(drawn)
    if sys.stdout is None:
        raise usage_error("cannot write to standard output: it is closed")
    text = report_text if document is None else document
    staged = Staged()
    try:
        if image is not None:
            staged.add(plot.path, image, "plot")
        if html is not None:
            from calibcli.render import html_report

            page = html_report(json.loads(report_text), sources=files)
            staged.add(html, page, "HTML report")
        step_summary = None  # the automatic job summary, appended once the rest is in place
        if summary is not None:
            from calibcli.render import markdown_summary

            # GitHub's limit is the step's whole summary: what earlier commands of the step
            # wrote to it counts
            held = os.path.getsize(summary) if os.path.isfile(summary) else 0
            markdown = markdown_summary(shown, files, held=held)
            if github.is_step_summary(summary):
                step_summary = markdown
            else:
                staged.add(summary, markdown, "summary", append=True)
        if output is not None:
            staged.add(output, text, "report")
        try:
            if stream:
                for piece in github.json_guarded(report.json_pieces()):
                    sys.stdout.write(piece)
            elif json_out:
                sys.stdout.writelines(github.json_guarded([text]))
            elif github.runner_reads():
                sys.stdout.write(github.guarded(_tables(shown)))
            else:
                from calibcli.render import print_report

                print_report(shown)
            sys.stdout.flush()
        except BrokenPipeError:  # stdout's reader left (`| head`): not a verdict, so carry on
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError as exc:  # a full disk behind stdout: nothing else is written either
            staged.discard()
            raise usage_error(f"cannot write to standard output: {exc.strerror or exc}") from None
        staged.commit()
        if step_summary is not None:
            github.append_step_summary(summary, step_summary)
    except OutputError as exc:
        raise usage_error(str(exc)) from None
    except BaseException:  # Ctrl-C while staging: no temporary file stays behind
        staged.discard()
        raise
    for failure in report.failures:
        say(f"gate failed: {failure}")
    github.finished(report)  # annotations and step outputs under GitHub Actions
    if not report.passed:
        raise typer.Exit(1)
