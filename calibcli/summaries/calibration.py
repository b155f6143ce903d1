"""The summary of calibration rows: what reading hands to reporting.

A :class:`CalibrationSummary` holds the settings it was read with, the exact per-bin table (per
``--by`` group), the kept rows when the command needs them, where the rows came from (sources by
content, each with its format, byte range, row count and, without ``--by``, its own table), the
reader's warnings and a fingerprint of the rows. Summaries of disjoint parts of the input merge
(:meth:`CalibrationSummary.merge`) into the summary of the whole: counts, tables and kept rows
are identical to reading the whole in one pass, whatever the split and the merge order of the
tables (kept rows follow the merge order). :class:`CalibrationBuilder` folds decoded blocks into
one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from calibcli.metrics import phase
from calibcli.summaries.fingerprint import RowFingerprint, SourcePrint, calibration_hashes
from calibcli.summaries.ids import IdLog, RowIds, SummaryMismatch, merged_ids
from calibcli.summaries.rows import ColumnBuffer, GroupIndex, RowColumns
from calibcli.summaries.settings import settings_dict, settings_differences
from calibcli.summaries.sources import (
    Source,
    coalesce,
    inspect_mode,
    joined_taking,
    overall_format,
    source_formats,
)
from calibcli.summaries.tables import BinTable

if TYPE_CHECKING:
    from calibcli.summaries.group_views import GroupViews


@dataclass(frozen=True)
class CalibrationSettings:
    """How calibration rows were read: bins and everything that decides which value a row
    gives (fields, format, multiple-choice normalisation, the inspect-ai rule) and its group."""

    bins: int = 10
    confidence_field: str = "confidence"
    correct_field: str = "correct"
    fmt: str = "auto"
    mc_norm: str = "none"
    by: str | None = None
    scorer: str | None = None
    inspect_confidence: str = "sequence"
    choices: str | None = None  # --choices, comma-joined: OpenAI multiple-choice rows' options
    gold_field: str | None = None  # --gold-field: their gold label
    id_field: str | None = None  # --id-field: the field identifying rows

    def __post_init__(self) -> None:
        from calibcli.metrics import check_bins

        check_bins(self.bins)

    def to_dict(self) -> dict[str, Any]:
        return settings_dict(self)

    def differences(self, other: CalibrationSettings) -> list[str]:
        return settings_differences(self, other)


@dataclass(frozen=True, eq=False)
class RowsView:
    """What the estimators read of one set of rows (all rows, one group or one file): exact
    per-bin statistics and, when the rows were kept, every confidence; ``fmt`` the format the
    rows were read in."""

    stats: Any  # calibcli.metrics.core.BinStats
    columns: Any = None  # calibcli.metrics.core.PredictionColumns, or None
    fmt: str = "jsonl"
    moments: Any = None  # calibcli.summaries.moments.RowMoments (one group), when rows are not
    missing: str | None = None  # why the rows are not there (a summary without its table)
    keys: Any = None  # (right keys, wrong keys) of the columns, when the rows were keyed
    bootstrap: Any = None  # calibcli.metrics.PoissonState (one group)

    @property
    def n(self) -> int:
        return int(self.stats.n)

    rows = n


@dataclass(frozen=True, eq=False)
class CalibrationSummary:
    """See the module docstring. ``group_names`` are the ``--by`` group names, sorted, indexing
    the table's groups and the kept rows' group ids (None without ``--by``: one group);
    ``kept`` the kept rows (None when the command needs only the tables).

    A summary written to a file keeps no rows but ``distinct``, the table of distinct
    confidences (:mod:`calibcli.summaries.distinct`), which gives them back up to their order,
    and ``moments`` (:mod:`calibcli.summaries.moments`), which give the NLL and the smooth ECE
    without them; ``missing`` says why the table is not there when it is not. ``bootstrap``
    holds, when asked for, the Poisson bootstrap's replicate sums
    (:class:`~calibcli.metrics.PoissonState`), which merge as the rows do."""

    settings: CalibrationSettings
    table: BinTable
    group_names: tuple[str, ...] | None = None
    kept: RowColumns | None = None
    sources: tuple[Source, ...] = ()
    warnings: tuple[str, ...] = ()
    fingerprint: RowFingerprint = field(default_factory=RowFingerprint)
    row_ids: RowIds | None = None
    distinct: Any = None  # calibcli.summaries.distinct.DistinctTable
    moments: Any = None  # calibcli.summaries.moments.RowMoments
    missing: str | None = None
    bootstrap: Any = None  # calibcli.metrics.PoissonState: replicate sums keyed by row
    mixed: str | None = None  # why the rows are not one model's: every gate on them fails
    single_model: frozenset[str] = frozenset()  # --by groups of one model's rows, under mixed
    groups_known: Any = None  # calibcli.summaries.GroupSources: each --by group's sources
    repeats: str | None = None  # why they repeat questions: an upper-end gate on them fails
    partial: str | None = None  # why they are part of an input's: every gate on them fails
    _views: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    kind = "calibration"

    # ----- what reports read

    @property
    def n(self) -> int:
        return int(self.table.counts[: self.table.groups * self.table.bins].sum())

    rows = n

    @property
    def fmt(self) -> str:
        forced = None if self.settings.fmt == "auto" else self.settings.fmt
        return overall_format(self.sources, forced)

    @property
    def formats(self) -> dict[str, str]:
        return source_formats(self.sources)

    @property
    def inspect_confidence(self) -> str | None:
        """The --inspect-confidence mode the inspect-ai rows took their confidences by, auto
        resolved (:func:`~calibcli.summaries.sources.inspect_mode`; None: not known)."""
        return inspect_mode(self.sources)

    @property
    def stats(self) -> Any:
        """Exact per-bin statistics of every row."""
        return self.pooled().stats

    @property
    def columns(self) -> Any:
        """Every kept confidence (None when the rows were not kept)."""
        return None if self.kept is None else self.kept.columns()

    def pooled(self) -> RowsView:
        """Every row."""
        moments = None if self.moments is None else self.moments.pooled()
        kept = self.kept
        keys = (kept.right_keys, kept.wrong_keys) if kept is not None and kept.keyed else None
        state = None if self.bootstrap is None else self.bootstrap.pooled()
        return RowsView(
            self.table.stats(), self.columns, self.fmt, moments, self.missing, keys, state
        )

    def by_group(self) -> GroupViews | None:
        """One view per ``--by`` group, in name order (None without ``--by``). The groups' kept
        rows are copies, made on the first call and reused: an estimator may sort the pooled
        rows in place afterwards without disturbing them."""
        if self.group_names is None:
            return None
        if "groups" not in self._views:
            self._views["groups"] = self._group_views()
        return self._views["groups"]

    def _group_views(self) -> GroupViews:
        from calibcli.summaries.group_views import GroupViews

        return GroupViews(self)

    groups = property(by_group)

    def by_source(self) -> dict[str, Any]:
        """The per-bin statistics of each source read with rows (display name -> BinStats),
        when the sources kept their own tables; empty otherwise."""
        out: dict[str, Any] = {}
        for s in self.sources:
            if s.table is not None and s.rows and s.skipped is None:
                stats = s.table.stats()
                out[s.display] = stats if s.display not in out else out[s.display].merge(stats)
        return out

    @property
    def per_source(self) -> dict[str, RowsView] | None:
        """One view per source read with rows, keyed by the source as given (None unless the
        sources kept their own tables)."""
        if not any(s.table is not None for s in self.sources):
            return None
        out: dict[str, RowsView] = {}
        for s in self.sources:
            if s.table is not None and s.rows and s.skipped is None:
                out[s.name] = RowsView(s.table.stats(), None, s.format or self.fmt)
        return out

    # ----- merging

    def merge(self, other: CalibrationSummary) -> CalibrationSummary:
        """The summary of both sets of rows (this one's kept rows first)."""
        return merge_calibration([self, other])

    # ----- building from arrays

    @classmethod
    def from_arrays(
        cls,
        confidences: np.ndarray,
        correct: np.ndarray,
        *,
        settings: CalibrationSettings,
        groups: list[str] | None = None,
        keep_rows: bool = True,
        sources: tuple[Source, ...] = (),
        warnings: tuple[str, ...] = (),
    ) -> CalibrationSummary:
        """The summary of validated rows given as arrays (``groups``: each row's group name)."""
        builder = CalibrationBuilder(settings, keep_rows=keep_rows, grouped=groups is not None)
        builder.begin_source()
        conf = np.asarray(confidences, np.float64)
        corr = np.asarray(correct, bool)
        if conf.shape[0]:
            builder.add((conf, corr), list(groups) if groups is not None else None, None)
        builder.end_source(Source("<arrays>", "", None, 0))
        return replace(builder.summary(warnings=warnings), sources=tuple(sources))


_SLICE = 1 << 16  # rows hashed and binned at once by from_columns


def from_columns(
    settings: CalibrationSettings,
    right: np.ndarray,
    wrong: np.ndarray,
    *,
    groups: tuple[str, ...] | None = None,
    right_ids: np.ndarray | None = None,
    wrong_ids: np.ndarray | None = None,
    keys: tuple[np.ndarray, np.ndarray] | None = None,
    sources: tuple[Source, ...] = (),
    warnings: tuple[str, ...] = (),
) -> CalibrationSummary:
    """The summary of kept rows given as the confidences of right and of wrong answers (and,
    with ``groups``, each one's group id), kept in the order given; ``keys`` are the rows'
    (right, wrong) 64-bit keys in the same order, which the Poisson bootstrap draws by."""
    g = 1 if groups is None else len(groups)
    table = BinTable(settings.bins, g)
    fingerprint = RowFingerprint()
    # a slice at a time (the table and the fingerprint are the same whatever the split), so
    # the temporaries of hashing and binning stay the size of a slice
    for values, correct, ids in ((right, True, right_ids), (wrong, False, wrong_ids)):
        for a in range(0, max(values.shape[0], 1), _SLICE):
            part = values[a : a + _SLICE]
            flags = np.full(part.shape[0], correct)
            table.add(part, flags, None if ids is None else ids[a : a + _SLICE], g)
            fingerprint.add(calibration_hashes(part, flags))
    rows = RowColumns(right, wrong, right_ids, wrong_ids, *(keys or (None, None)))
    return CalibrationSummary(settings, table, groups, rows, sources, warnings, fingerprint)


def _copy_table(table: BinTable) -> BinTable:
    out = BinTable(table.bins, 0)
    out.merge(table)
    return out


def _merge_tables(a: BinTable | None, b: BinTable | None) -> BinTable | None:
    if a is None or b is None:
        return None
    out = _copy_table(a)
    out.merge(b)
    return out


def merge_calibration(summaries: list[CalibrationSummary]) -> CalibrationSummary:
    """Merge summaries in the order given (see :meth:`CalibrationSummary.merge`)."""
    first = summaries[0]
    for other in summaries[1:]:
        if other.kind != first.kind:
            raise SummaryMismatch(f"cannot merge a {other.kind} summary into a {first.kind} one")
        differences = first.settings.differences(other.settings)
        if differences:
            raise SummaryMismatch(
                "cannot merge summaries read with other settings: " + "; ".join(differences)
            )
    grouped = first.group_names is not None
    names = sorted({g for s in summaries for g in (s.group_names or ())}) if grouped else None
    index = GroupIndex(names or ())
    table = BinTable(first.settings.bins, len(names) if grouped else 1)
    with phase("merging bin tables", len(summaries)) as advance:
        for done, s in enumerate(summaries, 1):
            table.merge(s.table, index.remap(s.group_names) if grouped else None)
            advance(done)
    rows = None
    if all(s.kept is not None for s in summaries):
        parts = [s.kept for s in summaries]
        right = np.concatenate([p.right for p in parts])
        wrong = np.concatenate([p.wrong for p in parts])
        right_ids = wrong_ids = None
        if grouped:
            maps = [index.remap(s.group_names) for s in summaries]
            right_ids = np.concatenate(
                [m[p.right_groups] for m, p in zip(maps, parts, strict=True)]
            )
            wrong_ids = np.concatenate(
                [m[p.wrong_groups] for m, p in zip(maps, parts, strict=True)]
            )
        rows = RowColumns(right, wrong, right_ids, wrong_ids)
        if all(p.keyed for p in parts):
            rows = replace(
                rows,
                right_keys=np.concatenate([p.right_keys for p in parts]),
                wrong_keys=np.concatenate([p.wrong_keys for p in parts]),
            )
    fingerprint = RowFingerprint()
    for s in summaries:
        fingerprint = fingerprint.merge(s.fingerprint)
    sources = coalesce([src for s in summaries for src in s.sources], _merge_tables)
    warnings = tuple(dict.fromkeys(w for s in summaries for w in s.warnings))
    from calibcli.summaries.parts import merge_row_state

    distinct, moments, missing, bootstrap = merge_row_state(summaries, index, grouped)
    return CalibrationSummary(
        first.settings,
        table,
        tuple(names) if grouped else None,
        rows,
        tuple(sources),
        warnings,
        fingerprint,
        merged_ids(summaries),
        distinct,
        moments,
        missing,
        bootstrap,
    )


class CalibrationBuilder:
    """Folds decoded blocks of calibration rows into a :class:`CalibrationSummary`.

    Rows are folded source by source (:meth:`begin_source`, :meth:`add`, :meth:`end_source`).
    With ``--by`` one grouped table takes every source's rows; without it, with ``per_source``
    each source gets its own table (the summary's table is their exact sum), else one table
    takes them all. Kept rows go to one buffer, in input order; a worker's share of a source
    arrives with :meth:`absorb`.

    With ``--by`` and kept rows, the rows carry the table (``rows_hold_table``): nothing is
    folded while reading, and :meth:`summary` folds every kept row once, into a table of the
    final size with the groups already in name order. The table's sums are exact, so they do
    not depend on the order the rows are folded in; and no second table is ever held: no
    worker's table to receive and merge (a worker sends its rows and group names only, see
    :meth:`share`), no table grown by doubling while the groups arrive, none reordered.
    """

    def __init__(
        self,
        settings: CalibrationSettings,
        *,
        keep_rows: bool,
        grouped: bool,
        per_source: bool = False,
        row_keys: bool = False,
    ) -> None:
        self.settings = settings
        self.keep_rows = keep_rows
        # each kept row's key (the Poisson bootstrap's): an id's hash, or a line made a key
        # with its source's content when the source ends
        self.row_keys = row_keys and keep_rows
        self.keys: ColumnBuffer | None = None
        self._pending_keys: np.ndarray | None = None
        self._keyed_by_line = False
        self._key_start = (0, 0)
        self.per_source = per_source and not grouped
        self.index = GroupIndex() if grouped else None
        self.rows_hold_table = grouped and keep_rows
        self.grouped_table = BinTable(settings.bins, 0) if grouped else None
        self.running = None if grouped or self.per_source else BinTable(settings.bins)
        self.source_table: BinTable | None = None
        self.columns: ColumnBuffer | None = None
        self.group_ids: ColumnBuffer | None = None
        self.fingerprint = RowFingerprint()
        self.sources: list[Source] = []
        self.rows_of_source = 0
        self.shares: list[Source] = []  # the workers' shares of the source, as they recorded it
        self.ids = IdLog()

    def add_ids(self, hashes: Any, lines: Any, questions: Any = None) -> None:
        """Record the ids of the rows of the block about to be added (checked by the reader);
        their ``questions``' hashes (None: the ids') key them with ``row_keys``."""
        self.ids.add(hashes, lines)
        if self.row_keys:
            self._pending_keys = np.asarray(hashes if questions is None else questions, np.uint64)

    def add_lines(self, lines: np.ndarray) -> None:
        """The lines (or hashed locators, uint64) of the rows of the block about to be added,
        which key them unless they have ids."""
        if self.row_keys and self._pending_keys is None:
            self._pending_keys = lines
            self._keyed_by_line = True

    # ----- one source

    def begin_source(self) -> None:
        if self.index is not None:
            self.source_table = None
        else:
            self.source_table = BinTable(self.settings.bins) if self.per_source else self.running
        self.rows_of_source = 0
        self.shares = []
        self._keyed_by_line = False
        self._key_start = (0, 0) if self.keys is None else self.keys.filled()
        self.source_print = SourcePrint()  # the source's own, merged into the summary's

    def end_source(self, source: Source) -> None:
        """Record the source just read (its row count, and its own table with ``per_source``)."""
        if self._keyed_by_line and self.keys is not None:
            from calibcli.summaries.ids import line_keys

            for i in (0, 1):
                lines = self.keys.since(i, self._key_start[i])
                lines[:] = line_keys(source.content, lines)
        table = self.source_table if self.per_source else None
        taken = joined_taking([source, *self.shares])  # its mode, and samples of each
        rows, made = self.rows_of_source, self.source_print
        self.sources.append(replace(source, rows=rows, table=table, **taken, **made.hashes()))
        self.fingerprint = self.fingerprint.merge(made)
        self.source_table = None

    def reserve(self, rows: int) -> None:
        """Hint: about ``rows`` more rows are coming (sizes the row buffers)."""
        if not self.keep_rows:
            return
        if self.columns is None:
            self.columns = ColumnBuffer(rows)
        else:
            self.columns.reserve(rows)

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        """Fold one decoded block: ``cols`` = (confidence float64, correct bool); ``keys`` each
        row's group name under ``--by``. ``locate`` is unused (calibration rows need no
        cross-row check)."""
        conf, corr = cols
        if conf.shape[0] == 0:
            return
        ids = None
        if self.index is not None:
            assert self.grouped_table is not None and keys is not None
            ids = self.index.of(keys)
            if not self.rows_hold_table:
                self.grouped_table.add(conf, corr, ids, len(self.index))
        else:
            assert self.source_table is not None
            self.source_table.add(conf, corr)
        if self.keep_rows:
            if self.columns is None:
                self.columns = ColumnBuffer(1 << 16)
            self.columns.add(conf, corr)
            if ids is not None:
                self._ids().extend(ids[corr], ids[~corr])
            if self.row_keys:
                keys, self._pending_keys = self._pending_keys, None
                assert keys is not None and keys.shape[0] == conf.shape[0], "rows without keys"
                if self.keys is None:
                    self.keys = ColumnBuffer(1 << 16, "uint64")
                self.keys.extend(keys[corr], keys[~corr])
        self.source_print.add_rows(conf, corr)
        self.rows_of_source += conf.shape[0]

    def _ids(self) -> ColumnBuffer:
        if self.group_ids is None:
            self.group_ids = ColumnBuffer(1 << 12, "intp")
        return self.group_ids

    # ----- a worker's share of the current source

    def absorb(self, part: CalibrationSummary, received: bool = False) -> None:
        """Add a summary of a later share of the current source. With ``received``, its kept
        rows (and group ids, in its own numbering) were already written into the buffers'
        next slots by :meth:`claim_rows`."""
        remap = None
        if self.rows_hold_table:  # the share's rows carry its table: folded in summary()
            assert self.index is not None and part.kept is not None
            remap = self.index.remap(part.group_names or ())
        elif self.index is not None:
            assert self.grouped_table is not None
            remap = self.index.remap(part.group_names or ())
            table = self.grouped_table
            first = table.groups == 0 and table.bins == part.table.bins
            if first and bool((remap == np.arange(remap.shape[0])).all()):
                # the first share's table, in the same group ids, is taken over (its summary
                # is not read again): no second table of every group while merging
                self.grouped_table = part.table
            else:
                table.merge(part.table, remap)
        else:
            assert self.source_table is not None
            self.source_table.merge(part.table)
        if self.keep_rows and part.kept is not None:
            if received:
                if remap is not None and self._claimed_ids is not None:
                    for ids in self._claimed_ids:
                        ids[:] = remap[ids]
            else:
                if self.columns is None:
                    self.columns = ColumnBuffer(part.kept.n)
                self.columns.extend(part.kept.right, part.kept.wrong)
                if remap is not None:
                    self._ids().extend(remap[part.kept.right_groups], remap[part.kept.wrong_groups])
        self._claimed_ids = None
        self.shares += part.sources
        self.source_print.absorb(part)
        self.rows_of_source += part.kept.n if self.rows_hold_table else part.n

    _claimed_ids: list[np.ndarray] | None = None

    def claim_rows(self, right: int, wrong: int) -> list[np.ndarray]:
        """Room for a share's kept rows at the end of the buffers, to be received in place:
        [right, wrong] and, under ``--by``, [right ids, wrong ids]."""
        if self.columns is None:
            self.columns = ColumnBuffer(right + wrong)
        out = [self.columns.claim(0, right), self.columns.claim(1, wrong)]
        if self.index is not None:
            ids = [self._ids().claim(0, right), self._ids().claim(1, wrong)]
            self._claimed_ids = ids
            out += ids
        return out

    # ----- the result

    def share(self) -> CalibrationSummary:
        """What a worker sends of its share of a source: :meth:`summary`, except that when the
        rows carry the table (``rows_hold_table``) the table is left empty, for the parent
        folds every row once (:meth:`absorb` takes the share's row count from its rows)."""
        return self.summary(share=True)

    def summary(self, *, warnings: Iterable[str] = (), share: bool = False) -> CalibrationSummary:
        """The summary of every source recorded so far (group names sorted). Under ``--by``
        the builder hands its table over: ask once."""
        rows = None
        if self.keep_rows:
            if self.columns is None:
                right = wrong = np.zeros(0)
            else:
                right, wrong = self.columns.arrays()
            rows = RowColumns(right, wrong)
            if self.row_keys:
                right_keys, wrong_keys = (
                    self.keys.arrays()
                    if self.keys is not None
                    else (np.zeros(0, np.uint64), np.zeros(0, np.uint64))
                )
                rows = replace(rows, right_keys=right_keys, wrong_keys=wrong_keys)
        names = None
        if self.index is not None:
            assert self.grouped_table is not None
            names = tuple(sorted(self.index.names))
            order = GroupIndex(names).remap(self.index.names)  # first-seen id -> sorted id
            if not self.rows_hold_table:
                table = self.grouped_table.reordered(order)
            if rows is not None:
                right_ids, wrong_ids = (
                    self.group_ids.arrays()
                    if self.group_ids is not None
                    else (np.zeros(0, np.intp), np.zeros(0, np.intp))
                )
                rows = replace(rows, right_groups=order[right_ids], wrong_groups=order[wrong_ids])
            if self.rows_hold_table:
                assert rows is not None
                table = BinTable(self.settings.bins, 0)
                if not share:
                    table = BinTable.of_rows(self.settings.bins, len(names), rows)
        elif self.per_source:
            table = BinTable(self.settings.bins)
            for s in self.sources:
                if s.table is not None:
                    table.merge(s.table)
        else:
            assert self.running is not None
            table = self.running
        return CalibrationSummary(
            self.settings,
            table,
            names,
            rows,
            tuple(self.sources),
            tuple(warnings),
            self.fingerprint,
            self.ids.result(),
        )
