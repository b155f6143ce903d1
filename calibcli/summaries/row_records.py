"""The records a summary read from bytes keeps of its rows, read and checked against each other.

A calibration summary records how many rows it holds in several places: its bin table (per
group, bin and answer), its table of distinct confidences, its kept rows, its fingerprint, its
sources' row counts and each source's own bin table. A perplexity summary records them in its
totals (sequences) and its sources. Every figure trusts one of them and the gates another, so
a file edited by hand or damaged, whose records disagree, would report rows that do not exist
or fail inside an estimator: it is refused as damaged instead, naming what disagrees. A record
that a summary written by an older version lacks is not compared. Each check is a few
vectorised passes over the arrays read: loading stays linear in the file's size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibcli.summaries.encoding import SummaryError
from calibcli.summaries.fingerprint import RowFingerprint
from calibcli.summaries.rows import RowColumns

_ANSWERS = ("wrong answers", "right answers")  # the bin table's count columns, in order


def _damaged(what: str) -> SummaryError:
    return SummaryError(f"a damaged calibcli summary ({what})")


def read_kept_rows(spec: Any, arrays: dict[str, np.ndarray], groups: int) -> RowColumns | None:
    """The kept rows a header lists (None when it keeps none), their group ids checked to be
    ids of the summary's ``groups``; SummaryError when they are incomplete or malformed."""
    if spec is None:
        return None
    try:
        right, wrong = arrays[spec["right"]], arrays[spec["wrong"]]
        ids = None
        if "right_groups" in spec:
            ids = (arrays[spec["right_groups"]], arrays[spec["wrong_groups"]])
    except (KeyError, TypeError):
        raise _damaged("its kept rows are incomplete") from None
    if right.ndim != 1 or wrong.ndim != 1:
        raise _damaged("its kept rows have a bad shape")
    if ids is None:
        return RowColumns(right, wrong)
    for values, held in zip((right, wrong), ids, strict=True):
        if held.shape != values.shape:
            raise _damaged("its kept rows and their group ids disagree")
        if held.shape[0] and (int(held.min()) < 0 or int(held.max()) >= groups):
            raise _damaged("its kept rows name groups it does not have")
    return RowColumns(right, wrong, ids[0].astype(np.intp), ids[1].astype(np.intp))


def read_fingerprint(spec: Any, arrays: dict[str, np.ndarray]) -> RowFingerprint:
    """The fingerprint a header records (empty when it records none)."""
    spec = spec or {}
    try:
        rows, total = int(spec.get("rows", 0)), int(spec.get("total", "0"), 16)
        sample = arrays.get(spec.get("sample", ""), np.zeros(0, np.uint64)).astype(np.uint64)
    except (AttributeError, TypeError, ValueError):
        raise _damaged("its fingerprint is malformed") from None
    if rows < 0:
        raise _damaged("its fingerprint counts fewer than no rows")
    return RowFingerprint(rows, total, sample)


# --------------------------------------------------------------------------- agreement


def _group(names: tuple[str, ...] | None, g: int) -> str:
    if names is None:
        return ""
    return f" of group {names[g]!r}" if g < len(names) else f" of group {g + 1}"


def _disagree(first: str, second: str, mine: np.ndarray, theirs: np.ndarray, names: Any) -> None:
    """SummaryError naming where two records of per-group counts disagree, ``mine`` and
    ``theirs`` of shape (groups, 2) (wrong, right answers) or (groups, bins, 2), at the
    coarsest level that shows it: all rows, a group's rows, a group's right or wrong answers,
    one bin's."""
    if np.array_equal(mine, theirs):
        return
    a, b = int(mine.sum()), int(theirs.sum())
    if a != b:
        raise _damaged(f"{first} {a:,} rows but {second} {b:,}")
    cells = mine.reshape(mine.shape[0], -1, 2)
    other = theirs.reshape(cells.shape)
    by_group = (cells.sum(axis=(1, 2)), other.sum(axis=(1, 2)))
    if not np.array_equal(*by_group):
        g = int(np.flatnonzero(by_group[0] != by_group[1])[0])
        raise _damaged(
            f"{first} {int(by_group[0][g]):,} rows{_group(names, g)} but {second} "
            f"{int(by_group[1][g]):,}"
        )
    answers = (cells.sum(axis=1), other.sum(axis=1))
    if not np.array_equal(*answers):
        g, y = (int(i[0]) for i in np.nonzero(answers[0] != answers[1]))
        raise _damaged(
            f"{first} {int(answers[0][g, y]):,} {_ANSWERS[y]}{_group(names, g)} but "
            f"{second} {int(answers[1][g, y]):,}"
        )
    g, k, y = (int(i[0]) for i in np.nonzero(cells != other))
    raise _damaged(
        f"{first} {int(cells[g, k, y]):,} {_ANSWERS[y]} in bin {k + 1} of "
        f"{cells.shape[1]}{_group(names, g)} but {second} {int(other[g, k, y]):,}"
    )


