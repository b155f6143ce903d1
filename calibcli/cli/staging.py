"""Writing what a run produces to the files the user named: the JSON report, the Markdown
summary, the picture and the HTML page.

Every output is *staged* first: written in full to a temporary file beside its target, flushed
and fsynced (:mod:`calibcli.io.atomic`). No target changes before everything is staged, and the
targets then change in an order chosen so that a run that exits 2 (bad input, a full disk, a
folder that does not exist, a path through a file) leaves every existing regular file as it was:

1. Targets that exist but are not regular files (``/dev/null``, ``/dev/stdout``, ``/dev/full``,
   a FIFO) cannot be staged, and replacing them would be wrong (as root, ``/dev/null`` would
   become a plain file): they are written through, first, so that when one fails no file has
   been touched. What a stream received before a later output failed cannot be taken back.
   Under GitHub Actions, whose runner reads the job's stdout and stderr for workflow
   commands, what they receive is shown as text (:func:`calibcli.cli.github.stream_guarded`,
   and a summary file's header as JSON text); a regular file is written as it is.
2. The appended outputs (the Markdown summary) receive their text, one write each. One that
   fails (a full disk) is cut back to its length before, so it is left as it was, and no other
   file is put in place.
3. The staged files are renamed over their targets. A rename within a folder needs no space;
   should one fail all the same, the appended text is cut back, and the files renamed before
   it stay renamed.

A symbolic link is followed: its target is replaced atomically and the link kept. A stream
whose reader has left (``-o /dev/stdout | head``) is not a failed write: the rest of what it was
to receive is dropped, as stdout's own output is, and the run ends as it would have.

An output that is appended to (the Markdown summary) is never replaced: it may be shared by
concurrent runs, or held open by the shell that exports ``$GITHUB_STEP_SUMMARY``. It is opened
with ``O_APPEND`` when staged (so a path that cannot be opened fails the run before anything is
written). Cutting it back removes only this run's text: it is not cut when it no longer ends
where this run's write ended (another run appended since), and a summary the commit created is
removed.

An output that is one of the run's inputs is refused before anything is read
(:func:`check_apart`, which every command runs first): it would replace what the run reads. So
are two outputs that are one file: one would replace, or be appended to, the other. Standard
input and standard output count as the files the shell redirected them from and to
(``- < rows.jsonl``, ``>> rows.jsonl``), as GNU cat refuses "input file is output file".

``-`` as an output means standard output, for a command whose product goes nowhere else there
(apply's rows, summarize's and merge's summary file, render's page); a command that prints a
table or JSON on stdout refuses it. An output named with a compression suffix (``.gz``,
``.zst``, ``.xz``, ``.bz2``) is written compressed where calibcli reads that file back
compressed (summary files; apply compresses its rows itself), and refused where it does not
(reports and calibrator files, which render, apply and --calibrator read as plain JSON; an HTML
page, which a browser does not open compressed; a Markdown summary, which is appended to).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibcli.cli import github
from calibcli.io import (
    AtomicFile,
    compressing,
    is_special,
    mode_for,
    signals_held,
    suffix_codec,
    target_of,
    temporary_beside,
)


class OutputError(Exception):
    """An output path that cannot be written; the message names the path and the reason."""


_APPEND = (
    os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
)  # /dev/stdout and /proc/self/fd/N name open streams


def _folder_problem(folder: Path) -> str | None:
    """Why files cannot be created in ``folder`` (it does not exist, it or a folder above it
    is a file, it is not writable), or None."""
    try:
        found = os.stat(folder)
    except FileNotFoundError:
        return f"folder {folder} does not exist"
    except NotADirectoryError:  # a file on the way: name it
        for above in folder.parents:
            try:
                if not stat.S_ISDIR(os.stat(above).st_mode):
                    return f"{above} is not a folder"
            except OSError:
                continue
        return f"folder {folder} does not exist"
    except OSError as exc:
        return f"folder {folder}: {exc.strerror or exc}"
    if not stat.S_ISDIR(found.st_mode):
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {folder} is not writable"
    return None


STDOUT = "-"
"""The output name that means standard output (as ``-`` as an input means standard input)."""


def is_stdout(path: object) -> bool:
    """Whether an output option's value is ``-``: standard output."""
    return path is not None and str(path) == STDOUT


