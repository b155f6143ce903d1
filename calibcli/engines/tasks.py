"""The functions an engine's tasks run, and the merge of their results.

A task folds its share — a DataFrame partition's record batches (:func:`frame_task`) or one
file or byte range of one (:func:`file_task`, read by calibcli's own readers) — into a part
(:func:`calibcli.summaries.to_part`) and returns it as bytes inside a :class:`TaskResult`.
:func:`merge_tasks` merges two results as ``calibcli merge`` merges two part files: in the
canonical order of their sources, so the merge tree the engine picks changes no count and no
table, only the rounding of a few float sums. Bad input travels as data: a DataFrame's bad
values add up per column across partitions, and the first failing file (in the order the files
were given) wins, so the driver raises one error whatever the order tasks finished in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from calibcli.engines.memory import held_memory
from calibcli.errors import InputError
from calibcli.io import FrameSpec, frame_summary
from calibcli.summaries import TABLE_MODES


@dataclass(frozen=True)
class TaskResult:
    """A task's part (``payload``, the part's bytes) or what went wrong: ``problems``, bad
    values of a DataFrame's columns (:class:`calibcli.io.ColumnProblems`); ``error``, the
    first input error as ``(job index, path, line, detail)``; ``mismatch``, parts that
    cannot be merged (rows with the same id in two of them)."""

    payload: bytes | None = None
    problems: Any = None
    error: tuple[int, str, Any, str] | None = None
    mismatch: str | None = None

    @property
    def failed(self) -> bool:
        return self.payload is None


@dataclass(frozen=True)
class FileJob:
    """One task of a files run: a file (or the lines starting in byte range ``span`` of one),
    the kind of rows and the reader's options."""

    index: int
    path: str
    span: tuple[int, int] | None
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    table: str = "auto"
    bootstrap: tuple[int, int] | None = None
    # what choosing the files said (older re-runs left out), for the driver's summary; the
    # first job carries it and the tasks leave it alone
    said: tuple[str, ...] = ()


def _cap() -> int:
    from calibcli.summaries import MAX_DISTINCT

    return MAX_DISTINCT


CAPPED = (
    "the distinct confidences exceed the {cap:,} that table='auto' keeps (table='always' "
    "keeps them all)"
)


def capped(part: Any, table: str) -> Any:
    """The part without its table of distinct confidences when ``table`` is ``auto`` and it
    holds more than the cap: then ``missing`` says why, in words that do not depend on where in
    the merge tree the cap was passed."""
    if table != "auto" or part.kind != "calibration" or part.distinct is None:
        return part
    cap = _cap()
    if part.distinct.distinct <= cap:
        return part
    missing = CAPPED.format(cap=cap)
    warning = f"the table of distinct confidences was dropped: {missing}"
    warnings = tuple(dict.fromkeys([*part.warnings, warning]))
    return replace(part, distinct=None, missing=missing, warnings=warnings, _views={})


def _part_bytes(summary: Any, table: str, bootstrap: tuple[int, int] | None) -> bytes:
    from calibcli.summaries import to_bytes, to_part

    part, _ = to_part(summary, "always" if table == "auto" else table, bootstrap)
    return to_bytes(capped(part, table))


def frame_spec(kind: str, columns: tuple, **options: Any) -> FrameSpec:
    """A :class:`~calibcli.io.FrameSpec`, its options checked on the driver."""
    table = options.pop("table", "auto")
    if table not in TABLE_MODES:
        raise ValueError(f"table must be one of {', '.join(TABLE_MODES)}, not {table!r}")
    samples = options.pop("bootstrap_samples", None)
    seed = options.pop("seed", None)
    if samples is not None:
        if kind != "calibration":
            raise ValueError("bootstrap_samples resamples calibration rows; these are perplexity")
        if options.get("key") is None:
            raise ValueError(
                "bootstrap_samples keys each row's weights by its id: name the id column with "
                "key=..."
            )
    _check_bins(options.get("bins"))
    if kind == "calibration" and columns[0] == columns[1]:
        # each row's confidence would be its own outcome: perfectly calibrated whatever the
        # model answered (ECE 0, AUROC 1), so every gate would pass
        raise ValueError(
            f"confidence={columns[0]!r} is the correct column: a confidence read from the "
            "outcome it predicts is perfectly calibrated whatever the model answered"
        )
    bootstrap = _bootstrap(samples, seed)
    return FrameSpec(kind, tuple(columns), bootstrap=bootstrap, **options), table