def _distinct_cells(distinct: Any, table: Any) -> np.ndarray:
    """The distinct confidences' counts per (group, bin, answer), binned as the bin table bins
    rows; shape (groups, bins, 2)."""
    from calibcli.metrics import bin_index

    bins = table.bins
    out = np.zeros((distinct.groups * bins, 2), np.int64)
    for y, (values, counts, offsets) in ((1, distinct.right), (0, distinct.wrong)):
        if not values.shape[0]:
            continue
        cell = np.repeat(np.arange(distinct.groups, dtype=np.intp), np.diff(offsets)) * bins
        cell += bin_index(values, table.edges)
        # each group's values rise, so the cells rise too: a cell's count is a difference of
        # running totals (exact integers, where a weighted bincount would add floats)
        if cell.shape[0] > 1 and (cell[1:] < cell[:-1]).any():
            order = np.argsort(cell, kind="stable")
            cell, counts = cell[order], counts[order]
        running = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        bounds = np.searchsorted(cell, np.arange(out.shape[0] + 1), side="left")
        out[:, y] = np.diff(running[bounds])
    return out.reshape(distinct.groups, bins, 2)


def _kept_counts(kept: RowColumns, groups: int) -> np.ndarray:
    """The kept rows per (group, answer), shape (groups, 2)."""
    out = np.zeros((groups, 2), np.int64)
    for y, (values, ids) in enumerate(
        ((kept.wrong, kept.wrong_groups), (kept.right, kept.right_groups))
    ):
        if ids is None:
            out[0, y] = values.shape[0]
        else:
            out[:, y] = np.bincount(ids, minlength=groups)[:groups]
    return out


def _check_sources(sources: Any, total: int, what: str, unit: str = "rows") -> None:
    """Each source's own bin table against its row count, and the sources' rows against the
    summary's ``total`` (``what``: the record that counts it, ``unit``: what it counts). A
    skipped source holds no rows; a byte range of an input records the rows of its range."""
    for s in sources:
        if s.table is not None:
            own = int(s.table.counts[: s.table.groups * s.table.bins].sum())
            if own != s.rows:
                raise _damaged(
                    f"its source {s.display} records {s.rows:,} row{'s' * (s.rows != 1)} "
                    f"but its own bin table counts {own:,}"
                )
    if sources:
        held = sum(s.rows for s in sources)
        if held != total:
            raise _damaged(f"{what} {total:,} {unit} but its sources count {held:,}")


def check_calibration(summary: Any, *, fingerprint_known: bool, table_in_rows: bool) -> None:
    """SummaryError when the records of a calibration summary's rows disagree (see the module
    docstring). ``fingerprint_known``: the header records a fingerprint; ``table_in_rows``: a
    worker's share sent with an empty table, which its kept rows carry."""
    table, kept, names = summary.table, summary.kept, summary.group_names
    if kept is not None and names is not None and kept.n and kept.right_groups is None:
        raise _damaged("its kept rows have no group ids")
    if table_in_rows and not table.groups:
        # a worker's share whose rows carry its table: the parent folds and counts its rows
        # itself, and the share may be taken before its source is recorded
        return
    cells = table.counts[: table.groups * table.bins].reshape(table.groups, table.bins, 2)
    total, what = int(cells.sum()), "its bin table counts"
    distinct = summary.distinct
    if distinct is not None:
        theirs = _distinct_cells(distinct, table)
        _disagree(what, "its table of distinct confidences counts", cells, theirs, names)
    if kept is not None:
        counted = _kept_counts(kept, table.groups)
        _disagree(what, "its kept rows number", cells.sum(axis=1), counted, names)
    printed = summary.fingerprint.rows
    if fingerprint_known and printed != total:
        raise _damaged(f"{what} {total:,} rows but its fingerprint counts {printed:,}")
    _check_sources(summary.sources, total, what)


def check_perplexity(summary: Any) -> None:
    """SummaryError when a perplexity summary's totals count other sequences than its
    sources."""
    sequences = summary.table.ints[: summary.table.groups, 0]
    if (sequences < 0).any():
        raise _damaged("its totals count fewer than no sequences")
    _check_sources(summary.sources, int(sequences.sum()), "its totals count", "sequences")
