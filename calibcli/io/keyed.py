"""Keyed rows in columns, for ``compare``: each row's confidence, correctness and id hash
(:mod:`calibcli.io.keys`), read block by block.

Native JSON Lines blocks after a file's first are decoded in one msgspec call into a struct
holding the id's raw JSON text, which is hashed as a column
(:class:`~calibcli.io.keyed_blocks.KeyedBlocks`); any block that does not decode, check or hash
that way (an id with escapes, a fraction or an exponent, a bad row, a blank or indented line)
is read line by line with the same rules, checks and messages as
:func:`~calibcli.io.records.read_keyed`, as are the formats with ids of their own and whole
documents. No line number is kept per row: a duplicate id is found on the hashes once a side is
read, and its lines are found again by reading the file up to it. Rows read unpaired are not
matched, but their ``id_field`` ids are checked as calibrate checks them
(:func:`~calibcli.io.unpaired.side_questions`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from calibcli.errors import InputError
from calibcli.io.compared import read_compared as read_compared  # compare's two sides
from calibcli.io.first_id import watched
from calibcli.io.folders import expand, hidden_files, unread_subfolders
from calibcli.io.ids import OWN_IDS, default_id_field, question_of, row_key
from calibcli.io.keyed_blocks import KeyedBlocks
from calibcli.io.keys import IdHashes, IdIndex, canonical_id, hash_ids
from calibcli.io.matching import (
    aligned,
    document,
    note_other_documents,
    raise_regrouped,
    raise_repeat,
)
from calibcli.io.pooled_ids import may_repeat, refuse_file_copies
from calibcli.io.route import taken_counts, taken_modes
from calibcli.io.runs import choose_runs, either, repeating, run_checks
from calibcli.io.sources import MAX_LINE_BYTES, Source, blocks, lines_of, note_once
from calibcli.io.sources import display_name as shown_source
from calibcli.io.task_config import assumed_delimiters
from calibcli.io.unpaired import asked_bytes, raise_read_before, side_questions

BLOCK_SIZE = 1 << 20


@dataclass(frozen=True, eq=False)
class KeyColumns:
    """One side's rows: id hashes (None when read without ids), confidences, correctness,
    --by group names, the format found and, per file read, its rows [start, stop)."""

    ids: IdHashes | None
    confidence: np.ndarray
    correct: np.ndarray
    groups: list[str] | None
    fmt: str
    spans: list[tuple[str, bool, int, int]]  # (source, read as a folder's file, start, stop)
    warnings: tuple[str, ...] = ()  # about the files read ("name: what"), one line each
    docs: dict[int, tuple[str, str]] | None = None  # row -> what it asks (see matching.document)
    checks: Any = None  # what the runs say of the rows (io.runs.RunChecks)
    questions: np.ndarray | None = None  # each row's question's hash, when a run repeats them
    # each file that gave rows: (path, its format, its inspect-ai samples taken by answer-token
    # and by sequence, :func:`~calibcli.io.route.taken_counts`; None for other formats)
    formats: tuple[tuple[str, str | None, Any], ...] = ()

    @property
    def n(self) -> int:
        return int(self.confidence.shape[0])


class _Side:
    """Rows of one side as they are read: finished blocks as arrays, the current one as lists."""

    def __init__(self, keyed: bool, grouped: bool) -> None:
        self.keyed = keyed
        # finished blocks, one list per column (confidence, correct, id hash high and low
        # halves), so that each column is joined and its blocks freed before the next
        self.parts: tuple[list, list, list, list] = ([], [], [], [])
        self.conf: list[float] = []
        self.corr: list[bool] = []
        self.canon: list[bytes] = []
        self.groups: list[str] | None = [] if grouped else None
        self.count = 0
        self.docs: dict[int, tuple[str, str]] = {}  # row -> what it asks (see matching.document)
        # rows of inputs that cannot be read again (stdin, a pipe): row -> (name, line, key)
        self.kept: dict[int, tuple[str, Any, Any]] = {}
        # each block's question hashes (the epochs of a sample share one), when asked for
        self.questions: list[np.ndarray] | None = None
        self.asked: list[bytes] = []

    def flush(self) -> None:
        if not self.conf:
            return
        hashes = hash_ids(self.canon) if self.keyed else None
        if self.questions is not None:
            self.questions.append(hash_ids(self.asked)[0])
        conf = np.asarray(self.conf, np.float64)
        self._append(conf, np.asarray(self.corr, bool), hashes)
        self.conf, self.corr, self.canon, self.asked = [], [], [], []

    def add_block(self, conf: np.ndarray, corr: np.ndarray, hashes: tuple) -> None:
        self.flush()
        if self.questions is not None:  # a plain row's question is its id
            self.questions.append(hashes[0])
        self._append(conf, corr, hashes)
        self.count += conf.shape[0]

    def _append(self, conf: np.ndarray, corr: np.ndarray, hashes: tuple | None) -> None:
        self.parts[0].append(conf)
        self.parts[1].append(corr)
        if hashes is not None:
            self.parts[2].append(hashes[0])
            self.parts[3].append(hashes[1])

    def first_repeat(self) -> tuple[int, int] | None:
        """(first row, repeating row) of the earliest row whose id an earlier row holds."""
        return self.columns()[0].first_repeat()

    def columns(self) -> tuple:
        """(ids, confidence, correct), each column's blocks freed once it is joined."""
        self.flush()
        parts, self.parts = self.parts, ([], [], [], [])
        joined = []
        for blocks_of, dtype in zip(parts, (np.float64, bool, np.uint64, np.uint64), strict=True):
            joined.append(_join(blocks_of, dtype))
            blocks_of.clear()
        conf, corr, hi, lo = joined
        del joined
        return (IdHashes(hi, lo) if self.keyed else None), conf, corr


