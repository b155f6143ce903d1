"""Rows written back out with one value changed: ``calibcli apply``'s rewriting of
confidences. Every byte of a row but the new value's is kept (a value's original text, key
order, spacing, other keys), so a tool downstream reads the same row with one number changed.
A CSV or TSV table is written back as a table, each record's confidence cell replaced and every
other character kept. Rows stream batch by batch; a bad row is an InputError naming its line.

The files are those the other commands would read (folders and patterns expanded, older
re-runs of a task left out), and rows are rewritten once, as the other commands count them
once: the same file twice, two files of the same bytes (plain or compressed), a later row
carrying the file's first row's id (a run appended to its file again) and two files of the same
confidences in another order are refused unless ``all_runs``. The last is told from each file's
multiset hash once it is read: the output then stops where it is, so on standard output the
rows written a batch at a time before it (some of the copy's among them) are out already; a
file given with -o is not written at all. A file many of whose confidences another holds (a
file beside some of its shards, :func:`calibcli.io.same_rows.contained_rows`) is told once
every file is read, before the last batch is written.

Beside the confidences, each row's outcome (a ``correct`` field, true/false or 0/1) can be read
and handed on with them, so that the caller can tell by content whether the rows are those a
calibrator was fitted on (:func:`calibcli.summaries.scored_in_sample`, as calibrate tells them);
a row without one is written all the same and handed on with neither."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from calibcli.errors import InputError, shown_name
from calibcli.formats import by_value, json_type, lookup
from calibcli.io.rows import check_confidence, check_correct, group_name, parse_row
from calibcli.io.rows import field as value_of

BATCH = 8192  # rows mapped in one vectorised call
# A JSON number token: the text a confidence field holds (check_confidence accepted it).
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


SUMMARY = "a summary holds counts, no rows to rewrite: give apply the rows it was summarized from"
# the same confidences in another order: apply reads no outcome, so the copy is told by them
SAME_CONFIDENCES = "the same confidences, in any order"


def rewrite_confidences(
    files: list[str],
    field: str,
    by: str | None,
    mapping: Callable[[str | None, Any], Any],
    write: Callable[[bytes], None],
    *,
    all_runs: bool = False,
    warn: Callable[[str], None] | None = None,
    correct: str | None = None,
    scored: Callable[[Any, Any], None] | None = None,
) -> int:
    """Write every row of ``files`` with its confidence (``field``, a dotted path) replaced by
    ``mapping(group, confidences)`` of its ``by`` group (None without ``by``), every other byte
    of the row kept; returns the row count. InputError on a bad row, and on rows given twice
    unless ``all_runs`` (see the module docstring). ``warn`` is given what is said of the files
    (hidden files of a folder, older re-runs left out, subfolders not read) before any row is
    written.

    JSON Lines are rewritten a block at a time (:mod:`calibcli.io.splice`), the lines it cannot
    prove safe and whole documents row by row; either way the output goes to ``write`` in
    chunks of ``BATCH`` rows, so a bad row leaves the same rows written before it.

    With ``correct`` (a field) and ``scored``, the rows whose ``correct`` is true/false or 0/1
    go to ``scored(confidences, right)`` a batch at a time (float64 and bool arrays), in no
    particular order; the others are written without a word."""
    files, said = _inputs(files, all_runs)
    kinds = _kinds(files)
    for line in said if warn is not None else ():
        warn(line)
    outcomes = None if correct is None or scored is None else (correct, scored)
    rewriter = _Rewriter(field, by, mapping, _Batches(write), all_runs, outcomes)
    for source in files:
        rewriter.begin()
        if kinds[source] in ("csv", "tsv"):
            rewriter.table(source, kinds[source])
        else:
            rewriter.source(source, kinds[source])
        rewriter.end(source)
    rewriter.held()
    rewriter.out.close()
    return rewriter.count


def _inputs(files: list[str], all_runs: bool) -> tuple[list[str], list[str]]:
    """The files to rewrite, as the other commands read them (:func:`calibcli.io.folders.expand`,
    :func:`calibcli.io.runs.choose_runs`), and what to say of them; InputError for a file given
    twice or a copy unless ``all_runs``."""
    from calibcli.io.folders import expand, hidden_files, unread_subfolders
    from calibcli.io.runs import choose_runs

    hidden = hidden_files(list(files))
    expanded = expand(list(files))
    runs = choose_runs(expanded, all_runs=all_runs)
    return runs.files, [*hidden, *runs.warnings, *unread_subfolders(list(files), expanded)]


def _kinds(files: list[str]) -> dict[str, str | None]:
    """Each file's whole-document kind (None for JSON Lines); InputError for a summary file,
    and when CSV or TSV tables come with files of other kinds, since the output is one table
    or JSON Lines, not both."""
    from calibcli.io.parts import is_summary_file
    from calibcli.io.reader import whole_document_kind

    summary = next((source for source in files if is_summary_file(source)), None)
    if summary is not None:
        raise InputError(summary, None, SUMMARY)
    kinds = {source: whole_document_kind(source) for source in files}
    tables = {source: kind for source, kind in kinds.items() if kind in ("csv", "tsv")}
    if tables and len(tables) < len(files):
        other = next(source for source in files if source not in tables)
        raise InputError(
            other,
            None,
            f"apply writes the rows of {next(iter(tables))} as a table, and this file's as JSON "
            "Lines: rewrite tables and other files in separate runs",
        )
    return kinds


class _Batches:
    """Rows passed on to ``write`` ``BATCH`` at a time (the last call takes the rest)."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._parts: list[bytes] = []
        self._rows = 0

    def add(self, data: bytes, rows: int) -> None:
        """Append ``rows`` whole lines (each ending with a newline)."""
        while self._rows + rows >= BATCH:
            take = BATCH - self._rows
            cut = _line_end(data, take)
            self._write(b"".join([*self._parts, data[:cut]]))
            self._parts, self._rows = [], 0
            data, rows = data[cut:], rows - take
        if rows:
            self._parts.append(data)
            self._rows += rows

    def close(self) -> None:
        if self._parts:
            self._write(b"".join(self._parts))
            self._parts, self._rows = [], 0


