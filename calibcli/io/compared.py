"""``calibcli compare``'s two sides read (:func:`read_compared`), with the tasks each side's
files are runs of, as their runs name them: an lm-eval samples file's task (its name,
``samples_<task>_<timestamp>.jsonl``, or ``<model_args>_<task>.jsonl`` before v0.4.3), an
inspect-ai log's ``eval.task``, a HELM file's scenario (its run folder's name without the
model, :func:`~calibcli.io.helm_run.helm_scenario`). Runs of different tasks ask different
questions: paired, ids that number each task's questions alike (an inspect-ai sample's 1, 2,
..., a HELM instance's id0, id1, ..., a doc_id given as --id-field) match questions of one with
questions of the other; unpaired, the two sides' figures are of different questions. Paired,
runs named apart whose matched rows each ask, on both sides, the one question their documents
say (an lm-eval ``doc_hash``, an inspect-ai sample's input and target) are of one task's
questions (:attr:`TaskedRows.same_questions`), whatever their runs call it. Logs
read without ``--scorer`` are graded by the one scorer each holds: a side graded by another
scorer than the other judges its answers by another notion of a right one. The report
(:mod:`calibcli.reports.compare`) says so of either and fails its gates closed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import Any

from calibcli.errors import InputError
from calibcli.io.compression import open_path, read_errors, without_suffix
from calibcli.io.content import file_version
from calibcli.io.helm_run import helm_questions, helm_scenario
from calibcli.summaries import PairedRows


@dataclass(frozen=True)
class TaskedRows(PairedRows):
    """Compare's rows (:class:`~calibcli.summaries.PairedRows`) with the tasks of each side's
    files (:func:`side_tasks`): (BASE's, NEW's), each a sorted tuple of (format, task, the
    questions it chooses) (:func:`file_task`), None for a side some file of which names no
    task; the scorer each side's inspect-ai logs were graded by (:func:`side_scorers`), None
    where not known or ``--scorer`` grades both; and, paired, whether every matched row's
    document is known on both sides and the two agree (:func:`same_questions`): the sides then
    ask the same questions whatever their tasks' names."""

    tasks: tuple[Any, Any] | None = None
    scorers: tuple[str | None, str | None] | None = None
    same_questions: bool = False


def read_compared(
    base: str, new: str, *, unpaired: bool = False, **options: Any
) -> tuple[TaskedRows, tuple[str, str], tuple]:
    """``calibcli compare``'s rows: the files ``base`` and ``new`` read by
    :func:`~calibcli.io.keyed.read_key_columns` (same options, checks and errors), NEW matched
    to BASE as it is read (:func:`~calibcli.io.keyed.read_matched`), or both taken whole when
    ``unpaired``; the rows with each side's tasks (:class:`TaskedRows`), the two formats
    found, and each file read (a folder's many) with its format and the samples it took by
    each mode (:attr:`~calibcli.io.keyed.KeyColumns.formats`), BASE's then NEW's. ``scorer``
    (--scorer, among ``options``) grades both sides alike; without it, each side's logs are
    graded by the one scorer they hold (:func:`side_scorers`)."""
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
        return _with_sides(matched, base, new, read, options.get("scorer")), found, read
    # BASE's id hashes give way to their sorted index, and NEW's are never held as a column
    first = read_key_columns([base], **options)
    index = IdIndex(first.ids)
    first = replace(first, ids=None)
    matched, found, read = read_matched(first, index, [new], **options)
    read = (*first.formats, *read)
    rows = _with_sides(matched, base, new, read, options.get("scorer"))
    if _named_apart(rows.tasks):  # what they ask, read again only where the names differ
        rows = replace(rows, same_questions=same_questions(first.docs, index, new, options))
    return rows, (first.fmt, found), read


DOCUMENTED = ("lm-eval", "inspect-ai")
"""The formats whose rows say what they ask (:func:`~calibcli.io.matching.document`)."""


def _named_apart(tasks: Any) -> bool:
    """Whether both sides' tasks are known, of formats whose rows say what they ask, and named
    otherwise on one side than on the other (:func:`side_tasks`)."""
    if tasks is None or None in tasks:
        return False
    if {asked for *_, asked in tasks[0]} == {asked for *_, asked in tasks[1]}:
        return False
    return all(fmt in DOCUMENTED for side in tasks for fmt, *_ in side)


def same_questions(base_docs: dict | None, index: Any, new: str, options: dict) -> bool:
    """Whether every NEW row matched by id to a BASE row asks, as its document says
    (:func:`~calibcli.io.matching.document`), the question that BASE row asks: NEW (a path or
    folder) read again with its ids and documents (``options``: as :func:`read_compared` read
    it), looked up in ``index`` (BASE's ids, :class:`~calibcli.io.keys.IdIndex`), each row's
    document compared with BASE's row's (``base_docs``: BASE row -> document). False when a
    matched row's document is not known on a side (another format, a file without them,
    standard input that cannot be read again) or no row matched. Only sides whose runs name
    other tasks are read again, so a pair of one task is read once."""
    import numpy as np

    from calibcli.io.keyed import read_key_columns

    if not base_docs or new == "-":
        return False
    try:
        again = read_key_columns([new], **options)
    except InputError:
        return False
    if not again.docs or again.ids is None:
        return False
    at = index.rows_of(again.ids.hi, again.ids.lo)
    rows = np.flatnonzero(at >= 0)
    if rows.shape[0] == 0:
        return False
    docs = again.docs
    return all(
        (mine := docs.get(r)) is not None and mine == base_docs.get(j)
        for r, j in zip(rows.tolist(), at[rows].tolist(), strict=True)
    )


