"""Files put in place only once written in full: the summary files, reports and pictures the
commands write (:mod:`calibcli.cli.staging`) and the part files the engines write
(:meth:`calibcli.engines.result.EngineSummary.write`).

A file is written to a temporary file beside its target, flushed and fsynced, and renamed over
the target at the end, so an interrupted or failed write leaves an existing file as it was. A
symbolic link is followed: its target is replaced and the link kept. A target that exists but
is not a regular file (``/dev/null``, a FIFO, a terminal) cannot be replaced atomically, and
replacing it would be wrong (as root, ``/dev/null`` would become a plain file): it is written
through, appended to so that a stream's earlier output is kept. So is the name of an open
descriptor (``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``) whatever file it is open on:
``-o /dev/stdout > log`` adds to what the shell redirected, as a program's output would. A
regular file is replaced wherever it is (``/dev/shm`` too).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The names of a process's open descriptors: /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N
# and /proc/PID/fd/N (also /proc/self/..., /proc/thread-self/..., a thread's /task/TID/fd/N)
_DESCRIPTOR = re.compile(
    r"/dev/(?:std(?:in|out|err)|fd/\d+)|/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd/\d+"
)

_MAX_LINKS = 40  # as the kernel's limit on symbolic links followed in one lookup


def names_descriptor(path: str | os.PathLike) -> bool:
    """Whether ``path``, or a symbolic link it leads through, names an open descriptor
    (:data:`_DESCRIPTOR`): a stream written through, never replaced, whatever it is open on."""
    current = os.path.abspath(path)
    if _DESCRIPTOR.fullmatch(current):
        return True
    for _ in range(_MAX_LINKS):
        # its folder with links resolved: a link to /dev is /dev, /dev/fd/3 is /proc/PID/fd/3
        folder, name = os.path.split(current)
        current = os.path.join(os.path.realpath(folder), name)
        if _DESCRIPTOR.fullmatch(current):
            return True
        try:
            link = os.readlink(current)
        except OSError:  # not a link (or not there): the chain ends
            return False
        current = os.path.abspath(os.path.join(os.path.dirname(current), link))
    return False


def target_of(path: str | os.PathLike) -> Path:
    """The file a write to ``path`` lands in: symbolic links are followed, except to an open
    descriptor (``/dev/stdout`` leads to whatever file stdout is, which must be written
    through, not replaced)."""
    if not os.path.islink(path) or names_descriptor(path):
        return Path(path)
    return Path(os.path.realpath(path))


def is_special(path: str | os.PathLike) -> bool:
    """True when ``path`` exists and is not a regular file (a device, a FIFO, a socket), or
    names an open descriptor (:func:`names_descriptor`). A path that cannot be looked up
    (missing, or through a file that is not a folder) is not special: writing it says what is
    wrong."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if names_descriptor(path):
        return True
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
    atomic): its descriptor and path. Call it inside :func:`signals_held`, recording the path
    there, so that a Ctrl-C or SIGTERM cannot leave the file unknown to the cleanup."""
    folder = target.parent if str(target.parent) else Path(".")
    return tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back inside the block, delivered when it ends: a temporary file
    created there and recorded for removal is never left behind by a signal landing between the
    two. Where signals cannot be held (not POSIX, or not the main thread, which alone runs
    Python's handlers), the block runs as it is."""
    hold = getattr(signal, "pthread_sigmask", None)
    if hold is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = hold(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        hold(signal.SIG_SETMASK, previous)


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
            try:
                with signals_held():
                    fd, self._tmp = temporary_beside(self.target)
                    self.file = os.fdopen(fd, "wb")
            except BaseException:  # a signal delivered as the block ends: no __exit__ runs
                self.__exit__(BaseException, None, None)
                raise
        return self

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            if kind is None and self._tmp is not None:
                self.file.flush()
                os.fsync(self.file.fileno())
                os.chmod(self._tmp, mode_for(self.target))
            if self.file is not None:
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