def _join(parts: list, dtype: Any) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _files_read(reader: _Reader, spans: list) -> tuple[tuple[str, str | None, Any], ...]:
    """Each file of ``spans`` that gave rows, with its format and the samples it took by each
    mode (:attr:`KeyColumns.formats`): a file skipped (a results file, a task of another kind)
    is named by its warning instead."""
    read = zip(reader.formats, reader.taken, spans, strict=True)
    return tuple((*found, taken) for found, taken, (_, _, start, stop) in read if stop > start)


def read_key_columns(
    sources: list[str],
    *,
    id_field: str | None,
    confidence_field: str = "confidence",
    correct_field: str = "correct",
    fmt: str = "auto",
    mc_norm: str = "none",
    by: str | None = None,
    keyed: bool = True,
    scorer: str | None = None,
    inspect_confidence: str = "auto",
    max_line_bytes: int = MAX_LINE_BYTES,
    max_document_bytes: int | None = None,
    gold_field: str | None = None,
    choices: list[str] | tuple[str, ...] | None = None,
    all_runs: bool = False,
) -> KeyColumns:
    """:func:`~calibcli.io.records.read_keyed`'s rows (the same files, formats, checks and
    errors, the first in reading order raised, a repeated id included; ``all_runs`` as
    there) as columns."""
    options = dict(
        id_field=id_field,
        confidence_field=confidence_field,
        correct_field=correct_field,
        fmt=fmt,
        mc_norm=mc_norm,
        by=by,
        scorer=scorer,
        inspect_confidence=inspect_confidence,
        max_line_bytes=max_line_bytes,
        max_document_bytes=max_document_bytes,
        gold_field=gold_field,
        choices=choices,
        all_runs=all_runs,
    )
    side = _Side(keyed, by is not None)
    # keyed, the paired bootstrap draws each question's rows together; unpaired, --min-rows
    # counts them (re-runs pooled with all_runs repeat their documents, or their ids), and a
    # repeated --id-field id is refused without all_runs
    declared = repeating(expand(sources), all_runs and not keyed)
    identified = not keyed and id_field is not None
    if declared or identified or may_repeat(all_runs and not keyed, id_field, fmt):
        side.questions = []
    reader, spans, found = _read_side(sources, side, keyed, options)
    ids, conf, corr = side.columns()
    if keyed:
        raise_repeat(reader, ids.first_repeat(), spans, side)
    fmt = found or "jsonl"
    asked = None if side.questions is None else _join(side.questions, np.uint64)
    if asked is not None and not keyed:  # kept where the questions repeat
        ways = {"all_runs": all_runs, "id_field": id_field, "by": by}
        asked = side_questions(reader, spans, side, asked, declared, **ways)
    warnings = tuple(reader.warnings)
    return KeyColumns(
        ids,
        conf,
        corr,
        side.groups,
        fmt,
        spans,
        warnings,
        side.docs,
        reader.checks,
        asked,
        _files_read(reader, spans),
    )


