"""calibcli's entry point: the typer app with every command registered, and exit code 3 for
a crash.

The stages, one package each: calibcli.io reads files into summaries (calibcli.summaries),
calibcli.reports turns summaries into reports (figures, gates), calibcli.render draws reports
(tables, diagrams, images, Markdown), calibcli.metrics holds the numbers. This package holds
the typer app (cli.app), the options (cli.options), reading with exit-2 errors (cli.reading),
writing the outputs (cli.emit, cli.staging) and one module per command (cli.commands).
"""

from __future__ import annotations

import importlib
import sys
import traceback

from calibcli.cli.app import app

# importing a module registers its commands, in this order in --help: measure, decide, compare
for _module in (
    "perplexity",
    "calibrate",
    "reliability",
    "threshold",
    "fit",
    "apply",
    "compare",
    "parts",
    "render",
):
    importlib.import_module(f"calibcli.cli.commands.{_module}")

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: exit 0/1/2 as the commands decide, 3 for any crash."""
    try:
        app(args=argv, prog_name="calibcli")
    except SystemExit:
        raise
    except Exception:  # a bug, never a verdict on the data: show it so it can be reported
        traceback.print_exc()
        sys.exit(3)
