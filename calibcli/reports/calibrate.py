"""The calibrate report: the whole estimator family, bootstrap intervals and the gate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calibcli.reports import figures as registry
from calibcli.reports.gate import (
    DEBIASED,
    Gate,
    debiased_bins,
    debiased_reason,
    floor_reason,
    upper_bound_reason,
    with_floors,
)
from calibcli.reports.group_repeats import own_repeats
from calibcli.reports.reliability import (
    bin_notes,
    bin_wilson,
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
    intervals never depend on it), and the resampling scheme."""

    level: float
    samples: int = 1000
    seed: int = 0
    workers: int | None = None
    scheme: str = "multinomial"  # or "poisson": row weights keyed by row, mergeable


UPPER_WITHOUT_GATE = (
    "--gate-on upper reads a {gates} at the upper end of its interval, and none is given: "
    "nothing would be checked (--ci LEVEL adds the intervals alone)"
)


GATE_EACH_WITHOUT_GATE = (
    "--gate-each applies the --max-* and --min-* gates to every group; give one"
)


def calibrate_options(
    *,
    grouped: bool,
    gate_each: bool,
    limits: dict[str, float] | None,
    gate_on: str,
    ci: float | None,
    bootstrap: int | None,
    seed: int | None,
    floors: dict[str, int] | None = None,
) -> float | None:
    """The interval level a calibrate run uses, once its options were checked together before
    any row is read: a gate on the upper end asks for 95% intervals unless ``ci`` says
    otherwise. ValueError says what cannot work, in the command line's words (the Python API's
    keywords carry the same names)."""
    if gate_each and not grouped:
        raise ValueError("--gate-each needs --by FIELD")
    if gate_each and not (limits or floors):
        raise ValueError(GATE_EACH_WITHOUT_GATE)
    if gate_on == "upper" and not limits:
        raise ValueError(UPPER_WITHOUT_GATE.format(gates="--max-* gate"))
    if gate_on == "upper" and ci is None:
        ci = 0.95
    if ci is None and (bootstrap is not None or seed is not None):
        raise ValueError("--bootstrap and --seed set up --ci intervals; give --ci LEVEL too")
    return ci


def bootstrap_for(
    ci: float | None, samples: int | None, seed: int | None, workers: int | None, scheme: str
) -> Bootstrap | None:
    """The bootstrap that ``ci`` asks for (None without an interval level): 1,000 resamples
    and seed 0 unless given."""
    if ci is None:
        return None
    return Bootstrap(ci, samples or 1000, seed or 0, workers, scheme)


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
    floor: int | None = None,
    repeats: int | None = None,
) -> Section:
    """Every calibration estimator for one set of rows (``view``: the rows' exact per-bin
    ``stats`` and kept ``columns``), with bootstrap intervals when asked. ``upper_gate``: a gate
    reads the upper ends of the intervals, so too few rows close it
    (:func:`~calibcli.reports.gate.upper_bound_reason`). ``repeats``: the rows' runs scored
    each question up to that many times (their epochs), so those floors, and ``floor`` (the
    least number of rows a gate asks), count questions (:func:`_gate_counts`).

    ``reorder_ok`` (the columns may be sorted in place) is passed to
    :func:`calibration_estimates`, but never with a bootstrap: its resamples are drawn
    from the rows as read.
    """
    from calibcli.metrics import DECOMPOSITION_TERMS, BinStats

    columns = view.columns
    if columns is None and view.n and getattr(view, "moments", None) is not None:
        section = _section_from_sums(
            view, bins=bins, min_bins=min_bins, smooth=smooth, bootstrap=bootstrap, repeats=repeats
        )
        closed = _gate_counts(view, upper_gate=upper_gate, floor=floor, repeats=repeats)
        return Section(section.figures, section.notes, {**closed, **section.closed})
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
        "reliability": reliability_fields(est.stats, *_accuracy_ci(est, repeats)),
    }
    notes = bin_notes(est.stats, min_bins, repeats) + row_notes(
        section["nll"], section["auroc"], smooth
    )
    if bootstrap is not None:
        intervals, more = _intervals(view, columns, bootstrap, bins, strategy, n)
        section["ci"] = intervals
        notes += more
    closed = binned_closed(est.stats.count, min_bins, repeats)
    counted = _gate_counts(view, upper_gate=upper_gate, floor=floor, repeats=repeats)
    return Section(order(section), notes, {**counted, **closed})


