"""Freed memory kept for reuse while a task runs, in worker processes told to hand it back at once.

Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (its
``distributed.nanny.pre-spawn-environ``), so that memory a task frees goes back to the system.
Setting that variable also freezes glibc's mmap threshold at 128 KiB, which otherwise grows
with the blocks a process frees: every array larger than 128 KiB is then mapped when it is
allocated and unmapped when it is freed, and a task folding rows faults in each page of each
temporary array anew. On 5M rows that was about 900,000 page faults per job, against 80,000 for
the same reading in ``calibcli summarize``, and a third to a half of the workers' CPU.

:func:`held_memory` wraps what a task runs: while any task of the process runs, blocks up to
32 MiB come from the heap and freed memory stays in it; when the last one ends the thresholds go
back to what the environment set and ``malloc_trim`` returns the free memory, as the worker's
setting asks between tasks. It does nothing unless glibc's thresholds were fixed by the
environment (a process whose thresholds still adapt needs no help, and setting one would stop
them adapting), nor on another C library. Only where memory comes from changes, never a value.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameters (malloc.h)."""

DEFAULT_THRESHOLD = 128 << 10
"""glibc's trim and mmap thresholds when nothing sets them."""
HELD_MMAP_THRESHOLD = 32 << 20
"""Blocks up to this size come from the heap while a task runs: the largest glibc accepts on a
64-bit machine, what its adaptive threshold grows to at most."""
HELD_TRIM_THRESHOLD = (1 << 31) - 1
"""Free memory at the top of the heap kept while a task runs: the most ``mallopt``'s int
holds."""

_TUNABLES = {
    "glibc.malloc.trim_threshold": "MALLOC_TRIM_THRESHOLD_",
    "glibc.malloc.mmap_threshold": "MALLOC_MMAP_THRESHOLD_",
}

F = TypeVar("F", bound=Callable[..., Any])

_lock = threading.Lock()
_running = 0


def _fixed_thresholds(environ: Any = None) -> tuple[int, int] | None:
    """(trim, mmap) thresholds the environment gave glibc, or None when it left the trim
    threshold alone (or gave a value glibc would not read the same way)."""
    env = os.environ if environ is None else environ
    values = {name: env.get(name) for name in _TUNABLES.values()}
    for item in env.get("GLIBC_TUNABLES", "").split(":"):
        key, _, value = item.partition("=")
        if key in _TUNABLES:  # glibc reads these before the variables above
            values[_TUNABLES[key]] = value
    trim, mmap = values["MALLOC_TRIM_THRESHOLD_"], values["MALLOC_MMAP_THRESHOLD_"]
    if trim is None:
        return None
    try:
        fixed = int(trim), DEFAULT_THRESHOLD if mmap is None else int(mmap)
    except ValueError:
        return None
    return fixed if all(0 <= v <= HELD_TRIM_THRESHOLD for v in fixed) else None


@functools.cache
def _malloc() -> tuple[Any, tuple[int, int]] | None:
    """glibc (the process's own symbols) and the thresholds to restore, or None when there is
    nothing to do."""
    fixed = _fixed_thresholds()
    if fixed is None:
        return None
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return None
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (ValueError, OSError, AttributeError):
        return None
    return libc, fixed


def _enter() -> None:
    global _running
    malloc = _malloc()
    if malloc is None:
        return
    libc, _ = malloc
    with _lock:
        _running += 1
        if _running == 1:
            libc.mallopt(M_MMAP_THRESHOLD, HELD_MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, HELD_TRIM_THRESHOLD)


def _exit() -> None:
    global _running
    malloc = _malloc()
    if malloc is None:
        return
    libc, (trim, mmap) = malloc
    with _lock:
        _running -= 1
        if _running == 0:
            libc.mallopt(M_MMAP_THRESHOLD, mmap)
            libc.mallopt(M_TRIM_THRESHOLD, trim)
            libc.malloc_trim(0)


def held_memory(function: F) -> F:
    """``function`` run with freed memory kept for reuse until the process's last running
    task returns (see the module docstring)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        _enter()
        try:
            return function(*args, **kwargs)
        finally:
            _exit()

    return run  # type: ignore[return-value]