def _with_sides(
    rows: PairedRows, base: str, new: str, read: tuple, scorer: str | None
) -> TaskedRows:
    """``rows`` with each side's tasks (:func:`side_tasks`) and scorers (:func:`side_scorers`)
    (``read``: each file read with its format, :func:`read_compared`)."""
    sides = _side_files(base, new, read)
    found = {f.name: getattr(rows, f.name) for f in fields(rows)}
    return TaskedRows(
        **found, tasks=side_tasks(*sides), scorers=side_scorers(*sides, scorer=scorer)
    )


def _side_files(base: str, new: str, read: Iterable[tuple[str, Any, Any]]) -> tuple[list, list]:
    """The files of each compared side (``base`` and ``new``: the paths or folders given;
    ``read``: each file read with its format, :func:`read_compared`), each (path, format)."""
    from calibcli.io.folders import expand

    read = list(read)
    sides = []
    for side in (base, new):
        given = set(expand([side]))
        sides.append([(path, fmt) for path, fmt, *_ in read if path in given])
    return sides[0], sides[1]


def side_tasks(base: list, new: list) -> tuple[Any, Any]:
    """The tasks of each compared side (``base`` and ``new``: each side's files read, each
    (path, format), :func:`_side_files`): BASE's and NEW's, each the sorted distinct (format,
    task, questions) of its files (:func:`file_task`), None when a file of the side names none
    (rows of a file named otherwise, of a format without tasks)."""
    sides = []
    for files in (base, new):
        found = [file_task(path, fmt) for path, fmt in files]
        known = bool(found) and None not in found
        sides.append(tuple(sorted(set(found))) if known else None)
    return sides[0], sides[1]


def side_scorers(base: list, new: list, *, scorer: str | None) -> tuple[Any, Any] | None:
    """The scorer each compared side's inspect-ai logs were graded by (``base`` and ``new``:
    each side's files read, each (path, format)): the one every log of the side was graded by
    (:func:`log_scorer`); BASE's and NEW's, each None for a side without inspect-ai logs, or
    whose logs were graded by several scorers or do not say (standard input). None when
    ``scorer`` (--scorer) is given: it grades both sides alike."""
    if scorer is not None:
        return None
    sides = []
    for files in (base, new):
        found = {log_scorer(path) for path, fmt in files if fmt == "inspect-ai"}
        sides.append(found.pop() if len(found) == 1 else None)
    return sides[0], sides[1]


def log_scorer(path: str) -> str | None:
    """The one scorer an inspect-ai log's samples were graded by, as the reader takes it
    without --scorer: the one score its results name (``results.scores``, in an ``.eval``
    log's header or a ``.json`` log's first MiB, read with its task), else, where they name
    none or several, the one its first scored sample holds
    (:func:`~calibcli.io.provenance.resolved_scorer`, which reads the log again); None when
    neither names one."""
    from calibcli.io.provenance import resolved_scorer

    found = None if path == "-" else file_version(path)
    named = None if found is None else _head_of(*found)[1]
    return named if named is not None else resolved_scorer([path])


def file_task(path: str, fmt: str | None) -> tuple[str, str, str] | None:
    """(``fmt``, the task a file of that format is a run of, as its run names it, the
    questions that name chooses), or None when it names none: an lm-eval file named as the
    harness names its samples files, an inspect-ai log's ``eval.task``, a HELM file's
    scenario (its run folder's name) and its questions, the arguments that set how they were
    put to the model left out (:func:`~calibcli.io.helm_run.helm_questions`). Another
    format's task chooses its questions by its whole name."""
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
    if not task:
        return None
    return fmt, task, helm_questions(task) if fmt == "helm" else task


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
    return None if found is None else _head_of(*found)[0]


@functools.lru_cache(maxsize=64)
def _head_of(path: str, mtime: int, size: int) -> tuple[str | None, str | None]:
    """(:func:`log_task`, the one score its results name or None) of one version of a log,
    its header read once."""
    import zipfile

    from calibcli.io.documents import MAX_DOCUMENT_BYTES, eval_header
    from calibcli.io.inspect_log import HEAD_BYTES, _head_spec, head_member

    spec: Any = None
    results: Any = None
    try:
        if path.lower().endswith(".eval"):
            with open(path, "rb") as f, zipfile.ZipFile(f) as archive:
                header = eval_header(archive, f, MAX_DOCUMENT_BYTES) or {}
            spec, results = header.get("eval"), header.get("results")
        elif without_suffix(path.lower()).endswith(".json"):
            spec = _head_spec(path, mtime, size)
            with open_path(path) as f:
                results = head_member(f.read(HEAD_BYTES), "results")
    except (*read_errors(), zipfile.BadZipFile, ValueError, RecursionError):
        pass  # what was read before says what it says; the rest is not known
    task = spec.get("task") if isinstance(spec, Mapping) else None
    scores = results.get("scores") if isinstance(results, Mapping) else None
    names = {s.get("name") for s in scores or () if isinstance(s, Mapping)}
    named = names.pop() if len(names) == 1 else None
    return (
        task if isinstance(task, str) and task else None,
        named if isinstance(named, str) and named else None,
    )
