"""JSON reports (schema_version 1) for the commands: figures, warnings and the gate's verdict.

Builds the report dictionaries from what :mod:`calibcli.io` read and :mod:`calibcli.metrics`
computed; no printing, no typer, no files (:mod:`calibcli.output` writes them). Each set of rows
(the pooled input, one ``--by`` group) becomes a :class:`Section`; the gate
(:mod:`calibcli.gate`) checks sections. Every report is strict JSON: numpy values become Python
numbers, non-finite numbers become ``null`` and are explained in ``warnings``, and nothing
depends on the clock, so the same input gives a byte-identical report.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from calibcli import figures as registry
from calibcli.gate import Gate, evaluate

SCHEMA_VERSION = 1
DEFAULT_MIN_POPULATED_BINS = 3
SMALL_BIN_COUNT = 30  # the small-sample warning fires when the median populated bin holds fewer
CALIBRATION_GATES = tuple(f.key for f in registry.gateable(registry.CALIBRATION))
BINNED_GATES = frozenset(f.key for f in registry.CALIBRATION if f.fails_closed)
# the calibrate section's scalar figures, in report order ("n" opens the section)
SCALARS = tuple(f.key for f in registry.CALIBRATION if f.top_level and f.key != "n")


@dataclass(frozen=True)
class Note:
    """One warning; ``kind`` merges it across --by groups, ``detail`` is its short form there."""

    kind: str
    text: str
    detail: str = ""
    explains: tuple[str, ...] = ()  # report fields this warning explains when they are null
    general: str = ""  # the text for several groups at once, their details listed (else ``text``)


@dataclass(frozen=True)
class Section:
    """The figures of one set of rows (the pooled input, or one --by group), the warnings they
    raise, and the figures a gate must fail closed on, with the reason."""

    figures: dict[str, Any]
    notes: list[Note] = field(default_factory=list)
    closed: dict[str, str] = field(default_factory=dict)
    picture: dict[str, Any] | None = None  # what --plot draws of these rows, beyond the JSON


@dataclass
class Report:
    """A finished report: the JSON body and the gate's failure messages (one line each)."""

    body: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    # What the tables show: the body with infinities kept (the JSON can only say null),
    # so an infinite perplexity reads "inf", not "n/a"; undefined values stay None.
    display: dict[str, Any] | None = None
    # What --plot draws, one reliability section per series (input file or --by group).
    series: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def warnings(self) -> list[str]:
        return self.body["warnings"]

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> str:
        return json.dumps(self.body, allow_nan=False) + "\n"


# --------------------------------------------------------------------------- JSON helpers


def _num(x: Any) -> Any:
    """A Python int/float (or None) from a numpy or Python number; non-finite floats kept as is."""
    if x is None:
        return None
    if hasattr(x, "item"):
        x = x.item()
    return x


