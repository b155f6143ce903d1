"""The comparison report (``calibcli compare BASE NEW``): every calibration figure of both
models on the same questions, the difference NEW − BASE with a paired bootstrap interval,
McNemar's exact test of accuracy and, when both sides share every answer's correctness,
DeLong's test of AUROC.

Rows are matched by id (:func:`calibcli.summaries.match`); the statistics are
:mod:`calibcli.metrics.paired`'s. Sides that are runs of different tasks, or were graded by
different scorers, are said to be, and every gate check fails closed on them
(:mod:`~calibcli.reports.compare_matching`). A regression gate (``--max-increase ece=0.01``)
checks the difference — by default the upper end of its interval, so a small evaluation
cannot pass by luck — against a non-inferiority margin: NEW may be worse than BASE by at most
the margin. On the figures sampling noise inflates (ECE, MCE, RMSCE, smECE, the one-bin ECE)
that end carries BASE's bias allowance
(:func:`~calibcli.reports.compare_sides.base_allowance`): a calibrated BASE reads high and
would pull the difference toward 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calibcli.reports import figures as registry
from calibcli.reports.calibrate import UPPER_WITHOUT_GATE, bootstrap_workers
from calibcli.reports.compare_matching import MAX_UNMATCHED_SHARE as MAX_UNMATCHED_SHARE
from calibcli.reports.compare_matching import check_matching as check_matching
from calibcli.reports.compare_matching import sides_apart
from calibcli.reports.compare_notes import GROUP_KINDS, few_bins, infinite_notes, undefined_auroc
from calibcli.reports.compare_sides import (
    WAYS,
    accuracy_difference,
    allowance_keys,
    base_allowance,
    each_side,
    floor_keys,
    in_one_order_each,
    new_floor,
    numbered_by_pairs,
    sides_floor,
    taken_two_ways,
    too_few,
    with_allowance,
    with_new_floors,
)
from calibcli.reports.gate import Gate, evaluate
from calibcli.reports.report import (
    DEFAULT_MIN_POPULATED_BINS,
    SCHEMA_VERSION,
    Note,
    Section,
    finish,
    group_notes,
    run_closed,
    with_closed,
)

if TYPE_CHECKING:  # pragma: no cover
    from calibcli.summaries import PairedRows


@dataclass(frozen=True)
class CompareSettings:
    """The comparison's interval level, resamples, seed and bins, paired or not, and the
    processes its bootstrap asks for (None: automatic; never more than the CPUs, and the
    intervals never depend on it)."""

    level: float = 0.95
    samples: int = 1000
    seed: int = 0
    bins: int = 10
    paired: bool = True
    workers: int | None = None
    min_bins: int = DEFAULT_MIN_POPULATED_BINS  # fewer on a side close its binned gates


@dataclass(frozen=True)
class Comparison:
    """One comparison (pooled, or one --by group): the JSON section and the gate's view of it."""

    section: Section
    gate_view: Section


def mcnemar_name(block: dict[str, Any]) -> str:
    """How a report's ``mcnemar`` block names its test: the exact one, or Durkalski et al.'s for
    pairs in clusters (rows that repeat their questions)."""
    if block.get("clustered"):
        return "McNemar's test for clustered pairs (Durkalski et al. 2003)"
    return "McNemar's exact test"


