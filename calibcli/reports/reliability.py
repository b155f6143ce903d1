"""The reliability report: per-bin data with Wilson intervals, and the bin warnings that the
calibrate report shares."""

from __future__ import annotations

from typing import Any

from calibcli.reports.gate import debiased_bins, debiased_reason
from calibcli.reports.group_repeats import own_repeats
from calibcli.reports.report import (
    DEFAULT_MIN_POPULATED_BINS,
    SMALL_BIN_COUNT,
    Note,
    Report,
    Section,
    assemble,
)


def reliability_fields(stats: Any, lower: Any = None, upper: Any = None) -> dict[str, Any]:
    """Per-bin reliability data; confidence/accuracy (and accuracy_ci) null for empty bins."""
    edges = [float(e) for e in stats.edges]
    counts = [int(c) for c in stats.count]
    conf, acc = stats.mean_confidence.tolist(), stats.accuracy.tolist()
    out: dict[str, Any] = {
        "bin_lower": edges[:-1],
        "bin_upper": edges[1:],
        "confidence": [c if n else None for c, n in zip(conf, counts, strict=True)],
        "accuracy": [a if n else None for a, n in zip(acc, counts, strict=True)],
        "count": counts,
    }
    if lower is not None:
        out["accuracy_ci"] = [
            [float(lo), float(hi)] if n else None
            for lo, hi, n in zip(lower, upper, counts, strict=True)
        ]
    return out


def bin_notes(stats: Any, min_bins: int, repeats: int | None = None) -> list[Note]:
    """The populated-bins and small-sample warnings (advisory; the gate handles the minimum).
    On rows that repeat their questions (``repeats`` as for :func:`wilson`) the small-sample
    warning counts a bin's rows over ``repeats``, the fewest questions they can be, and so
    does its advice on rmsce_debiased (:func:`~calibcli.reports.gate.debiased_reason`)."""
    import numpy as np

    populated, carried, _, lone = debiased_bins(stats.count, repeats)
    counts = np.asarray(stats.count)
    median = float(np.median(counts[counts > 0])) if stats.n and populated else None
    return count_notes(
        int(stats.n),
        populated,
        int(stats.bins),
        median,
        min_bins,
        repeats,
        carried=carried,
        lone=lone,
    )


def count_notes(
    n: int,
    populated: int,
    bins: int,
    median: float | None,
    min_bins: int,
    repeats: int | None = None,
    *,
    carried: int,
    lone: int | None = None,
) -> list[Note]:
    """:func:`bin_notes` from the counts it reads: rows, populated bins, bins, the median
    count of the populated bins (None without rows) and the bins holding 2 or more rows
    (``carried``; on rows that repeat their questions, 2 or more questions, with ``lone`` the
    rows of the other populated bins): where a gate on rmsce_debiased would fail closed on
    them (too few such bins, or more than a tenth of the rows in bins of one:
    :func:`~calibcli.reports.gate.debiased_reason`) the small-sample advice leaves it out."""
    notes = []
    if n and populated < min_bins:
        notes.append(
            Note(
                "few_bins",
                f"only {populated} of {bins} bins are populated (minimum {min_bins}); "
                "ECE rests on too few bins",
                f"{populated} of {bins}",
                general=f"fewer than {min_bins} bins are populated; ECE rests on too few bins",
            )
        )
    if median is None:
        return notes
    held = counted(median, "prediction")
    if repeats:
        # the bins are no bigger than their questions let them be: a question's answers may
        # all fall in one bin (the rule of each bin's interval too)
        median = median / repeats
        held += f", as few as {counted(median, 'question')} (a run scored each up to "
        held += f"{repeats} times)"
    closes = debiased_reason(carried, populated, n, min_bins, repeats=repeats, lone=lone)
    if median < SMALL_BIN_COUNT and closes and repeats:
        notes.append(_question_bins(n, populated, min_bins, repeats, carried, lone, held, median))
    elif median < SMALL_BIN_COUNT and closes:
        unit = "predictions"
        lone = populated - carried  # the populated bins not holding 2 hold one
        held_out = _held_out(n, populated, min_bins, carried, lone)
        notes.append(
            Note(
                "one_row_bins",
                f"the median populated bin holds {held} (fewer than {SMALL_BIN_COUNT}); binned "
                "estimates (ece, mce, rmsce) are noisy and biased upward at this size, and "
                f"rmsce_debiased leaves out bins of one prediction ({held_out}): "
                "prefer smece, and gate with --gate-on upper",
                f"{median:g}",
                general=f"the median populated bin holds fewer than {SMALL_BIN_COUNT} {unit}, "
                f"and fewer than {min_bins} bins hold 2 or more predictions or more than a "
                "tenth of the predictions lie in bins of one; binned estimates (ece, mce, "
                "rmsce) are noisy and biased upward at this size, and rmsce_debiased leaves "
                "out bins of one prediction: prefer smece, and gate with --gate-on upper",
            )
        )
    elif median < SMALL_BIN_COUNT:
        unit = "questions" if repeats else "predictions"
        notes.append(
            Note(
                "small_bins",
                f"the median populated bin holds {held} (fewer than {SMALL_BIN_COUNT}); binned "
                "estimates (ece, mce, rmsce) are noisy and biased upward at this size: prefer "
                "smece or rmsce_debiased, and gate with --gate-on upper",
                f"{median:g}",
                general=f"the median populated bin holds fewer than {SMALL_BIN_COUNT} {unit}; "
                "binned estimates (ece, mce, rmsce) are noisy and biased upward at this size: "
                "prefer smece or rmsce_debiased, and gate with --gate-on upper",
            )
        )
    return notes


