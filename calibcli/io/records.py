"""Row-by-row reading for the commands that need each row itself, not only statistics:
``compare`` (rows matched by id), ``apply`` (rows written back out) and multiple-choice
temperature scaling (each row's choices).

Slower than the block decoders (one ``json.loads`` per line) but with the same sources (files,
``-``, compressed), the same row rules and the same one-line errors, ``path:line: what is wrong``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from calibcli.errors import InputError, shown_name
from calibcli.io.batch_ids import TWICE, is_batch_line, read_before, request_key
from calibcli.io.first_id import watched
from calibcli.io.ids import OWN_IDS, SCOPED_KEYS, sample_scope, show_id
from calibcli.io.ids import default_id_field as _default_id_field
from calibcli.io.ids import row_key as _row_key
from calibcli.io.sources import (
    MAX_LINE_BYTES,
    Source,
    blocks,
    display_name,
    lines_of,
    note_once,
)
from calibcli.summaries import KeyedRows

BLOCK_SIZE = 1 << 20


def records(
    source: str,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_document_bytes: int | None = None,
    skip_results: bool = False,
    notes: Callable[[str], None] | None = None,
    skipped: Callable[[str], None] | None = None,
    span: tuple[int, int] | None = None,
) -> Iterator[tuple[str, int | str, dict, bytes | None]]:
    """(display name, line number or locator, row, raw line) of each row of ``source``: each
    non-blank line of JSON Lines, or each row of a whole document (a JSON array, a
    pretty-printed object, an inspect-ai ``.eval`` zip; the raw line is then None). Lines
    and compressed documents are bounded as the block readers bound them. An lm-eval results
    file is an error, or yields nothing with ``skip_results`` (a run folder's), ``skipped``
    then called with why. ``notes``: see :func:`~calibcli.io.documents.iter_document`.
    ``span``: the lines of a plain file that start in bytes [start, stop), numbered in it."""
    from calibcli.io.parts import is_summary_file
    from calibcli.io.reader import newlines_before, whole_document_kind

    if is_summary_file(source):
        raise InputError(
            source,
            None,
            "a calibcli summary file holds sums, not rows: this command reads every row (give "
            "the files it summarized)",
        )
    kind = whole_document_kind(source, max_line_bytes)
    if kind is not None:
        yield from _document_records(source, kind, max_document_bytes, skip_results, notes, skipped)
        return
    from calibcli.io.rows import parse_row

    src = Source(source)
    src.probe()
    try:
        stream = src.stream()
        try:
            first, limit = 1, None
            if span is not None:  # a range read with summarize --part (or an engine's task)
                first, limit = 1 + newlines_before(stream, span[0]), span[1] - span[0]
                stream.seek(span[0])
            cut = {"strip_bom": first == 1, "first_line": first, "max_line_bytes": max_line_bytes}
            lines = blocks(stream, src.name, BLOCK_SIZE, limit, what=src.what, **cut)
            for first, view, _, _ in lines:
                for line_no, line in lines_of(view, first):
                    yield src.name, line_no, parse_row(src.name, line_no, line), line
        finally:
            stream.close()
    finally:
        src.close()


def _document_records(
    source: str,
    kind: str,
    max_document_bytes: int | None,
    skip_results: bool = False,
    notes: Callable[[str], None] | None = None,
    skipped: Callable[[str], None] | None = None,
) -> Iterator[tuple[str, int | str, dict, None]]:
    from calibcli.io.reader import SkipFile, document_rows
    from calibcli.io.sources import display_name

    name = display_name(source)
    try:
        for locator, row in document_rows(source, kind, max_document_bytes, notes=notes):
            yield name, locator, row, None
    except SkipFile as skip:  # a results file holds no rows to compare, apply or fit
        if not skip_results:
            raise InputError(name, None, skip.reason.removesuffix("; skipped")) from None
        if skipped is not None:
            skipped(skip.reason)


def read_keyed(
    sources: list[str],
    *,
    id_field: str | None,
    confidence_field: str = "confidence",
    correct_field: str = "correct",
    fmt: str = "auto",
    mc_norm: str = "none",
    by: str | None = None,
    keyed: bool | None = True,
    scorer: str | None = None,
    inspect_confidence: str = "auto",
    max_line_bytes: int = MAX_LINE_BYTES,
    max_document_bytes: int | None = None,
    gold_field: str | None = None,
    choices: list[str] | tuple[str, ...] | None = None,
    documents: bool = False,
    questions: bool = False,
    all_runs: bool = False,
) -> KeyedRows:
    """Read (id, confidence, correct) rows; an id appearing twice is an error naming both lines
    (with ``keyed=None``, as the other commands refuse a row read twice: see below).

    The format of each file is detected (or forced) as the streaming readers do it, and every
    row is checked and converted by the same code. ``id_field`` is a dotted path; None means
    the format's default: ``id`` for native rows, the task (from the file name) and ``doc_id``
    for lm-eval rows, ``id`` and ``epoch`` for inspect-ai samples. With ``keyed=False`` no id
    is read: each row's key is its position. With ``keyed=None`` a row has an id where the
    reading gives it one: by ``id_field`` when given, else by its format's own id (lm-eval,
    inspect-ai, ...); native rows without ``id_field`` are keyed by their position. Such ids
    are checked as ``calibrate`` checks them: two models' lm-eval files of one task (their
    model named by the path) hold the same doc_ids without a row read twice, and with
    ``all_runs`` rows read twice are pooled on purpose, ids unchecked; every row keeps its id
    as compare keys it, so compare of such rows refuses the repeated ids. A folder's files
    that are skipped (results files, tasks without probabilities) are said in ``warnings``
    as the other commands say them, and so is a file of no rows read beside others; without
    ``all_runs``, a task's older re-runs among the files, named or a folder's, are left out and
    said as ``calibrate`` leaves them out and says them. With
    ``documents``, what each lm-eval or inspect-ai row asks is kept too (``docs``), for
    compare's check that matched rows ask the same question. With ``questions``, rows that
    share a question (an inspect-ai sample's epochs) are labelled with its hash
    (``questions``), so that a bootstrap draws them together; what the runs say closes gates
    (``mixed``, ``repeats``) as the commands close them. With ``all_runs`` too, rows whose ids
    repeat across the inputs more often than their runs' epochs explain are labelled alike and
    said as the commands say them (``pooled`` of
    :class:`~calibcli.summaries.KeyedRows`). A native row read without an id
    that carries its file's first row's ``id`` is an error unless ``all_runs``
    (:mod:`calibcli.io.first_id`).
    With ``keyed=None`` an inspect-ai, HELM or OpenAI evals row's id is checked, and counted as
    a question, with what it carries of its run (:func:`~calibcli.io.ids.sample_scope`), as
    calibrate checks and counts it; its key stays compare's.
    """
    from calibcli import formats
    from calibcli.io import NO_ROWS
    from calibcli.io.folders import expand, hidden_files, unread_subfolders
    from calibcli.io.ids import question_hashes
    from calibcli.io.matching import document
    from calibcli.io.plan import answer_options, group_key
    from calibcli.io.pooled_ids import may_repeat, pooled_files, said_instead
    from calibcli.io.route import calibration_router, taken_modes
    from calibcli.io.rows import CalibrationRow, group_name
    from calibcli.io.run_models import refuse_unnamed_reruns, samples_named
    from calibcli.io.runs import REPEATED, choose_runs, repeat_reason, rerun_task, run_checks
    from calibcli.io.task_config import assumed_delimiters
    from calibcli.summaries import joined_mode

    native = CalibrationRow(confidence_field, correct_field)
    router = calibration_router(
        native,
        mc_norm=mc_norm,
        scorer=scorer,
        inspect_confidence=inspect_confidence,
        gold_field=gold_field,
        options=answer_options(choices),
    )
    keys: list[Any] = []
    conf: list[float] = []
    corr: list[bool] = []
    groups: list[str] | None = [] if by is not None else None
    where: list[str] = []
    docs: dict[int, tuple[str, str]] = {}
    seen: dict[Any, tuple[str, int]] = {}  # each id's first row: its file and line
    # the ids calibrate gives rows whose ids here are compare's: an inspect-ai sample's with
    # its log's task (logs of two tasks hold the same sample ids), by the row's index
    asked_as: dict[int, Any] = {}
    found = None
    modes: list[str | None] = []  # each inspect-ai file's (see calibcli.io.route.InspectRows)
    # the files are read as the streaming readers read them: older re-runs of a task are left
    # out among all the files, named or a folder's, as calibrate leaves them out; a folder's
    # results files and files of other task kinds are left out too (the files named are not).
    # The runs' checks on every file kept: one given twice, byte copies
    expanded = expand(sources)  # each folder listed once
    from_folder = {f for f in expanded if f not in sources}
    runs = choose_runs(list(expanded), all_runs=all_runs)
    newest = set(runs.files)
    made: list[Any] = []  # each file's rows' multiset hash, for the same rows in other bytes
    # what the commands' readers say of the files: older re-runs left out, a run that did not
    # succeed
    warnings = [*hidden_files(list(sources)), *runs.warnings]
    unread = unread_subfolders(list(sources), expanded)  # said last, as the commands say it
    read: list[tuple[str, int]] = []  # the files read (not skipped), and their rows
    left_out: list[tuple[str, str]] = []  # the files skipped, and why
    read_as: list[tuple[str, str]] = []  # the files read, with their formats
    for source in expanded:
        if source not in newest:
            continue
        source_fmt = None
        convert = None
        watch = None  # the file's first row's id (a FirstId, False when it has none)
        task = formats.task_from_filename(source) if source != "-" else None
        log_task = None  # what calibrate's ids carry of the run (calibcli.io.ids.sample_scope)
        # whose rows these are, where a row read twice is known as calibrate knows it
        model = None if keyed or task is None else rerun_task(source)[1]
        key_of = None
        bounds = {"max_line_bytes": max_line_bytes, "max_document_bytes": max_document_bytes}
        before = len(keys)
        notes = functools.partial(note_once, warnings, display_name(source))
        skipped: list[str] = []  # why a folder's file was left out, said as a warning
        folder = source in from_folder
        rows = records(source, **bounds, skip_results=folder, notes=notes, skipped=skipped.append)
        for name, line_no, row, _ in rows:
            at = f"{shown_name(name)}:{line_no}"
            field = id_field or "id"
            try:
                if source_fmt is None:
                    source_fmt, skip = _route(router, row, fmt, folder)
                    if skip is not None and folder:
                        skipped.append(skip)
                        break
                    if skip is not None:
                        raise ValueError(f"{skip}: nothing to compare")
                    convert = (
                        native.check
                        if source_fmt == "jsonl"
                        else router.converter(source_fmt, source)
                    )
                    log_task = sample_scope(source_fmt, source)
                values = convert(row)
                if source_fmt == "jsonl":
                    values = [values]
                if len(values) != 1:
                    raise ValueError(f"a {source_fmt} row holding {len(values)} predictions")
                c, y = values[0]
                key = None
                if keyed or (keyed is None and (id_field or source_fmt != "jsonl")):
                    key = _row_key(formats, row, source_fmt, id_field, task)
                    if keyed is None and log_task is not None and key[0] in SCOPED_KEYS:
                        asked_as[len(keys)] = (*key, log_task)
                    field = id_field or _default_id_field(source_fmt)
            except ValueError as exc:
                text = str(exc)
                if text.startswith("is "):
                    text = f'id field "{field}" {text}'
                raise InputError(name, line_no, text) from None
            if key is None:
                if source_fmt not in OWN_IDS and not all_runs and id_field is None:
                    watch = watched(watch, name, line_no, row, by)
                key = ("row", len(keys))
            elif not (all_runs and keyed is None):
                known = (model, key) if model is not None and source_fmt == "lm-eval" else key
                known = asked_as.get(len(keys), known)
                request = keyed is None and id_field is None and is_batch_line(row)
                known = request_key(row) if request else known  # two models answer one request
                if known in seen:
                    before, before_line = seen[known]
                    said = repeat_reason(name, line_no, before, before_line)
                    first = f"{shown_name(before)}:{before_line}"
                    text = f"duplicate id {show_id(key)} (first at {first})"
                    said = f"{read_before(known)}{first}: {TWICE}" if request else said
                    raise InputError(name, line_no, text if said is None else said)
                seen[known] = (name, line_no)
            if documents:
                doc = document(source_fmt, row)
                if doc is not None:
                    docs[len(keys)] = doc
            keys.append(key)
            conf.append(float(c))
            corr.append(bool(y))
            where.append(at)
            if groups is not None:
                try:
                    if key_of is None:
                        key_of = group_key(source_fmt, by, source)
                    groups.append(group_name(key_of(row)))
                except ValueError as exc:
                    raise InputError(name, line_no, str(exc)) from None
        if source_fmt is not None:  # files of several formats read as "mixed", as a summary's
            found = source_fmt if found in (None, source_fmt) else "mixed"
        modes.append(joined_mode(taken_modes(convert)))
        if skipped:
            note_once(warnings, display_name(source), skipped[0])
            left_out.append((display_name(source), skipped[0]))
            continue
        read.append((source, len(keys) - before))
        if len(keys) > before:
            read_as.append((source, source_fmt))
            made.append(_rows_made(source, conf[before:], corr[before:]))
    if left_out and not keys:  # as the other commands refuse it
        from types import SimpleNamespace

        from calibcli.io import _nothing_left

        names, reasons = (list(column) for column in zip(*left_out, strict=True))
        raise _nothing_left(SimpleNamespace(skipped=names, reasons=reasons), "calibration rows")
    # a run known as lm-eval by its rows alone (a samples file renamed) names no model either;
    # the runs named as lm-eval names them were compared when they were chosen
    lm_eval = [s for s, f in read_as if f == "lm-eval" and s != "-"]
    if not all(map(samples_named, lm_eval)):
        refuse_unnamed_reruns(lm_eval, pooled=all_runs)
    if id_field is None:  # runs naming no model beside runs naming theirs, as calibrate sees them
        from calibcli.io.unnamed_runs import refuse_unnamed_files

        refuse_unnamed_files(read_as)
    if all_runs:  # rows without ids: a copy cannot be told from a re-run, whatever the format
        from calibcli.io.pooled_ids import refuse_file_copies

        formats_read = dict(read_as)
        refuse_file_copies([(s, formats_read.get(s), n) for s, n in read], id_field is not None)
    if not all_runs:  # ids or none: a copy's ids need not be its original's
        from calibcli.io.same_rows import same_rows_twice

        same_rows_twice(made)
    ids = [asked_as.get(i, key) for i, key in enumerate(keys)] if asked_as else keys
    asked = question_hashes(ids, None) if questions else None
    if questions and all_runs:
        asked = _rerun_questions(ids, read, read_as, asked)
    checks = run_checks(read, read_as, by, whole=questions, all_runs=all_runs)
    formats_of = dict(read_as)
    pooled = None
    if questions and may_repeat(all_runs, id_field, fmt):
        # re-runs whose ids repeat, as the commands find them: drawn a question at a time
        labels = _question_labels(ids, read, formats_of)
        files = [(s, formats_of.get(s), n) for s, n in read]
        repeated = pooled_files(files, labels, id_field is not None, by, whole=True)
        if repeated is not None:
            asked, pooled = labels, tuple((s.epochs, s.pooled) for s in repeated[0])
            checks = replace(checks, warnings=said_instead(checks.warnings, repeated[1]))
    # as the other commands say them: what the runs' results files say of the files, a file of
    # no rows beside others, then whose rows these are
    last = [w for w in checks.warnings if w == checks.mixed or w.startswith(REPEATED)]
    said = [w for w in checks.warnings if w not in last]
    if len(read) > 1:
        said += [f"{shown_name(display_name(s))}: {NO_ROWS}" for s, n in read if n == 0]
    said += assumed_delimiters(read_as, mc_norm)  # choices' lengths less an assumed delimiter
    warnings += [w for w in dict.fromkeys([*said, *last, *unread]) if w not in warnings]
    return KeyedRows(
        keys,
        np.asarray(conf, dtype=np.float64),
        np.asarray(corr, dtype=bool),
        groups,
        found or "jsonl",
        where,
        joined_mode(modes),
        tuple(warnings),
        docs if documents else None,
        checks.mixed,
        checks.repeats,
        asked,
        tuple(read_as),
        tuple((s, n, formats_of.get(s)) for s, n in read),
        pooled,
    )


def _question_labels(keys: list[Any], read: list[tuple[str, int]], formats_of: dict) -> Any:
    """Each row's question hash, as the commands key rows pooled with ``all_runs``: an lm-eval
    row's id with the model its path names (two models' files of one task hold the same
    doc_ids), any other row's question (:func:`~calibcli.io.ids.question_of`: an inspect-ai
    sample's whatever its epoch); a row without an id is its own."""
    from calibcli.io.ids import id_hashes, question_of
    from calibcli.io.runs import rerun_task

    labels: list[Any] = []
    for source, n in read:  # the rows, file after file
        rows = keys[len(labels) : len(labels) + n]
        lm_eval = formats_of.get(source) == "lm-eval" and source != "-"
        model = rerun_task(source)[1] if lm_eval else None
        for key in rows:
            if model is not None and key[0] == "task":
                key = ("task", f"{key[1]} ({model})", *key[2:])
            labels.append(question_of(key))
    return id_hashes(labels)


