"""The calibrate report: the whole estimator family, bootstrap intervals and the gate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calibcli.reports import figures as registry
from calibcli.reports.gate import Gate, upper_bound_reason
from calibcli.reports.reliability import (
    bin_notes,
    empty_notes,
    per_file,
    reliability_fields,
    wilson,
)
from calibcli.reports.report import (
    DEFAULT_MIN_POPULATED_BINS,
    SMOOTH_GROUPS,
    Note,
    Report,
    Section,
    assemble,
    num,
)

CALIBRATION_GATES = tuple(f.key for f in registry.gateable(registry.CALIBRATION))
BINNED_GATES = frozenset(f.key for f in registry.CALIBRATION if f.fails_closed)
# the calibrate section's scalar figures, in report order ("n" opens the section)
SCALARS = tuple(f.key for f in registry.CALIBRATION if f.top_level and f.key != "n")


@dataclass(frozen=True)
class Bootstrap:
    """--ci settings: interval level, resamples, seed and processes (None: automatic; the
    intervals never depend on it)."""

    level: float
    samples: int = 1000
    seed: int = 0
    workers: int | None = None


def bootstrap_workers(requested: int | None, work: int) -> int:
    """Processes for the bootstrap (:func:`calibcli.system.workers`): by default two from
    about 20 million resampled rows; results never depend on it."""
    from calibcli.system import BOOTSTRAP_MIN_WORK, workers

    return workers(requested, work >= BOOTSTRAP_MIN_WORK)


def calibration_section(
    view: Any,
    *,
    bins: int,
    strategy: str,
    min_bins: int,
    bootstrap: Bootstrap | None,
    reorder_ok: bool = False,
    smooth: bool = True,
    upper_gate: bool = False,
) -> Section:
    """Every calibration estimator for one set of rows (``view``: the rows' exact per-bin
    ``stats`` and kept ``columns``), with bootstrap intervals when asked. ``upper_gate``: a gate
    reads the upper ends of the intervals, so too few rows close it
    (:func:`~calibcli.reports.gate.upper_bound_reason`).

    ``reorder_ok`` (the columns may be sorted in place) is passed to
    :func:`calibration_estimates`, but never with a bootstrap: its resamples are drawn
    from the rows as read.
    """
    from calibcli.metrics import DECOMPOSITION_TERMS, BinStats

    columns = view.columns
    n = 0 if columns is None else int(columns.n)
    if n == 0:
        stats = BinStats.empty(bins)
        section: dict[str, Any] = {"n": 0, "bins": bins, "strategy": strategy, "bins_used": bins}
        section.update(dict.fromkeys(SCALARS))
        section["populated_bins"] = 0
        section["brier_decomposition"] = dict.fromkeys((*DECOMPOSITION_TERMS, "brier"))
        section["reliability"] = reliability_fields(stats, *wilson(stats))
        if bootstrap is not None:
            section["ci"] = None
        closed = dict.fromkeys(CALIBRATION_GATES, "no rows were read")
        return Section(order(section), empty_notes(0), closed)

    from calibcli.metrics import calibration_estimates

    est = calibration_estimates(
        columns,
        bins=bins,
        strategy=strategy,
        stats=view.stats,
        reorder_ok=reorder_ok and bootstrap is None,
        smooth=smooth,
    )
    section = {
        "n": n,
        "bins": bins,
        "strategy": est.strategy,
        "bins_used": int(est.bins_used),
        **{name: num(getattr(est, name)) for name in SCALARS},
        "brier_decomposition": {k: num(v) for k, v in est.decomposition.items()},
        "reliability": reliability_fields(est.stats, est.accuracy_ci_lower, est.accuracy_ci_upper),
    }
    notes = bin_notes(est.stats, min_bins)
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
                "exact (--gate-each with --max-smece computes it for every group)",
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
        from calibcli.metrics import bootstrap_intervals

        result = bootstrap_intervals(
            columns,
            bins=bins,
            strategy=strategy,
            level=bootstrap.level,
            samples=bootstrap.samples,
            seed=bootstrap.seed,
            workers=bootstrap_workers(bootstrap.workers, n * bootstrap.samples),
        )
        section["ci"] = {k: [num(lo), num(hi)] for k, (lo, hi) in result.intervals.items()}
    closed = {}
    if est.stats.populated_bins < min_bins:
        reason = (
            f"only {est.stats.populated_bins} of {est.stats.bins} bins are populated "
            f"(minimum {min_bins})"
        )
        closed = dict.fromkeys(BINNED_GATES, reason)
    if upper_gate:
        classes = (("", int(columns.conf_correct.shape[0]), int(columns.conf_wrong.shape[0])),)
        for key in CALIBRATION_GATES:
            why = upper_bound_reason(key, n, classes)
            if why is not None:
                closed[key] = why
    return Section(order(section), notes, closed)


def order(section: dict[str, Any]) -> dict[str, Any]:
    keys = ("n", "bins", "strategy", "bins_used", *SCALARS, "brier_decomposition", "reliability")
    out = {k: section[k] for k in keys}
    if "ci" in section:
        out["ci"] = section["ci"]
    return out


def calibrate_figures(
    summary: Any,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    min_bins: int = DEFAULT_MIN_POPULATED_BINS,
    reorder_ok: bool = False,
) -> dict[str, Any]:
    """The pooled section's figures (as computed, infinities kept) and, under ``--by``, each
    group's under ``groups``: what a recalibration shows of the rows before it."""
    min_bins = min(min_bins, bins)
    views = summary.by_group()  # first: the pooled section may sort the rows in place
    many = views is not None and len(views) > SMOOTH_GROUPS
    options = {"bins": bins, "strategy": strategy, "min_bins": min_bins, "bootstrap": None}
    out = dict(calibration_section(summary.pooled(), reorder_ok=reorder_ok, **options).figures)
    if views is not None:
        out["groups"] = {
            str(name): calibration_section(
                view, reorder_ok=reorder_ok, smooth=not many, **options
            ).figures
            for name, view in views.items()
        }
    return out


