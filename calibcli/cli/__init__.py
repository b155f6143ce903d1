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
import os
import signal
import sys
import traceback
from typing import Any


def _interrupted_at_start(signum: int, frame: Any) -> None:
    # Ctrl-C before a command runs: nothing is started or staged yet, so stop at once, with the
    # command's one line and exit code rather than a traceback of the imports.
    os.write(2, b"Interrupted\n")
    os._exit(130)


def _on_interrupt_exit() -> Any:
    """Make Ctrl-C exit at once (see :func:`_interrupted_at_start`); the previous handler, or
    None off the main thread (where signals cannot be set)."""
    try:
        return signal.signal(signal.SIGINT, _interrupted_at_start)
    except ValueError:
        return None


_previous = _on_interrupt_exit()

from calibcli.cli.app import app  # noqa: E402 (typer's import is the slow part of a start)

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

if _previous is not None:  # importing the package must not change a program's Ctrl-C
    signal.signal(signal.SIGINT, _previous)

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: exit 0/1/2 as the commands decide, 3 for any crash, 130 for
    Ctrl-C (the command's handler takes over from the one set here once it runs). A caller's
    own Ctrl-C handler is back when it returns, unless it was interrupted (the process then
    ends with 130 at once)."""
    previous = _on_interrupt_exit()
    code: Any = None
    try:
        app(args=argv, prog_name="calibcli")
    except SystemExit as exc:
        code = exc.code
        if code == 130:
            # Interrupted: the command's cleanup has run (workers stopped, staged files
            # removed). Leave without the interpreter's exit hooks, whose process-pool hook
            # writes to a wake-up pipe the stopped pool has closed (a traceback on Python
            # 3.10) after the one line already printed.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        raise
    except Exception:  # a bug, never a verdict on the data: show it so it can be reported
        traceback.print_exc()
        code = 3
        sys.exit(3)
    finally:
        if previous is not None and code != 130:
            signal.signal(signal.SIGINT, previous)
