"""Standard output and standard error redirected by the shell onto a file the run writes or
reads (``-o r.json > r.json``, ``--summary s.md 2>> s.md``, ``rows.jsonl 2> rows.jsonl``).

An output replaced by a rename (a report, a calibrator file, a page, a picture) leaves what a
stream printed in the file it replaced, where nobody finds it; an appended output (the Markdown
summary) gets that text mixed into it. An input a stream is redirected to was emptied by the
shell before the run began (``>``, ``2>``), or has the run's messages appended to it (``>>``,
``2>>``). Either is refused, exit 2, before anything is read or written (:func:`check_streams`,
which every command runs after :func:`calibcli.cli.staging.check_apart`, which refuses standard
output appended to an input when the command prints there).

Standard output counts when the command prints there, and, against an input, also when it
was opened without appending (the shell emptied the input); standard error, which any run may
write (warnings, a gate's verdict), always. A stream that is not a regular file (a terminal, a
pipe, ``/dev/null``) or has no file descriptor (a test runner's) is left alone, and so is a
file that is none of the run's (``> log 2>&1``); so are outputs written through to a stream
(``-o /dev/stdout``) and ``-o -``, which is standard output itself, and the automatic job
summary under GitHub Actions, which a step's own ``>> "$GITHUB_STEP_SUMMARY"`` appends to too.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from calibcli.cli.staging import (
    OPTION_NAMES,
    OUTPUT_PARAMETERS,
    OutputError,
    input_stats,
    is_stdout,
    prints_to_stdout,
    redirected_file,
)
from calibcli.io import is_special, target_of

_STDIN, _STDOUT, _STDERR = "standard input", "standard output", "standard error"


def check_streams(arguments: dict[str, Any]) -> None:
    """Raise OutputError when standard output or standard error is redirected to one of the
    command's output files, or to one of its input files (standard output: when the command
    prints there, or the shell emptied the file), as :mod:`calibcli.cli.streams` describes."""
    out, err = redirected_file(sys.stdout), redirected_file(sys.stderr)
    if out is None and err is None:
        return
    prints = prints_to_stdout(arguments)
    streams = [(_STDERR, err, sys.stderr)]
    if prints or (out is not None and not _appends(sys.stdout)):
        streams.insert(0, (_STDOUT, out, sys.stdout))
    streams = [(name, found, of) for name, found, of in streams if found is not None]
    if not streams:
        return
    for option, path, found in _outputs(arguments):
        for name, stream, _ in streams:
            if name == _STDOUT and not prints:
                continue  # nothing is printed there: the output replaces what the shell emptied
            if os.path.samestat(found, stream):
                raise OutputError(
                    f"{path} is both the {option} file and {name} (redirected to it): what is "
                    f"printed there would be lost or mixed into the file; send {name} elsewhere"
                )
    for source, found in input_stats(arguments):
        for name, stream, of in streams:
            if os.path.samestat(found, stream):
                raise OutputError(_input_message(source, name, _appends(of)))


def _input_message(source: str, name: str, appended: bool) -> str:
    """What is wrong when the stream ``name`` is redirected to the input ``source``, appended
    to (``>>``) or not (``>``: the shell emptied the file before the run)."""
    redirect = "2>" if name == _STDERR else ">"
    why = (
        f"'{redirect}>' would append the run's messages to it"
        if appended
        else f"'{redirect}' emptied it before it could be read"
    )
    if source == _STDIN:
        return (
            f"standard input is redirected from the file {name} is redirected to ({why}); "
            f"send {name} elsewhere"
        )
    return f"{source} is both an input and {name} ({why}); send {name} elsewhere"


def _appends(stream: Any) -> bool:
    """Whether ``stream``'s file was opened for appending (``>>``), not emptied (``>``)."""
    try:
        import fcntl  # POSIX only
    except ImportError:
        return True  # no way to tell: only a command that prints there is refused
    try:
        return bool(fcntl.fcntl(stream.fileno(), fcntl.F_GETFL) & os.O_APPEND)
    except (AttributeError, OSError, ValueError):
        return True  # not a file descriptor: nothing the shell emptied


def _outputs(arguments: dict[str, Any]) -> list[tuple[str, str, os.stat_result]]:
    """(option, path, stat) of the command's outputs that are regular files (not ``-``, not
    written through to a stream, not yet there)."""
    found = []
    for name in OUTPUT_PARAMETERS:
        path = arguments.get(name)
        if path is None or is_stdout(path) or is_special(target_of(Path(path))):
            continue
        try:
            result = os.stat(path)
        except OSError:
            continue
        if name == "summary" and _job_summary(path, result):
            continue  # appended to by every step: `>> "$GITHUB_STEP_SUMMARY"` as well
        if stat.S_ISREG(result.st_mode):
            found.append((OPTION_NAMES[name], str(path), result))
    return found


def _job_summary(path: str, found: os.stat_result) -> bool:
    """Whether the summary file ``path`` (of stat ``found``) is the GitHub Actions job summary,
    the automatic one or ``--summary "$GITHUB_STEP_SUMMARY"``."""
    from calibcli.cli.github import is_step_summary

    if is_step_summary(Path(path)):
        return True
    job = os.environ.get("GITHUB_STEP_SUMMARY")
    if not job:
        return False
    try:
        return os.path.samestat(found, os.stat(job))
    except OSError:
        return False