def check_writable(path: Path, what: str) -> None:
    """Raise OutputError unless ``path`` can be written: its folder exists and is writable, and
    the path itself is not a folder. Checked before any input is read."""
    if is_stdout(path):  # whether the command may write there is check_apart's to say
        return
    target = target_of(Path(path))
    if os.path.isdir(target):
        raise OutputError(f"{path}: cannot write the {what}: it is a directory")
    if is_special(target):
        if not os.access(target, os.W_OK):
            raise OutputError(f"{path}: cannot write the {what}: permission denied")
        return
    problem = _folder_problem(target.parent if str(target.parent) else Path("."))
    if problem is not None:
        raise OutputError(f"{path}: cannot write the {what}: {problem}")
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise OutputError(f"{path}: cannot write the {what}: permission denied")


OUTPUT_PARAMETERS = ("output", "summary", "plot", "html")
"""The parameters by which a command names a file it writes (-o, --summary, --plot, --html)."""
OPTION_NAMES = {"output": "-o", "summary": "--summary", "plot": "--plot", "html": "--html"}
INPUT_PARAMETERS = ("files", "parts", "base", "new", "report", "calibrator", "fit")
"""The parameters by which a command names files it reads (folders and patterns included)."""
PRINTS_ITS_REPORT = "json_out"
"""The parameter (--json) of the commands that print their report on stdout, as a table or as
JSON: their -o writes a report or a calibrator file, and stdout is never free for an output."""
_STDIN, _STDOUT = "standard input", "standard output"  # as messages name them


def check_apart(arguments: dict[str, Any]) -> None:
    """Raise OutputError when a command's arguments name one file as an output and an input:
    the output would replace (or, for --summary, append to) what the run reads; or as two
    outputs: one would replace the other, or be appended to it. Files are compared as
    :func:`os.path.samefile` does, so another spelling, a symbolic or a hard link count (two
    outputs that do not exist yet, by the paths they resolve to); only an output that exists
    as a regular file can be an input, and outputs written through to a stream
    (``/dev/stdout`` twice) each add their text to it. Standard input read as ``-`` is the
    regular file it was redirected from, if it is one; standard output, when the command
    writes its product there, the regular file it was redirected to (``>> rows.jsonl``).
    Output names are checked first (:func:`_check_names`). Checked before any input is
    read."""
    _check_names(arguments)
    _check_outputs_apart(arguments)
    written = []
    for name in OUTPUT_PARAMETERS:
        path = arguments.get(name)
        if is_stdout(path):
            continue  # standard output, looked at below
        try:
            found = None if path is None else os.stat(path)
        except OSError:
            continue
        if found is not None and stat.S_ISREG(found.st_mode):
            written.append((str(path), found))
    out = redirected_file(sys.stdout) if prints_to_stdout(arguments) else None
    if out is not None:
        written.append((_STDOUT, out))
    if not written:
        return
    for source, found in input_stats(arguments):
        for path, output in written:
            if os.path.samestat(found, output):
                raise OutputError(_same(source, path))


def input_stats(arguments: dict[str, Any]) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of the files the command reads: those named (folders and patterns
    expanded), and standard input's file when ``-`` is read from one."""
    from calibcli.io import named_files

    given, stdin_read = [], False
    for name in INPUT_PARAMETERS:
        value = arguments.get(name)
        values = value if isinstance(value, list) else [value]
        stdin_read = stdin_read or any(str(v) == "-" for v in values if v is not None)
        given += [str(v) for v in values if v is not None and str(v) != "-"]
    sources = []
    for source in named_files(given):
        try:
            sources.append((source, os.stat(source)))
        except OSError:
            continue  # reading it says what is wrong with it
    held = redirected_file(sys.stdin) if stdin_read else None
    if held is not None:
        sources.append((_STDIN, held))
    return sources


def _same(source: str, path: str) -> str:
    """What is wrong when ``path`` (an output, or standard output) is the input ``source``."""
    if path == _STDOUT:
        if source == _STDIN:
            return (
                "standard input and standard output are redirected from and to one file; "
                "send standard output elsewhere"
            )
        return (
            f"{source}: the input file is also standard output (redirected to it); send "
            "standard output elsewhere"
        )
    also = "" if source == path else f" ({source})"
    return f"{path}: the output file is also an input{also}; write the output elsewhere"


