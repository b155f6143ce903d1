"""The calibrate report: the whole estimator family, bootstrap intervals and the gate."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from calibcli.reports.gate import Gate
from calibcli.reports.reliability import (
    _bin_notes,
    _empty_notes,
    _wilson,
    plot_series,
    reliability_fields,
)
from calibcli.reports.report import (
    BINNED_GATES,
    CALIBRATION_GATES,
    DEFAULT_MIN_POPULATED_BINS,
    SCALARS,
    SMOOTH_GROUPS,
    Note,
    Report,
    Section,
    _num,
    assemble,
)


@dataclass(frozen=True)
class Bootstrap:
    """--ci settings: interval level, resamples, seed and processes (None: automatic; the
    intervals never depend on it)."""

    level: float
    samples: int = 1000
    seed: int = 0
    workers: int | None = None


def _bootstrap_workers(work: int) -> int:
    """Two processes pay off from about 20 million resampled rows; results never depend on it."""
    return min(os.cpu_count() or 1, 2) if work >= 20_000_000 else 1


def calibration_section(
    columns: Any,
    *,
    bins: int,
    strategy: str,
    min_bins: int,
    bootstrap: Bootstrap | None,
    stats: Any = None,
    reorder_ok: bool = False,
    smooth: bool = True,
) -> Section:
    """Every calibration estimator for one set of rows, with bootstrap intervals when asked.

    ``stats`` (the reader's per-bin statistics of the same rows) and ``reorder_ok`` (the columns
    may be sorted in place) are passed to :func:`calibration_estimates`; the columns are never
    reordered when a bootstrap is asked for, because its resamples follow the row order.
    """
    from calibcli.metrics import BinStats
    from calibcli.metrics.estimators import DECOMPOSITION_TERMS

    n = 0 if columns is None else int(columns.n)
    if n == 0:
        stats = BinStats.empty(bins)
        section: dict[str, Any] = {"n": 0, "bins": bins, "strategy": strategy, "bins_used": bins}
        section.update(dict.fromkeys(SCALARS))
        section["populated_bins"] = 0
        section["brier_decomposition"] = dict.fromkeys((*DECOMPOSITION_TERMS, "brier"))
        section["reliability"] = reliability_fields(stats, *_wilson(stats))
        if bootstrap is not None:
            section["ci"] = None
        closed = dict.fromkeys(CALIBRATION_GATES, "no rows were read")
        return Section(_order(section), _empty_notes(0), closed)

    from calibcli.metrics.estimators import calibration_estimates

    est = calibration_estimates(
        columns,
        bins=bins,
        strategy=strategy,
        stats=stats,
        reorder_ok=reorder_ok and bootstrap is None,
        smooth=smooth,
    )
    section = {
        "n": n,
        "bins": bins,
        "strategy": est.strategy,
        "bins_used": int(est.bins_used),
        **{name: _num(getattr(est, name)) for name in SCALARS},
        "brier_decomposition": {k: _num(v) for k, v in est.decomposition.items()},
        "reliability": reliability_fields(est.stats, est.accuracy_ci_lower, est.accuracy_ci_upper),
    }
    notes = _bin_notes(est.stats, min_bins)
    if math.isinf(section["nll"]):
        notes.append(
            Note(
                "nll_infinite",
                "nll is infinite: a confidence of exactly 1 on a wrong answer (or 0 on a right "
                "one); written as null",
                explains=("nll",),
            )
        )
    if not smooth:
        notes.append(
            Note(
                "smooth_skipped",
                f"smece is computed per group for up to {SMOOTH_GROUPS:,} groups (its bandwidth "
                "search costs about a millisecond a group); it is null here, the pooled smece is "
                "exact",
                explains=("smece", "smece_bandwidth"),
            )
        )
    if math.isnan(section["auroc"]):
        notes.append(
            Note(
                "auroc_undefined",
                "auroc is undefined when every answer is right or every answer is wrong; "
                "written as null",
                explains=("auroc",),
            )
        )
    if bootstrap is not None:
        from calibcli.metrics.bootstrap import bootstrap_intervals

        result = bootstrap_intervals(
            columns,
            bins=bins,
            strategy=strategy,
            level=bootstrap.level,
            samples=bootstrap.samples,
            seed=bootstrap.seed,
            workers=bootstrap.workers or _bootstrap_workers(n * bootstrap.samples),
        )
        section["ci"] = {k: [_num(lo), _num(hi)] for k, (lo, hi) in result.intervals.items()}
    closed = {}
    if est.stats.populated_bins < min_bins:
        reason = (
            f"only {est.stats.populated_bins} of {est.stats.bins} bins are populated "
            f"(minimum {min_bins})"
        )
        closed = dict.fromkeys(BINNED_GATES, reason)
    return Section(_order(section), notes, closed)


def _order(section: dict[str, Any]) -> dict[str, Any]:
    keys = ("n", "bins", "strategy", "bins_used", *SCALARS, "brier_decomposition", "reliability")
    out = {k: section[k] for k in keys}
    if "ci" in section:
        out["ci"] = section["ci"]
    return out


def calibrate_report(
    data: Any,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    min_bins: int = DEFAULT_MIN_POPULATED_BINS,
    bootstrap: Bootstrap | None = None,
    gate: Gate | None = None,
    reorder_ok: bool = False,
) -> Report:
    """The calibrate report: the whole estimator family, bootstrap intervals and the gate.

    The reader's pooled per-bin statistics (``data.stats``, and each group's) are reused for
    uniform bins rather than rebuilt from the columns. ``reorder_ok=True`` says the caller owns
    the columns in ``data`` and lets the estimators sort them in place (faster, no copies); the
    command line sets it, since the reader's buffers are used for nothing else afterwards.
    """
    min_bins = min(min_bins, bins)
    many = data.groups is not None and len(data.groups) > SMOOTH_GROUPS

    def build(d: Any) -> Section:
        return calibration_section(
            d.columns,
            bins=bins,
            strategy=strategy,
            min_bins=min_bins,
            bootstrap=bootstrap,
            stats=getattr(d, "stats", None),
            reorder_ok=reorder_ok,
            smooth=d is data or not many,
        )

    def bootstrap_settings(pooled: Section) -> dict[str, Any]:
        if bootstrap is None:
            return {}
        return {
            "ci": pooled.figures.get("ci"),
            "ci_level": bootstrap.level,
            "bootstrap_samples": bootstrap.samples,
            "seed": bootstrap.seed,
        }

    report = assemble(
        "calibrate",
        data,
        build,
        gate=gate,
        level=bootstrap.level if bootstrap else None,
        after=bootstrap_settings,
    )
    report.series.update(plot_series(data, report, min_bins))
    return report
