"""Calibration and perplexity summaries on Spark: each partition's rows summarized where they
live, the parts merged on the executors, one summary on the driver.

    from calibcli.spark import summarize
    result = summarize(df, confidence="confidence", correct="correct", by="task")
    result.report()          # the dict `calibcli calibrate --json` prints for these rows
    result.write("all.cbs")  # a part file the CLI reads, merges and measures

:func:`summarize` runs ``mapInArrow`` over the DataFrame: each task folds its partition's Arrow
batches with calibcli's own code (:mod:`calibcli.io.frames`) into a part, ``treeReduce`` merges
the parts on the executors, and the driver keeps one summary. :func:`summarize_files` reads
files in the tasks with calibcli's readers and formats instead, so an error keeps its
``file:line``. Spark only schedules the tasks and moves the parts' bytes; no figure is computed
by Spark SQL. Needs ``pip install 'calibcli[spark]'``; every function shipped to the executors
lives in this installed module, so the executors need calibcli installed too (README: "Running
on Spark or Dask").
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from functools import partial
from typing import Any

from calibcli.engines import (
    EngineSummary,
    empty_task,
    file_jobs,
    file_task,
    finish,
    frame_spec,
    frame_task,
    merge_all,
    merge_tasks,
)

__all__ = ["summarize", "summarize_files", "summarize_perplexity"]

MISSING = "calibcli.spark needs pyspark: pip install 'calibcli[spark]'"


def _spark() -> Any:
    try:
        import pyspark
    except ImportError:
        raise ImportError(MISSING) from None
    return pyspark


# ----- what the executors run (module-level, so they are pickled by reference)


def _partition(spec: Any, table: str, batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow's function: one partition's batches -> one row holding its task result."""
    import pyarrow as pa
    from pyspark import TaskContext

    result = frame_task(spec, table, TaskContext.get().partitionId(), batches)
    yield pa.RecordBatch.from_pydict({"result": [pickle.dumps(result)]})


def _result(row: Any) -> Any:
    return pickle.loads(bytes(row[0]))


def _file(job: Any) -> Any:
    return file_task(job)


def _merged(table: str, results: Iterator[Any]) -> Iterator[Any]:
    """A task's file results merged in the task, each part decoded once."""
    done = list(results)
    if done:
        yield merge_all(done, table)


FILES_PER_TASK = 8
"""Files (or byte ranges) one task reads at most when there are more of them than the cores."""