def binned_closed(count: Any, min_bins: int, repeats: int | None = None) -> dict[str, str]:
    """The binned gates that fail closed on bins holding ``count`` rows each: every one on
    fewer than ``min_bins`` populated bins, and the debiased RMSCE's on too few bins of 2 or
    more rows or too many rows in bins of one, counted in questions on rows that repeat them
    (``repeats``: :func:`~calibcli.reports.gate.debiased_reason`)."""
    populated, carried, rows, lone = debiased_bins(count, repeats)
    if populated < min_bins:
        reason = f"only {populated} of {len(count)} bins are populated (minimum {min_bins})"
        return dict.fromkeys(BINNED_GATES, reason)
    why = debiased_reason(carried, populated, rows, min_bins, repeats=repeats, lone=lone)
    return {} if why is None else {DEBIASED: why}


def _accuracy_ci(est: Any, repeats: int | None) -> tuple[Any, Any]:
    """Each bin's Wilson interval of the estimates, counted in questions on rows that repeat
    them (:func:`~calibcli.reports.reliability.wilson`)."""
    if repeats:
        return wilson(est.stats, repeats)
    return est.accuracy_ci_lower, est.accuracy_ci_upper


def _gate_counts(
    view: Any, *, upper_gate: bool, floor: int | None, repeats: int | None
) -> dict[str, str]:
    """The gates that fail closed on too few rows (``upper_gate``: too few for an interval's
    upper end), or, when the rows repeat their questions (``repeats``: the most rows a question
    holds), too few questions: the bootstrap draws whole questions, and ``floor`` (the least
    rows a gate asks, --min-rows) counts each once. With the rows' question keys the counts are
    exact; without them (a summary file's rows) each question is taken to hold ``repeats``
    rows, which gives as few questions as the rows can hold."""
    if not upper_gate and (floor is None or not repeats):
        return {}
    n = int(view.stats.n)
    columns = view.columns
    if columns is not None:
        right = int(columns.conf_correct.shape[0])
    else:
        right = round(float(view.stats.sum_correct.sum()))
    counts, exact = (n, right, n - right), True
    if repeats:
        if view.keys is not None:
            from calibcli.metrics import question_counts

            q = question_counts(*view.keys)
            counts = (q.questions, q.right, q.wrong)
        else:
            counts, exact = tuple(-(-k // repeats) for k in counts), False
    closed: dict[str, str] = {}
    if upper_gate:
        for key in CALIBRATION_GATES:
            why = upper_bound_reason(
                key, counts[0], (("", counts[1], counts[2]),), questions=bool(repeats)
            )
            if why is not None:
                closed[key] = why
    if floor is not None and repeats:
        why = floor_reason(n, counts[0], floor, exact=exact)
        if why is not None:
            closed["n"] = why
    return closed


def row_notes(nll: float, auroc: float, smooth: bool) -> list[Note]:
    """The warnings about the figures read from the rows: an infinite NLL, a smooth ECE left
    out (``smooth=False``), an undefined AUROC."""
    notes = []
    if math.isinf(nll):
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
    if math.isnan(auroc):
        notes.append(
            Note(
                "auroc_undefined",
                "auroc is undefined when every answer is right or every answer is wrong; "
                "written as null",
                explains=("auroc",),
            )
        )
    return notes


ROW_INTERVALS = ("auroc", "smece", "smece_bandwidth")
"""Figures whose bootstrap intervals need every row: a summary's replicate sums lack them."""


def _intervals(
    view: Any, columns: Any, bootstrap: Bootstrap, bins: int, strategy: str, n: int
) -> tuple[dict[str, Any], list[Note]]:
    """The ``ci`` object of a section, and its notes: multinomial resamples of the rows, or
    Poisson weights keyed by row, from the rows and their keys or from a summary's replicate
    sums (which give no interval for the figures that need every row)."""
    workers = bootstrap_workers(bootstrap.workers, n * bootstrap.samples)
    options = {"level": bootstrap.level, "samples": bootstrap.samples, "seed": bootstrap.seed}
    notes: list[Note] = []
    if bootstrap.scheme == "multinomial":
        from calibcli.metrics import bootstrap_intervals

        # keyed rows are keyed by question: the epochs of a sample are drawn together
        result = bootstrap_intervals(
            columns,
            bins=bins,
            strategy=strategy,
            workers=workers,
            clusters=view.keys,
            **options,
        ).intervals
    elif view.keys is not None:
        from calibcli.metrics import poisson_intervals

        right_keys, wrong_keys = view.keys
        result = poisson_intervals(
            columns,
            right_keys,
            wrong_keys,
            bins=bins,
            strategy=strategy,
            workers=workers,
            **options,
        ).intervals
    else:
        state = view.bootstrap
        if state.bins != bins or strategy != "uniform":
            # its sums are binned as the summary was: other bins would take these bins'
            # intervals beside the figures of theirs
            raise ValueError(
                f"a summary's Poisson replicate sums hold {state.bins} uniform bins, not "
                f"{bins} {strategy} bins: measure it with its own bins, or summarize again"
            )
        result = state.intervals(bootstrap.level)
        notes.append(
            Note(
                "summary_intervals",
                "the intervals come from the summary's Poisson replicate sums, which hold no "
                "interval for auroc or smece (they need every row): written as null",
            )
        )
    out = {k: [num(lo), num(hi)] for k, (lo, hi) in result.items()}
    if view.keys is None and bootstrap.scheme == "poisson":
        out.update({k: [None, None] for k in ROW_INTERVALS if k in out})
    return out, notes


ROW_FIGURES = ("auroc",)
"""Figures that need every row (their order), which a summary's sums cannot give."""


def _section_from_sums(
    view: Any,
    *,
    bins: int,
    min_bins: int,
    smooth: bool,
    bootstrap: Bootstrap | None,
    repeats: int | None = None,
) -> Section:
    """The figures of rows known by their sums alone (a summary file without its table of
    distinct confidences): the binned ones from the exact per-bin statistics, the NLL and the
    smooth ECE from the summary's row sums; AUROC null with the reason."""
    from calibcli.metrics import binned_scalars

    stats = view.stats
    binned = binned_scalars(stats)
    smece, bandwidth = view.moments.smooth_ece() if smooth else (math.nan, math.nan)
    lower, upper = bin_wilson(stats.sum_correct, stats.count, repeats)
    section: dict[str, Any] = {
        "n": int(stats.n),
        "bins": int(stats.bins),  # the figures' bins: the summary's, whatever was asked
        "strategy": "uniform",
        "bins_used": int(stats.bins),
        **{k: num(v) for k, v in binned.items() if k in SCALARS},
        "populated_bins": int(stats.populated_bins),
        "smece": smece,
        "smece_bandwidth": bandwidth,
        "nll": view.moments.log_loss(int(stats.n)),
        "auroc": None,
        "brier_decomposition": {k: num(v) for k, v in stats.decomposition().items()},
        "reliability": reliability_fields(stats, lower, upper),
    }
    notes = bin_notes(stats, min_bins, repeats)
    notes.append(
        Note(
            "needs_rows",
            f"auroc needs every row, and this summary holds only their sums: {view.missing}",
            explains=ROW_FIGURES,
        )
    )
    if math.isinf(section["nll"]):
        notes.append(
            Note(
                "nll_infinite",
                "nll is infinite: a confidence of exactly 1 on a wrong answer (or 0 on a right "
                "one); written as null",
                explains=("nll",),
            )
        )
    if bootstrap is not None:
        section["ci"], more = _intervals(view, None, bootstrap, bins, "uniform", int(stats.n))
        notes += more
    closed = dict.fromkeys(ROW_FIGURES, f"it needs every row; {view.missing}")
    closed.update(binned_closed(stats.count, min_bins, repeats))
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
    group's under ``groups``: what a recalibration shows of the rows before it (on rows that
    repeat their questions, each group's counted by its own runs' repeats: own_repeats)."""
    from calibcli.summaries import most_epochs

    min_bins = min(min_bins, bins)
    views = summary.by_group()  # first: the pooled section may sort the rows in place
    many = views is not None and len(views) > SMOOTH_GROUPS
    repeats = most_epochs(getattr(summary, "sources", ()))
    options = {"bins": bins, "strategy": strategy, "min_bins": min_bins, "bootstrap": None}
    pooled = calibration_section(
        summary.pooled(), reorder_ok=reorder_ok, repeats=repeats, **options
    )
    out = dict(pooled.figures)
    if views is not None:
        if not all(type(name) is str for name in views):
            views = {str(name): view for name, view in views.items()}
        own = {name: own_repeats(summary, name, repeats) for name in views}
        options.update(reorder_ok=reorder_ok, smooth=not many)
        batch = None if any(own.values()) else _group_sections(views, **options)
        if batch is None:
            batch = {n: calibration_section(v, repeats=own[n], **options) for n, v in views.items()}
        out["groups"] = {name: section.figures for name, section in batch.items()}
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
    from calibcli.reports.recalibration import carried, recalibration_block
    from calibcli.summaries import most_epochs

    summary = carried(summary, recalibration)
    min_bins = min(min_bins, bins)
    views = summary.by_group()
    upper_gate = bool(gate) and gate.bound == "upper"
    # smece is left out per group above SMOOTH_GROUPS groups, for speed, unless a gate judges
    # it in every group: the user asked for those values
    smooth_each = bool(gate) and gate.each and "smece" in gate.thresholds
    many = views is not None and len(views) > SMOOTH_GROUPS and not smooth_each
    # rows of a run that scored each question several times: the gates count questions
    repeats = most_epochs(getattr(summary, "sources", ()))
    floor = gate.minimums.get("n") if gate else None
    floors: dict[str | None, Any] = {}  # each section's rare-class floor, by group

    def build(view: Any, group: str | None) -> Section:
        own = own_repeats(summary, group, repeats)  # a group's own runs, where known
        section = calibration_section(
            view,
            bins=bins,
            strategy=strategy,
            min_bins=min_bins,
            bootstrap=bootstrap,
            reorder_ok=reorder_ok,
            smooth=group is None or not many,
            upper_gate=upper_gate,
            floor=floor,
            repeats=own,
        )
        if not upper_gate:
            return section
        from calibcli.reports.calibrate_groups import rare_floor

        found, closed = rare_floor(view, gate, bootstrap.level, bins, strategy, own)
        floors[group] = found
        return Section(section.figures, section.notes, {**closed, **section.closed})

    def build_groups(views: dict[str, Any]) -> dict[str, Section] | None:
        if upper_gate:
            return None
        return _group_sections(
            views,
            bins=bins,
            strategy=strategy,
            min_bins=min_bins,
            bootstrap=bootstrap,
            reorder_ok=reorder_ok,
            smooth=not many,
            repeats=repeats,
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
    # a summary file without its table: its per-bin sums are for its own bins alone
    held, missing = getattr(summary, "settings", None), getattr(summary, "missing", None)
    if missing and getattr(summary, "kept", None) is None and held.bins != bins:
        notes.append(
            Note(
                "summary_bins",
                f"the binned figures use the summary's {held.bins} bins, not {bins}: it holds no "
                f"table of distinct confidences to rebuild others from ({missing})",
            )
        )

    def closing(pooled: Section, groups: dict[str, Section] | None) -> dict[str, Any]:
        if recalibration is None:
            return {}
        after = {"groups": {k: g.figures for k, g in (groups or {}).items()}, **pooled.figures}
        return recalibration_block(recalibration, after if groups is not None else pooled.figures)

    closed = recalibration.closed(gate.thresholds) if recalibration and gate else None
    report = assemble(
        "calibrate",
        summary,
        build,
        gate=gate,
        closed=closed,
        level=bootstrap.level if bootstrap else None,
        after=bootstrap_settings,
        extra=extra,
        closing=closing,
        notes=notes,
        build_groups=build_groups,
    )
    if not any(f is not None for f in floors.values()):
        return report
    body, failures = with_floors(
        report.body["gate"], report.failures, gate, floors, bootstrap.level
    )
    return Report({**report.body, "gate": body}, failures)


def _group_sections(
    views: dict[str, Any],
    *,
    bootstrap: Bootstrap | None,
    repeats: int | None = None,
    **options: Any,
) -> dict[str, Section] | None:
    """Every group's section in one vectorised pass, when the groups allow it (else None):
    not on rows that repeat their questions (``repeats``), whose bins count questions."""
    from calibcli.reports.calibrate_groups import batchable, group_sections

    if repeats or not batchable(
        views, bins=options["bins"], strategy=options["strategy"], bootstrap=bootstrap
    ):
        return None
    return group_sections(views, **options)