def _bootstrap(samples: Any, seed: Any) -> tuple[int, int] | None:
    """``(bootstrap_samples, seed)`` checked as ``summarize --bootstrap-samples`` and
    ``--seed`` are (the integrations pass their default seed whether or not they resample, so
    a seed alone is not refused); None without resamples."""
    from calibcli.reports import options as checks

    if seed is not None and not (_whole(seed) and seed >= 0):
        raise ValueError(f"seed must be a whole number >= 0, not {seed!r}")
    if samples is None:
        return None
    low, high = checks.MIN_BOOTSTRAP, checks.MAX_BOOTSTRAP
    if not (_whole(samples) and low <= samples <= high):
        raise ValueError(
            f"bootstrap_samples must be a whole number from {low} to {high:,}, not {samples!r}"
        )
    return int(samples), 0 if seed is None else int(seed)


def _whole(value: Any) -> bool:
    """Whether ``value`` is a whole number (Python's or numpy's), not a boolean."""
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_bins(bins: Any) -> None:
    """``bins`` as ``--bins`` takes it: a whole number from 1 to the command's maximum."""
    from calibcli.reports import options as checks

    if bins is not None and not (_whole(bins) and 1 <= bins <= checks.MAX_BINS):
        raise ValueError(f"bins must be a whole number from 1 to {checks.MAX_BINS:,}, not {bins!r}")


@held_memory
def frame_task(spec: FrameSpec, table: str, partition: int, batches: Any) -> TaskResult:
    """A DataFrame partition's record batches -> its part (or its bad values)."""
    summary, problems = frame_summary(batches, spec, partition)
    if problems:
        return TaskResult(problems=problems)
    return TaskResult(payload=_part_bytes(summary, table, spec.bootstrap))


def empty_task(spec: FrameSpec, table: str) -> TaskResult:
    """The part of a DataFrame without partitions: no rows."""
    return frame_task(spec, table, 0, [])


def file_jobs(paths: list[str], kind: str, blocksize: int | None, **options: Any) -> list[FileJob]:
    """One job per file, or per ``blocksize`` bytes of a plain JSON Lines file (compressed
    files, whole documents, tables and summary files are read whole). Relative paths are taken
    from the driver's working directory (and named by their absolute paths). ``kind`` ``auto``
    reads the first file as ``calibcli summarize`` does. The files are chosen as the command
    chooses them (:func:`calibcli.io.runs.choose_runs`): of a task's lm-eval re-runs in one
    folder only the newest is read, the first job saying which were left out; a file given
    twice, under one path or two (a symbolic or a hard link), is an InputError, and so are two
    files of the same bytes unless ``all_runs``."""
    from calibcli.io import choose_runs, file_spans, input_kind

    if blocksize is not None and (type(blocksize) is not int or blocksize < 1):
        raise ValueError(f"blocksize must be a whole number of bytes >= 1, not {blocksize!r}")
    # the tasks run in other working directories, or on other machines sharing the files
    paths = [os.path.abspath(os.fspath(p)) for p in paths]
    if not paths:
        raise ValueError("give at least one file")
    runs = choose_runs(paths, all_runs=bool(options.get("all_runs", False)))
    paths = runs.files
    table = options.pop("table", "auto")
    if table not in TABLE_MODES:
        raise ValueError(f"table must be one of {', '.join(TABLE_MODES)}, not {table!r}")
    samples, seed = options.pop("bootstrap_samples", None), options.pop("seed", None)
    fields = {k: v for k, v in options.items() if k.endswith("_field") and k != "id_field"}
    if kind == "auto":
        kind = input_kind(paths, fmt=options.get("fmt", "auto"), **fields)
    if samples is not None and kind != "calibration":
        raise ValueError("bootstrap_samples resamples calibration rows; these are perplexity")
    _check_bins(options.get("bins"))
    bootstrap = _bootstrap(samples, seed)
    jobs: list[FileJob] = []
    for path in paths:
        spans = file_spans(path, blocksize) if blocksize is not None else None
        for span in spans or [None]:
            jobs.append(FileJob(len(jobs), path, span, kind, options, table, bootstrap))
    return [replace(jobs[0], said=tuple(runs.warnings)), *jobs[1:]]


