"""``calibcli compare``'s two sides read (:func:`read_compared`), with the tasks each side's
files are runs of, as their runs name them: an lm-eval samples file's task (its name,
``samples_<task>_<timestamp>.jsonl``, or ``<model_args>_<task>.jsonl`` before v0.4.3), an
inspect-ai log's ``eval.task``, a HELM file's scenario (its run folder's name without the
model, :func:`~calibcli.io.helm_run.helm_scenario`). Runs of different tasks ask different
questions: paired, ids that number each task's questions alike (an inspect-ai sample's 1, 2,
..., a HELM instance's id0, id1, ..., a doc_id given as --id-field) match questions of one with
questions of the other; unpaired, the two sides' figures are of different questions. The report
(:mod:`calibcli.reports.compare`) says so and fails its gates closed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import Any

from calibcli.errors import InputError
from calibcli.io.compression import read_errors, without_suffix
from calibcli.io.content import file_version
from calibcli.io.helm_run import helm_scenario
from calibcli.summaries import PairedRows


@dataclass(frozen=True)
class TaskedRows(PairedRows):
    """Compare's rows (:class:`~calibcli.summaries.PairedRows`) with the tasks of each side's
    files (:func:`side_tasks`): (BASE's, NEW's), each a sorted tuple of (format, task), None for
    a side some file of which names no task."""

    tasks: tuple[Any, Any] | None = None


def read_compared(
    base: str, new: str, *, unpaired: bool = False, **options: Any
) -> tuple[TaskedRows, tuple[str, str], tuple]:
    """``calibcli compare``'s rows: the files ``base`` and ``new`` read by
    :func:`~calibcli.io.keyed.read_key_columns` (same options, checks and errors), NEW matched
    to BASE as it is read (:func:`~calibcli.io.keyed.read_matched`), or both taken whole when
    ``unpaired``; the rows with each side's tasks (:class:`TaskedRows`), the two formats
    found, and each file read (a folder's many) with its format and the samples it took by
    each mode (:attr:`~calibcli.io.keyed.KeyColumns.formats`), BASE's then NEW's."""
    from dataclasses import replace

    from calibcli.io.keyed import read_key_columns, read_matched
    from calibcli.io.keys import IdIndex

    if base == "-" and new == "-":  # NEW would find standard input read to its end by BASE
        raise InputError(
            "<stdin>",
            None,
            "standard input is given as both BASE and NEW: it can be read once; save one of "
            "them to a file",
        )
    if unpaired:
        from calibcli.io.unpaired import read_unpaired

        matched, found, read = read_unpaired(base, new, **options)
        return with_tasks(matched, side_tasks(base, new, read)), found, read
    # BASE's id hashes give way to their sorted index, and NEW's are never held as a column
    first = read_key_columns([base], **options)
    index = IdIndex(first.ids)
    first = replace(first, ids=None)
    matched, found, read = read_matched(first, index, [new], **options)
    tasks = side_tasks(base, new, (*first.formats, *read))
    return with_tasks(matched, tasks), (first.fmt, found), (*first.formats, *read)


def with_tasks(rows: PairedRows, tasks: tuple[Any, Any] | None) -> TaskedRows:
    """``rows`` with each side's ``tasks``."""
    return TaskedRows(**{f.name: getattr(rows, f.name) for f in fields(rows)}, tasks=tasks)


def side_tasks(base: str, new: str, read: Iterable[tuple[str, Any, Any]]) -> tuple[Any, Any]:
    """The tasks of each compared side (``base`` and ``new``: the paths or folders given;
    ``read``: each file read with its format, :func:`read_compared`): BASE's and NEW's, each
    the sorted distinct (format, task) of its files (:func:`file_task`), None when a file of
    the side names none (rows of a file named otherwise, of a format without tasks)."""
    from calibcli.io.folders import expand

    read = list(read)
    sides = []
    for side in (base, new):
        given = set(expand([side]))
        found = [file_task(path, fmt) for path, fmt, *_ in read if path in given]
        known = bool(found) and None not in found
        sides.append(tuple(sorted(set(found))) if known else None)
    return sides[0], sides[1]


def file_task(path: str, fmt: str | None) -> tuple[str, str] | None:
    """(``fmt``, the task a file of that format is a run of, as its run names it), or None
    when it names none: an lm-eval file named as the harness names its samples files, an
    inspect-ai log's ``eval.task``, a HELM file's scenario (its run folder's name)."""
    task = None
    if path == "-":
        return None
    if fmt == "lm-eval" and _samples_named(path):
        from calibcli import formats

        task = formats.task_from_filename(path)
    elif fmt == "inspect-ai":
        task = log_task(path)
    elif fmt == "helm":
        task = helm_scenario(path)
    return None if not task else (fmt, task)


def _samples_named(path: str) -> bool:
    """Whether a file is named as lm-eval names its samples files (a name of any other file
    is not a task's: ``preds.jsonl``)."""
    from calibcli import formats
    from calibcli.io.runs import RUN_NAME

    name = PurePath(path).name
    return RUN_NAME.match(name) is not None or formats.model_args_from_filename(path) is not None


def log_task(path: str) -> str | None:
    """The task an inspect-ai log's run evaluated (``eval.task``, e.g. ``inspect_evals/gpqa``),
    from an ``.eval`` log's header or a ``.json`` log's ``eval`` within its first MiB; None
    when the log does not say or cannot be read."""
    found = file_version(path)
    return None if found is None else _task_of(*found)


@functools.lru_cache(maxsize=64)
def _task_of(path: str, mtime: int, size: int) -> str | None:
    """:func:`log_task` of one version of a file, read once."""
    import zipfile

    from calibcli.io.documents import MAX_DOCUMENT_BYTES, eval_header
    from calibcli.io.inspect_log import _head_spec

    spec: Any = None
    try:
        if path.lower().endswith(".eval"):
            with open(path, "rb") as f, zipfile.ZipFile(f) as archive:
                header = eval_header(archive, f, MAX_DOCUMENT_BYTES)
            spec = header.get("eval") if header is not None else None
        elif without_suffix(path.lower()).endswith(".json"):
            spec = _head_spec(path, mtime, size)
    except (*read_errors(), zipfile.BadZipFile, ValueError, RecursionError):
        return None
    task = spec.get("task") if isinstance(spec, Mapping) else None
    return task if isinstance(task, str) and task else None
