"""Writing what a run produces to the files the user named: the JSON report, the Markdown
summary and the picture.

Every output is *staged* first — written in full to a temporary file beside its target — and the
targets are replaced only once everything is staged, so a run that fails (bad input, a full disk,
a folder that does not exist) leaves every existing file as it was. A symbolic link is followed:
its target is replaced atomically and the link kept. A target that exists but is not a regular
file (``/dev/null``, ``/dev/stdout``, a FIFO) cannot be replaced atomically, and replacing it
would be wrong (as root, ``/dev/null`` would become a plain file): it is written through instead,
after all the regular files are in place. A stream whose reader has left (``-o /dev/stdout |
head``) is not a failed write: the rest of what it was to receive is dropped, as stdout's own
output is, and the run ends as it would have.

An output that is appended to (the Markdown summary) is never replaced: it may be shared by
concurrent runs, or held open by the shell that exports ``$GITHUB_STEP_SUMMARY``. It is opened
with ``O_APPEND`` when staged (so a path that cannot be opened fails the run before anything is
written) and receives its text in one write at commit, before the renames: of the steps of a
commit it is the one that can fail (a full disk), and when it does nothing else is put in place.

An output that is one of the run's inputs is refused before anything is read
(:func:`check_apart`, which every command runs first): it would replace what the run reads. So
are two outputs that are one file: one would replace, or be appended to, the other.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class OutputError(Exception):
    """An output path that cannot be written; the message names the path and the reason."""


_STREAM_FOLDERS = ("/dev/", "/proc/")
_APPEND = (
    os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
)  # /dev/stdout and /proc/self/fd/N name open streams


def _target(path: Path) -> Path:
    """The file a write to ``path`` lands in: symbolic links are followed, except to an open
    stream (``/dev/stdout`` leads to whatever file stdout is, which must be written through,
    not replaced)."""
    if str(path).startswith(_STREAM_FOLDERS) or not os.path.islink(path):
        return Path(path)
    real = os.path.realpath(path)
    return Path(path) if real.startswith(_STREAM_FOLDERS) else Path(real)


def _is_special(path: Path) -> bool:
    """True when ``path`` exists and is not a regular file (a device, a FIFO, a socket), or is
    an open stream's name."""
    if str(path).startswith(_STREAM_FOLDERS) and os.path.exists(path):
        return True
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_writable(path: Path, what: str) -> None:
    """Raise OutputError unless ``path`` can be written: its folder exists and is writable, and
    the path itself is not a folder. Checked before any input is read."""
    target = _target(Path(path))
    if target.is_dir():
        raise OutputError(f"{path}: cannot write the {what}: it is a directory")
    if _is_special(target):
        if not os.access(target, os.W_OK):
            raise OutputError(f"{path}: cannot write the {what}: permission denied")
        return
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: cannot write the {what}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: cannot write the {what}: folder {folder} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{path}: cannot write the {what}: permission denied")


OUTPUT_PARAMETERS = ("output", "summary", "plot", "html")
"""The parameters by which a command names a file it writes (-o, --summary, --plot, --html)."""
OPTION_NAMES = {"output": "-o", "summary": "--summary", "plot": "--plot", "html": "--html"}
INPUT_PARAMETERS = ("files", "parts", "base", "new", "report", "calibrator", "fit")
"""The parameters by which a command names files it reads (folders and patterns included)."""


def check_apart(arguments: dict[str, Any]) -> None:
    """Raise OutputError when a command's arguments name one file as an output and an input:
    the output would replace (or, for --summary, append to) what the run reads; or as two
    outputs: one would replace the other, or be appended to it. Files are compared as
    :func:`os.path.samefile` does, so another spelling, a symbolic or a hard link count (two
    outputs that do not exist yet, by the paths they resolve to); only an output that exists
    as a regular file can be an input (standard input and streams are not), and outputs
    written through to a stream (``/dev/stdout`` twice) each add their text to it. Checked
    before any input is read."""
    _check_outputs_apart(arguments)
    written = []
    for name in OUTPUT_PARAMETERS:
        path = arguments.get(name)
        try:
            found = None if path is None else os.stat(path)
        except OSError:
            continue
        if found is not None and stat.S_ISREG(found.st_mode):
            written.append((path, found))
    if not written:
        return
    from calibcli.io import named_files

    given = []
    for name in INPUT_PARAMETERS:
        value = arguments.get(name)
        values = value if isinstance(value, list) else [value]
        given += [str(v) for v in values if v is not None and str(v) != "-"]
    for source in named_files(given):
        try:
            found = os.stat(source)
        except OSError:
            continue  # reading it says what is wrong with it
        for path, output in written:
            if os.path.samestat(found, output):
                also = "" if source == str(path) else f" ({source})"
                raise OutputError(
                    f"{path}: the output file is also an input{also}; write the output elsewhere"
                )