def printable(text: str) -> str:
    """``text`` with lone surrogates (which JSON strings may hold but no output encoding can
    write) shown as backslash escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _strict(obj: Any, path: str, bad: list[str], *, keep_inf: bool = False) -> Any:
    """Copy ``obj`` as strict JSON; non-finite floats become None, their paths go in ``bad``
    (with ``keep_inf``, infinities are kept and strings made printable: the copy the tables,
    the summary and the picture show)."""
    if isinstance(obj, dict):
        return {
            (printable(k) if keep_inf else k): _strict(
                v, f"{path}.{k}" if path else k, bad, keep_inf=keep_inf
            )
            for k, v in obj.items()
        }
    if keep_inf and isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, (list, tuple)) or hasattr(obj, "tolist"):
        items = obj.tolist() if hasattr(obj, "tolist") else obj
        if not isinstance(items, list):  # a numpy scalar
            return _strict(items, path, bad, keep_inf=keep_inf)
        return [_strict(v, f"{path}[{i}]", bad, keep_inf=keep_inf) for i, v in enumerate(items)]
    if isinstance(obj, float) and not math.isfinite(obj):
        bad.append(path)
        return obj if keep_inf and math.isinf(obj) else None
    return obj


def as_shown(obj: Any) -> Any:
    """The copy of report data that tables and pictures show: infinities kept, strings
    printable."""
    return _strict(obj, "", [], keep_inf=True)


def _leaf(path: str) -> str:
    """The field name a path ends in: ``groups.law.ci.nll[1]`` -> ``nll``."""
    return path.split(".")[-1].split("[")[0]


def finish(body: dict[str, Any], notes: list[Note], failures: list[str]) -> Report:
    """Make ``body`` strict JSON, add the warnings (and one for unexplained nulls), wrap it."""
    bad: list[str] = []
    strict = _strict(body, "", bad)
    explained = {name for note in notes for name in note.explains}
    # gate values repeat figures reported (and explained) elsewhere
    unexplained = [p for p in bad if _leaf(p) not in explained and not p.startswith("gate.")]
    warnings = [note.text for note in notes]
    if unexplained:
        warnings.append(
            f"{len(unexplained)} value(s) are not finite numbers and were written as null: "
            + ", ".join(unexplained)
        )
    display = _strict(body, "", [], keep_inf=True)
    for copy in (strict, display):
        copy["warnings"] = warnings
        if "gate" in copy:  # keep gate last, after warnings
            copy["gate"] = copy.pop("gate")
    return Report(strict, failures, display)


# --------------------------------------------------------------------------- group warnings


GROUPS_NAMED = 10  # a warning about many groups names this many and counts the rest
SMOOTH_GROUPS = 1000  # above this many --by groups, smece is computed for the pooled rows only


def _group_notes(per_group: dict[str, list[Note]]) -> list[Note]:
    """One warning line per kind, naming the groups it applies to (not one line per group)."""
    by_kind: dict[str, list[tuple[str, Note]]] = {}
    for name, notes in per_group.items():
        for note in notes:
            by_kind.setdefault(note.kind, []).append((name, note))
    out = []
    for kind, items in by_kind.items():
        explains = tuple(sorted({x for _, n in items for x in n.explains}))
        if len(items) == 1:
            name, note = items[0]
            out.append(Note(kind, f"group {name!r}: {note.text}", explains=explains))
            continue
        shown = [f"{g} ({n.detail})" if n.detail else g for g, n in items[:GROUPS_NAMED]]
        more = len(items) - len(shown)
        listed = ", ".join(shown) + (f" and {more:,} more" if more else "")
        general = items[0][1].general or items[0][1].text
        out.append(Note(kind, f"{len(items):,} groups, {listed}: {general}", explains=explains))
    return out


# --------------------------------------------------------------------------- perplexity


_PPL_KEYS = ("perplexity", "byte_perplexity", "word_perplexity")


def _perplexity_section(data: Any) -> Section:
    from calibcli.metrics import bits_per_unit

    tokens = data.total_tokens
    section: dict[str, Any] = {
        "sequences": int(data.sequences),
        "total_tokens": None if tokens is None else int(tokens),
        "total_nll": float(data.total_nll),
    }
    notes: list[Note] = []
    closed: dict[str, str] = {}
    token_fields = ("mean_nll", "perplexity", "bits_per_token")
    if data.sequences == 0:
        notes.append(Note("empty", "no rows were read; perplexity is undefined", "", token_fields))
        closed["perplexity"] = "no rows were read"
    if tokens is None:
        section.update(dict.fromkeys(token_fields))
        notes.append(
            Note(
                "no_tokens",
                "token perplexity is unavailable: the input carries no token counts "
                "(see bits_per_byte, byte_perplexity and word_perplexity)",
            )
        )
        closed.setdefault("perplexity", "the input carries no token counts")
    else:
        ppl, bits = bits_per_unit(data.total_nll, tokens)
        section["mean_nll"] = data.total_nll / tokens if tokens else math.nan
        section["perplexity"], section["bits_per_token"] = ppl, bits
        if tokens == 0 and data.sequences:
            notes.append(
                Note(
                    "zero_tokens",
                    "zero tokens in the input; perplexity is undefined",
                    "",
                    token_fields,
                )
            )
            closed.setdefault("perplexity", "zero tokens in the input")
    if getattr(data, "nll_overflow", False):
        notes.append(
            Note(
                "nll_overflow",
                "the total NLL overflows a double (finite NLLs whose sum exceeds 1.8e308); "
                "it and every figure built on it are written as null",
                "",
                ("total_nll", *token_fields, "bits_per_byte", "byte_perplexity", "word_perplexity"),
            )
        )
        closed.setdefault("perplexity", "the total NLL overflows a double")
    elif math.isinf(data.total_nll):
        notes.append(
            Note(
                "infinite",
                "perplexity is infinite: a sequence has an infinite NLL (a zero-probability "
                "token); infinite figures are written as null",
                "",
                ("total_nll", *token_fields, "bits_per_byte", "byte_perplexity", "word_perplexity"),
            )
        )
    total_bytes = getattr(data, "total_bytes", None)
    if total_bytes is not None:
        byte_ppl, bpb = bits_per_unit(data.total_nll, total_bytes)
        section.update(total_bytes=int(total_bytes), bits_per_byte=bpb, byte_perplexity=byte_ppl)
    total_words = getattr(data, "total_words", None)
    if total_words is not None:
        section.update(
            total_words=int(total_words),
            word_perplexity=bits_per_unit(data.total_nll, total_words)[0],
        )
    if (total_bytes == 0 or total_words == 0) and data.sequences:
        notes.append(
            Note(
                "zero_units",
                "zero bytes or words in the input; per-byte/per-word figures are undefined",
                "",
                ("bits_per_byte", "byte_perplexity", "word_perplexity"),
            )
        )
    overflowed = [k for k in _PPL_KEYS if k in section and section[k] == math.inf]
    if overflowed and math.isfinite(data.total_nll):
        notes.append(
            Note(
                "overflow",
                f"{', '.join(overflowed)} overflow(s) a double (exp of a mean NLL above 709 "
                "nats); written as null, see the mean NLL and bits figures",
                explains=tuple(overflowed),
            )
        )
    if getattr(data, "fmt", "jsonl") not in ("jsonl", "lm-eval"):  # per-token logprob input
        section["null_logprobs"] = int(data.null_logprobs)
        section["sentinel_logprobs"] = int(data.sentinel_logprobs)
        if data.sentinel_logprobs:
            notes.append(
                Note(
                    "sentinels",
                    f"{data.sentinel_logprobs} token logprob(s) are <= -9999: API sentinels for "
                    "'not in the top-k', not real probabilities; they are summed as given, which "
                    "inflates the NLL",
                    f"{data.sentinel_logprobs}",
                )
            )
    return Section(section, notes, closed)


def input_formats(data: Any) -> dict[str, Any]:
    """``{"formats": {file: format}}`` when the files are in several formats, else nothing."""
    if getattr(data, "fmt", None) != "mixed":
        return {}
    return {"formats": dict(data.formats or {})}


def input_notes(data: Any) -> list[Note]:
    """The reader's warnings about the input (a file skipped, and why)."""
    return [Note("input", text) for text in getattr(data, "warnings", ())]