def _rerun_questions(
    keys: list[Any], read: list[tuple[str, int]], read_as: list[tuple[str, str]], asked: Any
) -> Any:
    """Each row's question hash where re-runs of an lm-eval task are pooled (``all_runs``,
    :func:`~calibcli.io.runs.rerun_counts` of the files ``read_as``): an lm-eval row's is its id
    (task and doc_id, which the runs share) with the model its path names, hashed as the
    commands key it (:func:`~calibcli.io.ids.identifier`), any other row's its own question
    (:func:`~calibcli.io.ids.question_of`). ``asked`` as it is without re-runs."""
    from calibcli.io.ids import id_hashes, question_of
    from calibcli.io.runs import rerun_counts, rerun_task

    runs = rerun_counts(read_as)
    if not runs:
        return asked
    labels: list[Any] = []
    for source, n in read:  # the rows, file after file
        rows = keys[len(labels) : len(labels) + n]
        if source in runs:
            model = rerun_task(source)[1]
            for key in rows:  # a row keyed by --id-field is keyed by that alone
                task = model is not None and key[0] == "task"
                labels.append(("task", f"{key[1]} ({model})", *key[2:]) if task else key)
        else:
            labels += [question_of(key) for key in rows]
    return id_hashes(labels)


def _route(router: Any, row: dict, fmt: str, folder: bool) -> tuple[str, str | None]:
    """The row's format and why its file is skipped (None when read): an lm-eval results file
    written on one line among a folder's files is skipped, as the other commands skip it."""
    from calibcli.formats import is_results_row
    from calibcli.io.fold import RESULTS_SKIPPED

    try:
        return router.route(row, None if fmt == "auto" else fmt)
    except ValueError:
        if folder and fmt == "auto" and is_results_row(row):
            return "lm-eval", RESULTS_SKIPPED
        raise


