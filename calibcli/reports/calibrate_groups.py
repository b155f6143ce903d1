"""The calibrate sections of every ``--by`` group at once.

:func:`~calibcli.reports.calibrate.calibration_section` per group costs dozens of numpy calls
on ten-element arrays; with 100,000 groups that is most of the run. Here each figure is
computed for all groups in one vectorised pass over the (groups × bins) tables and the kept
rows (:mod:`calibcli.metrics.grouped`), giving the same sections, notes and closed gates, value
for value. Equal-width bins without a bootstrap only: quantile edges differ per group and
intervals resample each group's rows, so those keep the per-group path.

And each section's rare-class floor for an upper-end gate (:func:`rare_floor`), which that
path takes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibcli.reports.calibrate import SCALARS, binned_closed, row_notes
from calibcli.reports.gate import BOTH_CLASSES, MIN_UPPER_CLASS, Gate
from calibcli.reports.group_table import (
    CHUNK,
    DECOMPOSITION,
    GroupSections,
    GroupTable,
    bin_figures,
)
from calibcli.reports.reliability import count_notes
from calibcli.reports.report import Section


def batchable(views: dict[str, Any], *, bins: int, strategy: str, bootstrap: Any) -> bool:
    """Whether :func:`group_sections` serves these groups: equal-width bins on the tables'
    own edges, no bootstrap, every group's rows kept and at least one row in each."""
    from calibcli.metrics import bin_edges

    if strategy != "uniform" or bootstrap is not None or not views:
        return False
    tables = getattr(views, "tables", None)  # a summary's GroupViews: its arrays, no views
    if tables is not None:
        rows = views.rows()
        if rows is None or tables.count.shape[1] != bins:
            return False
        if not (views.edges == bin_edges(bins)).all():
            return False
        counts = tables.count.sum(axis=1)
        return bool((counts > 0).all() and (counts == rows).all())
    listed = list(views.values())
    if any(v.columns is None for v in listed):
        return False
    stats = [v.stats for v in listed]
    if any(s.count.shape[0] != bins for s in stats):
        return False
    edges = np.concatenate([s.edges for s in stats]).reshape(len(stats), bins + 1)
    if not (edges == bin_edges(bins)).all():
        return False
    counts = np.concatenate([s.count for s in stats]).reshape(len(stats), bins).sum(axis=1)
    rows = np.fromiter((v.columns.n for v in listed), dtype=np.int64, count=len(listed))
    return bool((counts > 0).all() and (counts == rows).all())


def group_sections(
    views: dict[str, Any],
    *,
    bins: int,
    strategy: str,
    min_bins: int,
    reorder_ok: bool,
    smooth: bool,
) -> dict[str, Section]:
    """The calibrate section of every group (as ``calibration_section`` builds one without a
    bootstrap or an upper gate), for views that :func:`batchable` accepts."""
    from calibcli.metrics import (
        GroupTables,
        grouped_binned,
        grouped_rows,
        grouped_rows_of,
        smooth_of,
        sorted_columns,
    )

    names = list(views)
    whole = getattr(views, "tables", None) is not None  # a summary's GroupViews
    columns: list = []  # each group's PredictionColumns, when needed
    if not whole:
        columns = [v.columns for v in views.values()]
    elif smooth:
        columns = [views.view(g).columns for g in range(len(names))]
    if smooth and reorder_ok:  # as the one-group estimators sort before the smooth ECE
        columns = [sorted_columns(c) for c in columns]
    if whole:  # each group's columns (sorted in place above) are slices of these arrays
        tables = views.tables
        nll, auroc = grouped_rows_of(
            views.right, views.right_starts, views.wrong, views.wrong_starts, sorted_rows=reorder_ok
        )
        edges = [float(e) for e in views.edges]
    else:
        listed = list(views.values())
        tables = GroupTables.stack([v.stats for v in listed])
        nll, auroc = grouped_rows(
            [c.conf_correct for c in columns],
            [c.conf_wrong for c in columns],
            sorted_rows=reorder_ok,
        )
        edges = [float(e) for e in listed[0].stats.edges]
    binned = grouped_binned(tables)
    count = tables.count
    bin_tables = {"count": count, "correct": tables.sum_correct, "sum_conf": tables.sum_conf}
    # each bin's mean confidence, accuracy and Wilson bounds are made a slice of groups at a
    # time (here to check that every populated bin's are finite, then as they are written)
    finite_bins = True
    for a in range(0, count.shape[0], CHUNK):
        b = min(a + CHUNK, count.shape[0])
        populated_mask = count[a:b] > 0
        finite_bins = finite_bins and all(
            bool(np.isfinite(np.where(populated_mask, values, 0.0)).all())
            for values in bin_figures(bin_tables, a, b).values()
        )
    medians = _populated_medians(count)
    carried = _carried(count)
    populated = binned["populated_bins"]
    groups = len(names)

    columns_of: dict[str, list] = {k: binned[k] for k in SCALARS if k in binned}
    if smooth:
        columns_of["smece"], columns_of["smece_bandwidth"] = smooth_of(columns)
    else:
        columns_of["smece"] = columns_of["smece_bandwidth"] = [math.nan] * groups
    columns_of["nll"], columns_of["auroc"] = nll, auroc
    decomposition = [binned[f"brier_decomposition.{t}"] for t in DECOMPOSITION]
    tight = [columns_of[k] for k in SCALARS if k in binned] + decomposition
    # figures whose only non-finite values can be these top-level ones skip the strict-JSON
    # walk of every value (each group's other values were just checked finite here)
    loose = tuple(k for k in SCALARS if k not in binned)
    checked = finite_bins and all(bool(np.isfinite(a).all()) for a in tight)

    scalars = {"n": binned["n"], **{k: columns_of[k] for k in SCALARS}}
    terms = dict(zip(DECOMPOSITION, decomposition, strict=True))
    table = GroupTable(
        names, scalars, terms, bin_tables, bins=bins, strategy=strategy, edges=edges, loose=loose
    )

    # the notes and closed gates of a group depend on a few of its counts, shared by many
    # groups: each distinct set is made once, from the first group that has it
    codes, firsts = _first_appearance(
        np.column_stack(
            [
                np.asarray(binned["n"], np.int64),
                np.asarray(populated, np.int64),
                (2.0 * np.asarray(medians)).astype(np.int64),  # a median count: k or k + 1/2
                np.asarray(carried, np.int64),
                np.isinf(np.asarray(nll, np.float64)),
                np.isnan(np.asarray(auroc, np.float64)),
            ]
        )
    )
    notes_of: list[list] = []
    closed_of: list[dict[str, str]] = []
    for g in firsts:  # codes run 0, 1, 2, ... in order of first appearance
        n, p, median = binned["n"][g], populated[g], medians[g]
        notes_of.append(
            count_notes(n, p, bins, median, min_bins, carried=carried[g])
            + row_notes(nll[g], auroc[g], smooth)
        )
        closed_of.append(binned_closed(count[g], min_bins))
    return GroupSections(names, table, codes, notes_of, closed_of, whole=checked)


