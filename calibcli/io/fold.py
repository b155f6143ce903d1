"""Folding one source's rows into a summary builder: its format (from its first row, or given),
its block decoder, and each row's line for messages. The reader and the worker processes run
the same loop."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from calibcli.errors import InputError, RepeatedRowError
from calibcli.io.strict_json import loads_line

_NON_BLANK = re.compile(rb"[^ \t\n\r\x0b\x0c]")
"""A byte that makes a line non-blank (what ``bytes.strip`` keeps, as in ``lines_of``)."""


RESULTS_SKIPPED = (
    "lm-eval results file: aggregate figures, no per-document rows (the samples_* files beside "
    "it hold them); skipped"
)


DOUBLE_READ = (
    "re-runs of a task, or the same rows in two files, would count twice (pass --all-runs "
    "to pool them on purpose)"
)


class SkipFile(Exception):
    """A source whose rows do not serve the command: skipped, with ``reason`` as its warning."""

    def __init__(self, fmt: str, reason: str) -> None:
        super().__init__(reason)
        self.fmt = fmt
        self.reason = reason


def first_row(block: memoryview | bytes, first_line: int) -> tuple[int, Any, bytes] | None:
    """(line, parsed object or None if unparseable, the line's bytes) of the first non-blank
    line, if any."""
    data = block.obj if isinstance(block, memoryview) else block
    found = _first_line(data, len(block))
    if found is None:
        return None
    start, stop = found
    line = bytes(data[start:stop])
    line_no = first_line + data.count(b"\n", 0, start)
    try:
        return line_no, loads_line(line), line
    except ValueError:  # the decoder names what is wrong with the line
        return line_no, None, line


def first_row_end(block: memoryview | bytes) -> int:
    """The offset just past the line of a block's first non-blank line (its end, with none)."""
    data = block.obj if isinstance(block, memoryview) else block
    end = len(block)
    found = _first_line(data, end)
    return end if found is None or found[1] == end else found[1] + 1


def _first_line(data: Any, end: int) -> tuple[int, int] | None:
    """[start, stop) of the first non-blank line of ``data[:end]``, its newline left out."""
    found = _NON_BLANK.search(data, 0, end)
    if found is None:
        return None
    stop = data.find(b"\n", found.start(), end)
    return data.rfind(b"\n", 0, found.start()) + 1, end if stop < 0 else stop


class SourceFold:
    """One source being folded (``plan``: a :class:`~calibcli.io.plan.ReadPlan`). ``fmt`` is
    its format once known: given (a worker's, resolved by the parent), forced, or resolved from
    its first row."""

    def __init__(
        self,
        plan: Any,
        name: str,
        source: str,
        fmt: str | None = None,
        seen: Any = None,
        first_id: Any = None,
        head_known: bool = False,
    ) -> None:
        self.plan = plan
        self.name = name
        self.source = source
        self.fmt = fmt
        self.decoder: Any = None
        # the file's first row's id, watched for in the rows after it (a FirstId); taken from
        # the first row resolved unless the file's head was read apart (``head_known``)
        self.first_id = first_id
        self._head_known = head_known or first_id is not None
        # the ids read so far (a SeenIds), shared by the sources of one reading
        if seen is None:
            from calibcli.io.ids import SeenIds

            seen = SeenIds()
        self.seen = seen

    def resolve(self, block: memoryview | bytes, first_line: int) -> bool:
        """Route the source from the first row of this block; False if the block is blank.
        Raises :class:`SkipFile` for a source to skip."""
        found = first_row(block, first_line)
        if found is None:
            return False
        line_no, row, raw = found
        self.resolve_row(row, line_no)
        if not self._head_known:
            self._head_known = True
            self.first_id = self.watch(row, line_no, raw)
        return True

    def watch(self, row: Any, where: int | str, raw: bytes | None) -> Any:
        """The :class:`~calibcli.io.first_id.FirstId` of a file whose first row is ``row``, or
        None: rows without ids of their own (native rows, sums, logprobs, ...) read without
        ``--id-field`` or ``--all-runs`` are watched (an id field checks every id)."""
        from calibcli.io.first_id import FirstId
        from calibcli.io.ids import OWN_IDS

        plan = self.plan
        if self.fmt in OWN_IDS or plan.id_field is not None or plan.all_runs:
            return None
        return FirstId.of(row, where, raw, plan.settings.by)

    def resolve_row(self, row: Any, where: int | str) -> None:
        """Set the format from the source's first row (``where``: its line or locator)."""
        forced = self.plan.forced
        if not isinstance(row, dict):
            self.fmt = forced or "jsonl"  # the decoder reports the bad row
            return
        try:
            fmt, skip = self.plan.router.route(row, forced)
        except ValueError as e:
            from calibcli.formats import is_results_row

            if forced is None and is_results_row(row):
                # an lm-eval results file saved on one line: skipped, as one pretty-printed is
                raise SkipFile("lm-eval", RESULTS_SKIPPED) from None
            raise InputError(self.name, where, str(e)) from None
        if skip is not None:
            raise SkipFile(fmt, skip)
        self.fmt = fmt

    def check_ids(self, ids: Any, lines: Any, builder: Any) -> None:
        """Refuse a row whose id was read before (in this source or an earlier one of the same
        reading) and record the rest, with their places, in the builder's summary. ``lines``
        holds each row's line (an int64 array), or its locator in a whole document (a list),
        or each value's (:func:`_row_places`)."""
        import numpy as np

        from calibcli.io.ids import id_hashes, question_hashes, show_id

        hashes = id_hashes(ids)
        lines = _row_places(lines, len(ids))
        if self.plan.all_runs:
            # rows pooled on purpose are neither checked nor recorded (an empty batch of ids),
            # only keyed by their questions (lm-eval re-runs of a task share them)
            builder.add_ids(hashes[:0], np.zeros(0, np.int64), question_hashes(ids, hashes))
            return
        locators = None
        if isinstance(lines, list):
            locators = lines
            lines = np.fromiter(
                (w if isinstance(w, int) else -1 for w in locators), np.int64, len(locators)
            )
        seen, name = self.seen, self.name
        i = seen.first_repeat(hashes)
        if i is not None:
            first = seen.where(int(hashes[i]), (name, hashes, lines, locators))
            lead = f"the row of id {show_id(ids[i])} was read before, at "
            if self.requests:
                from calibcli.io.batch_ids import read_before

                lead = read_before(ids[i])
            raise RepeatedRowError(
                name,
                locators[i] if locators is not None else int(lines[i]),
                lead,
                first,
                f": {self._twice()}",
            )
        seen.record(name, hashes, lines, locators)
        # rows keyed for the bootstrap are keyed by their question (epochs of a sample share it)
        keyed = getattr(builder, "row_keys", False)
        builder.add_ids(hashes, lines, question_hashes(ids, hashes) if keyed else None)

    def absorb_ids(self, ids: Any, offset: int, builder: Any) -> None:
        """Check and record the ids of a worker's share of this source (``ids``: its summary's
        :class:`~calibcli.summaries.ids.RowIds`, lines counted from the share's start)."""
        import numpy as np

        seen, name = self.seen, self.name
        lines = np.where(ids.lines >= 0, ids.lines + offset, -1)
        i = seen.first_repeat(ids.hashes)
        if i is not None:
            first = seen.where(int(ids.hashes[i]), (name, ids.hashes, lines, None))
            raise RepeatedRowError(
                name,
                int(lines[i]) if lines[i] >= 0 else None,
                "this row's id is the id of the row at ",
                first,
                f": {self._twice()}",
            )
        seen.record(name, ids.hashes, lines)
        builder.ids.extend(ids, offset)

    @property
    def requests(self) -> bool:
        """Whether the source's rows are Batch API output lines identified by their requests,
        as its first row's watch says (:attr:`~calibcli.io.first_id.FirstId.requests`)."""
        return bool(self.first_id) and self.first_id.requests

    def _twice(self) -> str:
        """What a row read twice would do, and the remedies, said of this source's rows."""
        if self.requests:
            from calibcli.io.batch_ids import TWICE

            return TWICE
        return DOUBLE_READ

    def taken(self) -> dict[str, Any]:
        """How the source's rows were taken, as its summary's source records it: the
        --inspect-confidence mode, auto resolved, and the inspect-ai samples taken by
        answer-token and by sequence (:func:`~calibcli.io.route.taken_counts`), None for other
        formats or no rows yet; and the sequences left out for the content filter."""
        from calibcli.io.route import taken_counts
        from calibcli.summaries import joined_mode

        modes = Counter() if self.decoder is None else self.decoder.modes
        # sequences left out for the content filter (OpenAI responses), None for none
        filtered = getattr(self.decoder, "filtered", 0) or None  # a decoder of other rows: none
        return {
            "inspect_confidence": joined_mode(modes),
            "inspect_counts": taken_counts(modes),
            "content_filtered": filtered,
        }

    def _decoder(self) -> Any:
        if self.decoder is None:
            own = None
            if self.requests:  # a Batch output: every line's request is checked
                from calibcli.io.batch_ids import request_key as own
            self.decoder = self.plan.decoder(self.fmt, self.source, own)
        return self.decoder

    def _watch(self) -> Any:
        """The first row's watch, searched for in each block; None where every row's id is
        checked (a Batch output's requests)."""
        return None if self.requests else self.first_id

    def fold_rows(self, chunk: list[tuple[Any, Any]], builder: Any) -> None:
        """Fold rows of a whole document, ``(locator, row)`` pairs."""
        start = 0  # where the rows after the document's first start
        if self.fmt is None:
            self.resolve_row(chunk[0][1], chunk[0][0])
            if not self._head_known:
                self._head_known, start = True, 1
                self.first_id = self.watch(chunk[0][1], chunk[0][0], None)
        decoder = self._decoder()
        watch = self._watch()
        repeat = None if watch is None else watch.find_rows(chunk, self.name, start)
        try:
            cols, keys, where = decoder.rows(chunk, self.name)
        except InputError as e:
            raise _earlier(repeat, e) from None
        if repeat is not None:
            raise repeat
        name = self.name
        if decoder.ids:
            places = getattr(decoder, "id_places", None)
            self.check_ids(decoder.ids, list(where) if places is None else places, builder)
        if getattr(builder, "row_keys", False):
            from calibcli.summaries import locator_numbers

            builder.add_lines(locator_numbers(where))
        builder.add(cols, keys, lambda i: (name, where[i]))

    def fold(
        self,
        items: Iterable[tuple[int, Any, int, int]],
        builder: Any,
        *,
        expected_bytes: Callable[[], int | None] = lambda: None,
        progress: Callable[[], None] | None = None,
        handoff: Callable[[int, Any, int, int], bool | None] | None = None,
        seen: Callable[[Any], None] | None = None,
    ) -> int:
        """Decode blocks into ``builder``; return the number of newlines seen.

        ``items`` are ``(first line, block, newlines, expected rows)`` as from
        :func:`~calibcli.io.sources.blocks`. ``expected_bytes()`` sizes the builder's row
        buffers on the first block; ``progress()`` runs after each block; ``seen(block)``
        sees every block (a content hash of a stream). ``handoff(first_line, block, newlines,
        expected)`` may take a block away (True) to be decoded elsewhere, or return None to
        stop reading.
        """
        name = self.name
        newlines = 0
        reserved = False
        for first_line, block, nl, expected in items:
            newlines = first_line - 1 + nl
            if seen is not None:
                seen(block)
            if self.fmt is None and not self.resolve(block, first_line):
                continue
            if handoff is not None:
                taken = handoff(first_line, block, nl, expected)
                if taken is None:
                    break
                if taken:
                    continue
            # the block's physical lines, from the newlines counted when it was cut: when every
            # one holds a row there is no empty line to skip
            physical = nl + (len(block) > 0 and block[len(block) - 1] != 10)
            decoder = self._decoder()
            watch = self._watch()
            repeat = None if watch is None else watch.find(block, first_line, name)
            try:
                cols, keys, lines = decoder.block(
                    block, first_line, name, expected, consecutive=expected == physical
                )
            except InputError as e:
                raise _earlier(repeat, e) from None
            if repeat is not None:
                raise repeat
            if decoder.ids:
                n = len(decoder.ids)
                self.check_ids(
                    decoder.ids,
                    np.arange(first_line, first_line + n, dtype=np.int64)
                    if lines is None
                    else np.asarray(lines, np.int64),
                    builder,
                )
            if getattr(builder, "row_keys", False):
                n = cols[0].shape[0]
                builder.add_lines(
                    np.arange(first_line, first_line + n, dtype=np.uint64)
                    if lines is None
                    else np.asarray(lines, np.uint64)
                )
            if not reserved:
                reserved = True
                total = expected_bytes()
                if total and len(block):
                    builder.reserve(int(total / len(block) * cols[0].shape[0] * 1.1) + 1024)

            def locate(i: int, first_line=first_line, lines=lines) -> tuple[str, int]:
                return name, first_line + i if lines is None else int(lines[i])

            builder.add(cols, keys, locate)
            if progress is not None:
                progress()
        return newlines


def _row_places(places: Any, rows: int) -> Any:
    """The place of each of ``rows`` identified rows, from ``places``: each value's, where a
    row gives several values (an OpenAI response's choices, each a sequence) on its own line,
    so that a row's place is where a run of equal places starts; ``places`` as given when they
    are one a row, or do not part so (the rows of a document on one line share its place)."""
    if len(places) == rows:
        return places
    if isinstance(places, list):
        starts = [i for i, w in enumerate(places) if i == 0 or w != places[i - 1]]
        return [places[i] for i in starts] if len(starts) == rows else places
    starts = np.flatnonzero(np.concatenate([[True], places[1:] != places[:-1]]))
    return places[starts] if starts.shape[0] == rows else places


def _earlier(repeat: InputError | None, error: InputError) -> InputError:
    """Of a block's repeated first id and its decoding error, the one on the earlier line."""
    if repeat is None or not isinstance(repeat.line, int) or not isinstance(error.line, int):
        return error
    return repeat if repeat.line < error.line else error