def _held_out(n: int, populated: int, min_bins: int, carried: int, lone: int | None) -> str:
    """Why the debiased RMSCE's gate fails closed: too few bins hold 2 or more (of rows, or of
    questions), or more than a tenth of the predictions (``lone``) lie in the others."""
    if carried < min_bins:
        verb = "holds" if carried == 1 else "hold"
        return f"only {carried} of {populated} populated bins {verb} 2 or more, minimum {min_bins}"
    lie = "lies in one" if lone == 1 else "lie in them"
    return f"{lone:,} of {n:,} predictions {lie}, at most a tenth may"


def _question_bins(
    n: int,
    populated: int,
    min_bins: int,
    repeats: int,
    carried: int,
    lone: int | None,
    held: str,
    median: float,
) -> Note:
    """The small-sample warning where a gate on rmsce_debiased would fail closed on rows that
    repeat their questions: too few bins hold 2 or more questions (2 × ``repeats`` rows), or
    more than a tenth of the rows lie in the others (``lone`` of them), whose variance the
    debiased term cannot estimate; it advises smece alone."""
    held_out = _held_out(n, populated, min_bins, carried, lone)
    why = "rmsce_debiased cannot estimate the variance of bins of fewer than 2 questions"
    return Note(
        "one_row_bins",
        f"the median populated bin holds {held} (fewer than {SMALL_BIN_COUNT}); binned "
        f"estimates (ece, mce, rmsce) are noisy and biased upward at this size, and {why}, "
        f"counted as {2 * repeats} predictions ({held_out}): prefer smece, and gate with "
        "--gate-on upper",
        f"{median:g}",
        general=f"the median populated bin holds fewer than {SMALL_BIN_COUNT} questions, and "
        f"fewer than {min_bins} bins hold 2 or more questions or more than a tenth of the "
        "predictions lie in the others; binned estimates (ece, mce, rmsce) are noisy and "
        f"biased upward at this size, and {why}: prefer smece, and gate with --gate-on upper",
    )


def wilson(stats: Any, repeats: int | None = None) -> tuple[Any, Any]:
    """Each bin's 95% Wilson interval for its accuracy. On rows that repeat their questions
    (``repeats``: no question holds more rows than that) a bin's rows are not independent
    answers: it counts as count / repeats answers with correct / repeats right, as if each
    question had put all its rows in one bin, the widest interval the rows can need (exact when
    a question's rows agree, as copies do)."""
    return bin_wilson(stats.sum_correct, stats.count, repeats)


def bin_wilson(correct: Any, count: Any, repeats: int | None = None) -> tuple[Any, Any]:
    """:func:`wilson` of per-bin ``correct`` and ``count`` arrays."""
    from calibcli.metrics import wilson_interval

    if repeats:
        return wilson_interval(correct / repeats, count / repeats)
    return wilson_interval(correct, count)