def redirected_file(stream: Any) -> os.stat_result | None:
    """The regular file behind ``stream`` (sys.stdin or sys.stdout, by its file descriptor),
    or None: a terminal, a pipe, a device, a stream without a descriptor (a test runner's)."""
    try:
        found = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # None, closed, or io.UnsupportedOperation
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def prints_to_stdout(arguments: dict[str, Any]) -> bool:
    """Whether the command writes its product on standard output: a command with --json
    prints its table or JSON there; apply its rows, without -o; any command an output
    named ``-``."""
    if PRINTS_ITS_REPORT in arguments:
        return True
    if "output" in arguments and arguments["output"] is None:
        return True
    return any(is_stdout(arguments.get(name)) for name in OUTPUT_PARAMETERS)


def _check_names(arguments: dict[str, Any]) -> None:
    """Raise OutputError for an output name the command cannot honour: ``-`` where standard
    output carries the command's table or JSON; a compression suffix on a file calibcli
    writes plain (a report, a calibrator file, an HTML page, an appended summary)."""
    prints = PRINTS_ITS_REPORT in arguments
    for name in OUTPUT_PARAMETERS:
        path = arguments.get(name)
        if path is None:
            continue
        option = OPTION_NAMES[name]
        if is_stdout(path):
            if prints:
                hint = "give --json to print the JSON there" if name == "output" else ""
                hint = hint or f"name a file for {option}"
                raise OutputError(
                    f"{option} -: standard output carries the command's table (its JSON with "
                    f"--json); {hint}"
                )
            continue
        codec = suffix_codec(Path(path).name)
        if codec is None or name == "plot":  # a picture's name gives its format: checked there
            continue
        why = _PLAIN.get(name) if name != "output" or prints else None
        if why is not None:
            raise OutputError(
                f"{path}: {option} writes no {codec.name} file ({codec.suffix}): {why}; name "
                f"the file without {codec.suffix}"
            )


_PLAIN = {
    "output": "reports and calibrator files are read as plain JSON (by render, apply and "
    "--calibrator)",
    "html": "a browser opens no compressed page from a file",
    "summary": "the Markdown summary is appended to, and read as text",
}
"""Why an output is never written compressed, by parameter (-o: that of a command with
--json)."""


def _check_outputs_apart(arguments: dict[str, Any]) -> None:
    """Raise OutputError when two of the outputs in ``arguments`` are one file."""
    seen: dict[object, tuple[str, Any]] = {}
    for name in OUTPUT_PARAMETERS:
        path = arguments.get(name)
        if path is None or is_stdout(path) or is_special(target_of(Path(path))):
            continue
        try:
            found = os.stat(path)
            key: object = (found.st_dev, found.st_ino)
        except OSError:  # not there yet: where it would be created
            key = os.path.realpath(path)
        if key not in seen:
            seen[key] = (name, path)
            continue
        first, earlier = seen[key]
        also = "" if str(earlier) == str(path) else f" (as {path})"
        raise OutputError(
            f"{earlier}: given to both {OPTION_NAMES[first]} and {OPTION_NAMES[name]}{also}; "
            "write each output to a file of its own"
        )


@dataclass
class _Append:
    """Text staged to be appended to a file at commit (``fd``: the file opened when staged,
    None when it did not exist then)."""

    fd: int | None
    payload: bytes
    target: Path
    path: Path
    what: str
    created: bool = False
    before: int = 0  # the file's length before this run's write
    end: int = 0  # and where this run's write ended