@dataclass(frozen=True)
class Choices:
    """lm-eval multiple-choice rows with their choices' scores, for temperature scaling over the
    choices: row r's scores are ``values[offsets[r]:offsets[r + 1]]``; ``gold[r]`` is its gold
    index (-1 where it is not logged, or not known: ``unknown`` then says why, by the row's
    ``where``), ``correct[r]`` the harness's own verdict."""

    values: np.ndarray
    offsets: np.ndarray
    gold: np.ndarray
    correct: np.ndarray
    groups: list[str] | None
    where: list[str]
    unknown: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.correct.shape[0])

    def take(self, rows: np.ndarray) -> Choices:
        """The rows at the given indices (in that order)."""
        lengths = np.diff(self.offsets)[rows]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        values = (
            np.concatenate([self.values[self.offsets[r] : self.offsets[r + 1]] for r in rows])
            if len(rows)
            else np.zeros(0)
        )
        return Choices(
            values,
            offsets,
            self.gold[rows],
            self.correct[rows],
            None,
            [self.where[r] for r in rows],
            self.unknown,
        )


# why temperature over lm-eval choices refuses rows read from standard input
SECOND_PASS = (
    "temperature over lm-eval rows reads each row's choices in a second pass, which standard "
    "input cannot give; read the file by name"
)