def job_groups(jobs: list[FileJob], size: int) -> list[list[FileJob]]:
    """The first level of the merge tree over file jobs: runs of at most ``size`` consecutive
    jobs, a file's ranges kept together. Whole files, and files of few ranges, are packed in
    order while they fit; a file with more ranges than a group holds fills groups of its own,
    the last one open to the files after it. So a group starts at a file's first byte unless a
    file is longer than a group, and a task that reads a group seldom counts the newlines
    before its first range (to number its lines) or reads a part of two files."""
    if size < 1:
        raise ValueError(f"a group holds at least one job, not {size!r}")
    files: list[list[FileJob]] = []
    for job in jobs:
        if files and job.span is not None and job.span[0] > 0:
            files[-1].append(job)  # the next range of the file before
        else:
            files.append([job])
    groups: list[list[FileJob]] = []
    for ranges in files:
        if groups and len(groups[-1]) + len(ranges) <= size:
            groups[-1].extend(ranges)
            continue
        groups.extend(ranges[i : i + size] for i in range(0, len(ranges), size))
    return groups


def _read_job(job: FileJob) -> Any:
    """The summary of a job's rows (calibration rows kept); InputError for bad input. What
    its reading says of missing pieces of a ``--part`` file is left to the driver, which
    judges every part's pieces together (:func:`calibcli.io.whole_read`)."""
    from calibcli.io import without_partial

    return without_partial(_read_rows(job))


def _read_rows(job: FileJob) -> Any:
    from calibcli.io import read_calibration, read_perplexity

    options = dict(job.options)
    if job.kind == "calibration":
        return read_calibration(
            [job.path],
            keep_columns=True,
            per_source=options.get("by") is None,
            row_keys=job.bootstrap is not None,
            resamples=job.bootstrap,
            span=job.span,
            workers=1,
            **options,
        )
    return read_perplexity([job.path], span=job.span, workers=1, **options)


def _failed(job: FileJob, e: InputError) -> TaskResult:
    return TaskResult(error=(job.index, e.path, e.line, e.detail))


@held_memory
def file_task(job: FileJob) -> TaskResult:
    """A file, or the lines starting in a byte range of one, read by calibcli's readers ->
    its part (or its first error, ``file:line`` kept)."""
    try:
        summary = _read_job(job)
    except InputError as e:
        return _failed(job, e)
    return TaskResult(payload=_part_bytes(summary, job.table, job.bootstrap))


@held_memory
def file_group_task(jobs: list[FileJob], table: str = "auto") -> TaskResult:
    """Several jobs read one after another in one task, their results merged there: the same
    result as :func:`merge_all` of their :func:`file_task` results, without a task, a part's
    bytes on the wire and the scheduler's bookkeeping per job. Jobs of consecutive ranges of a
    file read in order count the file's newlines once. The first input error ends the task:
    a later job's error could not win over it (:func:`merge_tasks` keeps the lowest job).
    Calibration rows are kept until the group is read, and its table of distinct confidences
    is built once from all of them (:func:`_group_part`)."""
    if len(jobs) == 1 or table == "never" or any(job.kind != "calibration" for job in jobs):
        results = []
        for job in jobs:
            result = file_task(job)
            if result.error is not None:
                return result
            results.append(result)
        return merge_all(results, table)
    summaries = []
    for job in jobs:
        try:
            summaries.append(_read_job(job))
        except InputError as e:
            return _failed(job, e)
    return _group_part(summaries, table, jobs[0].bootstrap)


def _group_part(summaries: list[Any], table: str, bootstrap: tuple[int, int] | None) -> TaskResult:
    """The merge of the parts of calibration summaries read with their rows, made with one
    table of distinct confidences instead of one per summary merged into one: a table holds
    each value's counts, whatever the rows were split into, so it is the same table. Each
    summary's float sums (the smooth ECE's histograms) are still its own, added up in the
    order :func:`merge_all` adds them, so every bit of the part is the same too. A summary of
    more rows than the cap, whose own table :func:`capped` could drop, goes the way of
    :func:`merge_all`."""
    from calibcli.summaries import DistinctTable, SummaryMismatch, merge_parts, to_bytes, to_part

    if any(s.kept is None or s.kept.n > _cap() for s in summaries):
        results = [TaskResult(payload=_part_bytes(s, table, bootstrap)) for s in summaries]
        return merge_all(results, table)
    # each part without a table (its float sums and bootstrap state only), its rows kept: the
    # merge concatenates the rows, each group id renumbered as the merged part numbers them
    parts = []
    for s in summaries:
        part, _ = to_part(s, "never", bootstrap)
        parts.append(replace(part, kept=s.kept, missing=None, _views={}))
    try:
        merged = merge_parts(parts, [_label(p) for p in parts])
    except SummaryMismatch as e:
        return _mismatch(parts, e)
    rows = merged.kept
    groups = 1 if merged.group_names is None else len(merged.group_names)
    distinct = DistinctTable.from_rows(
        rows.right, rows.wrong, rows.right_groups, rows.wrong_groups, groups
    )
    part = replace(merged, kept=None, distinct=distinct, _views={})
    return TaskResult(payload=to_bytes(capped(part, table)))


