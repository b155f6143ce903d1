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
from collections.abc import Iterable
from typing import Any

_app_module: Any = None  # calibcli.cli.app, once imported
_stopped_early: int | None = None  # a signal that came while calibcli.cli.app was imported
_args: list[str] = sys.argv[1:]  # the arguments of the run (main's argv when given)


def _stop_at_start(signum: int) -> None:
    """End a run stopped before its command ran: nothing is started or staged yet, so at once,
    with the command's one line and exit code (130, 143) rather than a traceback of the
    imports, and, under GitHub Actions, the step outputs of a run of the command named by the
    first argument that ended without a report (github.unfinished): left empty, they would read
    as 0 in a later step's expressions."""
    os.write(2, b"Interrupted\n" if signum == signal.SIGINT else b"Terminated\n")
    try:
        github = sys.modules["calibcli.cli.github"]
        command = _args[0] if _args else ""
        if command in github.OUTPUT_COMMANDS and not _annotations_off(_args) and not _worker():
            github.unfinished(command)
    finally:
        os._exit(128 + signum)


def _worker() -> bool:
    """Whether this process is a worker multiprocessing started by importing the calibcli program
    (the spawn method: the command's process writes the outputs)."""
    multiprocessing = sys.modules.get("multiprocessing")
    return multiprocessing is not None and multiprocessing.parent_process() is not None


def _annotations_off(args: list[str]) -> bool:
    """Whether the arguments turn the GitHub outputs off (``--annotations none``)."""
    for at, arg in enumerate(args):
        if arg == "--annotations" and args[at + 1 : at + 2] == ["none"]:
            return True
        if arg == "--annotations=none":
            return True
    return False


def _stopped_at_start(signum: int, frame: Any) -> None:
    global _stopped_early
    if _app_module is None:
        # calibcli.cli.github, which writes the step outputs, may be half imported: the run
        # stops as soon as the import is done (a fraction of a second)
        _stopped_early = signum
        return
    _stop_at_start(signum)


def _stop_at_start_handlers() -> dict[int, Any]:
    """Make Ctrl-C and SIGTERM end the run at once (see :func:`_stop_at_start`) until its command
    runs; the handlers replaced, by signal. A signal ignored (``trap '' INT``, a background
    job's Ctrl-C) stays ignored, as Python keeps it; SIGTERM is taken only from its default
    (a program that handles it keeps its own); off the main thread nothing changes."""
    replaced: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN or (signum == signal.SIGTERM and current != signal.SIG_DFL):
            continue
        try:
            replaced[signum] = signal.signal(signum, _stopped_at_start)
        except ValueError:  # not the main thread: signals cannot be set
            break
    return replaced


def _restore(handlers: dict[int, Any]) -> None:
    for signum, handler in handlers.items():
        if handler is not None:
            signal.signal(signum, handler)


_previous = _stop_at_start_handlers()

# typer's import is the slow part of a start
_app_module = importlib.import_module("calibcli.cli.app")
if _stopped_early is not None:
    _stop_at_start(_stopped_early)

# The command modules, in their order in --help (measure, decide, compare), and the commands each
# registers on the app when imported. A run of one command imports only its module (see main);
# anything else, and the package's ``app`` attribute, imports them all.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "perplexity": ("perplexity",),
    "calibrate": ("calibrate",),
    "reliability": ("reliability",),
    "threshold": ("threshold",),
    "fit": ("fit",),
    "apply": ("apply",),
    "compare": ("compare",),
    "parts": ("summarize", "merge"),
    "render": ("render",),
}

# importing the submodule bound the name app to it; the package's app is the typer app with
# every command registered, built on first access (module __getattr__)
del globals()["app"]

_restore(_previous)  # importing the package must not change a program's Ctrl-C or SIGTERM


def _register(modules: Iterable[str] = COMMAND_MODULES) -> Any:
    """Import command modules (each registers its commands) and return the typer app."""
    for module in modules:
        importlib.import_module(f"calibcli.cli.commands.{module}")
    return _app_module.app


def _all_commands() -> Any:
    """The app with every command registered, in --help's order whichever module came first."""
    app = _register(COMMAND_MODULES)
    order = {f"calibcli.cli.commands.{module}": i for i, module in enumerate(COMMAND_MODULES)}
    app.registered_commands.sort(key=lambda info: order[info.callback.__module__])
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return _all_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app_for(args: list[str]) -> Any:
    """The app with only the invoked command's module imported when the first argument names a
    command (its help, usage errors and run are the same); every command otherwise (--help, a
    bare calibcli, an unknown name, shell completion, which lists the commands)."""
    if args and "_CALIBCLI_COMPLETE" not in os.environ:
        for module, commands in COMMAND_MODULES.items():
            if args[0] in commands:
                return _register((module,))
    return _all_commands()


__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: exit 0/1/2 as the commands decide, 3 for any crash, 130 for
    Ctrl-C and 143 for SIGTERM (the command's handler takes over from the one set here once it
    runs). A caller's own Ctrl-C handler is back when it returns, unless it was interrupted
    (the process then ends with 130 or 143 at once)."""
    from calibcli.system import same_digits_on_every_cpu

    same_digits_on_every_cpu()  # before numpy loads
    global _args
    _args = sys.argv[1:] if argv is None else [str(arg) for arg in argv]
    previous = _stop_at_start_handlers()
    code: Any = None
    try:
        with _app_module.sigterm_stops_commands():
            _app_for(_args)(args=argv, prog_name="calibcli")
    except SystemExit as exc:
        code = exc.code
        if code in (130, 143):
            # Interrupted or terminated: the command's cleanup has run (workers stopped,
            # staged files removed). Leave without the interpreter's exit hooks, whose
            # process-pool hook writes to a wake-up pipe the stopped pool has closed (a
            # traceback on Python 3.10) after the one line already printed.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        raise
    except Exception:  # a bug, never a verdict on the data: show it so it can be reported
        traceback.print_exc()
        code = 3
        sys.exit(3)
    finally:
        if code not in (130, 143):
            _restore(previous)
