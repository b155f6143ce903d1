"""Rows pooled with ``--all-runs`` whose ids repeat across the inputs: re-runs of the same
questions, whatever wrote them.

lm-eval's re-runs of a task are known before a row is read (their file names give the task,
:func:`calibcli.io.runs.rerun_counts`). Other re-runs are not: two inspect-ai logs of one task
(a sample's id, its epoch part dropped, :func:`calibcli.io.ids.question_of`), or native rows
identified by ``--id-field``, pooled with ``--all-runs``. So their kept rows are keyed by their
questions while they are read (:func:`keyed_by_question`), and once read a question holding more
rows than any run read scored it (its epochs) tells that they repeat
(:func:`pooled_repeats`): each source whose rows carry ids then records that most rows of a
question as ``pooled`` (:class:`~calibcli.summaries.Source`), which every gate counts as it
counts epochs (``--min-rows`` and the upper-end minimums count questions, the bootstrap and
the cross-fitting folds draw a question's rows together, ``threshold`` chooses on one answer
per question). Without repeats the keys taken for this are dropped again, so the figures are
those of the rows read one by one.

The other readers find them alike (:func:`repeated_ids`): ``compare --unpaired``'s sides
(:func:`~calibcli.io.keyed.read_key_columns`) and :func:`calibcli.read_predictions`
(:func:`pooled_rows`).

Rows without ids name no question, so a re-run of them cannot be told from a copy: two files of
the same bytes pooled so are refused (:func:`refuse_copies`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calibcli.errors import InputError, shown_name


def keyed_by_question(plan: Any, files: list[str], parts: bool) -> Any:
    """The plan reading ``files`` (beside summary files: ``parts``), its kept calibration rows
    keyed by their questions where a file says before its rows are read that they repeat them
    (:func:`~calibcli.io.runs.repeating`: an inspect-ai run's epochs, a HELM run's train
    trials, lm-eval re-runs pooled), or where they are pooled with ``--all-runs`` and may carry
    ids (``pooled_keys``: the keys are dropped again when no question repeats, see
    :func:`pooled_repeats`); a row without an id is keyed by its line. Perplexity rows pooled
    so keep each identified row's question hash and tokens while they are read (each source
    then read in one process), to count each question once."""
    from calibcli.io.runs import repeating

    if plan.kind == "perplexity" and not plan.row_keys:
        if not may_repeat(plan.all_runs, plan.id_field, plan.forced):
            return plan
        return replace(plan, row_keys=True, pooled_keys=True)
    if plan.kind != "calibration" or not plan.keep_rows or plan.row_keys:
        return plan
    if repeating(files, plan.all_runs):
        return replace(plan, row_keys=True)
    if not may_repeat(plan.all_runs, plan.id_field, plan.forced):
        return plan
    return replace(plan, row_keys=True, pooled_keys=not parts)


def may_repeat(all_runs: bool, id_field: str | None, fmt: str | None) -> bool:
    """Whether rows pooled with ``all_runs`` may carry ids that repeat across the inputs: rows
    identified by ``id_field``, or of a format with ids of its own (``fmt``: the format forced,
    None or ``auto`` when each file's is detected). Rows of a format without ids, none named,
    name no question to repeat."""
    from calibcli.io.ids import OWN_IDS

    return all_runs and (id_field is not None or fmt in (None, "auto", *OWN_IDS))


def pooled_repeats(summary: Any, plan: Any) -> Any:
    """The summary read by ``plan``, its sources recording ``pooled`` (the most rows a question
    holds) when its kept rows' question keys repeat more often than the runs read scored a
    question (their epochs, lm-eval re-runs of a task counted,
    :func:`~calibcli.io.runs.rerun_sources`). Keys taken only to find this (the plan's
    ``pooled_keys``) are dropped when no question repeats: the rows are then read as without
    them. Rows pooled with ``--all-runs`` keep their question keys in the summary's ids
    (:func:`~calibcli.summaries.ids.pooled_keys`), so that a summary written of them, merged
    with others, finds the questions they repeat across each other; a summary of such parts
    finds them there (:func:`repeated_parts`)."""
    import numpy as np

    from calibcli.summaries import pooled_keys

    if plan.all_runs:
        refuse_copies(summary.sources, summary.settings.id_field is not None)
    if summary.kind == "perplexity":
        return _pooled_sequences(summary, plan)
    kept = getattr(summary, "kept", None)
    if summary.kind != "calibration" or kept is None or not kept.keyed:
        return _parts_repeats(summary, plan.all_runs)
    keys = np.concatenate([kept.right_keys, kept.wrong_keys])
    identified = summary.settings.id_field is not None
    if plan.all_runs and _named(summary.sources, identified) and not _held(summary.row_ids):
        summary = replace(summary, row_ids=pooled_keys(keys, held=summary.row_ids))
    sources = repeated_ids(summary.sources, keys, identified, plan.all_runs)
    if sources is None:
        if plan.pooled_keys:
            kept = replace(kept, right_keys=None, wrong_keys=None)
            return replace(summary, kept=kept)
        return summary
    return replace(summary, sources=sources)


def repeated_parts(summary: Any, all_runs: bool = False, *, merged: bool = False) -> Any:
    """The summary of parts (summary files, an engine's tasks) with the question keys of rows
    pooled with ``--all-runs`` (:func:`~calibcli.summaries.ids.pooled_keys`), its sources
    recording ``pooled`` where those keys repeat beyond the runs' epochs
    (:func:`repeated_ids`), as a reading of all the parts' files at once records it; a
    perplexity summary also counts each question once (``distinct``). Otherwise as it is.
    Files of the same bytes whose rows carry no ids are refused, as one reading refuses them
    (:func:`refuse_copies`). ``merged``: the summary ``merge --all-runs`` writes, of which
    only its lm-eval sources' runs of their tasks among the parts are recorded, as their epochs
    (:func:`_runs_of`); what its ids repeat beyond them is judged where it is read."""
    if merged:
        return replace(summary, sources=_runs_of(summary.sources)) if all_runs else summary
    if all_runs:
        refuse_copies(summary.sources, summary.settings.id_field is not None)
    return _parts_repeats(summary, all_runs)


def _runs_of(sources: Any) -> tuple[Any, ...]:
    """``sources`` with each lm-eval source's runs of its task among them recorded as its
    epochs (:func:`~calibcli.io.runs.rerun_sources`), as a summary of their files read at once
    records them: a file read later knows each task's own repeats, not the most of any task."""
    from calibcli.io.runs import rerun_sources

    found = rerun_sources(sources, True)
    return tuple(
        replace(s, epochs=f.epochs) if s.format == "lm-eval" else s
        for s, f in zip(sources, found, strict=True)
    )


def _parts_repeats(summary: Any, all_runs: bool) -> Any:
    """:func:`repeated_parts` once its sources were judged."""
    ids = getattr(summary, "row_ids", None)
    found = None if ids is None else ids.questions()
    if found is None:
        return summary
    identified = summary.settings.id_field is not None
    sources = repeated_ids(summary.sources, found[0], identified, all_runs)
    if sources is None:
        return summary
    if summary.kind == "perplexity":
        distinct = replace(summary, questions=found).distinct_questions()
        return replace(summary, sources=sources, distinct=distinct)
    return replace(summary, sources=sources)


def _named(sources: Any, identified: bool) -> bool:
    """Whether a source of rows names their questions: rows identified by --id-field, or of
    a format with ids of its own."""
    from calibcli.io.ids import OWN_IDS

    return any(
        s.skipped is None and s.rows > 0 and (identified or s.format in OWN_IDS) for s in sources
    )


def _held(ids: Any) -> bool:
    """Whether a summary's ids hold question keys of pooled rows already."""
    return ids is not None and ids.questions() is not None


def refuse_copies(sources: Any, identified: bool = False) -> None:
    """InputError when two inputs pooled with ``--all-runs`` hold the same bytes (their
    ``content``, or a compressed file and a plain one holding its decompressed bytes,
    :func:`~calibcli.io.same_bytes.decompressed_copies`) and their rows name no question:
    neither ``identified`` by --id-field nor of a format with ids of its own. Such rows cannot
    tell a re-run from a copy, and pooled one by one they would count twice: every interval
    narrower, ``--min-rows`` met with the copy. Rows with ids are counted by question
    (:func:`pooled_repeats`), as a deterministic re-run written again byte for byte is; the
    byte ranges of one file (an engine's, ``--part``) are one file. Two inspect-ai logs of one
    run (the same bytes, or the same ``eval_id``: a copy, a conversion) are refused whatever
    their ids (:func:`~calibcli.io.inspect_copies.refuse_same_runs`)."""
    from calibcli.io.inspect_copies import refuse_same_runs
    from calibcli.io.same_bytes import decompressed_copies

    refuse_same_runs(sources)
    if identified:
        return
    unnamed = _unnamed(sources)
    first: dict[str, str] = {}
    for s in unnamed:
        earlier = first.setdefault(s.content, s.name) if s.content else s.name
        if earlier != s.name:
            raise InputError(s.name, None, _copy_text(earlier, ""))
    for packed, plain in decompressed_copies(list(dict.fromkeys(s.name for s in unnamed))):
        raise InputError(packed, None, _copy_text(plain, " once decompressed"))


def refuse_file_copies(files: list[tuple[str, str | None, int]], identified: bool) -> None:
    """:func:`refuse_copies` of the files read with ``--all-runs`` (each path, its format and
    its rows), their contents hashed only where their rows name no question."""
    from calibcli.io.content import file_content_id
    from calibcli.io.inspect_copies import refuse_same_runs
    from calibcli.summaries import Source

    refuse_same_runs(Source(name, "", fmt, n) for name, fmt, n in files)
    if not identified:
        read = _unnamed(Source(name, "", fmt, n) for name, fmt, n in files)
        refuse_copies([replace(s, content=file_content_id(s.name)) for s in read])


def _unnamed(sources: Any) -> list[Any]:
    """The sources read from files with rows that name no question (no format's own ids)."""
    from calibcli.io.ids import OWN_IDS

    return [
        s
        for s in sources
        if s.skipped is None and s.rows > 0 and s.name != "-" and s.format not in OWN_IDS
    ]


def _copy_text(earlier: str, how: str) -> str:
    return (
        f"holds the same bytes as {shown_name(earlier)}{how}, and rows without ids cannot tell "
        "a re-run from a copy: --all-runs would count them twice (give --id-field so that "
        "re-runs are counted by question, or leave one of them out)"
    )


def _pooled_sequences(summary: Any, plan: Any) -> Any:
    """:func:`pooled_repeats` of perplexity rows: where their question hashes repeat beyond
    their runs' epochs, the sources record ``pooled`` and the summary its questions and their
    tokens, each question once (``distinct_questions``). The hashes move to the summary's ids
    (:func:`~calibcli.summaries.ids.pooled_keys`), for the parts it is merged with; a summary
    of parts finds its repeats there (:func:`repeated_parts`)."""
    from calibcli.summaries import pooled_keys

    if summary.questions is None:
        return _parts_repeats(summary, plan.all_runs)
    identified = summary.settings.id_field is not None
    row_ids = summary.row_ids
    if plan.all_runs and _named(summary.sources, identified):
        row_ids = pooled_keys(*summary.questions, held=row_ids)
    sources = repeated_ids(summary.sources, summary.questions[0], identified, plan.all_runs)
    if sources is None:
        return replace(summary, questions=None, row_ids=row_ids)
    distinct = summary.distinct_questions()
    return replace(summary, sources=sources, questions=None, distinct=distinct, row_ids=row_ids)


def repeated_ids(sources: Any, asked: Any, identified: bool, all_runs: bool) -> Any:
    """``sources`` (:class:`~calibcli.summaries.Source`) each recording ``pooled``, the most
    rows a question holds, when ``asked`` (the rows' question hashes) holds a question more
    often than the runs read scored one (:func:`~calibcli.summaries.most_epochs` of their
    :func:`~calibcli.io.runs.rerun_sources`) and a source's rows name their questions (rows
    ``identified`` by --id-field, or of a format with ids of its own); None otherwise."""
    import numpy as np

    from calibcli.io.ids import OWN_IDS
    from calibcli.io.runs import rerun_sources
    from calibcli.summaries import most_epochs

    asked = np.asarray(asked)
    most = int(np.unique(asked, return_counts=True)[1].max()) if asked.shape[0] else 0
    # what the runs scored, not what a pooling found before (the same keys, judged again)
    own = most_epochs(replace(s, pooled=None) for s in rerun_sources(sources, all_runs)) or 1
    # rows without ids are keyed by their lines, which a file given twice repeats: only rows
    # with ids name their questions
    named = [
        s.skipped is None and s.rows > 0 and (identified or s.format in OWN_IDS) for s in sources
    ]
    if most <= own or not any(named):
        return None
    return tuple(
        replace(s, pooled=most) if ids else s for s, ids in zip(sources, named, strict=True)
    )


def pooled_files(
    files: list[tuple[str, str | None, int]],
    asked: Any,
    identified: bool,
    by: str | None,
    *,
    whole: bool = False,
) -> tuple[tuple[Any, ...], str] | None:
    """The files read with ``--all-runs`` (each path, its format and its rows, in row order)
    when ``asked`` (each row's question hash) holds a question more often than their runs'
    epochs explain (:func:`repeated_ids`): a :class:`~calibcli.summaries.Source` of each, as
    a summary of them records it (its run's epochs, its ``pooled`` rows a question), and the
    warning the commands give of them, said of rows drawn a question at a time (``whole``) or
    resampled one by one (:func:`calibcli.io.runs.drawn_whole` rewrites it once they are drawn
    whole). None when no question repeats beyond their epochs."""
    from calibcli.io.runs import rerun_sources, source_checks
    from calibcli.summaries import Source

    refuse_file_copies(files, identified)
    read = tuple(Source(name, "", fmt, n) for name, fmt, n in files)
    found = repeated_ids(read, asked, identified, True)
    if found is None:
        return None
    found = rerun_sources(found, True)
    return found, source_checks(found, by, whole, False)[1]


def repeats_shown(
    repeated: list[tuple[str, int, str]], files_shown: Any, named: dict[str, str], shown: int
) -> list[str]:
    """How the warning about repeated questions names the inputs whose rows repeat them
    (``repeated``: each file, how many rows a question holds, the kind of repeat;
    ``files_shown``: a file's name as warnings show it; ``named``: each kind's repeats, e.g.
    ``epochs``): a run's repeats said of it, ``run.json (3 epochs)``. The inputs pooled with
    ``--all-runs`` whose ids repeat (kind ``pooled``) record the most rows a question holds in
    all of them together, not in each, so it is said once, of them all (the first ``shown``
    named, the rest counted): ``run1.json and run2.json (2 rows a question among them)``."""
    held: dict[tuple, list[str]] = {}
    for f, k, kind in repeated:
        held.setdefault((k, kind) if kind == "pooled" else (f, k, kind), []).append(f)
    entries = []
    for key, files in held.items():
        if key[-1] != "pooled":
            entries.append(f"{files_shown(files)} ({key[1]} {named[key[2]]})")
            continue
        names = [files_shown([f]) for f in files]
        if len(names) == 1:
            entries.append(f"{names[0]} ({key[0]} rows a question)")
            continue
        listed = names[:shown] if len(names) > shown else names[:-1]
        last = f"{len(names) - shown} more" if len(names) > shown else names[-1]
        entries.append(f"{', '.join(listed)} and {last} ({key[0]} rows a question among them)")
    return entries


def said_instead(warnings: Any, repeats: str) -> tuple[str, ...]:
    """``warnings`` with ``repeats`` (:func:`pooled_files`' warning) in place of what the runs
    said of their repeats (:data:`~calibcli.io.runs.REPEATED`), or last where they said none."""
    from calibcli.io.runs import REPEATED

    kept = [w for w in warnings if not w.startswith(REPEATED)]
    at = next((i for i, w in enumerate(warnings) if w.startswith(REPEATED)), len(kept))
    return tuple(dict.fromkeys([*kept[:at], repeats, *kept[at:]]))


def pooled_side(
    reader: Any, spans: list, asked: Any, declared: bool, id_field: str | None, by: str | None
) -> Any:
    """The question hashes ``asked`` of a side of ``compare --unpaired`` read with
    ``--all-runs`` (``reader``: its warnings, formats and run checks; ``spans``: each file's
    rows), kept where its runs said before its rows were read that they repeat their
    questions (``declared``) or where its rows' ids repeat beyond their runs' epochs
    (:func:`pooled_files`): the reader's warning and run checks then say it as calibrate
    does. None otherwise, so that the side's rows are drawn one by one, as without them."""
    formats = dict(reader.formats)
    files = [(source, formats.get(source), stop - start) for source, _, start, stop in spans]
    found = pooled_files(files, asked, id_field is not None, by)
    if found is None:
        return asked if declared else None
    said = found[1]
    reader.warnings[:] = said_instead(reader.warnings, said)
    if reader.checks is not None:
        warnings = said_instead(reader.checks.warnings, said)
        reader.checks = replace(reader.checks, warnings=warnings, repeats=said)
    return asked
