"""The summary of perplexity rows: exact totals per ``--by`` group, where the rows came from,
and which optional counts every row carries.

:class:`PerplexitySummary` merges like the calibration summary: sequences, tokens, bytes and
words are exact integers, the NLL an exact sum of doubles, so every figure is the same whatever
the split. A count (tokens, bytes, words) is totalled only when every row carries it; the
builder enforces that row by row, and merging enforces it between summaries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from calibcli.errors import InputError
from calibcli.summaries.fingerprint import SourcePrint, joined_key, joined_sketch
from calibcli.summaries.ids import IdLog, RowIds, SummaryMismatch, merged_ids
from calibcli.summaries.rows import GroupIndex
from calibcli.summaries.settings import settings_dict, settings_differences
from calibcli.summaries.sources import Source, coalesce, overall_format, source_formats
from calibcli.summaries.tables import TotalsTable

COUNTS = TotalsTable.COUNTS
_NO_QUESTIONS = (np.zeros(0, np.uint64), np.zeros(0, np.int64))


@dataclass(frozen=True)
class PerplexitySettings:
    """How perplexity rows were read: the field names, the format and the group field."""

    nll_field: str = "nll"
    tokens_field: str = "tokens"
    bytes_field: str = "bytes"
    words_field: str = "words"
    logprobs_field: str = "logprobs"
    fmt: str = "auto"
    by: str | None = None
    id_field: str | None = None  # --id-field: the field identifying rows

    def to_dict(self) -> dict[str, Any]:
        return settings_dict(self)

    def differences(self, other: PerplexitySettings) -> list[str]:
        return settings_differences(self, other)


@dataclass(frozen=True)
class PerplexityView:
    """The totals of one set of rows, as reports read them. ``total_tokens`` is None when the
    format carries no token counts (lm-eval rolling rows); ``total_bytes`` / ``total_words``
    None unless every row carries them. ``nll_overflow``: the exact total NLL is finite but
    beyond the largest double (written as +inf)."""

    sequences: int
    total_nll: float
    total_tokens: int | None
    total_bytes: int | None = None
    total_words: int | None = None
    null_logprobs: int = 0
    sentinel_logprobs: int = 0
    nll_overflow: bool = False
    fmt: str = "jsonl"


_VIEW_FIELDS = frozenset(
    (
        "sequences",
        "total_nll",
        "total_tokens",
        "total_bytes",
        "total_words",
        "null_logprobs",
        "sentinel_logprobs",
        "nll_overflow",
    )
)


@dataclass(frozen=True, eq=False)
class PerplexitySummary:
    """See the module docstring. ``present`` says, per count (tokens, bytes, words), whether
    every row carries it (None: no row read yet)."""

    settings: PerplexitySettings
    table: TotalsTable
    group_names: tuple[str, ...] | None = None
    sources: tuple[Source, ...] = ()
    warnings: tuple[str, ...] = ()
    present: tuple[bool | None, bool | None, bool | None] = (None, None, None)
    row_ids: RowIds | None = None
    mixed: str | None = None  # why the rows are not one model's: every gate on them fails
    single_model: frozenset[str] = frozenset()  # --by groups of one model's rows, under mixed
    groups_known: Any = None  # calibcli.summaries.GroupSources: each --by group's sources
    partial: str | None = None  # why they are part of an input's: every gate on them fails
    # rows pooled with --all-runs that may carry ids: each identified row's question hash and
    # tokens (-1: none), kept while the inputs are read (calibcli.io.pooled_ids), else None
    questions: tuple[np.ndarray, np.ndarray] | None = None
    # (questions, their tokens or None) of every row, each question once, where the pooled
    # rows' ids repeat beyond their runs' epochs (distinct_questions()); None otherwise
    distinct: tuple[int, int | None] | None = None

    kind = "perplexity"

    @property
    def n(self) -> int:
        return int(self.table.ints[: self.table.groups, 0].sum())

    @property
    def fmt(self) -> str:
        forced = None if self.settings.fmt == "auto" else self.settings.fmt
        return overall_format(self.sources, forced)

    @property
    def formats(self) -> dict[str, str]:
        return source_formats(self.sources)

    def _view(self, table: TotalsTable, g: int, nll: float) -> PerplexityView:
        t = table.totals(g, nll)
        fmt = self.fmt
        infinite = t["infinite"] > 0
        overflow = (t["overflowed"] > 0 or math.isinf(nll)) and not infinite
        total = math.inf if infinite or overflow else nll

        def count(k: int, name: str) -> int | None:
            return t[name] if self.present[k] else None

        tokens = count(0, "tokens")
        if t["sequences"] == 0 and fmt != "lm-eval":
            tokens = 0
        return PerplexityView(
            sequences=t["sequences"],
            total_nll=total,
            total_tokens=tokens,
            total_bytes=count(1, "bytes"),
            total_words=count(2, "words"),
            null_logprobs=t["null_logprobs"],
            sentinel_logprobs=t["sentinel_logprobs"],
            nll_overflow=overflow,
            fmt=fmt,
        )

    def pooled(self) -> PerplexityView:
        """The totals of every row."""
        table = self.table if self.group_names is None else self.table.pooled()
        return self._view(table, 0, float(table.nll_floats()[0]))

    def by_group(self) -> dict[str, PerplexityView] | None:
        """One view per ``--by`` group, in name order (None without ``--by``)."""
        if self.group_names is None:
            return None
        nll = self.table.nll_floats()
        return {
            name: self._view(self.table, g, float(nll[g]))
            for g, name in enumerate(self.group_names)
        }

    groups = property(by_group)

    def __getattr__(self, name: str) -> Any:
        # the pooled totals read as the summary's own: summary.total_tokens, .sequences, ...
        if name in _VIEW_FIELDS:
            return getattr(self.pooled(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def distinct_questions(self) -> tuple[int, int | None]:
        """The questions its rows hold, each once, and their tokens (None where the rows carry
        no token counts): the identified rows (``questions``) by their question hashes, each
        question's tokens counted once (the fewest any of its rows scored: a re-run scores the
        same tokens), and each row without an id as a question of its own."""
        hashes, tokens = self.questions if self.questions is not None else _NO_QUESTIONS
        order = np.lexsort((tokens, hashes))  # by question, then tokens: the first is the fewest
        ordered = hashes[order]
        first = np.ones(ordered.shape[0], bool)
        first[1:] = ordered[1:] != ordered[:-1]
        view = self.pooled()
        questions = view.sequences - hashes.shape[0] + int(first.sum())
        if view.total_tokens is None or not self.present[0]:
            return questions, None
        once = int(tokens[order][first].sum())
        return questions, view.total_tokens - int(tokens.sum()) + once

    def merge(self, other: PerplexitySummary) -> PerplexitySummary:
        return merge_perplexity([self, other])


def _joined_presence(summaries: list[PerplexitySummary]) -> tuple[bool | None, ...]:
    present: list[bool | None] = [None, None, None]
    for s in summaries:
        if not s.n:
            continue
        for k, name in enumerate(COUNTS):
            mine, theirs = present[k], s.present[k]
            if mine is not None and theirs is not None and mine != theirs:
                raise SummaryMismatch(
                    f"some parts carry {name} counts and others do not; a count is totalled "
                    "only when every row carries it"
                )
            present[k] = theirs if mine is None else mine
    return tuple(present)


def merge_perplexity(summaries: list[PerplexitySummary]) -> PerplexitySummary:
    """Merge summaries in the order given."""
    first = summaries[0]
    for other in summaries[1:]:
        if other.kind != first.kind:
            raise SummaryMismatch(f"cannot merge a {other.kind} summary into a {first.kind} one")
        differences = first.settings.differences(other.settings)
        if differences:
            raise SummaryMismatch(
                "cannot merge summaries read with other settings: " + "; ".join(differences)
            )
    present = _joined_presence(summaries)
    grouped = first.group_names is not None
    names = sorted({g for s in summaries for g in (s.group_names or ())}) if grouped else None
    index = GroupIndex(names or ())
    table = TotalsTable(len(names) if grouped else 1)
    for s in summaries:
        table.merge(s.table, index.remap(s.group_names) if grouped else None)
    sources = coalesce([src for s in summaries for src in s.sources], lambda a, b: None)
    warnings = tuple(dict.fromkeys(w for s in summaries for w in s.warnings))
    return PerplexitySummary(
        first.settings,
        table,
        tuple(names) if grouped else None,
        tuple(sources),
        warnings,
        present,
        merged_ids(summaries),
    )


class PerplexityBuilder:
    """Folds decoded perplexity blocks into a :class:`PerplexitySummary`, checking row by row
    that a count is carried by every row or by none (the first row decides)."""

    def __init__(
        self, settings: PerplexitySettings, spec: Any, *, grouped: bool, keyed: bool = False
    ) -> None:
        self.settings = settings
        self.spec = spec  # names the fields in messages
        self.index = GroupIndex() if grouped else None
        self.table = TotalsTable(0 if grouped else 1)
        self.present: list[bool | None] = [None, None, None]
        self.first_line: int | None = None  # of the first row, for a share's pattern check
        self.sources: list[Source] = []
        self.rows_of_source = 0
        self.ids = IdLog()
        # the multiset hash of each source's rows, by which a copy in other bytes is known (and
        # with every NLL as float32: a copy written through a float32 column), and the sketch
        # of them, by which an input holding part of another's is
        self.source_print = SourcePrint()
        # each worker's share of the source: its rows and their key, their float32 hashes
        # added up (None when one held rows without it), and their sketches
        self.share_keys: list[tuple[int, tuple[int, bool]]] = []
        self.share_float32: int | None = 0
        self.share_sketches: list[Any] = []
        self.share_filtered = 0  # the shares' sequences left out for the content filter
        # ``keyed``: each identified row's question hash and tokens are kept (``questions``)
        self.keyed = keyed
        self._pending: np.ndarray | None = None
        self._questions: list[np.ndarray] = []
        self._tokens: list[np.ndarray] = []

    def add_ids(self, hashes: Any, lines: Any, questions: Any = None) -> None:
        """Record the ids of the rows of the block about to be added (checked by the reader),
        and when ``keyed`` their ``questions``' hashes."""
        self.ids.add(hashes, lines)
        if self.keyed and questions is not None:
            self._pending = np.asarray(questions, np.uint64)

    def begin_source(self) -> None:
        self.rows_of_source = 0
        self.source_print = SourcePrint()
        self.share_keys = []
        self.share_float32 = 0
        self.share_sketches = []
        self.share_filtered = 0

    def end_source(self, source: Source) -> None:
        made = self.source_print.key()
        mine = [(self.source_print.rows, made)] if made else []
        held = joined_key([*self.share_keys, *mine])
        sketches = [*self.share_sketches, *([self.source_print.sketch()] if made else [])]
        sketch = None
        if sketches and all(s is not None for s in sketches):
            sketch = joined_sketch(sketches)
        float32 = self.source_print.float32
        if float32 is not None and self.share_float32 is not None and self.rows_of_source:
            float32 = (float32 + self.share_float32) % (1 << 64)
        else:
            float32 = None
        self.sources.append(
            replace(
                source,
                rows=self.rows_of_source,
                rows_hash=held,
                float32_hash=float32,
                rows_sketch=sketch,
                content_filtered=(source.content_filtered or 0) + self.share_filtered or None,
            )
        )

    def reserve(self, rows: int) -> None:
        pass

    def _mismatch(self, name: str, path: str, line: Any, has_it: bool) -> InputError:
        return InputError(path, line, self.spec.pattern_broken(name, has_it=has_it))

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        """Fold one block; ``locate(i)`` gives (path, line) of row i for error messages."""
        nll = cols[0]
        n = nll.shape[0]
        pending, self._pending = self._pending, None
        if n == 0:
            return
        if self.first_line is None:
            self.first_line = locate(0)[1]
        for k, (name, col) in enumerate(zip(COUNTS, cols[1:4], strict=True)):
            state = self.present[k]
            if col is None:
                if state:
                    raise self._mismatch(name, *locate(0), has_it=False)
                self.present[k] = False
                continue
            has = col >= 0
            if state is None:
                state = self.present[k] = bool(has[0])
            bad = ~has if state else has
            if bad.any():
                raise self._mismatch(name, *locate(int(np.argmax(bad))), has_it=not state)
        infinite = np.isinf(nll)
        if cols[6] is not None:
            infinite &= cols[6] == 0  # a row whose own sum overflowed is not a given infinity
        ids = None
        groups = 1
        if self.index is not None and keys is not None:
            ids = self.index.of(keys)
            groups = len(self.index)
        self.table.add(cols, infinite, ids, groups)
        self.source_print.add_perplexity_rows(nll, cols[1])
        self.rows_of_source += n
        if pending is not None:
            assert pending.shape[0] == n, "rows without their questions"
            self._questions.append(pending)
            tokens = cols[1]
            self._tokens.append(
                np.full(n, -1, np.int64) if tokens is None else np.asarray(tokens, np.int64)
            )

    def absorb(self, part: PerplexitySummary, path: str, first_line: int | None) -> None:
        """Add a later share of the current source, checking its count pattern against the
        rows before it (``first_line``: its first row's line, to name in the error)."""
        if part.n:
            for k, name in enumerate(COUNTS):
                mine, theirs = self.present[k], part.present[k]
                if mine is not None and mine != theirs:
                    raise self._mismatch(name, path, first_line, has_it=bool(theirs))
                self.present[k] = theirs
            if self.first_line is None:
                self.first_line = first_line
        remap = None
        if self.index is not None:
            remap = self.index.remap(part.group_names or ())
        self.table.merge(part.table, remap)
        self.share_keys += [(s.rows, s.rows_hash) for s in part.sources if s.rows_hash is not None]
        self.share_sketches += [s.rows_sketch for s in part.sources if s.rows]
        self.share_filtered += sum(s.content_filtered or 0 for s in part.sources)
        for s in part.sources:
            if s.rows and (self.share_float32 is None or s.float32_hash is None):
                self.share_float32 = None
            elif s.rows:
                self.share_float32 = (self.share_float32 + s.float32_hash) % (1 << 64)
        self.rows_of_source += part.n

    def summary(self, *, warnings: Iterable[str] = ()) -> PerplexitySummary:
        names = None
        table = self.table
        if self.index is not None:
            names = tuple(sorted(self.index.names))
            order = GroupIndex(names).remap(self.index.names)
            table = TotalsTable(len(names))
            table.merge(self.table, order)
        questions = None
        if self.keyed:
            questions = (
                np.concatenate([np.zeros(0, np.uint64), *self._questions]),
                np.concatenate([np.zeros(0, np.int64), *self._tokens]),
            )
        return PerplexitySummary(
            self.settings,
            table,
            names,
            tuple(self.sources),
            tuple(warnings),
            tuple(self.present),
            self.ids.result(),
            questions=questions,
        )
