"""The calibrate sections of every ``--by`` group at once.

:func:`~calibcli.reports.calibrate.calibration_section` per group costs dozens of numpy calls
on ten-element arrays; with 100,000 groups that is most of the run. Here each figure is
computed for all groups in one vectorised pass over the (groups × bins) tables and the kept
rows (:mod:`calibcli.metrics.grouped`), giving the same sections, notes and closed gates, value
for value. Equal-width bins without a bootstrap only: quantile edges differ per group and
intervals resample each group's rows, so those keep the per-group path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibcli.reports.calibrate import BINNED_GATES, SCALARS, order, row_notes
from calibcli.reports.reliability import count_notes
from calibcli.reports.report import Section

_DECOMPOSITION = (
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
    "brier",
)


def batchable(views: dict[str, Any], *, bins: int, strategy: str, bootstrap: Any) -> bool:
    """Whether :func:`group_sections` serves these groups: equal-width bins on the tables'
    own edges, no bootstrap, every group's rows kept and at least one row in each."""
    from calibcli.metrics import bin_edges

    if strategy != "uniform" or bootstrap is not None or not views:
        return False
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
        smooth_of,
        sorted_columns,
        wilson_interval,
    )

    names = list(views)
    listed = list(views.values())
    columns = [v.columns for v in listed]
    if smooth and reorder_ok:  # as the one-group estimators sort before the smooth ECE
        columns = [sorted_columns(c) for c in columns]
    tables = GroupTables.stack([v.stats for v in listed])
    binned = grouped_binned(tables)
    nll, auroc = grouped_rows(
        [c.conf_correct for c in columns],
        [c.conf_wrong for c in columns],
        sorted_rows=reorder_ok,
    )
    count = tables.count
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = np.where(count > 0, tables.sum_conf / count, 0.0).tolist()
        acc = np.where(count > 0, tables.sum_correct / count, 0.0).tolist()
    lower, upper = (b.tolist() for b in wilson_interval(tables.sum_correct, count))
    medians = _populated_medians(count)
    counts = count.tolist()
    edges = [float(e) for e in listed[0].stats.edges]
    lows, highs = edges[:-1], edges[1:]
    populated = binned["populated_bins"]
    scalars = [k for k in SCALARS if k not in ("smece", "smece_bandwidth", "nll", "auroc")]

    out: dict[str, Section] = {}
    for g, name in enumerate(names):
        n = binned["n"][g]
        section: dict[str, Any] = {"n": n, "bins": bins, "strategy": strategy, "bins_used": bins}
        for key in scalars:
            section[key] = binned[key][g]
        if smooth:
            section["smece"], section["smece_bandwidth"] = smooth_of(columns[g])
        else:
            section["smece"] = section["smece_bandwidth"] = float("nan")
        section["nll"], section["auroc"] = nll[g], auroc[g]
        section["brier_decomposition"] = {
            t: binned[f"brier_decomposition.{t}"][g] for t in _DECOMPOSITION
        }
        k = counts[g]
        section["reliability"] = {
            "bin_lower": list(lows),
            "bin_upper": list(highs),
            "confidence": [c if m else None for c, m in zip(conf[g], k, strict=True)],
            "accuracy": [a if m else None for a, m in zip(acc[g], k, strict=True)],
            "count": k,
            "accuracy_ci": [
                [lo, hi] if m else None for lo, hi, m in zip(lower[g], upper[g], k, strict=True)
            ],
        }
        p = populated[g]
        notes = count_notes(n, p, bins, medians[g], min_bins)
        notes += row_notes(section["nll"], section["auroc"], smooth)
        closed = {}
        if p < min_bins:
            reason = f"only {p} of {bins} bins are populated (minimum {min_bins})"
            closed = dict.fromkeys(BINNED_GATES, reason)
        out[name] = Section(order(section), notes, closed)
    return out


def _populated_medians(count: np.ndarray) -> list[float]:
    """The median count of each row's nonzero counts (as ``np.median`` gives it; rows without
    a nonzero count give nan)."""
    ordered = np.sort(count, axis=1)
    bins = count.shape[1]
    populated = np.count_nonzero(count, axis=1)
    first = bins - populated
    rows = np.arange(count.shape[0])
    low = ordered[rows, np.minimum(first + (populated - 1) // 2, bins - 1)]
    high = ordered[rows, np.minimum(first + populated // 2, bins - 1)]
    return ((low.astype(np.float64) + high) / 2.0).tolist()