def auroc_test_name(block: dict[str, Any]) -> str:
    """How a report's ``auroc_test`` block names its test: DeLong's, or with Obuchowski's
    covariance for rows in clusters (rows that repeat their questions)."""
    if block.get("clustered"):
        return "DeLong's test for clustered rows (Obuchowski 1997)"
    return "DeLong's test"


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def compare_section(
    base: tuple[Any, Any],
    new: tuple[Any, Any],
    settings: CompareSettings,
    *,
    upper_gate: bool = False,
    questions: Any = None,
    floor: int | None = None,
    order: Any = None,
    side_questions: Any = None,
    allowance: frozenset[str] = frozenset(),
    floored: tuple[str, ...] = (),
) -> Comparison:
    """Figures, differences, intervals and tests for aligned (paired) or independent rows.
    ``upper_gate``: a gate reads the worse ends of the intervals, so too few rows (or, for
    accuracy and AUROC, too few right or wrong answers on a side) close it. ``questions``
    labels each pair's question: the paired bootstrap draws each question's pairs together,
    the questions numbered by what their pairs hold (:func:`numbered_by_pairs`), so those
    floors count questions, and so does ``floor`` (--min-rows). ``order`` ranks the pairs by
    id (:attr:`~calibcli.summaries.PairedRows.order`): the order they are drawn in; unpaired
    rows are drawn by confidence and outcome. ``side_questions`` (unpaired: BASE's
    and NEW's labels of each row's question, either None) makes each side's bootstrap draw
    its questions whole, and the upper end's floors count them. ``allowance``: the figures
    whose gate adds BASE's bias allowance (:func:`base_allowance`) to the upper end.
    ``floored``: the figures whose upper-end margin reads a floor of NEW − BASE (rare-class,
    or paired discordance: :func:`~calibcli.reports.compare_sides.new_floor`) where larger."""
    from calibcli.metrics import (
        SCALAR_KEYS,
        delong_clustered,
        delong_test,
        identical_correctness,
        mcnemar_clustered,
        mcnemar_exact,
        paired_bootstrap,
        unpaired_bootstrap,
    )
    from calibcli.summaries import side_stats

    n_base, n_new = int(base[0].shape[0]), int(new[0].shape[0])
    figures: dict[str, Any] = {"n_base": n_base, "n_new": n_new}
    notes: list[Note] = []
    if n_base == 0 or n_new == 0:
        notes.append(Note("empty", "no rows to compare; every difference is null"))
        figures.update(figures=None, mcnemar=None, auroc_test=None)
        closed = {f"{key}_{way}": "no rows to compare" for key in SCALAR_KEYS for way in WAYS}
        return Comparison(Section(figures, notes, closed), Section({"rows": 0}, closed=closed))
    run = paired_bootstrap if settings.paired else unpaired_bootstrap
    if settings.paired and questions is not None:
        # the questions numbered, and the pairs drawn, by what they hold: the same draws
        # whatever the labels' hashes (the command's and the API's differ) and the lines' order
        numbered = numbered_by_pairs(base, new, questions, order)
        questions, order = (questions, order) if numbered is None else numbered
    if not settings.paired and questions is None:
        base, new, side_questions = in_one_order_each(base, new, side_questions)
    drawn = {} if questions is None else {"clusters": questions}
    if side_questions is not None and not settings.paired:
        drawn["clusters"] = side_questions
    if order is not None and settings.paired:
        drawn["order"] = order
    result = run(
        base,
        new,
        **drawn,
        # exact per-bin sums, as calibrate's: each side's digits whatever its rows' order
        stats=(side_stats(base, settings.bins), side_stats(new, settings.bins)),
        samples=settings.samples,
        seed=settings.seed,
        level=settings.level,
        bins=settings.bins,
        workers=bootstrap_workers(settings.workers, (n_base + n_new) * settings.samples),
    )
    table = {}
    for key in SCALAR_KEYS:
        lo, hi = result.intervals[key]
        table[key] = {
            "base": _num(result.base[key]),
            "new": _num(result.new[key]),
            "difference": _num(result.difference[key]),
            "interval": [_num(lo), _num(hi)],
        }
    if "accuracy" in table:  # a difference of two count ratios: exact, rounded once
        table["accuracy"]["difference"] = accuracy_difference(base[1], new[1])
    figures["figures"] = table
    notes += infinite_notes(result)
    undefined = undefined_auroc(base, new)
    notes += [] if undefined is None else [undefined[0]]
    if settings.paired:
        if questions is None:
            test = mcnemar_exact(base[1], new[1])
        else:  # the rows of a question are not independent pairs: Durkalski's test
            test = mcnemar_clustered(base[1], new[1], questions)
        figures["mcnemar"] = {
            "right_to_wrong": test.b,
            "wrong_to_right": test.c,
            "discordant": test.discordant,
            "p_value": test.p_value,
        }
        if questions is not None:
            figures["mcnemar"]["clustered"] = {
                "test": "durkalski",
                "questions": test.clusters,
                "statistic": test.statistic,
            }
        if undefined is not None:  # no test, and no interval to point to
            figures["auroc_test"] = {"test": None, "reason": undefined[1]}
        elif identical_correctness(base[1], new[1]):
            try:
                if questions is None:
                    d = delong_test(base[0], new[0], base[1])
                else:  # the rows of a question are not independent: Obuchowski's covariance
                    d = delong_clustered(base[0], new[0], base[1], questions)
                figures["auroc_test"] = {
                    "test": "delong",
                    "difference": _num(d.difference),
                    "standard_error": _num(d.standard_error),
                    "z": _num(d.z),
                    "p_value": _num(d.p_value),
                }
                if questions is not None:
                    figures["auroc_test"]["clustered"] = {
                        "test": "obuchowski",
                        "questions": d.questions,
                    }
            except ValueError as exc:  # too few right or wrong answers for the test
                figures["auroc_test"] = {"test": None, "reason": str(exc)}
        else:
            figures["auroc_test"] = {
                "test": "bootstrap",
                "reason": "the two sides differ in which answers are right, so DeLong's "
                "test (shared outcomes) does not apply; see the bootstrap interval",
            }
    small = too_few(
        base,
        new,
        questions,
        upper_gate=upper_gate,
        floor=floor,
        side_questions=None if settings.paired else side_questions,
    )
    sided = (questions, questions) if settings.paired else (side_questions or (None, None))
    sparse, said = few_bins(base, new, settings, sided)
    notes += said
    gate_view = _gate_view(table, {**small, **sparse}, min(n_base, n_new))
    if allowance:
        gate_view.figures["allowance"] = base_allowance(base[0], allowance, settings, sided[0])
    found = new_floor(new, floored, settings, sided[1], base, table) if floored else None
    if found is not None:  # the floor of NEW - BASE, and what the gate subtracts from it
        gate_view.figures["floor"], gate_view.figures["floor_offsets"] = found
    return Comparison(Section(figures, notes), gate_view)


