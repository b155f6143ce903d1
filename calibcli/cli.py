"""calibcli's entry point: the typer app with every command registered, and exit code 3 for
a crash.

The app and what the commands share live in calibcli.app, the commands in calibcli.commands,
option declarations in calibcli.options, the figures each command reports in calibcli.figures,
reading in calibcli.io, numbers in calibcli.metrics, reports in calibcli.report, gates in
calibcli.gate, files in calibcli.output, tables in calibcli.render and pictures in
calibcli.diagram / calibcli.plot.
"""

from __future__ import annotations

import importlib
import sys
import traceback

from calibcli.app import app

# importing a module registers its commands, in this order in --help: measure, decide, compare
for _module in ("measure", "threshold", "recalibration", "compare"):
    importlib.import_module(f"calibcli.commands.{_module}")

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
