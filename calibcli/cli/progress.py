"""Progress on stderr, on a terminal only: a transient bar over the bytes of one input file
while it is read, and one per long phase of the figures (the bootstrap's resamples, ...) that
the metrics report through their progress hook. Nothing is shown when stderr is not a terminal
(a pipe, a CI log, a test runner), so stdout and saved reports never change."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

PROGRESS_MIN_BYTES = 8 << 20
"""A progress bar is shown (on a terminal) only for inputs at least this large."""


class ProgressBar:
    """A rich progress bar on stderr over the bytes of one file (transient)."""

    def __init__(self, name: str, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.total = total
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task(name, total=total)
        self._progress.start()

    def update(self, completed: int) -> None:
        self._progress.update(self._task, completed=min(completed, self.total))

    def close(self) -> None:
        self._progress.stop()


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (False when it is closed, a pipe or a file)."""
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(name: str, size: int | None) -> ProgressBar | None:
    """A bar for a regular file of ``size`` bytes when stderr is a terminal, else None (never
    for stdin or pipes, whose size is unknown, nor for small files)."""
    if size is None or size < PROGRESS_MIN_BYTES or not stderr_is_terminal():
        return None
    return ProgressBar(name, size)


class PhaseBars:
    """The metrics' progress hook, drawn as one transient rich bar per running phase on stderr.

    It draws only when called (no refresh thread: a worker process forked meanwhile inherits
    no lock held by one), at most every ``REDRAW`` seconds, and a phase's bar goes away when
    the phase ends (the display with the last one); rich is imported on the first phase, so a
    run without one never loads it.
    """

    REDRAW = 0.1

    def __init__(self) -> None:
        self._progress = None
        self._tasks: dict[str, int] = {}
        self._drawn = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if done >= total:
            task = self._tasks.pop(phase, None)
            if task is not None and self._progress is not None:
                self._progress.remove_task(task)
                self._progress.refresh()
            if not self._tasks:  # rich allows one live display: a reading bar may come next
                self.close()
            return
        now = time.monotonic()
        task = self._tasks.get(phase)
        if task is not None and now - self._drawn < self.REDRAW:
            return  # rich's update costs more than many a step: only a redraw's count is set
        progress = self._progress or self._start()
        if task is None:
            task = self._tasks[phase] = progress.add_task(phase, total=total)
        progress.update(task, completed=done)
        self._drawn = now
        progress.refresh()

    def _start(self):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            auto_refresh=False,
        )
        self._progress.start()
        return self._progress

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def phases(quiet: bool = False) -> Iterator[None]:
    """Show the long phases run inside the block on stderr when it is a terminal (and not
    ``quiet``); elsewhere install no hook at all."""
    from calibcli.reports import reporting_progress

    bars = None if quiet or not stderr_is_terminal() else PhaseBars()
    try:
        with reporting_progress(bars):
            yield
    finally:
        if bars is not None:
            bars.close()