def read_choices(
    sources: list[str],
    *,
    mc_norm: str = "none",
    by: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_document_bytes: int | None = None,
    summarized: list[Any] | None = None,
) -> Choices:
    """Read lm-eval multiple-choice rows with every choice's score (length-normalised with
    ``mc_norm``, less each file's task's ``target_delimiter``), and their gold choices
    (:class:`~calibcli.formats.FileGold`: a target read two ways takes the reading its file's
    rows tell). Other formats are an error: their rows carry one confidence, not choices, and
    so is standard input, which the first reading of the rows has consumed. ``summarized``:
    the summary's :class:`~calibcli.summaries.Source` of each source, whose byte range alone is
    read; a file whose content or row count is not the one it records is an error."""
    from calibcli import formats
    from calibcli.io.content import file_content_id
    from calibcli.io.folders import expand
    from calibcli.io.plan import group_key
    from calibcli.io.rows import group_name
    from calibcli.io.sources import STDIN_NAME
    from calibcli.io.task_config import target_delimiter

    if "-" in sources:
        raise InputError(STDIN_NAME, None, SECOND_PASS)
    values: list[float] = []
    offsets = [0]
    gold: list[int] = []
    correct: list[bool] = []
    groups: list[str] | None = [] if by is not None else None
    where: list[str] = []
    unknown: dict[str, str] = {}
    again = "changed since it was summarized{}: summarize it again"
    for i, source in enumerate(expand(sources) if summarized is None else sources):
        kept, before = None if summarized is None else summarized[i], len(gold)
        span = None if kept is None or kept.stop is None else (kept.start, kept.stop)
        if kept is not None and kept.content and file_content_id(source) not in ("", kept.content):
            raise InputError(source, None, again.format(""))
        key_of = None if by is None else group_key("lm-eval", by, source)
        checked = False
        delimiter = target_delimiter(source)
        file_gold = formats.FileGold()
        bounds = {"max_line_bytes": max_line_bytes, "max_document_bytes": max_document_bytes}
        for name, line_no, row, _ in records(source, **bounds, span=span):
            try:
                if not checked:
                    fmt = formats.detect_row_format(row)
                    if fmt != "lm-eval":
                        raise ValueError(
                            f"rows are {fmt}, not lm-eval multiple choice: temperature over the "
                            "choices needs each choice's loglikelihood"
                        )
                    checked = True
                scores, right = formats.lm_eval_choice_scores(
                    row, mc_norm=mc_norm, target_delimiter=delimiter
                )
                try:
                    g = file_gold.add(row, scores, right, len(gold))
                except formats.GoldReadingError as exc:
                    g = -1
                    unknown[f"{shown_name(name)}:{line_no}"] = str(exc)
                except ValueError:
                    g = -1
                if key_of is not None:
                    groups.append(group_name(key_of(row)))
            except ValueError as exc:
                raise InputError(name, line_no, str(exc)) from None
            values.extend(scores)
            offsets.append(len(values))
            gold.append(g)
            correct.append(right)
            where.append(f"{shown_name(name)}:{line_no}")
        if kept is not None and len(gold) - before != kept.rows:
            held = f" ({len(gold) - before:,} rows where it held {kept.rows:,})"
            raise InputError(source, None, again.format(held))
        settled, why = file_gold.settle()
        for at, g in settled.items():
            gold[at] = g
        if why is not None:
            unknown.update((where[at], why) for at, _ in file_gold.waiting)
    return Choices(
        np.asarray(values, dtype=np.float64),
        np.asarray(offsets, dtype=np.intp),
        np.asarray(gold, dtype=np.intp),
        np.asarray(correct, dtype=bool),
        groups,
        where,
        unknown,
    )


def _rows_made(source: str, conf: list[float], correct: list[bool]) -> Any:
    """What the copy checks read of a file's rows (as a reading's Source records them): their
    count, multiset hash and sketch."""
    from types import SimpleNamespace

    from calibcli.summaries import SourcePrint

    made = SourcePrint()
    made.add_rows(np.asarray(conf, np.float64), np.asarray(correct, bool))
    name = display_name(source)
    return SimpleNamespace(
        name=name,
        display=name,
        content=name,
        rows=made.rows,
        rows_hash=made.key(),
        rows_sketch=made.sketch(),
        skipped=None,
    )