def read_matched(
    base: KeyColumns, index: IdIndex, sources: list[str], **options: Any
) -> tuple[Any, str, tuple]:
    """NEW's rows (``sources``, read as :func:`read_key_columns` reads them, with the same
    errors) matched by id to BASE's rows as they are read: the rows both sides hold, aligned in
    BASE's order (:class:`~calibcli.summaries.PairedRows`), NEW's format and each of its files
    read with its format (:attr:`KeyColumns.formats`). ``index`` is
    BASE's ids (:class:`~calibcli.io.keys.IdIndex`); ``base.ids`` may be None. NEW's ids are
    never held as a column, only those of the rows BASE lacks."""
    side = _Matching(index, options.get("by") is not None)
    reader, spans, found = _read_side(sources, side, True, options)
    side.flush()
    raise_repeat(reader, side.first_repeat(), spans, side)
    if base.groups is not None and side.groups is not None:
        raise_regrouped(reader, spans, side, base, options["by"])
    if base.docs and side.docs:
        note_other_documents(reader, spans, side, base)
    row_of, conf, corr, new_n = side.row_of, side.conf_at, side.corr_at, side.count
    groups = None if side.groups is None else set(side.groups)  # NEW's, to name its own
    del side
    warnings = tuple(dict.fromkeys((*base.warnings, *reader.warnings)))
    paired = aligned(base, row_of, conf, corr, new_n, groups, ranks=index.ranks())
    paired = replace(paired, warnings=warnings, **either(base.checks, reader.checks))
    return paired, found or "jsonl", _files_read(reader, spans)


def _read_side(
    sources: list[str], side: _Side, keyed: bool, options: dict[str, Any]
) -> tuple[_Reader, list, str | None]:
    """Read every file of ``sources`` into ``side``: the reader, each file's rows and the
    format found. On an error, a repeated id on an earlier row is raised first."""
    from calibcli.io.plan import answer_options
    from calibcli.io.route import calibration_router
    from calibcli.io.rows import CalibrationRow

    native = CalibrationRow(
        options.get("confidence_field", "confidence"), options.get("correct_field", "correct")
    )
    router = calibration_router(
        native,
        mc_norm=options.get("mc_norm", "none"),
        scorer=options.get("scorer"),
        inspect_confidence=options.get("inspect_confidence", "auto"),
        gold_field=options.get("gold_field"),
        options=answer_options(options.get("choices")),
    )
    reader = _Reader(
        native,
        router,
        options.get("id_field"),
        options.get("fmt", "auto"),
        options.get("by"),
        keyed,
        options.get("max_line_bytes", MAX_LINE_BYTES),
        options.get("max_document_bytes"),
    )
    reader.watch = not keyed and not options.get("all_runs", False)
    files = expand(sources)
    from_folder = {f for f in files if f not in sources}
    # this side's older re-runs, a folder's hidden files and manifests: left out and named
    runs = choose_runs(files, all_runs=options.get("all_runs", False))
    newest = set(runs.files)
    said = [*hidden_files(list(sources)), *runs.warnings]
    reader.warnings.extend(w for w in said if w not in reader.warnings)
    spans: list[tuple[str, bool, int, int]] = []
    found = None
    try:
        for source in files:
            if source not in newest:
                continue
            start = side.count
            folder = source in from_folder
            try:
                fmt = reader.source(source, folder, side)
                found = fmt or found
                reader.formats.append((source, fmt))
                reader.taken.append(taken_counts(taken_modes(reader.state.convert)))
            finally:
                side.flush()
                spans.append((source, folder, start, side.count))
    except InputError:
        if keyed:  # a repeated id on an earlier row is the first error
            raise_repeat(reader, side.first_repeat(), spans, side)
        elif reader.watch and reader.id_field is not None:  # unpaired, every id checked
            raise_read_before(reader, spans, side, _join(side.questions, np.uint64))
        raise
    # what the runs' results files say of the files read (a part of a task, a file cut short),
    # as the other commands say it
    read = [(source, stop - start) for source, _, start, stop in spans if stop > start]
    # rows matched to BASE's are drawn a BASE question at a time (NEW's epochs match BASE's)
    whole = (keyed and side.questions is not None) or isinstance(side, _Matching)
    pooled = options.get("all_runs", False) and not keyed  # re-runs repeat, drawn by row
    if pooled:  # rows without ids: a copy cannot be told from a re-run, whatever the format
        formats = dict(reader.formats)
        sized = [(source, formats.get(source), stop - start) for source, _, start, stop in spans]
        refuse_file_copies(sized, options.get("id_field") is not None)
    reader.checks = run_checks(read, reader.formats, options.get("by"), whole, pooled)
    assumed = assumed_delimiters(reader.formats, options.get("mc_norm", "none"))
    # a folder's subfolders holding files not read: said last, as the other commands say it
    said = [*reader.checks.warnings, *assumed, *unread_subfolders(list(sources), files)]
    reader.warnings.extend(w for w in said if w not in reader.warnings)
    return reader, spans, found


