"""Calibration and perplexity summaries on Dask: each partition's rows summarized on the worker
holding them, the parts merged in a tree of tasks, one summary at the end.

    import dask
    from calibcli.dask import summarize
    lazy = summarize(ddf, confidence="confidence", correct="correct", by="task")
    (result,) = dask.compute(lazy)
    result.report()          # the dict `calibcli calibrate --json` prints for these rows

:func:`summarize` and :func:`summarize_files` return a ``dask.delayed`` object, so several
compose in one ``dask.compute``; computing it gives an
:class:`~calibcli.engines.result.EngineSummary`. A partition becomes Arrow batches folded by
calibcli's own code (:mod:`calibcli.io.frames`); files are read in the tasks by calibcli's
readers, whole or in byte ranges (``blocksize``). Dask only schedules the tasks and moves the
parts' bytes. Needs ``pip install 'calibcli[dask]'``; the workers need calibcli installed, since
every function they run lives in this installed module.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from calibcli.engines import (
    empty_task,
    file_group_task,
    file_jobs,
    file_task,
    finish,
    frame_spec,
    frame_task,
    job_groups,
    merge_all,
)

__all__ = ["summarize", "summarize_files", "summarize_perplexity"]

MISSING = "calibcli.dask needs dask: pip install 'calibcli[dask]'"

SPLIT_EVERY = 8
"""Task results merged by one task of the merge tree."""


def _dask() -> Any:
    try:
        import dask
    except ImportError:
        raise ImportError(MISSING) from None
    return dask


# ----- what the workers run (module-level, so they are pickled by reference)


def _partition(spec: Any, table: str, index: int, frame: Any) -> Any:
    """One partition (a pandas DataFrame) -> its task result."""
    import pyarrow as pa

    batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
    return frame_task(spec, table, index, [batch])


def _merged(table: str, *results: Any) -> Any:
    return merge_all(list(results), table)


def _finish(label: str | None, result: Any, **judged: Any) -> Any:
    """The driver's summary (``judged``: :func:`calibcli.engines.finish`'s ``by`` and
    ``all_runs``)."""
    return finish(result, label, **judged) if label is not None else finish(result, **judged)


# ----- the driver


def _tree(tasks: list[Any], table: str, split_every: int, label: str | None, **judged: Any) -> Any:
    """The merge tree over ``tasks``: groups of ``split_every`` consecutive results, level by
    level, ending in the driver's summary (``judged`` as :func:`_finish` takes it)."""
    from dask import delayed

    merge = partial(_merged, table)
    level = tasks
    while len(level) > 1:
        level = [
            delayed(merge, pure=True)(*level[i : i + split_every])
            for i in range(0, len(level), split_every)
        ]
    return delayed(partial(_finish, label, **judged), pure=True)(level[0])


def _check_columns(ddf: Any, spec: Any) -> None:
    import numpy as np

    dtypes = dict(ddf.dtypes.items())
    for name in spec.needed():
        if name not in dtypes:
            raise ValueError(f"the DataFrame has no column {name!r} (it has: {', '.join(dtypes)})")
    for name in (c for c in spec.columns if c is not None):
        dtype = dtypes[name]
        kind = getattr(dtype, "kind", None)
        numeric = kind in ("b", "i", "u", "f") or str(dtype).lower().startswith(
            ("bool", "int", "uint", "float", "double")
        )
        arrow = getattr(dtype, "pyarrow_dtype", None)  # pandas' ArrowDtype, as read_parquet's
        if arrow is not None:  # a decimal is read through its digits (calibcli.io.frames)
            numeric = _arrow_numeric(arrow)
        if not numeric or dtype is np.dtype(object):
            outcome = spec.kind == "calibration" and name == spec.columns[1]
            hint = _STRINGS if outcome and "str" in str(dtype).lower() else ""
            raise ValueError(f"column {name!r} is {dtype}, not a number or boolean{hint}")


_STRINGS = (
    " (Dask reads a pandas column of Python objects, True and False or 0 and 1 included, as "
    'strings: cast it with .astype("boolean") or .astype("Int64") first)'
)


def _arrow_numeric(kind: Any) -> bool:
    """Whether an Arrow type holds numbers or booleans (decimals included)."""
    import pyarrow as pa

    t = pa.types
    return t.is_boolean(kind) or t.is_integer(kind) or t.is_floating(kind) or t.is_decimal(kind)