def assemble(
    command: str,
    data: Any,
    build: Callable[[Any], Section],
    *,
    gate: Gate | None = None,
    level: float | None = None,
    after: Callable[[Section], dict[str, Any]] | None = None,
) -> Report:
    """A report from sections: the pooled one (``build(data)``), one per --by group, the gate.

    The pooled section's figures open the body (after schema_version, command and format);
    ``after(pooled)`` gives the keys that follow them and may replace some (the bootstrap's
    settings after its intervals); then ``groups``, ``warnings`` and ``gate``.
    """
    pooled = build(data)
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "format": getattr(data, "fmt", "jsonl"),
        **input_formats(data),
        **pooled.figures,
    }
    if after is not None:
        body.update(after(pooled))
    notes = input_notes(data) + list(pooled.notes)
    groups = None
    if data.groups is not None:
        groups = {str(name): build(value) for name, value in data.groups.items()}
        body["groups"] = {name: g.figures for name, g in groups.items()}
        notes += _group_notes({name: g.notes for name, g in groups.items()})
    failures: list[str] = []
    if gate:
        verdict = evaluate(gate, pooled, groups, level=level)
        body["gate"], failures = verdict.body, verdict.failures
    report = finish(body, notes, failures)
    pictures = {"": pooled.picture} if groups is None else {k: g.picture for k, g in groups.items()}
    report.series.update({printable(k): v for k, v in pictures.items() if v is not None})
    return report


def perplexity_report(data: Any, gate: Gate) -> Report:
    """The perplexity report: token figures, bytes and words, logprob counts, groups, gate."""
    return assemble("perplexity", data, _perplexity_section, gate=gate)


# --------------------------------------------------------------------------- calibration


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


def _bin_notes(stats: Any, min_bins: int) -> list[Note]:
    """The populated-bins and small-sample warnings (advisory; the gate handles the minimum)."""
    import numpy as np

    notes = []
    populated = int(stats.populated_bins)
    if stats.n and populated < min_bins:
        notes.append(
            Note(
                "few_bins",
                f"only {populated} of {stats.bins} bins are populated (minimum {min_bins}); "
                "ECE rests on too few bins",
                f"{populated} of {stats.bins}",
                general=f"fewer than {min_bins} bins are populated; ECE rests on too few bins",
            )
        )
    counts = np.asarray(stats.count)
    if stats.n and populated:
        median = float(np.median(counts[counts > 0]))
        if median < SMALL_BIN_COUNT:
            notes.append(
                Note(
                    "small_bins",
                    f"the median populated bin holds {median:g} predictions (fewer than "
                    f"{SMALL_BIN_COUNT}); binned estimates (ece, mce, rmsce) are noisy and biased "
                    "upward at this size: prefer smece or rmsce_debiased, and gate with "
                    "--gate-on upper",
                    f"{median:g}",
                    general=f"the median populated bin holds fewer than {SMALL_BIN_COUNT} "
                    "predictions; binned estimates (ece, mce, rmsce) are noisy and biased upward "
                    "at this size: prefer smece or rmsce_debiased, and gate with --gate-on upper",
                )
            )
    return notes