def empty_notes(n: int) -> list[Note]:
    if n:
        return []
    return [Note("empty", "no rows were read; every estimate is null")]


def reliability_section(view: Any, min_bins: int, repeats: int | None = None) -> Section:
    """The reliability report's figures for one set of rows (pooled, one group or one file);
    ``view`` has the rows' per-bin ``stats``; ``repeats`` as for :func:`wilson`."""
    stats = view.stats
    section = {
        "n": int(stats.n),
        "bins": int(stats.bins),
        "populated_bins": int(stats.populated_bins),
        "accuracy": float(stats.total_accuracy) if stats.n else None,
        "mean_confidence": float(stats.total_mean_confidence) if stats.n else None,
        "ece": float(stats.ece()) if stats.n else None,
        "brier": float(stats.brier()) if stats.n else None,
        "reliability": reliability_fields(stats, *wilson(stats, repeats)),
    }
    notes = empty_notes(stats.n) + bin_notes(stats, min_bins, repeats)
    return Section(section, notes)


def per_file(summary: Any, min_bins: int) -> dict[str, Any]:
    """``{"per_file": {file: reliability section}}``: the figures of each file read when there
    are several (what ``--plot`` draws as one series per file), without ``--by``; else
    nothing."""
    from types import SimpleNamespace

    if summary.group_names is not None:
        return {}
    sources = summary.by_source()
    if len(sources) < 2:
        return {}
    return {
        "per_file": {
            name: reliability_section(
                SimpleNamespace(stats=stats), min_bins, _file_repeats(summary, name)
            ).figures
            for name, stats in sources.items()
        }
    }


def _file_repeats(summary: Any, display: str) -> int | None:
    """The most times the runs of the sources shown as ``display`` scored each sample, when
    above 1 (see :func:`wilson`). An lm-eval file answers each document once, as often as it
    is read whole: the epochs it records count the re-runs of its task pooled with it
    (``--all-runs``), which its own figures do not hold."""
    from calibcli.summaries import most_epochs

    shown = [s for s in summary.sources if s.display == display]
    own = most_epochs(s for s in shown if s.format != "lm-eval" and not s.pooled) or 1
    # nor do the rows of other re-runs pooled with a file (``pooled``): it answers once a read
    own = max([own, *(s.epochs or 1 for s in shown if s.pooled)])
    reads = sum(
        (s.format == "lm-eval" or bool(s.pooled)) and (s.start, s.stop) == (0, None) for s in shown
    )
    most = max(own, reads)
    return most if most > 1 else None


def reliability_report(
    summary: Any,
    *,
    min_bins: int = DEFAULT_MIN_POPULATED_BINS,
    recalibration: Any = None,
) -> Report:
    """The reliability report: per-bin table with Wilson intervals, format, per-file sections
    and groups. With ``recalibration`` (:class:`~calibcli.reports.recalibration.Recalibration`)
    ``summary`` holds the recalibrated rows and the report shows the figures before and after."""
    from calibcli.summaries import most_epochs

    min_bins = min(min_bins, int(summary.pooled().stats.bins))
    repeats = most_epochs(getattr(summary, "sources", ()))
    extra = per_file(summary, min_bins) if recalibration is None else {}
    notes = []
    if recalibration is not None:
        notes = [Note("recalibration", text) for text in recalibration.notes]

    def closing(pooled: Section, groups: Any) -> dict[str, Any]:
        if recalibration is None:
            return {}
        from calibcli.reports.calibrate import calibrate_figures
        from calibcli.reports.recalibration import recalibration_block

        bins = int(summary.pooled().stats.bins)
        return recalibration_block(
            recalibration, calibrate_figures(summary, bins=bins, reorder_ok=True)
        )

    return assemble(
        "reliability",
        summary,
        # a group's rows are counted by its own runs' repeats where known, the pooled by all's
        lambda view, group: reliability_section(
            view, min_bins, own_repeats(summary, group, repeats)
        ),
        extra=extra,
        closing=closing,
        notes=notes,
    )


def counted(count: float, noun: str) -> str:
    """``count`` ``noun``s, the noun singular for exactly one."""
    return f"{count:g} {noun}{'' if count == 1 else 's'}"