@dataclass
class Staged:
    """Outputs written to temporary files, waiting for :meth:`commit` (or :meth:`discard`)."""

    _renames: list[tuple[str, Path]] = field(default_factory=list)
    _through: list[tuple[Path, bytes, Path, str]] = field(default_factory=list)  # streams
    _appends: list[_Append] = field(default_factory=list)

    def add(self, path: Path, data: bytes | str, what: str, *, append: bool = False) -> None:
        """Stage ``data`` for ``path`` (appended to what the file holds with ``append``)."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        target = Path(STDOUT) if is_stdout(path) else target_of(Path(path))
        try:
            if is_stdout(path) or is_special(target):  # a runner may read it: shown as text
                payload = github.stream_guarded(payload, _form(path, what))
                self._through.append((target, payload, Path(path), what))
                return
            if append:
                try:
                    handle: int | None = os.open(target, _APPEND)
                except FileNotFoundError:  # created at commit: a failed run leaves no file
                    handle = None
                self._appends.append(_Append(handle, payload, target, Path(path), what))
                return
            with signals_held():  # recorded before a signal can end the run
                fd, tmp = temporary_beside(target)
                self._renames.append((tmp, target))
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode_for(target))
        except OSError as exc:
            self.discard()
            raise OutputError(_failed(path, what, exc)) from None

    def commit(self) -> None:
        """Put every staged output in place: streams and devices written through, then the
        appends (one write each), then the renames; when a step fails, every regular target
        is left as it was (the module's docstring says the order and why)."""
        for target, payload, path, what in self._through:
            try:
                if is_stdout(target):
                    _Stdout().write(payload, flush=True)
                    continue
                with open(target, "ab") as f:
                    f.write(payload)
            except BrokenPipeError:
                continue  # its reader left (`| head`): the rest is not wanted, no failure
            except OSError as exc:
                self.discard()
                raise OutputError(_failed(path, what, exc)) from None
        self._through.clear()
        done: list[_Append] = []
        while self._appends:
            entry = self._appends.pop(0)
            try:
                _append(entry)
                done.append(entry)
            except OSError as exc:
                _cut_back([entry, *done])
                self.discard()
                raise OutputError(_failed(entry.path, entry.what, exc)) from None
        try:
            while self._renames:
                tmp, target = self._renames[0]
                os.replace(tmp, target)
                self._renames.pop(0)
        except OSError as exc:
            _cut_back(done)
            self.discard()
            raise OutputError(f"{target}: cannot write: {exc.strerror or exc}") from None

    def discard(self) -> None:
        """Remove the temporary files of what was staged and not committed."""
        for tmp, _ in self._renames:
            Path(tmp).unlink(missing_ok=True)
        for entry in self._appends:
            if entry.fd is not None:
                os.close(entry.fd)
        self._renames.clear()
        self._through.clear()
        self._appends.clear()


def _form(path: Path, what: str) -> str:
    """What kind of text an output is, for :func:`calibcli.cli.github.stream_guarded`: the
    report and the calibrator file JSON, the HTML page and an SVG picture markup, other
    pictures binary, the Markdown summary text."""
    if what == "plot":
        return "markup" if Path(path).suffix.lower() == ".svg" else "binary"
    return {"report": "json", "HTML report": "markup"}.get(what, "text")


def _failed(path: Path | str, what: str, exc: OSError) -> str:
    shown = _STDOUT if is_stdout(path) else path
    return f"{shown}: cannot write the {what}: {exc.strerror or exc}"


class _Stdout:
    """Standard output as an output file (``-o -``): sys.stdout's binary stream, its text
    written so far flushed first. When its reader has left (``| head``), what it was still
    to receive goes to the null device, as stdout's own output does, and BrokenPipeError is
    raised for the command to stop writing."""

    def __init__(self) -> None:
        if sys.stdout is None:  # started with file descriptor 1 closed
            raise OSError(errno.EBADF, "it is closed")
        self._stream = sys.stdout
        self._stream.flush()

    def write(self, data: bytes, *, flush: bool = False) -> None:
        try:
            self._stream.buffer.write(data)
            if flush:
                self._stream.buffer.flush()
        except BrokenPipeError:
            with contextlib.suppress(OSError, ValueError):  # no descriptor: a test runner's
                os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
            raise

    def close(self) -> None:  # stdout stays open for what the command says after it
        self.write(b"", flush=True)


def ends_mid_line(path: Path | str) -> bool:
    """Whether the regular file ``path`` ends without a newline, so that text appended to it
    would continue its last line (a Markdown heading would join an earlier step's table row,
    and not be a heading). False for an empty, missing or unreadable file, or a stream."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:  # missing, unreadable, or empty (a seek before its start)
        return False


def _append(entry: _Append) -> None:
    """Append ``entry``'s text to its file, noting where it went (for :func:`_cut_back`)."""
    if entry.fd is None:
        try:
            entry.fd = os.open(entry.target, _APPEND | os.O_CREAT | os.O_EXCL, 0o666)
            entry.created = True
        except FileExistsError:  # another run created it since it was staged
            entry.fd = os.open(entry.target, _APPEND)
    fd, entry.fd = entry.fd, None
    try:
        entry.before = entry.end = os.fstat(fd).st_size
        # text after a last line without its newline starts on a line of its own
        start = b"\n" if entry.before and ends_mid_line(entry.target) else b""
        view = memoryview(start + entry.payload)
        while view:  # one write(2) for any text a summary holds: a regular file takes it whole
            view = view[os.write(fd, view) :]
            entry.end = os.fstat(fd).st_size
    finally:
        os.close(fd)


def _cut_back(entries: list[_Append]) -> None:
    """Take this run's text out of the appended files again: a file that ends where this run's
    write ended is cut to its length before it (a file it created is removed); one another run
    appended to since is left with both texts."""
    for entry in entries:
        try:
            if os.stat(entry.target).st_size != entry.end:
                continue
            if entry.created:
                os.unlink(entry.target)
            else:
                os.truncate(entry.target, entry.before)
        except OSError:
            continue  # nothing more can be done: the run's error is the one to say


class StreamTarget(AtomicFile):
    """A file written as a stream and put in place only when complete
    (:class:`calibcli.io.AtomicFile`), its errors OutputError naming the path and what it is.
    Use as a context manager: leaving it by an exception discards the temporary file and
    leaves the target as it was. A stream whose reader left raises BrokenPipeError from
    :meth:`write` (or at the end): the command stops writing, and says nothing, as it does
    when stdout's reader leaves. ``-`` is standard output.

    A name ending in a compression suffix (``.gz``, ``.zst``, ``.xz``, ``.bz2``) is written
    compressed so, except apply's rows (``what`` "rows"), which apply compresses itself."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(path)
        self.what = what
        self._first = True
        named = not is_stdout(path) and what != "rows"
        self._codec = suffix_codec(Path(path).name) if named else None
        self._put, self._finish = self._written, None

    def __enter__(self) -> StreamTarget:
        try:
            if is_stdout(self.path):
                self.file = _Stdout()
            else:
                super().__enter__()
        except OSError as exc:
            raise OutputError(_failed(self.path, self.what, exc)) from None
        if self._codec is not None:
            self._put, self._finish = compressing(self._written, self._codec)
        return self

    def write(self, data: bytes) -> None:
        """Write ``data``; OutputError when it cannot be, and BrokenPipeError, left for the
        command to stop writing without an error, when a stream's reader left (``| head``)."""
        self._put(data)

    def _written(self, data: bytes) -> None:
        """Write ``data`` as the file holds it (compressed already, if it is)."""
        if self._first and self._tmp is None and self._codec is None:
            data = _summary_guarded(data)  # written through to a stream a runner may read
        self._first = False
        try:
            super().write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(_failed(self.path, self.what, exc)) from None

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            if kind is None and self._finish is not None:
                self._finish()  # the end of the compressed stream
        except BaseException:
            super().__exit__(*sys.exc_info())  # the temporary file is removed
            raise
        try:
            super().__exit__(kind, exc, tb)
        except BrokenPipeError:  # what close flushed to a stream found its reader gone
            raise
        except OSError as err:
            raise OutputError(_failed(self.path, self.what, err)) from None


def _summary_guarded(data: bytes) -> bytes:
    """A summary file's first piece, its prefix and JSON header, as written where a runner
    reads it: each ``##[`` in the header (group names, sources) written ``##\\u005b``, the
    same JSON value as :func:`calibcli.cli.github.json_guarded` writes (the file reads as the
    same summary). Any other data, and everything outside Actions, is returned as it is."""
    if not github.runner_reads():
        return data
    from calibcli.summaries import header_escaped

    return header_escaped(data, b"##[", b"##\\u005b")
