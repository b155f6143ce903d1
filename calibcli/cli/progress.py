"""A transient progress bar on stderr over the bytes of one input file."""

from __future__ import annotations

import sys

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


def progress_bar(name: str, size: int | None) -> ProgressBar | None:
    """A bar for a regular file of ``size`` bytes when stderr is a terminal, else None (never
    for stdin or pipes, whose size is unknown, nor for small files)."""
    if size is None or size < PROGRESS_MIN_BYTES:
        return None
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return ProgressBar(name, size)