def _gate_view(table: dict[str, Any], small: dict[str, str], rows: int) -> Section:
    """What the gate reads: for each figure, how much worse NEW is than BASE
    (``ece_increase`` = the difference, ``auroc_decrease`` = minus it) with its interval, and
    the ``rows`` compared (--min-rows: the matched pairs, the smaller side unpaired); ``small``
    closes the checks the sample is too small for."""
    view: dict[str, Any] = {"ci": {}, "rows": rows}
    closed: dict[str, str] = dict(small)
    for key, row in table.items():
        d, (lo, hi) = row["difference"], row["interval"]
        for way, sign in (("increase", 1.0), ("decrease", -1.0)):
            name = f"{key}_{way}"
            # + 0.0: no difference of 0 reads as -0.0 (a gate table's "-0.0000")
            view[name] = None if d is None else sign * d + 0.0
            ends = [None if x is None else sign * x + 0.0 for x in (lo, hi)]
            view["ci"][name] = sorted(ends) if None not in ends else [None, None]
            if d is None:
                closed.setdefault(name, _undefined(key, row))
    return Section(view, closed=closed)


def _undefined(key: str, row: dict[str, Any]) -> str:
    """Why a figure's difference is undefined: the side(s) where the figure is not a finite
    number, at least one (infinite on both, the difference inf - inf is undefined too)."""
    bad = [(side, row[side.lower()]) for side in ("BASE", "NEW")]
    bad = [(side, v) for side, v in bad if v is None or not math.isfinite(v)]
    where = "on both sides" if len(bad) == 2 else f"on {bad[0][0]}"
    if all(v is not None for _, v in bad):
        return f"{key} is infinite {where}, so the difference is undefined"
    return f"{key} is undefined {where}"