def _wilson(stats: Any) -> tuple[Any, Any]:
    from calibcli.metrics.estimators import wilson_interval

    return wilson_interval(stats.sum_correct, stats.count)


def _empty_notes(n: int) -> list[Note]:
    if n:
        return []
    return [Note("empty", "no rows were read; every estimate is null")]


def reliability_section(data: Any, min_bins: int) -> Section:
    """The reliability report's figures for one set of rows (pooled, one group or one file)."""
    stats = data.stats
    section = {
        "n": int(stats.n),
        "bins": int(stats.bins),
        "populated_bins": int(stats.populated_bins),
        "accuracy": float(stats.total_accuracy) if stats.n else None,
        "mean_confidence": float(stats.total_mean_confidence) if stats.n else None,
        "ece": float(stats.ece()) if stats.n else None,
        "brier": float(stats.brier()) if stats.n else None,
        "reliability": reliability_fields(stats, *_wilson(stats)),
    }
    notes = _empty_notes(stats.n) + _bin_notes(stats, min_bins)
    return Section(section, notes)


def reliability_report(data: Any, *, min_bins: int = DEFAULT_MIN_POPULATED_BINS) -> Report:
    """The reliability report: per-bin table with Wilson intervals, format and groups."""
    min_bins = min(min_bins, int(data.stats.bins))
    report = assemble("reliability", data, lambda d: reliability_section(d, min_bins))
    report.series.update(plot_series(data, report, min_bins))
    return report


def plot_series(data: Any, report: Report, min_bins: int) -> dict[str, dict[str, Any]]:
    """The sections --plot draws: one per --by group (as reported), else one per input file."""
    if data.groups is not None:
        return dict(report.display["groups"])
    per_source = getattr(data, "per_source", None)
    if not per_source:
        return {"": report.display}
    bad: list[str] = []
    return {
        printable(source): _strict(
            reliability_section(part, min_bins).figures, "", bad, keep_inf=True
        )
        for source, part in per_source.items()
    }


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


# --------------------------------------------------------------------------- recalibration


def _before_after(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    keys = [f.key for f in registry.RECALIBRATION]
    return {
        "before": {k: registry.lookup(before, k) for k in keys},
        "after": {k: registry.lookup(after, k) for k in keys},
    }


def with_recalibration(
    target: Report,
    before: Report,
    after: Report,
    settings: dict[str, Any],
    notes: list[str],
    *,
    plot_both: bool = True,
) -> Report:
    """``target`` (the report of the recalibrated rows) with a ``recalibration`` object: the
    settings (method, calibrator file or folds) and the figures of the calibrate reports
    ``before`` and ``after``, pooled and per group; ``notes`` are added to the warnings.
    With ``plot_both`` (and no --by groups) ``--plot`` then draws both reliability curves."""
    pairs = (
        (target.body, before.body, after.body),
        (target.display, before.display, after.display),
    )
    for copy, source, result in pairs:
        block: dict[str, Any] = {**settings, **_before_after(source, result)}
        if "groups" in result and "groups" in source:
            block["groups"] = {
                name: _before_after(source["groups"].get(name, {}), section)
                for name, section in result["groups"].items()
            }
        tail = {k: copy.pop(k) for k in ("warnings", "gate") if k in copy}
        copy["recalibration"] = block
        copy.update(tail)
        copy["warnings"] = copy["warnings"] + notes
    if plot_both and "groups" not in target.body:
        target.series.clear()
        target.series.update({"before": before.display, "after": after.display})
    return target


def fit_report(data: Any, calibrators: Any, *, bins: int, after: Any = None) -> Report:
    """What ``calibcli fit`` shows: the fitted parameters (pooled and per group) and the
    figures before and after the map on the rows it was fitted on — in-sample, so the "after"
    flatters the map; the calibrator file itself is :meth:`CalibratorFile.to_json`."""
    from calibcli.recalibrate import apply_to_data

    before = calibrate_report(data, bins=bins)
    if after is None:
        after = apply_to_data(data, calibrators, bins=bins)
    after = calibrate_report(after, bins=bins, reorder_ok=True)
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "fit",
        "format": getattr(data, "fmt", "jsonl"),
        **input_formats(data),
        "method": calibrators.method,
        "n": int(data.stats.n),
        "params": calibrators.calibrator.to_dict(),
        "in_sample": _before_after(before.body, after.body),
    }
    if data.groups is not None:
        body["by"] = calibrators.by
        body["groups"] = {
            name: {
                "n": calibrators.group_rows.get(name),
                "params": calibrators.groups[name].to_dict(),
                "in_sample": _before_after(before.body["groups"][name], after.body["groups"][name]),
            }
            for name in calibrators.groups
        }
    return finish(body, input_notes(data), [])