class _Matching(_Side):
    """NEW's rows as they are read, each block's ids looked up among BASE's and its rows written
    at their BASE rows (``row_of``: the NEW row holding each BASE row's id, -1 for none); the ids
    of rows BASE lacks are kept, to find a repeated one among them."""

    def __init__(self, index: IdIndex, grouped: bool) -> None:
        super().__init__(True, grouped)
        self.index = index
        n = index.n
        self.row_of = np.full(n, -1, index.order.dtype)
        self.conf_at = np.zeros(n)
        self.corr_at = np.zeros(n, bool)
        self.placed = 0  # rows looked up so far
        self.stray: tuple[list, list, list] = ([], [], [])  # rows BASE lacks: row, hi, lo
        self.repeat: tuple[int, int] | None = None  # the earliest among matched rows

    def _append(self, conf: np.ndarray, corr: np.ndarray, hashes: tuple | None) -> None:
        hi, lo = hashes
        rows = np.arange(self.placed, self.placed + conf.shape[0], dtype=self.row_of.dtype)
        self.placed += conf.shape[0]
        at = self.index.rows_of(hi, lo)
        hit = at >= 0
        if not hit.all():
            miss = ~hit
            for part, values in zip(self.stray, (rows, hi, lo), strict=True):
                part.append(values[miss])
        mine, theirs = at[hit], rows[hit]
        before = self.row_of[mine]
        self.row_of[mine] = theirs
        # a repeated id: held by an earlier block's row, or twice in this block (a later write
        # over an earlier one)
        if before.max(initial=-1) >= 0 or np.any(self.row_of[mine] != theirs):
            self.row_of[mine] = before
            if self.repeat is None:
                for j, r in zip(mine.tolist(), theirs.tolist(), strict=True):
                    if self.row_of[j] >= 0:
                        self.repeat = (int(self.row_of[j]), r)
                        break
                    self.row_of[j] = r
            return
        self.conf_at[mine] = conf[hit]
        self.corr_at[mine] = corr[hit]

    def first_repeat(self) -> tuple[int, int] | None:
        self.flush()
        kinds = (self.row_of.dtype, np.uint64, np.uint64)
        rows, hi, lo = (_join(part, kind) for part, kind in zip(self.stray, kinds, strict=True))
        stray = IdHashes(hi, lo).first_repeat()
        if stray is not None:
            stray = (int(rows[stray[0]]), int(rows[stray[1]]))
        found = [r for r in (self.repeat, stray) if r is not None]
        return min(found, key=lambda r: r[1]) if found else None


