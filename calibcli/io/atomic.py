"""Files put in place only once written in full: the summary files, reports and pictures the
commands write (:mod:`calibcli.cli.staging`) and the part files the engines write
(:meth:`calibcli.engines.result.EngineSummary.write`).

A file is written to a temporary file beside its target, flushed and fsynced, and renamed over
the target at the end, so an interrupted or failed write leaves an existing file as it was. A
symbolic link is followed: its target is replaced and the link kept. A target that exists but
is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) cannot be replaced atomically,
and replacing it would be wrong (as root, ``/dev/null`` would become a plain file): it is
written through, appended to so that a stream's earlier output is kept.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

STREAM_FOLDERS = ("/dev/", "/proc/")
"""Folders whose files name open streams (``/dev/stdout``, ``/proc/self/fd/N``)."""


def target_of(path: str | os.PathLike) -> Path:
    """The file a write to ``path`` lands in: symbolic links are followed, except to an open
    stream (``/dev/stdout`` leads to whatever file stdout is, which must be written through,
    not replaced)."""
    if str(path).startswith(STREAM_FOLDERS) or not os.path.islink(path):
        return Path(path)
    real = os.path.realpath(path)
    return Path(path) if real.startswith(STREAM_FOLDERS) else Path(real)


def is_special(path: str | os.PathLike) -> bool:
    """True when ``path`` exists and is not a regular file (a device, a FIFO, a socket), or is
    an open stream's name. A path that cannot be looked up (missing, or through a file that is
    not a folder) is not special: writing it says what is wrong."""
    if str(path).startswith(STREAM_FOLDERS) and os.path.exists(path):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def mode_for(target: Path) -> int:
    """The permissions a new version of ``target`` gets: the existing file's, else the
    umask's."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def temporary_beside(target: Path) -> tuple[int, str]:
    """A new temporary file in ``target``'s folder (so that renaming it over ``target`` is
    atomic): its descriptor and path."""
    folder = target.parent if str(target.parent) else Path(".")
    return tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")


class AtomicFile:
    """A binary file written as a stream and put in place only when complete: a context
    manager whose :meth:`write` goes to a temporary file beside the target, renamed over it
    when the block ends without an exception; streams and devices are written through.
    Leaving the block by an exception removes the temporary file and leaves the target as it
    was. Errors are the OSError of the call that failed."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.target = target_of(self.path)
        self.file: Any = None
        self._tmp: str | None = None

    def __enter__(self) -> AtomicFile:
        if is_special(self.target):
            self.file = open(self.target, "ab")
        else:
            fd, self._tmp = temporary_beside(self.target)
            self.file = os.fdopen(fd, "wb")
        return self

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            if kind is None and self._tmp is not None:
                self.file.flush()
                os.fsync(self.file.fileno())
                os.chmod(self._tmp, mode_for(self.target))
            self.file.close()
            if kind is None and self._tmp is not None:
                os.replace(self._tmp, self.target)
                self._tmp = None
        except OSError:
            if kind is None:  # else the exception that ended the block is the one to see
                raise
        finally:
            if self._tmp is not None:
                Path(self._tmp).unlink(missing_ok=True)