def calibrate_report(
    summary: Any,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    min_bins: int = DEFAULT_MIN_POPULATED_BINS,
    bootstrap: Bootstrap | None = None,
    gate: Gate | None = None,
    reorder_ok: bool = False,
    recalibration: Any = None,
) -> Report:
    """The calibrate report: the whole estimator family, bootstrap intervals and the gate.

    The summary's exact per-bin statistics serve uniform bins; the kept rows serve everything
    else. ``reorder_ok=True`` lets the estimators sort the summary's kept rows in place
    (faster, no copies): the command line sets it, since nothing reads their order afterwards.
    With ``recalibration`` (:class:`~calibcli.reports.recalibration.Recalibration`) the
    summary holds the recalibrated rows and the report shows the figures before and after.
    """
    from calibcli.reports.recalibration import recalibration_block

    min_bins = min(min_bins, bins)
    views = summary.by_group()
    upper_gate = bool(gate) and gate.bound == "upper"
    # smece is left out per group above SMOOTH_GROUPS groups, for speed, unless a gate judges
    # it in every group: the user asked for those values
    smooth_each = bool(gate) and gate.each and "smece" in gate.thresholds
    many = views is not None and len(views) > SMOOTH_GROUPS and not smooth_each

    def build(view: Any, group: str | None) -> Section:
        return calibration_section(
            view,
            bins=bins,
            strategy=strategy,
            min_bins=min_bins,
            bootstrap=bootstrap,
            reorder_ok=reorder_ok,
            smooth=group is None or not many,
            upper_gate=upper_gate,
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

    extra: dict[str, Any] = {}
    notes: list[Note] = []
    if recalibration is None:
        extra = per_file(summary, min_bins)
    else:
        notes = [Note("recalibration", text) for text in recalibration.notes]

    def closing(pooled: Section, groups: dict[str, Section] | None) -> dict[str, Any]:
        if recalibration is None:
            return {}
        after = {"groups": {k: g.figures for k, g in (groups or {}).items()}, **pooled.figures}
        return recalibration_block(recalibration, after if groups is not None else pooled.figures)

    return assemble(
        "calibrate",
        summary,
        build,
        gate=gate,
        level=bootstrap.level if bootstrap else None,
        after=bootstrap_settings,
        extra=extra,
        closing=closing,
        notes=notes,
    )