class _Reader:
    """Reads each file's rows into a :class:`_Side` (see :func:`read_key_columns`)."""

    def __init__(self, native, router, id_field, fmt, by, keyed, max_line, max_document) -> None:
        self.native, self.router, self.id_field, self.fmt = native, router, id_field, fmt
        self.by, self.keyed = by, keyed
        self.bounds = {"max_line_bytes": max_line, "max_document_bytes": max_document}
        self.blocks = KeyedBlocks(native, id_field)
        self.warnings: list[str] = []  # what a file read says of itself (a failed inspect run)
        self.formats: list[tuple[str, str | None]] = []  # each file read, with its format
        self.taken: list[Any] = []  # and its samples taken by each mode (taken_counts)
        self.checks: Any = None  # what the runs say of the rows read (io.runs.RunChecks)
        self.watch = False  # native rows read without ids: each file's first id watched for

    def note(self, name: str, text: str) -> None:
        """Record the warning ``name: text`` about a file (:func:`note_once`)."""
        note_once(self.warnings, name, text)

    def source(self, source: str, folder: bool, side: _Side) -> str | None:
        """Read one file; its format (None when a folder's file is skipped)."""
        from calibcli.io.parts import is_summary_file
        from calibcli.io.reader import whole_document_kind

        self.state = state = _State(self, source)  # the last file's, its converter counting
        if is_summary_file(source) or whole_document_kind(source, self.bounds["max_line_bytes"]):
            from calibcli.io.records import records

            shown = shown_source(source)
            rows = records(
                source,
                **self.bounds,
                skip_results=folder,
                notes=lambda text: self.note(shown, text),
                skipped=lambda why: self.note(shown, why),
            )
            for name, line_no, row, _ in rows:
                if not state.row(name, line_no, row, folder, side):
                    break
            return state.fmt
        from calibcli.io.rows import parse_line

        src = Source(source)
        src.probe()
        try:
            stream = src.stream()
            try:
                each = blocks(
                    stream,
                    src.name,
                    BLOCK_SIZE,
                    what=src.what,
                    max_line_bytes=self.bounds["max_line_bytes"],
                )
                for first, view, _, expected in each:
                    if state.fast and expected > 0 and self._block(view, expected, side):
                        continue
                    routed = state.fmt is not None
                    for line_no, line in lines_of(view, first):
                        try:
                            row = parse_line(line)
                        except RecursionError:
                            raise InputError(src.name, line_no, "JSON nested too deeply") from None
                        except ValueError as exc:
                            raise InputError(src.name, line_no, str(exc)) from None
                        if not state.row(src.name, line_no, row, folder, side):
                            return state.fmt
                        if not routed and state.fast and expected > 1:
                            # the file's first row named its format: the rest of the block
                            # may decode in one call
                            routed = True
                            rest = view[_line_end(view, line_no - first) :]
                            if self._block(rest, expected - 1, side):
                                break
            finally:
                stream.close()
        finally:
            src.close()
        return state.fmt

    def _block(self, view: memoryview, expected: int, side: _Side) -> bool:
        """Add a native block decoded in one call (:mod:`~calibcli.io.keyed_blocks`); False
        (nothing added) when it must be read line by line."""
        found = self.blocks.decode(view, expected)
        if found is not None:
            side.add_block(*found)
        return found is not None

    def locate(self, spans: list, row: int) -> tuple[str, Any, Any]:
        """(display name, line or locator, key) of a row, by reading its file again."""
        from calibcli.io.records import records

        for source, folder, start, stop in spans:
            if start <= row < stop:
                state = _State(self, source)
                target = row - start
                for k, (name, line_no, parsed, _) in enumerate(
                    records(source, **self.bounds, skip_results=folder)
                ):
                    if k == target:
                        state.route(parsed)
                        return name, line_no, state.key(parsed)
                    if k == 0:
                        state.route(parsed)
        raise AssertionError(f"row {row} is in no file read")  # pragma: no cover