def margins(increase: list[str], decrease: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """Parse ``--max-increase ece=0.01`` / ``--max-decrease auroc=0.02`` into gate thresholds
    and the options as written; ValueError naming what is wrong."""
    lower = {f.key for f in registry.CALIBRATION if f.better == "lower"}
    higher = {f.key for f in registry.CALIBRATION if f.better == "higher"}
    thresholds: dict[str, float] = {}
    options: dict[str, str] = {}
    for way, given, allowed in (("increase", increase, lower), ("decrease", decrease, higher)):
        for text in given:
            key, sep, value = text.partition("=")
            key = key.strip()
            if not sep or key not in allowed:
                names = ", ".join(sorted(allowed))
                raise ValueError(
                    f"--max-{way} takes FIGURE=MARGIN with FIGURE one of {names}, got {text!r}"
                )
            try:  # digit separators refused: 0_05 would be a margin of 5
                margin = float(value) if "_" not in value else math.nan
            except ValueError:
                margin = math.nan
            if not (math.isfinite(margin) and margin >= 0):
                raise ValueError(f"--max-{way} {text}: the margin must be a finite number >= 0")
            if thresholds.get(f"{key}_{way}", margin) != margin:
                # the last would win silently, and a looser margin given after a CI's own
                # would loosen its gate without a word
                first = options[f"{key}_{way}"].split(" ", 1)[1]
                raise ValueError(
                    f"--max-{way} {key} is given twice ({first}, then {key}={value.strip()}): "
                    "give each figure once"
                )
            thresholds[f"{key}_{way}"] = margin
            options[f"{key}_{way}"] = f"--max-{way} {key}={value.strip()}"
    return thresholds, options


def compare_options(
    *,
    grouped: bool,
    gate_each: bool,
    unpaired: bool,
    max_increase: list[str],
    max_decrease: list[str],
    gate_on: str | None,
    min_rows: int | None = None,
    allow_unmatched: bool = False,
) -> Gate:
    """Check compare's options together before any row is read and make its gate: the margins
    parsed (:func:`margins`), on the upper end of the difference's interval unless ``gate_on``
    says otherwise when there are margins. ValueError says what cannot work, in the command
    line's words."""
    if gate_each and not grouped:
        raise ValueError("--gate-each needs --by FIELD")
    if unpaired and grouped:
        raise ValueError("--by compares matched rows group by group; it needs paired rows")
    if unpaired and allow_unmatched:
        raise ValueError("--allow-unmatched lets rows go unmatched; --unpaired matches none")
    thresholds, options = margins(max_increase, max_decrease)
    if gate_each and not thresholds and min_rows is None:
        raise ValueError(
            "--gate-each applies --max-increase/--max-decrease and --min-rows to every group"
        )
    if gate_on == "upper" and not thresholds:
        raise ValueError(UPPER_WITHOUT_GATE.format(gates="--max-increase/--max-decrease margin"))
    gate_on = gate_on or ("upper" if thresholds else "estimate")
    floors = {} if min_rows is None else {"rows": min_rows}
    options.update({"rows": f"--min-rows {min_rows}"} if floors else {})
    return Gate(thresholds, gate_on, gate_each, minimums=floors, options=options)


def _same_rows(matched: PairedRows) -> bool:
    """Whether every matched pair holds the same confidence and correctness on both sides
    (equal values), with at least one pair."""
    import numpy as np

    (b_conf, b_corr), (n_conf, n_corr) = matched.base, matched.new
    return b_conf.shape[0] > 0 and np.array_equal(b_conf, n_conf) and np.array_equal(b_corr, n_corr)


def compare_report(
    matched: PairedRows,
    settings: CompareSettings,
    *,
    formats: dict[str, str],
    files: dict[str, list[str]],
    id_field: str | None,
    gate: Gate | None = None,
    by: str | None = None,
    modes: Any = None,
) -> Any:
    """The compare report: pooled comparison, one per --by group, the tests and the gate.
    ``modes``: how --inspect-confidence auto took each side's inspect-ai confidences
    (:func:`~calibcli.reports.compare_sides.taken_two_ways`); taken two ways, the report says
    so and every gate check fails closed."""
    import numpy as np

    upper_gate = bool(gate) and gate.bound == "upper"
    questions = matched.questions if settings.paired else None
    floor = gate.minimums.get("rows") if gate else None
    order = matched.order if settings.paired else None
    allowed, floored = allowance_keys(gate), floor_keys(gate)
    pooled = compare_section(
        matched.base,
        matched.new,
        settings,
        upper_gate=upper_gate,
        questions=questions,
        floor=floor,
        order=order,
        side_questions=None if settings.paired else matched.side_questions,
        allowance=allowed,
        floored=floored,
    )
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "compare",
        "format": formats,
        "files": files,
        "paired": settings.paired,
        "id_field": id_field,
        "matched": int(matched.base[0].shape[0]) if settings.paired else None,
        "unmatched_base": matched.unmatched_base if settings.paired else None,
        "unmatched_new": matched.unmatched_new if settings.paired else None,
        "ci_level": settings.level,
        "bootstrap_samples": settings.samples,
        "seed": settings.seed,
        **pooled.section.figures,
        **each_side(matched, settings),
    }
    # runs of different tasks, or graded by different scorers: the report says so first, and
    # every gate check fails closed
    apart = sides_apart(matched, paired=settings.paired)
    notes = [Note(kind, warning) for kind, warning, _ in apart]
    notes += [Note("input", warning) for warning in matched.warnings]
    notes += pooled.section.notes
    if not settings.paired:
        notes.append(
            Note(
                "unpaired",
                "unpaired, as asked: each side was resampled on its own, without matching "
                "rows by id, so the intervals include the differences between the questions as "
                "well as between the models, and are wider than paired ones",
            )
        )
    if matched.unmatched_base or matched.unmatched_new:
        notes.append(
            Note(
                "unmatched",
                f"{matched.unmatched_base} BASE row(s) and {matched.unmatched_new} NEW row(s) "
                "have no partner and were left out",
            )
        )
    if questions is not None:
        notes.append(
            Note(
                "repeats",
                "the matched rows repeat their questions (an inspect-ai sample's epochs, a HELM "
                "instance's train trials): the "
                "intervals draw each question's rows together, McNemar's test is Durkalski "
                "et al.'s for clustered pairs and DeLong's takes Obuchowski's covariance for "
                "clustered rows",
            )
        )
    if settings.paired and _same_rows(matched):
        notes.append(
            Note(
                "identical",
                "NEW's rows are BASE's: every matched id has the same confidence and "
                "correctness on both sides, so every difference is 0 (the same file or a copy "
                "given twice?)",
            )
        )
    for name in matched.unmatched_groups:
        notes.append(
            Note(
                "unmatched",
                f"group {name!r}: none of its BASE rows has a partner on NEW, so it has no "
                "rows to compare",
            )
        )
    for name in matched.new_only_groups:
        notes.append(
            Note(
                "unmatched",
                f"group {name!r}: only NEW holds it (none of its rows has a partner on BASE), "
                "so it is not compared",
            )
        )
    two_ways = taken_two_ways(modes)
    if two_ways is not None:
        notes.append(Note("inspect_confidence", two_ways[0]))
    groups: dict[str, Comparison] | None = None
    if matched.groups is not None:
        names = np.asarray(matched.groups, dtype=object)
        groups = {}
        # a BASE group without a matched row is compared too, on no rows: its figures are
        # null and --gate-each fails closed on it rather than leaving it unchecked, as on a
        # group only NEW holds, which it gates too (both are named above)
        extra = matched.new_only_groups if gate and gate.each else ()
        for name in sorted({*matched.groups, *matched.unmatched_groups, *extra}):
            rows = names == name
            base = (matched.base[0][rows], matched.base[1][rows])
            new = (matched.new[0][rows], matched.new[1][rows])
            asked = None if questions is None else questions[rows]
            ranked = None if order is None else order[rows]
            groups[name] = compare_section(
                base,
                new,
                settings,
                upper_gate=upper_gate,
                questions=asked,
                floor=floor,
                order=ranked,
                allowance=allowed if gate and gate.each else frozenset(),
                floored=floored if gate and gate.each else (),
            )
        body["by"] = by
        body["groups"] = {name: g.section.figures for name, g in groups.items()}
        # a group without rows is named by the unmatched note above
        notes += group_notes(
            {
                name: [n for n in g.section.notes if n.kind in GROUP_KINDS]
                for name, g in groups.items()
            }
        )
    failures: list[str] = []
    tail: dict[str, Any] = {}
    if gate:
        pooled_view = pooled.gate_view
        views = None if groups is None else {k: g.gate_view for k, g in groups.items()}
        said = run_closed(gate, matched.mixed, matched.repeats)  # what the sides' runs say
        said = {**sides_floor(floor, matched.asked), **said}  # --min-rows in questions
        if two_ways is not None:  # every check, after the runs' own reasons
            said = {**dict.fromkeys([*gate.thresholds, *gate.minimums], two_ways[1]), **said}
        if apart:  # every check, before any other reason: other questions, other grading
            said = {**said, **dict.fromkeys([*gate.thresholds, *gate.minimums], apart[0][2])}
        if said:
            pooled_view, views = with_closed(said, pooled_view, views)
        verdict = evaluate(gate, pooled_view, views, level=settings.level)
        # the floors of NEW - BASE (rare-class, paired discordance), where above the upper end
        sections = {None: pooled_view, **(views or {})}
        verdict = with_new_floors(verdict, gate, sections, settings.level)
        # BASE's bias allowance on the upper ends of the figures sampling noise inflates
        verdict = with_allowance(
            verdict, gate, {None: pooled_view, **(views or {})}, settings.level
        )
        tail["gate"], failures = verdict.body, verdict.failures
    return finish(body, notes, failures, tail=tail, mark_infinite=True)