def _mismatch(parts: list[Any], e: Exception) -> TaskResult:
    """Parts that cannot be merged: a DataFrame's row whose id another row has, named by
    where both rows are (:func:`calibcli.io.repeated_frame_id`), else why the merge refused
    them."""
    from calibcli.io import repeated_frame_id

    return TaskResult(mismatch=repeated_frame_id(parts) or str(e))


def _label(part: Any) -> str:
    first = part.sources[0] if part.sources else None
    return "a part" if first is None else first.display


@held_memory
def merge_tasks(a: TaskResult, b: TaskResult, table: str = "auto") -> TaskResult:
    """Two tasks' results as one: their parts merged (:func:`calibcli.summaries.merge_parts`),
    or their failures combined (the first input error, every bad value counted)."""
    if a.failed or b.failed:
        errors = [r.error for r in (a, b) if r.error is not None]
        if errors:
            return TaskResult(error=min(errors, key=lambda e: e[0]))
        mismatch = a.mismatch or b.mismatch
        if mismatch is not None:
            return TaskResult(mismatch=mismatch)
        problems = [r.problems for r in (a, b) if r.problems is not None]
        out = problems[0]
        for more in problems[1:]:
            out = out.merged(more)
        return TaskResult(problems=out)
    from calibcli.summaries import SummaryMismatch, from_bytes, merge_parts, to_bytes

    parts = [from_bytes(a.payload), from_bytes(b.payload)]
    try:
        merged = merge_parts(parts, [_label(p) for p in parts])
    except SummaryMismatch as e:
        return _mismatch(parts, e)
    return TaskResult(payload=to_bytes(capped(merged, table)))


@held_memory
def merge_all(results: list[TaskResult], table: str = "auto") -> TaskResult:
    """Several results as one: the parts merged at once (each decoded once), or the failures
    combined."""
    failed = [r for r in results if r.failed]
    if failed:
        out = failed[0]
        for more in failed[1:]:
            out = merge_tasks(out, more, table)
        return out
    if len(results) == 1:
        return results[0]
    from calibcli.summaries import SummaryMismatch, from_bytes, merge_parts, to_bytes

    parts = [from_bytes(r.payload) for r in results]
    over = _over_cap(parts, table)
    if over:  # the merged table would be dropped: count its entries, never build it
        parts = [replace(p, distinct=None, _views={}) for p in parts]
    try:
        merged = merge_parts(parts, [_label(p) for p in parts])
    except SummaryMismatch as e:
        return _mismatch(parts, e)
    return TaskResult(payload=to_bytes(_dropped(merged) if over else capped(merged, table)))


def _over_cap(parts: list[Any], table: str) -> bool:
    """Whether merging ``parts`` (each with its table of distinct confidences, no ``--by``
    groups) makes a table :func:`capped` drops: its entries, counted as the merge would
    count them (equal values of a class are one), exceed the cap. False whenever in doubt,
    and the merge builds the table to decide."""
    import numpy as np

    if table != "auto" or any(
        p.kind != "calibration" or p.distinct is None or p.missing is not None for p in parts
    ):
        return False
    tables = [p.distinct for p in parts]
    if any(t.groups != 1 for t in tables) or sum(t.distinct for t in tables) <= _cap():
        return False
    entries = 0
    for side in ("right", "wrong"):
        values = np.sort(np.concatenate([getattr(t, side)[0] for t in tables]))
        if values.shape[0]:
            entries += 1 + int(np.count_nonzero(values[1:] != values[:-1]))
    return entries > _cap()


def _dropped(part: Any) -> Any:
    """A merged part whose table :func:`capped` would drop, as it leaves it (the parts'
    tables were left out of the merge)."""
    missing = CAPPED.format(cap=_cap())
    warning = f"the table of distinct confidences was dropped: {missing}"
    warnings = tuple(dict.fromkeys([*part.warnings, warning]))
    return replace(part, missing=missing, warnings=warnings, _views={})
