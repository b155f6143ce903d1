"""The typer application: one-line usage errors, the exit codes, ``--version``, shell completion
and the CI options every command gets (calibcli.cli.github).

Commands live in calibcli.cli.commands and register themselves on :data:`app`; what they share
is in calibcli.cli.reading (reading with exit-2 errors) and calibcli.cli.emit (the outputs and
the gate's exit code). Heavy modules (numpy, rich, matplotlib) are imported inside functions.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from calibcli.cli import github
from calibcli.errors import one_line

EXIT_CODES = """\b
Exit codes:
  0  ran, and every requested threshold holds
  1  a gate failed: a --max-* threshold is exceeded, a --min-* floor (rows, tokens,
     coverage) is not reached, NEW is worse than BASE by more than a
     --max-increase/--max-decrease margin, or the data cannot support the check (too few
     populated bins, no rows, zero tokens, several models' rows, a calibrator's own rows,
     a summary missing pieces of a file read with --part, or, for an interval's upper
     end, samples scored several times that the bootstrap cannot draw by question)
  2  usage error or invalid input: one line on stderr, "Error: FILE:LINE: what is wrong";
     no report is written and an existing -o file is left untouched
  3  internal error (a bug): the traceback is printed
130  interrupted (Ctrl-C): worker processes are stopped and no output file is written
143  terminated (SIGTERM: a CI job's timeout or cancel, docker stop), as for 130"""

INTERRUPTED = 130
"""Exit code of a run stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""

TERMINATED = 143
"""Exit code of a run stopped by SIGTERM (128 + SIGTERM, as a shell reports it)."""

_stopped_by: int | None = None
"""The signal that stopped the running command, if one did (see :func:`_on_interrupt`)."""

_sigterm_stops = False
"""Whether SIGTERM stops a command as Ctrl-C does: in the calibcli program (see
:func:`sigterm_stops_commands`), never in a program that runs the app in its own process (a
test runner), whose SIGTERM stays its own."""


class _Interrupted(BaseException):
    """Ctrl-C or SIGTERM inside a command, carried past typer (which would exit 130 without a
    word)."""


class _Terminated(KeyboardInterrupt):
    """SIGTERM inside a command: it unwinds the command as Ctrl-C does (the same cleanup stops
    the worker processes and removes staged files), and the run ends with its own exit code."""


_handler_pid: int | None = None
"""The process that set :func:`_on_interrupt` for SIGTERM: a worker forked from it has it too."""


def _on_interrupt(signum: int, frame: Any) -> None:
    if signum == signal.SIGTERM and os.getpid() != _handler_pid:
        # A worker process (forked while the command runs) stopped with SIGTERM, by the
        # command's cleanup or with the whole group: it ends as by default. (Setting the default
        # in the worker as it starts would lose a SIGTERM sent before it did: Python drops a
        # signal whose handler was replaced after it arrived.)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    # The first Ctrl-C or SIGTERM stops the command; a second one (of either kind) must not cut
    # short the cleanup that stops the worker processes and removes staged files, so both are
    # ignored from here on.
    global _stopped_by
    _stopped_by = signum
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if signal.getsignal(signal.SIGTERM) is _on_interrupt:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise _Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _stop_again(hook: Any) -> Any:
    """``sys.unraisablehook`` while a command runs: the exception :func:`_on_interrupt` raised
    where Python cannot raise one (a weakref callback, a ``__del__``: it prints "Exception
    ignored" and goes on) is raised again where the command can unwind, by the same signal
    sent once more from another thread a moment later (sent from here, its handler would run
    here, in the hook, where an exception is ignored too); anything else is ``hook``'s."""
    import threading

    def unraisable(info: Any) -> None:
        stopped = _stopped_by
        main = threading.current_thread() is threading.main_thread()
        if stopped is None or not main or not isinstance(info.exc_value, KeyboardInterrupt):
            hook(info)
            return
        signal.signal(stopped, _on_interrupt)
        again = threading.Timer(0.01, os.kill, (os.getpid(), stopped))
        again.daemon = True
        again.start()

    return unraisable


@contextlib.contextmanager
def sigterm_stops_commands() -> Iterator[None]:
    """Inside the block, SIGTERM (a CI job's timeout or cancel, ``docker stop``) stops a
    command as Ctrl-C does, with its own line and exit code: for the calibcli program's entry
    point (:func:`calibcli.cli.main`)."""
    global _sigterm_stops
    _sigterm_stops = True
    try:
        yield
    finally:
        _sigterm_stops = False


@contextlib.contextmanager
def _interrupt_once() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt once (see :func:`_on_interrupt`) inside the block
    (unless it is ignored), and SIGTERM its subclass :class:`_Terminated` in the calibcli
    program (unless SIGTERM is ignored, or handled outside Python). The previous SIGINT
    handler comes back after it unless the run was stopped (the process exits); SIGTERM's
    comes back always."""
    global _stopped_by, _handler_pid
    _stopped_by = None
    previous = signal.getsignal(signal.SIGINT)
    # an ignored Ctrl-C (`trap '' INT`, a background job's) stays ignored, as Python keeps it
    handler = signal.SIG_IGN if previous is signal.SIG_IGN else _on_interrupt
    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    previous_term = signal.getsignal(signal.SIGTERM) if _sigterm_stops else None
    if previous_term not in (signal.SIG_IGN, None):
        _handler_pid = os.getpid()
        signal.signal(signal.SIGTERM, _on_interrupt)
    interrupted = False
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _stop_again(previous_hook)
    try:
        yield
    except _Interrupted:
        interrupted = True
        raise
    finally:
        sys.unraisablehook = previous_hook
        if not interrupted:
            signal.signal(signal.SIGINT, previous)
        if previous_term not in (signal.SIG_IGN, None):
            signal.signal(signal.SIGTERM, previous_term)


def usage_error_type() -> type[Exception]:
    """The vendored click's UsageError (typer does not export it; BadParameter derives from it)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _OneLineErrors(TyperGroup):
    """A usage error (a bad option value, a missing argument) is one line on stderr, like an
    input error: ``Error: what is wrong (see 'calibcli calibrate -h')``, exit 2. Ctrl-C is
    one line too, ``Interrupted``, exit 130, after the command's cleanup ran; SIGTERM
    ``Terminated``, exit 143."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None
        except usage_error_type() as exc:
            # click's parser reports an option given without its value, or a flag given one,
            # without the command's context: give it the invoked command's, so that the error
            # names the command's help and writes its step outputs as any other usage error
            name = ctx.invoked_subcommand
            command = self.get_command(ctx, name) if name else None
            if getattr(exc, "ctx", None) is None and command is not None:
                exc.ctx = command.context_class(command, info_name=name, parent=ctx)
            raise

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        usage_error = usage_error_type()
        github.starting()
        try:
            with _interrupt_once():
                code = super().main(*args, standalone_mode=False, **kwargs)
                if _stopped_by == signal.SIGTERM:  # before the command ran: typer said 130
                    raise _Interrupted
        except _Interrupted:
            if _stopped_by == signal.SIGTERM:
                typer.echo("Terminated", err=True)
                sys.exit(TERMINATED)
            typer.echo("Interrupted", err=True)
            sys.exit(INTERRUPTED)
        except usage_error as exc:
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # help for a bare "calibcli"
            elif ctx is None:  # before any command was named: no command's help to point at
                message = exc.format_message()
                say(f"Error: {message}")
                github.error(message)
            else:
                # click lays a list of choices out one per line ("Choose from:\n\ta,\n\tb")
                shown = re.sub(r"([:,])\n\t", r"\1 ", exc.format_message())
                message = f"{shown} (see '{ctx.command_path} -h')"
                say(f"Error: {message}")
                github.error(message)
                # a bad option value is found before the command runs, which writes the step
                # outputs of a run without a report itself
                github.unfinished(ctx.command.name)
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


def _outputs_apart(command: Any) -> Any:
    """The command, refusing (exit 2) before it runs an output file that is also one of its
    inputs (calibcli.cli.staging.check_apart), or a file that standard output or standard error
    is redirected to (calibcli.cli.streams.check_streams), so that nothing is read or written."""

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        from calibcli.cli.staging import OutputError, check_apart
        from calibcli.cli.streams import check_streams

        try:
            check_apart(kwargs)
            check_streams(kwargs)
        except OutputError as exc:
            raise usage_error(str(exc)) from None
        return command(**kwargs)

    return run


class _CalibcliApp(typer.Typer):
    """Every command registered gets the CI options (--annotations, --no-summary), declared
    once in calibcli.cli.github, and refuses an output that is one of its inputs: no command
    module repeats either."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        register = super().command(*args, **kwargs)

        def decorator(function: Any) -> Any:
            register(github.ci_options(_outputs_apart(function)))
            return function

        return decorator


app = _CalibcliApp(
    name="calibcli",
    cls=_OneLineErrors,
    help="Corpus perplexity, calibration error and Brier score from evaluation dumps (JSONL).",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # --install-completion / --show-completion: typer's, for bash, zsh, fish and PowerShell
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from calibcli import __version__

        typer.echo(f"calibcli {__version__}")
        raise typer.Exit()


def _unfinished_outputs(command: str | None) -> None:
    if command is not None:
        github.unfinished(command)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
    # For the GitHub Action (action.yml), whose own checks of its inputs refuse a run before
    # calibcli runs: the step outputs of a run of COMMAND without a report, as calibcli writes
    # them after its own usage errors (github.unfinished), so the Action repeats no key list.
    unfinished_outputs: Annotated[
        str | None,
        typer.Option(
            "--unfinished-outputs",
            callback=_unfinished_outputs,
            is_eager=True,
            hidden=True,
            metavar="COMMAND",
        ),
    ] = None,
) -> None:
    """Corpus perplexity, calibration error and Brier score from evaluation dumps (JSONL)."""


def usage_error(message: str) -> typer.Exit:
    """Print ``Error: message`` on stderr; the caller raises the returned Exit(2).

    Called while an InputError is being handled (``except InputError``), a GitHub annotation
    also points at its file and line (calibcli.cli.github)."""
    say(f"Error: {message}")
    github.error(message, sys.exc_info()[1])
    return typer.Exit(2)


def say(line: str) -> None:
    """Print one line on stderr (an error, a warning, a verdict), escaped by
    :func:`calibcli.errors.one_line`: whatever it quotes (a file name, a field or group name)
    cannot split it in two or reach the terminal as a command, nor, under GitHub Actions, start
    a workflow command (:func:`calibcli.cli.github.guarded`)."""
    typer.echo(github.guarded(one_line(line) + "\n"), err=True, nl=False)


def warn(text: str) -> None:
    """Print ``warning: text`` on stderr (:func:`say`) and, under GitHub Actions, annotate it,
    as a report's warnings are: for what a command says outside its report (summarize, merge,
    apply, and the picture's note)."""
    say(f"warning: {text}")
    github.warned(text)