def _label(ddf: Any) -> str:
    """A stable name for the DataFrame: the token of its graph (the same data and steps, the
    same name)."""
    name = str(getattr(ddf, "_name", "") or "")
    return f"dask-dataframe-{name[-8:]}" if name else "dask-dataframe"


def _run(ddf: Any, spec: Any, table: str, split_every: int) -> Any:
    from dask import delayed

    _check_columns(ddf, spec)
    parts = ddf[spec.needed()].to_delayed()
    if not parts:
        empty = empty_task(spec, table)
        return delayed(partial(_finish, spec.label, by=spec.by), pure=True)(empty)
    work = partial(_partition, spec, table)
    tasks = [delayed(work, pure=True)(i, part) for i, part in enumerate(parts)]
    return _tree(tasks, table, split_every, spec.label, by=spec.by)


def summarize(
    ddf: Any,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    bins: int = 10,
    by: str | None = None,
    key: str | None = None,
    bootstrap_samples: int | None = None,
    seed: int = 0,
    table: str = "auto",
    label: str | None = None,
    split_every: int = SPLIT_EVERY,
) -> Any:
    """A lazy calibration summary of a Dask DataFrame's rows (``dask.delayed``; computing it
    gives an :class:`~calibcli.engines.result.EngineSummary`). The options are those of
    :func:`calibcli.spark.summarize`; ``split_every`` is how many results one merge task
    takes."""
    _dask()
    spec, table = frame_spec(
        "calibration",
        (confidence, correct),
        label=label or _label(ddf),
        bins=bins,
        by=by,
        key=key,
        bootstrap_samples=bootstrap_samples,
        seed=seed,
        table=table,
    )
    return _run(ddf, spec, table, split_every)


def summarize_perplexity(
    ddf: Any,
    *,
    nll: str = "nll",
    tokens: str = "tokens",
    bytes: str | None = None,  # the column's name, as --bytes-field names a field
    words: str | None = None,
    by: str | None = None,
    key: str | None = None,
    label: str | None = None,
    split_every: int = SPLIT_EVERY,
) -> Any:
    """A lazy perplexity summary of a Dask DataFrame's rows (see
    :func:`calibcli.spark.summarize_perplexity`)."""
    _dask()
    spec, table = frame_spec(
        "perplexity",
        (nll, tokens, bytes, words),
        label=label or _label(ddf),
        by=by,
        key=key,
    )
    return _run(ddf, spec, table, split_every)


def summarize_files(
    paths: list[str],
    *,
    kind: str = "auto",
    blocksize: int | None = None,
    split_every: int = SPLIT_EVERY,
    **options: Any,
) -> Any:
    """A lazy summary of files read in the workers by calibcli's own readers, one job per
    file or, with ``blocksize``, per that many bytes of a plain JSON Lines file (lines
    starting in each range; compressed files, whole documents and tables are read whole). The merge
    tree's first level takes at most ``split_every`` consecutive jobs, a file's ranges
    together (:func:`calibcli.engines.job_groups`); when there are enough such groups to keep
    every worker thread busy, one task reads a group and merges its parts where it read them,
    else each job is a task: the same summary, bit for bit. The options are those of
    :func:`calibcli.spark.summarize_files`."""
    _dask()
    from dask import delayed

    jobs = file_jobs(list(paths), kind, blocksize, **options)
    table = jobs[0].table
    # the tree's first level: consecutive jobs, a file's ranges together (job_groups)
    groups = job_groups(jobs, split_every)
    if len(jobs) > 1 and len(groups) >= _cores():
        # each group read and merged by one task: the same merges in the same order (the same
        # bits) without shipping each range's part to another task; only when the groups
        # alone keep every core busy
        first = [delayed(file_group_task, pure=True)(group, table) for group in groups]
    else:
        merge = partial(_merged, table)
        first = [
            delayed(merge, pure=True)(*(delayed(file_task, pure=True)(job) for job in group))
            if len(group) > 1
            else delayed(file_task, pure=True)(group[0])
            for group in groups
        ]
    judged = {
        "by": options.get("by"),
        "all_runs": bool(options.get("all_runs", False)),
        "said": jobs[0].said,
    }
    return _tree(first, table, split_every, None, **judged)


def _cores() -> int:
    """Threads of the workers of the current distributed client (the machine's CPUs for
    dask's local schedulers)."""
    try:
        from distributed import default_client

        return max(1, sum(default_client().nthreads().values()))
    except (ImportError, ValueError):
        return os.cpu_count() or 1