def _line_end(data: bytes, lines: int) -> int:
    """Offset just past the ``lines``-th newline of ``data``."""
    import numpy as np

    return int(np.flatnonzero(np.frombuffer(data, np.uint8) == 10)[lines - 1]) + 1


class _Rewriter:
    """The rows of every source, rewritten in order: blocks the splicer takes, and rows one by
    one (batched for one vectorised mapping call per group) for the rest."""

    def __init__(
        self,
        field: str,
        by: str | None,
        mapping: Callable[[str | None, Any], Any],
        out: _Batches,
        all_runs: bool = False,
        outcomes: tuple[str, Callable[[Any, Any], None]] | None = None,
    ) -> None:
        import msgspec

        from calibcli.io.splice import BlockSplicer, splices

        self.field, self.by, self.mapping, self.out = field, by, mapping, out
        self.all_runs = all_runs
        # the field each row's outcome is read from, and where the rows carrying one go
        self.correct, self.scored = outcomes if outcomes is not None else (None, None)
        self.count = 0
        # each file read's rows (their count and multiset hash, as a reading's Source records
        # them), and the current file's, for the same rows in other bytes
        self.made: list[Any] = []
        self.rows: Any = None
        spliced = splices(field, by, self.correct)
        self.splicer = BlockSplicer(field, by, self.correct) if spliced else None
        self.splice = _Splicer()
        self._decode = msgspec.json.Decoder().decode
        self._decode_errors = (msgspec.DecodeError, RecursionError)
        # rows waiting for their mapping: (text, row, key path or a table's (column,
        # delimiter), group) and the confidences
        self._batch: list[tuple[Any, dict, Any, str | None]] = []
        self._confidences: list[float] = []
        self._outcomes: list[int] = []  # OUTCOMES codes, when outcomes are read
        self.columns: tuple[list[str], str] | None = None  # the first table's header and name

    def begin(self) -> None:
        """Start a file's rows."""
        from calibcli.summaries import SourcePrint

        self.rows = SourcePrint(float32=None)  # apply's copies are told by exact confidences

    def end(self, source: str) -> None:
        """Write the file's rows still waiting; InputError when an earlier file held the same
        confidences in other bytes, unless ``all_runs``."""
        from types import SimpleNamespace

        from calibcli.io.runs import COPY
        from calibcli.io.sources import display_name
        from calibcli.summaries import same_sources

        self.flush()
        name = display_name(source)
        self.made.append(
            SimpleNamespace(
                name=name,
                display=name,
                content=name,
                rows=self.rows.rows,
                rows_hash=self.rows.key(),
                rows_sketch=self.rows.sketch(),
                skipped=None,
            )
        )
        twice = None if self.all_runs else same_sources(self.made)
        if twice is not None:
            first, later, _ = twice  # its rows keep no float32 hash: the same rows exactly
            also = shown_name(first.display)
            raise InputError(
                later.display, None, f"holds the rows of {also} ({SAME_CONFIDENCES}): {COPY}"
            )

    def held(self) -> None:
        """InputError, once every file is read, when many of a file's confidences are another's
        (:func:`~calibcli.io.same_rows.contained_rows`: a file beside some of its shards),
        unless ``all_runs``."""
        from calibcli.io.runs import COPY
        from calibcli.io.same_rows import contained_rows

        held = None if self.all_runs else contained_rows(self.made)
        if held is not None:
            inner, text = held
            raise InputError(inner.display, None, f"{text}: {COPY.replace('its rows', 'they', 1)}")

    def _hashed(self, confidences: Any) -> None:
        """Fold rows' confidences into the file's multiset hash and sketch (the outcome bit
        left clear: apply reads none)."""
        import numpy as np

        self.rows.add_rows(confidences, np.zeros(confidences.shape[0], dtype=bool))

    def _watch(self, watch: Any, name: str, where: int | str, row: Any) -> Any:
        """The file's first row's id, watched for in the rows after it as the other commands
        watch for it (:func:`calibcli.io.first_id.watched`); False when not watched."""
        from calibcli.io.first_id import watched

        if watch is False or not isinstance(row, dict):
            return watch
        try:
            return watched(watch, name, where, row, self.by)
        except InputError as exc:
            raise _written_twice(exc) from None

    def source(self, source: str, kind: str | None) -> None:
        """The rows of a JSON Lines file (``kind`` None) or of a whole document."""
        from calibcli.io.documents import document_records
        from calibcli.io.tables import TABLE_KINDS

        if kind in TABLE_KINDS:
            raise InputError(
                source, None, f"apply writes JSON Lines: a {kind} table is read, not rewritten"
            )
        if kind is not None:
            watch = False if self.all_runs else None
            for name, locator, row, text in document_records(source, kind):
                watch = self._watch(watch, name, locator, row)
                self.row(name, locator, row, text)
            return
        self._lines(source)

    def table(self, source: str, kind: str) -> None:
        """The records of a CSV or TSV file: the header written once (the first table's; every
        other table must name the same columns), then each record with its confidence cell
        replaced and every other character kept."""
        from calibcli.io.delimited import Table
        from calibcli.io.documents import document_records
        from calibcli.io.sources import display_name

        table = Table(source, kind)

        name = display_name(source)

        def header(line: int) -> None:
            if self.columns is None:
                self.flush()
                self.columns = (table.header, name)
                self.out.add(table.header_text.encode("utf-8") + b"\n", 1)
            elif table.header != self.columns[0]:
                raise InputError(
                    name, line, f"its header names other columns than {self.columns[1]}'s"
                )

        records = table.records(with_text=True, on_header=header)
        watch = False if self.all_runs else None
        for _, line, row, text in document_records(source, kind, records):
            watch = self._watch(watch, name, line, row)
            # the field is a column (a dotted name too, matched whole as lookup matches it);
            # a row without it is refused by check() before its cell is wanted
            column = table.header.index(self.field) if self.field in row else -1
            self.row(name, line, row, text, (column, table.delimiter))

    def _lines(self, source: str) -> None:
        """The rows of JSON Lines, as :func:`calibcli.io.records.records` reads them (same
        sources, same errors); a later row carrying the first row's id is refused unless
        ``all_runs``, found in each block by :meth:`~calibcli.io.first_id.FirstId.find`."""
        from calibcli.io.first_id import FirstId
        from calibcli.io.fold import first_row
        from calibcli.io.sources import BLOCK_SIZE, Source, blocks, lines_of

        src = Source(source)
        src.probe()
        watch: Any = False if self.all_runs else None
        try:
            stream = src.stream()
            try:
                for first, view, _, expected in blocks(stream, src.name, BLOCK_SIZE, what=src.what):
                    data = bytes(view)
                    if watch is None:
                        head = first_row(data, first)
                        if head is not None:
                            watch = FirstId.of(head[1], head[0], head[2], self.by) or False
                    repeat = watch.find(data, first, src.name) if watch else None
                    block = None
                    if self.splicer is not None and repeat is None:
                        block = self.splicer.block(data, first, expected)
                    if block is None:
                        for line_no, line in lines_of(data, first):
                            if repeat is not None and line_no == repeat.line:
                                raise _written_twice(repeat)  # the rows before it are written
                            self.row(src.name, line_no, self.decode(src.name, line_no, line), line)
                    else:
                        self._block(src.name, block)
            finally:
                stream.close()
        finally:
            src.close()

    def decode(self, name: str, line_no: int, line: bytes) -> Any:
        """One line's row, decoded by msgspec (a third of json.loads' time); a line msgspec
        refuses (NaN, 1e999, a lone surrogate, invalid JSON) goes to the row rules' own parser,
        which accepts what they accept and words the error."""

        try:
            row = self._decode(line)
        except self._decode_errors:
            row = None
        return row if type(row) is dict else parse_row(name, line_no, line)

    def check(self, name: str, line_no: int | str, row: Any) -> tuple[float, str | None]:
        """A row's confidence and group name; InputError naming the row when it has none."""

        try:
            if not isinstance(row, dict):
                raise ValueError(f"the row is {json_type(row)}, not a JSON object")
            if "doc_id" in row and "filtered_resps" in row:
                raise ValueError(
                    "an lm-eval row has no confidence field to rewrite; apply takes native "
                    "rows (use calibcli calibrate --calibrator on lm-eval rows)"
                )
            c = check_confidence(lookup(row, self.field), self.field)
            group = None if self.by is None else group_name(by_value(row, self.by))
        except ValueError as exc:
            raise InputError(name, line_no, str(exc)) from None
        return c, group

    def outcome(self, row: dict) -> int:
        """A checked row's outcome code (:data:`calibcli.io.splice.OUTCOMES`): ``NO_OUTCOME``
        when it carries none, or one that is no true/false/0/1."""
        from calibcli.io.splice import NO_OUTCOME

        try:
            return int(check_correct(value_of(row, self.correct), self.correct))
        except ValueError:
            return NO_OUTCOME

    def _score(self, conf: Any, outcomes: Any) -> None:
        """Hand the rows carrying an outcome on to ``scored``."""
        known = outcomes >= 0
        if known.any():
            self.scored(conf[known], outcomes[known] == 1)

    def row(
        self, name: str, line_no: int | str, row: Any, text: bytes | str, cell: Any = None
    ) -> None:
        """One row waiting for its mapping; ``cell``: a table record's (column, delimiter)."""
        c, group = self.check(name, line_no, row)
        self._batch.append((text, row, _key_path(row, self.field) if cell is None else cell, group))
        self._confidences.append(c)
        if self.correct is not None:
            self._outcomes.append(self.outcome(row))
        self.count += 1
        if len(self._batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Map and write the rows waiting one by one."""
        import numpy as np

        from calibcli.io.splice import map_groups

        if not self._batch:
            return
        batch = self._batch
        conf = np.fromiter(self._confidences, dtype=np.float64, count=len(self._confidences))
        self._hashed(conf)
        if self.correct is not None:
            self._score(conf, np.fromiter(self._outcomes, np.int8, len(self._outcomes)))
        groups = None if self.by is None else [g for *_, g in batch]
        mapped = map_groups(self.mapping, conf, groups)
        lines = [
            self.splice(text, row, path, value)
            for (text, row, path, _), value in zip(batch, mapped.tolist(), strict=True)
        ]
        self.out.add(b"\n".join(lines) + b"\n", len(lines))
        self._batch, self._confidences, self._outcomes = [], [], []

    def _block(self, name: str, block: Any) -> None:
        from calibcli.io.splice import map_groups

        self.flush()  # rows waiting come first
        rows: dict[int, tuple[bytes, dict, list[str | int]]] = {}
        for i, line_no, line in block.fallback:
            row = self.decode(name, line_no, line)
            c, group = self.check(name, line_no, row)
            block.conf[i] = c
            if block.groups is not None:
                block.groups[i] = group
            if block.outcomes is not None:
                block.outcomes[i] = self.outcome(row)
            rows[i] = (line, row, _key_path(row, self.field))
        self._hashed(block.conf)
        if block.outcomes is not None:
            self._score(block.conf, block.outcomes)
        mapped = map_groups(self.mapping, block.conf, block.groups)
        values = mapped.tolist()
        lines = {i: self.splice(*spot, values[i]) for i, spot in rows.items()}
        n = block.conf.shape[0]
        if n:
            self.out.add(block.output(mapped, lines), n)
        self.count += n


def _written_twice(error: InputError) -> InputError:
    """A row repeating its file's first row's id, said as the other commands say it, less
    their remedy of an id field, which apply does not take."""
    from calibcli.io.first_id import REPEATED_FIRST

    remedy = REPEATED_FIRST.split(" (pass ")[0] + " (pass --all-runs to pool the rows on purpose)"
    return InputError(error.path, error.line, error.detail.replace(REPEATED_FIRST, remedy))


def _key_path(row: dict, dotted: str) -> list[str | int]:
    """The keys and list indices :func:`calibcli.formats.lookup` followed to ``dotted``."""
    if dotted in row:
        return [dotted]
    path: list[str | int] = []
    node: Any = row
    for part in dotted.split("."):
        key: str | int = int(part) if isinstance(node, list) else part
        path.append(key)
        node = node[key]
    return path


# A line break (and the indentation after it) inside a pretty-printed row: only whitespace
# between tokens can hold one (JSON strings escape control characters), so dropping it keeps
# every value's text; after a comma it becomes one space, as in the rows JSON Lines hold.
_BREAK = re.compile(r",?[ \t]*[\r\n][ \t\r\n]*")


def _one_line(text: str) -> str:
    return _BREAK.sub(lambda m: ", " if m.group().startswith(",") else "", text.strip())


class _Splicer:
    """A row's JSON text with the value at a key path replaced, every other byte kept.

    JSON Lines rows take a fast path: when the field's key occurs once in the line as a key
    (its JSON spelling followed by ``:``) and no escape could spell a key another way (``\\u``,
    ``\\/``), that
    occurrence is the field, whatever its depth (the decoded row has the key there, and text
    outside strings can hold a key's spelling only as a key). Otherwise the line is scanned
    (:func:`calibcli.formats.json_text.value_span`)."""

    def __init__(self) -> None:
        self._keys: dict[str, re.Pattern[bytes]] = {}

    def _key(self, key: str) -> re.Pattern[bytes]:
        pattern = self._keys.get(key)
        if pattern is None:
            spelled = json.dumps(key, ensure_ascii=False).encode("utf-8")
            pattern = re.compile(re.escape(spelled) + rb"[ \t\r\n]*:[ \t\r\n]*")
            self._keys[key] = pattern
        return pattern

    def __call__(self, text: bytes | str, row: dict, path: Any, value: float) -> bytes:
        # float repr is json.dumps' text for a finite float, at a fraction of its cost
        new = repr(value) if math.isfinite(value) else json.dumps(value)
        if type(path) is tuple:  # a table's record: its (column, delimiter)
            from calibcli.io.delimited import cell_span

            start, end = cell_span(text, *path)
            return (text[:start] + new + text[end:]).encode("utf-8")
        if isinstance(text, bytes):
            leaf = path[-1]
            if isinstance(leaf, str) and b"\\u" not in text and b"\\/" not in text:
                key = self._key(leaf)
                first = key.search(text)
                if first is not None and key.search(text, first.end()) is None:
                    number = _NUMBER.match(text, first.end())
                    if number is not None:
                        return b"%s%s%s" % (
                            text[: number.start()],
                            new.encode(),
                            text[number.end() :],
                        )
            text = text.decode("utf-8")
        else:
            text = _one_line(text)
        from calibcli.formats import value_span

        span = value_span(text, path)
        if span is None:  # not reached for valid JSON; still keeps the output valid JSON
            _set(row, path, value)
            return json.dumps(row).encode("utf-8")
        return (text[: span[0]] + new + text[span[1] :]).encode("utf-8")


def _set(row: dict, path: list[str | int], value: float) -> None:
    node: Any = row
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