def _line_end(view: memoryview, lines: int) -> int:
    """The offset just past the newline that ends line ``lines`` (0-based) of a block."""
    obj = view.obj
    at = -1
    for _ in range(lines + 1):
        at = obj.find(b"\n", at + 1, len(view))
    return at + 1 if at >= 0 else len(view)


class _State:
    """One file's format and converter, found from its first row, and each row's checks."""

    def __init__(self, reader: _Reader, source: str) -> None:
        from calibcli import formats

        self.reader = reader
        self.source = source
        self.task = formats.task_from_filename(source) if source != "-" else None
        self.fmt: str | None = None
        self.convert: Any = None
        self.key_of: Any = None
        reader_ok = reader.keyed and reader.by is None
        field = reader.id_field
        self.once = source == "-" or not os.path.isfile(source)  # cannot be read again
        self._fast_ok = reader_ok and (field is None or "." not in field) and not self.once
        self.fast = False
        self.first: Any = None  # the file's first row's id (a FirstId), when watched

    def route(self, row: dict) -> str | None:
        """Set the format from the first row; the reason to skip the file, or None."""
        reader = self.reader
        self.fmt, skip = reader.router.route(row, None if reader.fmt == "auto" else reader.fmt)
        make = reader.router.converter
        self.convert = reader.native.check if self.fmt == "jsonl" else make(self.fmt, self.source)
        self.fast = self._fast_ok and self.fmt == "jsonl"
        return skip

    def key(self, row: dict) -> Any:
        from calibcli import formats

        return row_key(formats, row, self.fmt, self.reader.id_field, self.task)

    def row(self, name: str, line_no: Any, row: dict, folder: bool, side: _Side) -> bool:
        """Check and add one row; False when the file is a folder's file to skip."""
        reader = self.reader
        field = reader.id_field or "id"
        try:
            if self.fmt is None:
                skip = self.route(row)
                if skip is not None and folder:  # said, as the other commands say it
                    reader.note(shown_source(self.source), skip)
                    return False
                if skip is not None:
                    raise ValueError(f"{skip}: nothing to compare")
            values = self.convert(row)
            if self.fmt == "jsonl":
                values = [values]
            if len(values) != 1:
                raise ValueError(f"a {self.fmt} row holding {len(values)} predictions")
            c, y = values[0]
            if reader.watch and self.fmt not in OWN_IDS and reader.id_field is None:
                self.first = watched(self.first, name, line_no, row, reader.by)
            canon = None
            if reader.keyed:
                key = self.key(row)
                field = reader.id_field or default_id_field(self.fmt)
                canon = canonical_id(key)
                if side.questions is not None:
                    side.asked.append(canonical_id(question_of(key)))
            elif side.questions is not None:  # unpaired: each row's question, to count them
                at = (self.source, side.count)
                side.asked.append(asked_bytes(self.fmt, self.key, row, at, reader.id_field))
                if self.once and reader.watch and reader.id_field is not None:  # for a repeat
                    side.kept[side.count] = (name, line_no, self.key(row))
        except ValueError as exc:
            text = str(exc)
            if text.startswith("is "):
                text = f'id field "{field}" {text}'
            raise InputError(name, line_no, text) from None
        if canon is not None:
            side.canon.append(canon)
            if self.once:
                side.kept[side.count] = (name, line_no, key)
            doc = document(self.fmt, row)
            if doc is not None:
                side.docs[side.count] = doc
        side.conf.append(float(c))
        side.corr.append(bool(y))
        side.count += 1
        if side.groups is not None:
            from calibcli.io.plan import group_key
            from calibcli.io.rows import group_name

            try:
                if self.key_of is None:
                    self.key_of = group_key(self.fmt, reader.by, self.source)
                side.groups.append(group_name(self.key_of(row)))
            except ValueError as exc:
                raise InputError(name, line_no, str(exc)) from None
        return True
