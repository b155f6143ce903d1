"""The machine calibcli runs on: the CPUs this process may use, and how many worker processes a
job gets. Below every stage, like :mod:`calibcli.errors`; it reads no environment variable
(``CALIBCLI_WORKERS`` is the command line's).

One rule for every command: a job gets what was asked (``--workers N``), never more processes
than CPUs; left to itself (``None``) it gets two processes on a machine with two CPUs or more
once the work is large enough to pay for them (reading: an input of 32 MB or more; the
bootstrap: 20 million resampled rows or more), else one. No figure depends on the count.
"""

from __future__ import annotations

import os

PARALLEL_MIN_BYTES = 32 << 20
"""Reading: inputs of at least this many (decompressed) bytes get a worker by default."""
BOOTSTRAP_MIN_WORK = 20_000_000
"""The bootstrap: rows times resamples from which a second process pays off by default."""
DEFAULT_PROCESSES = 2
"""Processes a large job gets by default (capped by the CPUs)."""


def cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def workers(requested: int | None, large: bool, available: int | None = None) -> int:
    """Processes for a job: ``requested`` capped at the CPUs, or by default two for a
    ``large`` job on a machine with two CPUs or more, else one."""
    have = cpus() if available is None else available
    if requested is not None:
        return max(1, min(requested, have))
    return min(DEFAULT_PROCESSES, have) if large else 1