def _check_outputs_apart(arguments: dict[str, Any]) -> None:
    """Raise OutputError when two of the outputs in ``arguments`` are one file."""
    seen: dict[object, tuple[str, Any]] = {}
    for name in OUTPUT_PARAMETERS:
        path = arguments.get(name)
        if path is None or _is_special(_target(Path(path))):
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


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@dataclass
class Staged:
    """Outputs written to temporary files, waiting for :meth:`commit` (or :meth:`discard`)."""

    _renames: list[tuple[str, Path]] = field(default_factory=list)
    _through: list[tuple[Path, bytes, bool]] = field(default_factory=list)  # written through
    _appends: list[tuple[int | None, bytes, Path, Path, str]] = field(default_factory=list)

    def add(self, path: Path, data: bytes | str, what: str, *, append: bool = False) -> None:
        """Stage ``data`` for ``path`` (appended to what the file holds with ``append``)."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        target = _target(Path(path))
        try:
            if _is_special(target):
                self._through.append((target, payload, append))
                return
            if append:
                try:
                    handle: int | None = os.open(target, _APPEND)
                except FileNotFoundError:  # created at commit: a failed run leaves no file
                    handle = None
                self._appends.append((handle, payload, target, Path(path), what))
                return
            folder = target.parent if str(target.parent) else Path(".")
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
            self._renames.append((tmp, target))
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, _mode_for(target))
        except OSError as exc:
            self.discard()
            raise OutputError(f"{path}: cannot write the {what}: {exc.strerror or exc}") from None

    def commit(self) -> None:
        """Put every staged output in place: appends first (one write each), then atomic
        renames, then write-through targets."""
        while self._appends:
            fd, payload, target, path, what = self._appends.pop(0)
            try:
                if fd is None:
                    fd = os.open(target, _APPEND | os.O_CREAT, 0o666)
                try:
                    _write_all(fd, payload)
                finally:
                    os.close(fd)
            except OSError as exc:
                self.discard()
                raise OutputError(
                    f"{path}: cannot write the {what}: {exc.strerror or exc}"
                ) from None
        try:
            for tmp, target in self._renames:
                os.replace(tmp, target)
            self._renames.clear()
            for target, payload, _ in self._through:
                # appending: a stream's earlier output (stdout's report) must not be truncated
                try:
                    with open(target, "ab") as f:
                        f.write(payload)
                except BrokenPipeError:
                    continue  # its reader left (`| head`): the rest is not wanted, no failure
        except OSError as exc:
            self.discard()
            raise OutputError(f"{exc.filename or target}: cannot write: {exc.strerror}") from None

    def discard(self) -> None:
        """Remove the temporary files of what was staged and not committed."""
        for tmp, _ in self._renames:
            Path(tmp).unlink(missing_ok=True)
        for fd, *_ in self._appends:
            if fd is not None:
                os.close(fd)
        self._renames.clear()
        self._through.clear()
        self._appends.clear()


def _write_all(fd: int, payload: bytes) -> None:
    """Write ``payload`` to ``fd``: one write(2) for any text a summary holds (a regular file
    takes it whole), looping only if the kernel accepts part of it."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


class StreamTarget:
    """A file written as a stream and put in place only when complete (:meth:`commit`): a
    temporary file beside the target, renamed over it at the end; streams and devices are
    written through. Use as a context manager: leaving it by an exception discards the
    temporary file and leaves the target as it was. A stream whose reader left raises
    BrokenPipeError from :meth:`write` (or at the end): the command stops writing, and says
    nothing, as it does when stdout's reader leaves."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = Path(path), what
        self.target = _target(self.path)
        self.file = None
        self._tmp: str | None = None

    def __enter__(self) -> StreamTarget:
        try:
            if _is_special(self.target):
                self.file = open(self.target, "ab")
            else:
                folder = self.target.parent if str(self.target.parent) else Path(".")
                fd, self._tmp = tempfile.mkstemp(
                    dir=folder, prefix=f".{self.target.name}.", suffix=".tmp"
                )
                self.file = os.fdopen(fd, "wb")
        except OSError as exc:
            raise OutputError(
                f"{self.path}: cannot write the {self.what}: {exc.strerror}"
            ) from None
        return self

    def write(self, data: bytes) -> None:
        """Write ``data``; OutputError when it cannot be, and BrokenPipeError, left for the
        command to stop writing without an error, when a stream's reader left (``| head``)."""
        try:
            self.file.write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(
                f"{self.path}: cannot write the {self.what}: {exc.strerror}"
            ) from None

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            if kind is None and self._tmp is not None:
                self.file.flush()
                os.fsync(self.file.fileno())
                os.chmod(self._tmp, _mode_for(self.target))
            self.file.close()
            if kind is None and self._tmp is not None:
                os.replace(self._tmp, self.target)
                self._tmp = None
        except BrokenPipeError:
            if kind is None:  # what close flushed to a stream found its reader gone
                raise
        except OSError as err:
            if kind is None:
                raise OutputError(
                    f"{self.path}: cannot write the {self.what}: {err.strerror}"
                ) from None
        finally:
            if self._tmp is not None:
                Path(self._tmp).unlink(missing_ok=True)
