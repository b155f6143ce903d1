"""Which of the files given make one sample: re-runs of a task are not pooled by accident.

lm-evaluation-harness writes every run of a task into the run folder as a new file,
``samples_<task>_<timestamp>.json[l]``; reading ``out/samples_*.jsonl`` after five runs would
pool five copies of each question, and the narrower interval could pass a gate that one run
fails. So among the files given for one input (one side of a comparison), the files of one task
in one folder with different timestamps in their names are re-runs: only the newest (by the
timestamp in the name, never by modification time, which an artifact download changes) is
read, with a warning naming the runs left out, unless ``all_runs``. A path given twice, one file
under two paths (a symbolic link to it or its folder, a hard link) and standard input given
twice are refused, ``all_runs`` or not (a file read twice is no re-run); unless ``all_runs``,
so are two files that hold the same bytes, a compressed file and a plain one holding its
decompressed bytes (``x.jsonl`` beside ``gzip -k``'s ``x.jsonl.gz``: any gzip file, by its
trailer; a Zstandard, xz or bzip2 file named as the plain one plus its suffix, by decompressing
it), and two compressions of one file: the same rows twice would narrow every interval and
meet ``--min-rows`` with the copy. Files of no rows are no copies
(:func:`~calibcli.io.same_bytes.rowless`: blank, or lm-eval results files, which two runs or a
copied run folder may hold byte for byte). With ``all_runs`` such copies are re-runs only
where their rows carry ids (:func:`calibcli.io.pooled_ids.refuse_copies`).

A run may also have evaluated only a part of a task's documents (lm-eval's ``--limit``): its
samples file then holds that part, and nothing in the rows says so. The run's results file
(``results_<timestamp>.json`` beside the samples files, the same timestamp, or another
``<name>_<timestamp>.json``: :func:`~calibcli.io.run_results.results_file`) records, per task,
the documents the task has and those evaluated (``n-samples``: ``original``, ``effective``);
:func:`limited_runs` turns a shortfall among the files read into one warning per run, and a
samples file holding fewer rows than its run evaluated (a file cut short) into one of its own.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any

from calibcli.errors import InputError, shown_name
from calibcli.io.content import file_content_id
from calibcli.io.evals_log import evals_model
from calibcli.io.helm_run import helm_trials
from calibcli.io.helm_spec import helm_model, helm_shown
from calibcli.io.inspect_log import head_epochs, log_epochs, log_model
from calibcli.io.older_parts import newest_parts
from calibcli.io.pooled_ids import repeats_shown
from calibcli.io.response_models import RESPONSE_FORMATS, models_named, response_model
from calibcli.io.run_models import RUN_NAME as RUN_NAME
from calibcli.io.run_models import (
    group_model,
    model_runs,
    refuse_unnamed_reruns,
    rerun_keys,
    results_model,
    run_model,
)
from calibcli.io.run_models import rerun_task as rerun_task
from calibcli.io.run_models import samples_named as _samples_named
from calibcli.io.run_results import RESULTS_BYTES as RESULTS_BYTES
from calibcli.io.run_results import results_file, run_record
from calibcli.io.run_results import results_version as results_version
from calibcli.io.same_bytes import (
    decompressed_copies,
    given_once,
    reached_once,
    regular_files,
    rowless,
)
from calibcli.io.unnamed_runs import refuse_unnamed_beside_named

DOUBLE_INPUT = "its rows would count twice (pass --all-runs to pool them on purpose)"
# a copy, unlike a file given twice, may also be left out
COPY = DOUBLE_INPUT.removesuffix(")") + ", or give one of them)"
SHOWN = 5  # tasks and files named in the warning; the rest are counted


@dataclass(frozen=True)
class Runs:
    """The files to read, in the order given, and why some were left out."""

    files: list[str]
    warnings: list[str]


def _run_of(path: str) -> tuple[str, str, str] | None:
    """(folder, task, timestamp) of an lm-eval samples file name, else None."""
    match = RUN_NAME.match(PurePath(path).name)
    if match is None:
        return None
    folder = os.path.realpath(os.path.dirname(path) or ".")
    return folder, match["task"], _sortable(match["stamp"])


def _sortable(stamp: str) -> str:
    """A timestamp that sorts as time does (a whole second has no fraction in the name)."""
    whole, _, fraction = stamp.partition(".")
    return f"{whole}.{fraction.ljust(6, '0')}"


def choose_runs(files: list[str], *, all_runs: bool = False, parts: Any = ()) -> Runs:
    """The files of one input to read (see the module docstring); InputError when a path is
    given twice or one file is reached by two paths (:func:`~calibcli.io.same_bytes.given_once`,
    :func:`~calibcli.io.same_bytes.reached_once`), or two files hold the same bytes
    without ``all_runs`` (with it, rows without ids are judged once read,
    :func:`~calibcli.io.pooled_ids.refuse_copies`). ``parts``: summaries given with them, each
    (label, summary), judged by their sources' runs
    (:func:`~calibcli.io.older_parts.newest_parts`)."""
    given_once(files)
    reached_once(files)  # before the runs are chosen: a link to the newest run is no older run
    if all_runs:  # re-runs pooled: only those whose rows cannot be matched are refused
        refuse_unnamed_reruns([*filter(_samples_named, files), *_sources_of(parts)], pooled=True)
        return newest_parts(Runs(list(files), []), parts, all_runs)
    runs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for f in files:
        run = None if f == "-" else _run_of(f)
        if run is not None:
            runs.setdefault(run[:2], []).append((run[2], f))
    # re-runs of a task in one folder are one model's: two models' runs are both read
    split = model_runs(runs)
    reruns = {key: sorted(found) for key, found in split.items() if len({s for s, _ in found}) > 1}
    tasks = list(dict.fromkeys(key[1] for key in reruns))
    left_out = [f for found in reruns.values() for _, f in found[:-1]]
    warnings = [rerun_warning(tasks, left_out)] if tasks else []
    dropped = set(left_out)
    kept = [f for f in files if f not in dropped]
    names: dict[tuple[int, int], str] = {}
    contents: dict[str, str] = {}
    for f, found in regular_files(kept):
        names[(found.st_dev, found.st_ino)] = f  # one path each (reached_once)
        content = file_content_id(f)
        # files of no rows have no rows to count twice: two empty shards, or two runs' results
        # files, are not copies (looked at only when the bytes agree: others are not opened)
        if content and content in contents and not rowless(f, found.st_size):
            also = shown_name(contents[content])
            raise InputError(f, None, f"holds the same bytes as {also}: {COPY}")
        contents.setdefault(content, f)
    for packed, plain in decompressed_copies(list(names.values())):
        if not rowless(plain, os.stat(plain).st_size):
            also = shown_name(plain)
            raise InputError(
                packed, None, f"holds the same bytes as {also} once decompressed: {COPY}"
            )
    refuse_unnamed_reruns([*filter(_samples_named, kept), *_sources_of(parts)])
    return newest_parts(Runs(kept, warnings), parts, all_runs)


def _sources_of(parts: Any) -> list[str]:
    """The lm-eval files the summaries ``parts`` (each (label, summary)) read rows from."""
    return [
        s.name
        for _, summary in parts
        for s in summary.sources
        if s.format == "lm-eval" and s.skipped is None and s.rows and s.name != "-"
    ]


def rerun_warning(tasks: list[str], left_out: list[str]) -> str:
    """What is said of re-runs of ``tasks`` whose older runs, the files ``left_out``, are."""
    named = ", ".join(repr(t) for t in tasks[:SHOWN])
    more = f" and {len(tasks) - SHOWN} more" if len(tasks) > SHOWN else ""
    files_shown = ", ".join(shown_name(PurePath(f).name) for f in left_out[:SHOWN])
    files_more = f" and {len(left_out) - SHOWN} more" if len(left_out) > SHOWN else ""
    return (
        f"re-runs of {len(tasks)} task(s) ({named}{more}) in one folder: reading each task's "
        f"newest run and leaving out {len(left_out)} older file(s): {files_shown}{files_more} "
        "(pass --all-runs to pool them)"
    )


def limited_runs(read: list[tuple[str, int | None]]) -> list[str]:
    """What the results files of lm-eval runs say of the samples files ``read`` (each with the
    rows read from it, None when only a range of it was read): one warning per run of which
    some tasks read were evaluated on fewer documents than the task has (under ``--limit`` the
    rows are a part of the task, its first documents, and their figures are that part's), and
    one per file holding fewer rows than its run evaluated documents (one row per document:
    the file was cut short). Nothing without a results file of the same run beside the
    samples file."""
    short: dict[str, list[tuple[str, int, int]]] = {}
    limits: dict[str, Any] = {}
    cut: list[str] = []
    for f, rows in read:
        match = None if f == "-" else RUN_NAME.match(PurePath(f).name)
        if match is None:
            continue
        results = results_file(f, match["stamp"])
        found = run_record(results)
        if found is None:
            continue
        counts, limit = found.counts, found.limit
        task = counts.get(match["task"])
        if task is None:
            continue
        if rows is not None and rows < task[1]:
            cut.append(
                f"{shown_name(f)}: holds {rows:,} rows of task {match['task']!r}, but its run "
                f"evaluated {task[1]:,} documents ({shown_name(PurePath(results).name)}): the "
                "file is cut short, and the figures are those of the rows it holds"
            )
        if task[1] >= task[0]:
            continue
        entry = (match["task"], task[0], task[1])
        if entry not in short.setdefault(results, []):
            short[results].append(entry)
        limits[results] = limit
    limited = [
        _limited_warning(results, tasks, limits[results]) for results, tasks in short.items()
    ]
    return [*limited, *dict.fromkeys(cut)]


@dataclass(frozen=True)
class RunChecks:
    """What the runs of the files read say of their rows: the warnings, and why every gate
    fails closed on them (``mixed``, :func:`pooled_models`) or the gates on an interval's
    upper end do (``repeats``, :func:`repeated_samples`)."""

    warnings: tuple[str, ...] = ()
    mixed: str | None = None
    repeats: str | None = None


def either(*checks: RunChecks | None) -> dict[str, str | None]:
    """``mixed`` and ``repeats`` of a comparison's rows: what either side's runs say."""
    found = [c for c in checks if c is not None]
    return {
        key: next((getattr(c, key) for c in found if getattr(c, key)), None)
        for key in ("mixed", "repeats")
    }


def run_checks(
    read: list[tuple[str, int | None]],
    formats: list[tuple[str, str | None]],
    by: str | None,
    whole: bool = False,
    all_runs: bool = False,
) -> RunChecks:
    """:func:`limited_runs` of the files ``read`` (with their rows), :func:`pooled_models` and
    :func:`repeated_samples` of the files read with rows (with their formats); ``whole``: a
    bootstrap of these rows draws each question's rows together, so their repeating questions
    close no gate. ``all_runs``: the files were pooled with --all-runs (re-runs of a task
    repeat its questions)."""
    mixed, repeats = pooled_models(formats, by), repeated_samples(formats, whole, all_runs)
    said = [*limited_runs(read), *(w for w in (mixed, repeats) if w is not None)]
    return RunChecks(tuple(said), mixed, None if whole else repeats)


def repeated_samples(
    files: list[tuple[str, str | None]], whole: bool = False, all_runs: bool = False
) -> str | None:
    """Why the rows of ``files`` (each with its format) repeat their questions, or None
    (:func:`_repeated`, each inspect-ai log's epochs and each HELM file's train trials read
    from the file; with ``all_runs``, each lm-eval file's runs of its task,
    :func:`rerun_counts`)."""
    runs = rerun_counts(files) if all_runs else {}
    logs = [
        (f, _REPEATS_OF[fmt](f) if fmt in _REPEATS_OF else runs[f], fmt)
        for f, fmt in files
        if fmt in _REPEATS_OF or f in runs
    ]
    return _repeated(logs, whole)


_REPEATS_OF = {"inspect-ai": log_epochs, "helm": helm_trials}
# how the warning names each format's repeats of a question (those of rows whose ids repeat
# across inputs pooled with --all-runs are said of the inputs together: repeats_shown)
_REPEATS_NAMED = {"inspect-ai": "epochs", "helm": "train trials", "lm-eval": "runs"}

REPEATED = (
    "inspect-ai runs scored each sample several times: ",
    "HELM runs scored each instance several times: ",
    "runs scored each question several times: ",
    "lm-eval re-runs of a task are pooled (--all-runs), so each document is answered several "
    "times: ",
    "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
    "several times: ",
)
"""How the warning about rows that repeat their questions opens: an inspect-ai run's epochs,
a HELM run's train trials, lm-eval re-runs pooled with --all-runs, other rows pooled with it
whose ids repeat across the inputs, or several of these."""
_OPENING = {"inspect-ai": REPEATED[0], "helm": REPEATED[1], "lm-eval": REPEATED[3]}
_OPENING["pooled"] = REPEATED[4]


def runs_of_one_task(first: str, second: str, formats: dict[str, str | None]) -> str:
    """Why two files' rows share ids, when they are lm-eval runs of one task (``--all-runs``
    pools them, or both were named; ``formats``: each file's): a paired comparison matches
    each document once. Empty otherwise."""
    if first == second or any(formats.get(f) != "lm-eval" for f in (first, second)):
        return ""
    task = rerun_task(first)
    if task != rerun_task(second):
        return ""
    return (
        f": both files are runs of task {task[0]!r}, and a paired comparison matches each "
        "document once; compare the runs with --unpaired (each document counted once, its "
        "runs drawn together), or one run of each side (without --all-runs, each task's "
        "newest run is read)"
    )


def rerun_counts(files: list[tuple[str, str | None]]) -> dict[str, int]:
    """Each lm-eval file among ``files`` (each with its format; one given twice counts twice)
    with the number of runs of its task (:func:`rerun_task`) among them, where above 1: pooled
    with --all-runs, a document is answered once per run, and the runs are its epochs."""
    keys = rerun_keys(f for f, fmt in files if fmt == "lm-eval")
    tasks = [(f, keys[f]) for f, fmt in files if fmt == "lm-eval" and f != "-"]
    counts: dict[tuple[str, str | None], int] = {}
    for _, task in tasks:
        counts[task] = counts.get(task, 0) + 1
    return {f: counts[task] for f, task in tasks if counts[task] > 1}


def rerun_sources(sources: Any, all_runs: bool, own_ids: bool = False) -> tuple[Any, ...]:
    """:func:`recorded` of each source, and with ``all_runs`` each lm-eval source's runs of its
    task among the sources read (:func:`rerun_counts`) recorded as its epochs; the ranges of a
    file read apart (``--part``) are one run, a file read twice two. A run naming no model
    sharing documents with another run of its task is refused
    (:func:`~calibcli.io.run_models.refuse_unnamed_reruns`), and with ``own_ids`` (rows read
    without ``--id-field``) a run naming no model beside one naming its model, of a format
    whose ids carry it (:func:`~calibcli.io.unnamed_runs.refuse_unnamed_beside_named`)."""
    found = tuple(recorded(s) for s in sources)
    if own_ids:
        read = [(s.name, s.format, s.model) for s in found if s.skipped is None and s.rows]
        refuse_unnamed_beside_named(read)
    # a summary's runs naming no model meet the other runs of their tasks here
    refuse_unnamed_reruns(
        (s.name for s in found if s.format == "lm-eval" and s.skipped is None and s.rows),
        pooled=all_runs,
    )
    if not all_runs:
        return found
    whole = [s for s in found if s.skipped is None and s.rows and (s.start, s.stop) == (0, None)]
    ranges = {(s.name, s.content): s for s in found if s.skipped is None and s.rows}
    ranges = {k: s for k, s in ranges.items() if (s.start, s.stop) != (0, None)}
    runs = rerun_counts([(s.name, s.format) for s in (*whole, *ranges.values())])
    return tuple(
        replace(s, epochs=runs[s.name]) if s.format == "lm-eval" and s.name in runs else s
        for s in found
    )


def _repeated(
    logs: list[tuple[str, int | None, str]], whole: bool, sums: bool = False, tail: str = ""
) -> str | None:
    """Why the rows of ``logs`` (each file with how many times its run scored each question,
    and its format) repeat their questions, or None: an inspect-ai run with ``epochs`` > 1
    scored each sample that many times, a HELM run with several train trials each instance,
    re-runs of an lm-eval task pooled with --all-runs each document, one row each. The figures
    are those of every answer. A bootstrap that draws each question's rows together
    (``whole``: the rows were keyed by question) gives honest intervals; one over rows takes a
    question's rows for independent answers, and its interval is too narrow. ``sums``: a
    summary's Poisson sums are keyed by question though its rows are not. ``tail``: what is
    said instead of the figures' and intervals' (perplexity's)."""
    repeated = [
        (f, k, fmt) for f, k, fmt in dict.fromkeys(logs) if f != "-" and k is not None and k > 1
    ]
    if not repeated:
        return None
    entries = repeats_shown(repeated, _files_shown, _REPEATS_NAMED, SHOWN)
    shown = ", ".join(entries[:SHOWN])
    more = f" and {len(entries) - SHOWN} more" if len(entries) > SHOWN else ""
    kinds = {fmt for _, _, fmt in repeated}
    opening = REPEATED[2] if len(kinds) > 1 else _OPENING[kinds.pop()]
    said = f"{opening}{shown}{more}: "
    if tail or whole:
        return said + (tail or _DRAWN)
    if sums:
        return said + (
            "the figures weigh every answer; the summary's Poisson sums draw each question's "
            "answers together, but its rows do not, so a gate on an interval's upper end needs "
            "--bootstrap-scheme poisson"
        )
    return said + _BY_ROW


_DRAWN = "the figures weigh every answer, and the bootstrap draws each question's answers together"
_BY_ROW = (
    "the rows repeat each question, so a bootstrap over rows gives intervals too narrow, and a "
    "gate on their upper end fails; gate the estimate"
)


def drawn_whole(warning: str) -> str:
    """The warning about rows that repeat their questions, said of rows resampled one by one,
    as it reads of the same rows drawn a question at a time (compare --unpaired, which draws
    each side's questions whole); any other warning as it is."""
    if warning.startswith(REPEATED) and warning.endswith(_BY_ROW):
        return warning[: -len(_BY_ROW)] + _DRAWN
    return warning


def recorded(source: Any) -> Any:
    """A summary's ``source`` (:class:`~calibcli.summaries.Source`) with what its run records
    looked up where it was not recorded: an lm-eval run's model, an inspect-ai log's model and
    epochs, a HELM file's train trials (recorded as its epochs), so that a summary file read
    where its files are not still knows them."""
    fmt = source.format
    known = fmt in _MODEL_OF or fmt in _REPEATS_OF
    if source.skipped is not None or not known or source.name == "-":
        return source
    model = source.model
    if model is None and fmt in _MODEL_OF:
        model = _MODEL_OF[fmt](source.name)
    epochs = source.epochs
    if epochs is None and fmt in _REPEATS_OF:
        epochs = _REPEATS_OF[fmt](source.name)
    if (model, epochs) == (source.model, source.epochs):
        return source
    return replace(source, model=model, epochs=epochs)


def source_checks(
    sources: Any, by: str | None, whole: bool, sums: bool, tail: str = ""
) -> tuple[str | None, str | None]:
    """(:func:`pooled_models`, :func:`_repeated`) of a summary's sources, by what each records
    (:func:`recorded`; ``tail``: :func:`_repeated`'s)."""
    read = [s for s in sources if s.skipped is None and s.name != "-"]
    named = [s for s in read if s.format in _MODEL_OF]
    # an lm-eval source records epochs when re-runs of its task were pooled with it
    repeats = (*_REPEATS_OF, "lm-eval")
    logs = [
        (s.name, s.pooled, "pooled") if s.pooled else (s.name, s.epochs, s.format)
        for s in read
        if s.format in repeats or s.pooled
    ]
    return _pooled([(s.name, s.model) for s in named], by), _repeated(logs, whole, sums, tail)


def repeating(files: list[str], all_runs: bool = False) -> bool:
    """Whether a file among ``files`` says, before its rows are read, that its run scored each
    question several times: an inspect-ai log's epochs
    (:func:`~calibcli.io.inspect_log.head_epochs`), a HELM file's train trials
    (:func:`~calibcli.io.helm_run.helm_trials`); or, pooled with ``all_runs``, that files
    named as lm-eval samples files are runs of one task (:func:`rerun_counts`). Its rows are
    then keyed by question."""
    if all_runs and rerun_counts([(f, "lm-eval") for f in files if _samples_named(f)]):
        return True
    return any((head_epochs(f) or 0) > 1 or (helm_trials(f) or 0) > 1 for f in files if f != "-")


def pooled_models(files: list[tuple[str, str | None]], by: str | None) -> str | None:
    """Why the rows of ``files`` (each with the format it was read in) are not one model's, or
    None (:func:`_pooled`, each file's model as its run names it; one file of responses may
    name several)."""
    runs = [(f, fmt) for f, fmt in dict.fromkeys(files) if fmt in _MODEL_OF and f != "-"]
    if len(runs) < 2 and not any(fmt in RESPONSE_FORMATS for _, fmt in runs):
        return None
    return _pooled([(f, _MODEL_OF[fmt](f)) for f, fmt in runs], by)


def _pooled(named: list[tuple[str, str | None]], by: str | None) -> str | None:
    """Why the rows of the files ``named`` (each with the models its run used,
    :func:`models_named`) are not one model's, or None: their runs name several, where a run
    says: an lm-eval samples file's name (model arguments, before v0.4.3) or results file
    (``model_name``), an inspect-ai log's ``eval.model``, a HELM run's ``run_spec.json`` or
    run folder (:func:`~calibcli.io.helm_spec.helm_model`), an OpenAI evals log's spec
    (``completion_fns``), an API response's ``model``. Pooled,
    the rows mix the models' calibration, and nothing else tells it. With ``by`` ``model``
    each group is one model's, and the reason is the pooled figures' alone."""
    models: dict[str, list[str]] = {}
    for f, named_as in dict.fromkeys(named):
        for model in models_named(named_as):
            models.setdefault(model, []).append(f)
    if len(models) < 2:
        return None
    shown = ", ".join(
        f"{_model_shown(model)} ({_files_shown(found)})"
        for model, found in sorted(models.items())[:SHOWN]
    )
    more = f" and {len(models) - SHOWN} more" if len(models) > SHOWN else ""
    if by == "model":
        return (
            f"the figures over all groups pool the rows of {len(models)} models: {shown}{more}, "
            "as their runs name them: they mix the models, and a gate on them alone fails; "
            "--gate-each gates each model's group"
        )
    return (
        f"rows of {len(models)} models are pooled: {shown}{more}, as their runs name them: the "
        "figures mix the models, and a gate on them fails; read one model's files at a time "
        "(calibcli compare sets two side by side)"
    )


_MODEL_OF = {"lm-eval": run_model, "inspect-ai": log_model, "helm": helm_model}
_MODEL_OF |= dict.fromkeys(RESPONSE_FORMATS, response_model)
_MODEL_OF["openai-evals"] = evals_model  # the completion_fns of the log's spec


def named_model(path: str, fmt: str) -> str | None:
    """The model a file's run names, as ``--by model`` groups by it: an lm-eval file's
    :func:`~calibcli.io.run_models.group_model` (the ``pretrained`` argument of a name before
    v0.4.3, else its run's results file's ``model_name``, else the ``org__name`` folder, as the
    several-models check reads it); an inspect-ai log's ``eval.model``; a HELM run's
    :func:`~calibcli.io.helm_spec.helm_model`; an OpenAI evals log's spec's completion_fns
    (:func:`~calibcli.io.evals_log.evals_model`). None when its run names none."""
    if fmt == "lm-eval":
        return group_model(path)
    if fmt == "openai-evals":
        return evals_model(path)
    if fmt == "helm":
        return helm_model(path)
    return log_model(path) if fmt == "inspect-ai" else None


def _model_shown(model: str) -> str:
    return repr(model) if model else "a run without model arguments"


def _files_shown(files: list[str]) -> str:
    first = shown_name(helm_shown(files[0]))  # a HELM file with its run folder
    return first if len(files) == 1 else f"{first} and {len(files) - 1} more"


def _limited_warning(results: str, tasks: list[tuple[str, int, int]], limit: Any) -> str:
    given = f" (--limit {limit:g})" if limit is not None else ""
    if len(tasks) == 1:
        ((task, original, effective),) = tasks
        return (
            f"{shown_name(results)}: lm-eval evaluated only {effective:,} of the {original:,} "
            f"documents of task {task!r}{given}: the figures are those of this part, not of the "
            "whole task"
        )
    shown = ", ".join(f"{t!r} {e:,} of {o:,}" for t, o, e in tasks[:SHOWN])
    more = f" and {len(tasks) - SHOWN} more" if len(tasks) > SHOWN else ""
    return (
        f"{shown_name(results)}: lm-eval evaluated only a part of the documents of "
        f"{len(tasks)} tasks read{given}: {shown}{more}: the figures are those of these parts, "
        "not of the whole tasks"
    )


def repeat_told(error: InputError) -> InputError:
    """A row read twice (a :class:`~calibcli.errors.RepeatedRowError`) said as
    :func:`repeat_reason` says it, where it says something; ``error`` otherwise."""
    earlier = getattr(error, "earlier", None)
    said = None if earlier is None else repeat_reason(error.path, error.line, *earlier)
    return error if said is None else InputError(error.path, error.line, said)


def repeat_reason(path: str, line: Any, before: str, before_line: Any) -> str | None:
    """Why the lm-eval row at ``path``:``line``, whose id the row at ``before``:``before_line``
    holds, is not a re-run to pool: rows of one document in two models' runs whose paths do
    not name the models (v0.4.3+ folders of models without a slash, ``gpt2/``), which their
    results files tell apart; or rows of one document under two filters, the two rows carrying
    different ``filter`` values (a samples file of a task with several filters holds each
    filter's rows in turn). None otherwise."""
    at = f"{shown_name(before)}:{before_line}"
    models = _models_apart(path, before)
    if models is not None:
        return (
            f"this document's row was read before, at {at}, in a run of another model: the "
            f"runs' results files name {models[1]!r} here and {models[0]!r} there, which the "
            "files' paths do not tell apart (lm-eval rows are keyed by task, doc_id and the "
            "model a path names, an org__name folder or the model arguments of a file name); "
            "read one model's files at a time"
        )
    found = [_row_filter(p, n) for p, n in ((path, line), (before, before_line))]
    if None in found or found[0] == found[1]:
        return None
    (doc, again), (_, first) = found
    doc = doc if isinstance(doc, int) else repr(doc)
    return (
        f"the rows of doc_id {doc} under filters {first!r} (at {at}) and {again!r}: each "
        "filter's rows are one reading of the task; calibcli reads one filter at a time (give "
        "the rows of one filter)"
    )


def _models_apart(path: str, before: str) -> tuple[str, str] | None:
    """(the model of ``before``, the model of ``path``) when both are lm-eval samples files of
    one task whose paths name no model and whose runs' results files name different ones."""
    if path == before or not all(RUN_NAME.match(PurePath(p).name) for p in (path, before)):
        return None
    (task, named), (other, named_too) = rerun_task(before), rerun_task(path)
    if task != other or named is not None or named_too is not None:
        return None
    first, second = results_model(before), results_model(path)
    return None if first is None or second is None or first == second else (first, second)


def _row_filter(path: str, line: Any) -> tuple[Any, str] | None:
    """(doc_id, filter) of the lm-eval row on line ``line`` of the file at ``path``, or None
    (read only to say why a row read twice is refused)."""
    import json

    from calibcli.io.compression import open_path

    if not isinstance(line, int) or line < 1 or not os.path.isfile(path):
        return None
    try:
        with open_path(path) as f:
            text = next(itertools.islice(f, line - 1, None), b"")
        row = json.loads(text)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(row, dict) or "doc_id" not in row or not isinstance(row.get("filter"), str):
        return None
    return row["doc_id"], row["filter"]