def _first_appearance(rows: np.ndarray) -> tuple[list[int], list[int]]:
    """Each row's code, the distinct rows numbered 0, 1, 2, ... in order of first appearance,
    and the index of each code's first row."""
    if not rows.shape[0]:
        return [], []
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(first.shape[0], np.intp)
    rank[order] = np.arange(first.shape[0])
    return rank[inverse.reshape(-1)].tolist(), first[order].tolist()


def _carried(count: np.ndarray) -> list[int]:
    """How many bins of each row of counts hold 2 or more rows, a slice of rows at a time."""
    out: list[int] = []
    for a in range(0, count.shape[0], CHUNK):
        out += np.count_nonzero(count[a : a + CHUNK] >= 2, axis=1).tolist()
    return out


def _populated_medians(count: np.ndarray) -> list[float]:
    """The median count of each row's nonzero counts (as ``np.median`` gives it; rows without
    a nonzero count give nan), a slice of rows at a time (small temporaries)."""
    out: list[float] = []
    for a in range(0, count.shape[0], CHUNK):
        out += _medians(count[a : a + CHUNK])
    return out


def _medians(count: np.ndarray) -> list[float]:
    """:func:`_populated_medians` of a slice of rows."""
    ordered = np.sort(count, axis=1)
    bins = count.shape[1]
    populated = np.count_nonzero(count, axis=1)
    first = bins - populated
    rows = np.arange(count.shape[0])
    low = ordered[rows, np.minimum(first + (populated - 1) // 2, bins - 1)]
    high = ordered[rows, np.minimum(first + populated // 2, bins - 1)]
    return ((low.astype(np.float64) + high) / 2.0).tolist()


def rare_floor(
    view: Any, gate: Gate, level: float, bins: int, strategy: str, repeats: int | None
) -> tuple[Any, dict[str, str]]:
    """The rare-class floor of the upper-end checks on ``view``'s rows that do not need both
    classes (:func:`~calibcli.metrics.rare_class_floor`, counted as the closed upper-end checks
    count them: in questions when the rows repeat them), or None when the rarer class holds
    :data:`~calibcli.reports.gate.MIN_UPPER_CLASS` or more; and those checks failing closed
    on rows known by their sums alone, where no floor can be made."""
    from calibcli.metrics import rare_class_floor, rarer_class

    keys = tuple(k for k in gate.thresholds if k not in BOTH_CLASSES)
    if not keys or not view.n:
        return None, {}
    if view.columns is None:
        right = round(float(view.stats.sum_correct.sum()))
        if rarer_class(right, view.n - right, level=level, least=MIN_UPPER_CLASS) is None:
            return None, {}
        why = (
            f"fewer than {MIN_UPPER_CLASS} right or wrong answers, and the rows are known by "
            f"their sums alone ({view.missing}): no rare-class floor can be made for the "
            "upper end"
        )
        return None, dict.fromkeys(keys, why)
    questions = view.keys if repeats else None
    found = rare_class_floor(
        view.columns,
        keys,
        level=level,
        least=MIN_UPPER_CLASS,
        bins=bins,
        strategy=strategy,
        questions=questions,
        per_question=repeats,
    )
    return found, {}