def file_tasks(jobs: int, cores: int) -> int:
    """Tasks reading ``jobs`` files or byte ranges on ``cores`` cores: one per core, or more
    when a core would otherwise read more than :data:`FILES_PER_TASK` of them; never more than
    there are jobs."""
    return min(jobs, max(cores, -(-jobs // FILES_PER_TASK)))


# ----- the driver


def _label(df: Any) -> str:
    """A stable name for the DataFrame: its analysed plan's hash (the same query, the same
    name; another query's parts merge with these)."""
    try:
        return f"spark-dataframe-{df.semanticHash() & 0xFFFFFFFF:08x}"
    except Exception:  # Spark Connect plans may not offer it
        return "spark-dataframe"


def _check_columns(df: Any, spec: Any) -> None:
    """Every column named exists, with a type its values can have."""
    from pyspark.sql import types as T

    fields = {f.name: f.dataType for f in df.schema.fields}
    numeric = (T.NumericType, T.BooleanType)
    for name in spec.needed():
        if name not in fields:
            raise ValueError(f"the DataFrame has no column {name!r} (it has: {', '.join(fields)})")
    value_columns = [c for c in spec.columns if c is not None]
    for name in value_columns:
        if not isinstance(fields[name], numeric):
            raise ValueError(
                f"column {name!r} is {fields[name].simpleString()}, not a number or boolean"
            )


def _run(df: Any, spec: Any, table: str, depth: int) -> EngineSummary:
    _check_columns(df, spec)
    if df.rdd.getNumPartitions() == 0:
        return finish(empty_task(spec, table), spec.label, by=spec.by)
    results = (
        df.select(*spec.needed())
        .mapInArrow(partial(_partition, spec, table), "result binary")
        .rdd.map(_result)
    )
    merged = results.treeReduce(partial(merge_tasks, table=table), depth)
    return finish(merged, spec.label, by=spec.by)


def summarize(
    df: Any,
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
    depth: int = 2,
) -> EngineSummary:
    """The calibration summary of a Spark DataFrame's rows: ``confidence`` (numbers in [0, 1])
    and ``correct`` (booleans, or 0/1) columns, grouped by the ``by`` column when given.

    ``key`` names a column of row ids (a repeated id is an error, as ``--id-field`` makes it);
    with ``bootstrap_samples=N`` (and ``seed``) the summary keeps the Poisson bootstrap's
    replicate sums keyed by those ids, so ``report(ci=0.95)`` gives the intervals of
    ``calibcli calibrate --ci 0.95 --bootstrap-scheme poisson --bootstrap N --id-field ID``.
    ``table`` is ``summarize --table``: ``auto`` keeps the table of distinct confidences up to
    2,097,152 values (above, AUROC is null with the reason), ``always`` or ``never``.
    ``label`` names the DataFrame among the summary's sources (default: from its query plan).
    ``depth`` is treeReduce's. Bad values raise :class:`calibcli.errors.InputError` naming each
    column, its count of bad values and the first one.
    """
    _spark()
    spec, table = frame_spec(
        "calibration",
        (confidence, correct),
        label=label or _label(df),
        bins=bins,
        by=by,
        key=key,
        bootstrap_samples=bootstrap_samples,
        seed=seed,
        table=table,
    )
    return _run(df, spec, table, depth)


def summarize_perplexity(
    df: Any,
    *,
    nll: str = "nll",
    tokens: str = "tokens",
    bytes: str | None = None,  # the column's name, as --bytes-field names a field
    words: str | None = None,
    by: str | None = None,
    key: str | None = None,
    label: str | None = None,
    depth: int = 2,
) -> EngineSummary:
    """The perplexity summary of a Spark DataFrame's rows: per-sequence ``nll`` (summed, in
    nats) and ``tokens`` columns, and optionally ``bytes`` and ``words`` columns; totals exact,
    as ``calibcli perplexity`` gives them. ``by``, ``key``, ``label`` and ``depth`` as for
    :func:`summarize`."""
    _spark()
    spec, table = frame_spec(
        "perplexity",
        (nll, tokens, bytes, words),
        label=label or _label(df),
        by=by,
        key=key,
    )
    return _run(df, spec, table, depth)


def summarize_files(
    spark: Any,
    paths: list[str],
    *,
    kind: str = "auto",
    blocksize: int | None = None,
    depth: int = 2,
    **options: Any,
) -> EngineSummary:
    """The summary of files read on the executors by calibcli's own readers (every format
    ``calibcli calibrate`` reads), whole or, with ``blocksize``, in ranges of that many bytes
    of a plain JSON Lines file. One task per core reads consecutive files (or ranges) and
    merges their parts (more tasks when a core would get more than 8 files); ``depth`` is the
    treeReduce's that merges the tasks' parts. The paths must be readable where the tasks run
    (a shared file system). ``kind`` is ``calibration``, ``perplexity`` or ``auto`` (from the first
    file). ``options`` are :func:`calibcli.io.read_calibration`'s (``bins``, ``by``,
    ``confidence_field``, ``id_field``, ``fmt``, ...) or :func:`calibcli.io.read_perplexity`'s,
    plus ``table``, ``bootstrap_samples`` and ``seed`` (rows keyed by ``id_field``, else by
    file content and line, as the CLI keys them). An error raises
    :class:`calibcli.errors.InputError` as the CLI prints it: ``file:line: what``.
    """
    _spark()
    jobs = file_jobs(list(paths), kind, blocksize, **options)
    table = jobs[0].table
    context = spark.sparkContext
    results = context.parallelize(jobs, len(jobs)).map(_file)
    tasks = file_tasks(len(jobs), context.defaultParallelism)
    if tasks < len(jobs):
        # consecutive files read by one task, their parts merged there: no part crosses a
        # shuffle or reaches the driver until a task's files are one part (whose table of
        # distinct confidences, past the cap, is already dropped)
        results = results.coalesce(tasks)
    merged = results.mapPartitions(partial(_merged, table))
    return finish(
        merged.treeReduce(partial(merge_tasks, table=table), depth),
        by=options.get("by"),
        all_runs=bool(options.get("all_runs", False)),
        said=jobs[0].said,
    )
