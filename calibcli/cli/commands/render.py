"""calibcli render: a saved JSON report drawn again, as an HTML page."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import check_outputs
from calibcli.cli.options import output_path


@app.command(epilog=EXIT_CODES)
def render(
    report: Annotated[
        str,
        typer.Argument(
            metavar="REPORT",
            show_default=False,
            help="A JSON report saved with -o or --json (or a calibrator file from 'calibcli "
            "fit'); '-' reads standard input.",
        ),
    ],
    html: Annotated[
        Path,
        typer.Option(
            "--html",
            metavar="PATH",
            parser=output_path,
            show_default=False,
            help="Write the report as one self-contained HTML page to PATH.",
        ),
    ],
) -> None:
    """Draw a saved report as one self-contained HTML page: its figures with their intervals,
    reliability diagrams and risk-coverage curves as inline SVG, the groups, the gate's checks
    and the warnings. The page loads nothing from anywhere and runs no script.

    The exit code is 0 once the page is written, whatever the report's gate said; a file that
    is not a calibcli report is exit 2, and so is one edited into what calibcli never writes: a
    field its command's page reads missing or of the wrong JSON type, or a gate whose verdict
    contradicts its own checks.
    """
    from calibcli.cli.staging import OutputError, Staged
    from calibcli.render import NotAReport, html_report

    check_outputs(html=html)
    name = "standard input" if report == "-" else report
    body = _load(report, name)
    try:
        page = html_report(body)
    except NotAReport as exc:
        raise usage_error(f"{name}: {exc}") from None
    staged = Staged()
    try:
        staged.add(html, page, "HTML report")
        staged.commit()
    except OutputError as exc:
        raise usage_error(str(exc)) from None


def _load(report: str, name: str) -> Any:
    """The parsed JSON of ``report`` ('-': standard input); exit 2 naming what is wrong."""
    try:
        data = sys.stdin.buffer.read() if report == "-" else Path(report).read_bytes()
    except OSError as exc:
        raise usage_error(f"{name}: cannot read the report: {exc.strerror or exc}") from None
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise usage_error(
            f"{name}: not a calibcli report: not UTF-8 text (byte {exc.start + 1})"
        ) from None
    except json.JSONDecodeError as exc:
        raise usage_error(
            f"{name}: not a calibcli report: invalid JSON at line {exc.lineno}, column "
            f"{exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise usage_error(f"{name}: not a calibcli report: JSON nested too deeply") from None
    except ValueError:  # an integer longer than int() converts
        from calibcli.io import long_integer

        detail = long_integer(data.decode("utf-8-sig"))
        raise usage_error(f"{name}: not a calibcli report: {detail}") from None
