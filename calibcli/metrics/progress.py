"""Progress of the long phases: a hook the metrics call, which a front end may show.

A hook is any callable ``hook(phase, done, total)``: ``phase`` names the work ("bootstrap
resamples"), ``done`` of ``total`` steps are finished. A phase calls it once with ``done = 0``
when it starts, after each step, and with ``done = total`` when it ends (also when it stops
early on an exception, so a display never keeps a stale bar). The hook only observes: a phase
computes the same numbers with or without one.

A metric takes its hook as ``progress=`` (default: none), or uses the one installed around a
whole command by :func:`reporting_progress`, so that a command's report modules need not pass
it through every layer. Nothing here imports numpy, and nothing prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ProgressHook", "current_progress", "phase", "reporting_progress"]

ProgressHook = Callable[[str, int, int], None]

_INSTALLED: ContextVar[ProgressHook | None] = ContextVar("calibcli_progress", default=None)


@contextmanager
def reporting_progress(hook: ProgressHook | None) -> Iterator[None]:
    """Make ``hook`` the progress hook of every phase run inside the block (None: no hook)."""
    token = _INSTALLED.set(hook)
    try:
        yield
    finally:
        _INSTALLED.reset(token)


def current_progress(progress: ProgressHook | None = None) -> ProgressHook | None:
    """``progress`` when given, else the hook installed by :func:`reporting_progress`."""
    return progress if progress is not None else _INSTALLED.get()


@contextmanager
def phase(
    name: str, total: int, progress: ProgressHook | None = None
) -> Iterator[Callable[[int], None]]:
    """A phase of ``total`` steps reported to ``progress`` (or the installed hook): the block
    receives ``advance(done)``; the hook hears 0 at the start and ``total`` at the end."""
    hook = current_progress(progress)
    if hook is None:
        yield _ignore
        return
    hook(name, 0, total)
    try:
        yield lambda done: hook(name, done, total)
    finally:
        hook(name, total, total)


def _ignore(done: int) -> None:
    """The ``advance`` of a phase nobody watches."""
