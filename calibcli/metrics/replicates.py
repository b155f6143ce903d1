"""Running a bootstrap's replicates: in this process, or in a pool of worker processes.

An engine is anything with ``run(seed, start, stop)`` returning the scalars of replicates
[start, stop) as rows, each replicate a function of (seed, r) alone
(:class:`~calibcli.metrics.bootstrap.ReplicateEngine`, Poisson weights, a paired difference):
how the replicates are cut into chunks and which process runs a chunk changes no number.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from calibcli.metrics.progress import ProgressHook, current_progress, phase

__all__ = ["run_replicates"]

_WORKER_ENGINE: Any = None

PROGRESS_STEPS = 100
"""Steps of a watched bootstrap (the replicates run in about this many chunks, so a display
moves about every 1%); an unwatched one runs in as few chunks as the workers allow."""


def _install_engine(engine: Any) -> None:
    # Ctrl-C on a terminal reaches every process of the group: the parent alone handles it
    # (it stops the workers), so a worker never prints a KeyboardInterrupt traceback.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _WORKER_ENGINE
    _WORKER_ENGINE = engine


def _run_chunk(seed: int, start: int, stop: int) -> np.ndarray:
    assert _WORKER_ENGINE is not None
    return _WORKER_ENGINE.run(seed, start, stop)


def run_replicates(
    engine: Any,
    seed: int,
    samples: int,
    workers: int,
    *,
    progress: ProgressHook | None = None,
    name: str = "bootstrap resamples",
) -> np.ndarray:
    """Replicates [0, samples) of ``engine`` (anything with ``run(seed, start, stop)``), in
    ``workers`` processes when more than one; ``progress`` (or the installed hook, see
    :mod:`calibcli.metrics.progress`) hears the replicates done, as phase ``name``. Replicate
    r depends only on (seed, r), so the chunking changes no number.

    A pool that cannot start its processes (fork or spawn refused: no memory, a process limit)
    or loses one on the way raises ``concurrent.futures.process.BrokenProcessPool`` saying
    which, after stopping any process it did start, so the caller can ask for fewer workers
    instead of waiting on a pool that will never answer. An exception in this process (Ctrl-C's
    KeyboardInterrupt) stops the workers at once, without waiting for their chunks.
    """
    workers = min(workers, samples)
    hook = current_progress(progress)
    steps = 1 if hook is None else min(samples, PROGRESS_STEPS)
    with phase(name, samples, hook) as advance:
        if workers <= 1:
            bounds = [samples * k // steps for k in range(steps + 1)]
            parts = []
            for start, stop in itertools.pairwise(bounds):
                parts.append(engine.run(seed, start, stop))
                advance(stop)
            return np.concatenate(parts, axis=0)
        return _run_pool(engine, seed, samples, workers, max(steps, 4 * workers), advance)


def _run_pool(
    engine: Any, seed: int, samples: int, workers: int, chunks: int, advance: Any
) -> np.ndarray:
    chunks = min(samples, chunks)
    bounds = [samples * k // chunks for k in range(chunks + 1)]
    # imported here: every calibcli run imports this module, few start a process pool
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    running = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_install_engine, initargs=(engine,)
    )
    try:
        futures = [
            pool.submit(_run_chunk, seed, start, stop) for start, stop in itertools.pairwise(bounds)
        ]
        done, pending = 0, set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()  # a worker's exception, raised here
            done += sum(future.result().shape[0] for future in finished)
            advance(done)
        parts = [future.result() for future in futures]
    except OSError as exc:
        # The workers that did start wait for work that never comes, and the interpreter
        # would wait for them at exit: stop them.
        _abandon(pool, running)
        raise BrokenProcessPool(f"cannot start worker processes: {exc}") from exc
    except BrokenProcessPool as exc:
        _abandon(pool, running)
        raise BrokenProcessPool(f"a worker process stopped abruptly ({exc})") from exc
    except BaseException:
        _abandon(pool, running)
        raise
    pool.shutdown()
    return np.concatenate(parts, axis=0)


def _abandon(pool: Any, running: set) -> None:
    """Stop the pool's processes (those started since ``running`` was taken) now, its queued
    chunks cancelled: an interrupted bootstrap must not wait for them."""
    import multiprocessing

    pool.shutdown(wait=False, cancel_futures=True)
    _stop(set(multiprocessing.active_children()) - running)


def _stop(processes: set) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
