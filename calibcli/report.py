"""JSON reports (schema_version 1) and CI gate checks for the three commands.

Builds the report dictionaries from what :mod:`calibcli.io` read and :mod:`calibcli.metrics`
computed; no printing, no typer. Every report is strict JSON: numpy values become Python numbers,
non-finite numbers become ``null`` and are explained in ``warnings``, and nothing depends on the
clock, so the same input gives a byte-identical report.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
DEFAULT_MIN_POPULATED_BINS = 3
SMALL_BIN_COUNT = 30  # the small-sample warning fires when the median populated bin holds fewer
CALIBRATION_GATES = ("ece", "brier", "mce", "rmsce", "smece")
BINNED_GATES = frozenset({"ece", "mce", "rmsce"})  # fail closed on too few populated bins
SCALARS = (
    "ece",
    "populated_bins",
    "brier",
    "accuracy",
    "mean_confidence",
    "mce",
    "rmsce",
    "rmsce_debiased",
    "smece",
    "smece_bandwidth",
    "ece_1bin",
    "nll",
    "auroc",
)


@dataclass(frozen=True)
class Note:
    """One warning; ``kind`` merges it across --by groups, ``detail`` is its short form there."""

    kind: str
    text: str
    detail: str = ""
    explains: tuple[str, ...] = ()  # report fields this warning explains when they are null
    general: str = ""  # the text for several groups at once, their details listed (else ``text``)


@dataclass
class Report:
    """A finished report: the JSON body and the gate's failure messages (one line each)."""

    body: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    # What the tables show: the body with infinities kept (the JSON can only say null),
    # so an infinite perplexity reads "inf", not "n/a"; undefined values stay None.
    display: dict[str, Any] | None = None

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


def _strict(obj: Any, path: str, bad: list[str], *, keep_inf: bool = False) -> Any:
    """Copy ``obj`` as strict JSON; non-finite floats become None, their paths go in ``bad``
    (with ``keep_inf``, infinities are kept: the copy the tables show)."""
    if isinstance(obj, dict):
        return {
            k: _strict(v, f"{path}.{k}" if path else k, bad, keep_inf=keep_inf)
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)) or hasattr(obj, "tolist"):
        items = obj.tolist() if hasattr(obj, "tolist") else obj
        if not isinstance(items, list):  # a numpy scalar
            return _strict(items, path, bad, keep_inf=keep_inf)
        return [_strict(v, f"{path}[{i}]", bad, keep_inf=keep_inf) for i, v in enumerate(items)]
    if isinstance(obj, float) and not math.isfinite(obj):
        bad.append(path)
        return obj if keep_inf and math.isinf(obj) else None
    return obj


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


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and os.replace.

    Readers never see a half-written report, and on any error the old file is left as it was.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- gates


@dataclass(frozen=True)
class Gate:
    """What the user asked the gate to check."""

    thresholds: dict[str, float]  # metric -> maximum allowed value, in check order
    bound: str = "estimate"  # "estimate" or "upper" (upper end of the bootstrap interval)
    each: bool = False  # also check every --by group

    def __bool__(self) -> bool:
        return bool(self.thresholds)


def _fmt(x: float | None) -> str:
    return "null" if x is None else f"{x:.6g}"


def _checks(
    section: dict[str, Any],
    closed: dict[str, str],
    gate: Gate,
    group: str | None,
    level: float | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Evaluate the thresholds on one section; return the check records and failure messages."""
    checks, failures = [], []
    where = f" in group {group!r}" if group is not None else ""
    for metric, threshold in gate.thresholds.items():
        estimate = section.get(metric)
        check: dict[str, Any] = {"metric": metric, "threshold": threshold}
        if group is not None:
            check["group"] = group
        reason = closed.get(metric)
        value = estimate
        if gate.bound == "upper":
            upper = (section.get("ci") or {}).get(metric, (None, None))[1]
            check["estimate"], check["upper"] = estimate, upper
            value = upper
            if reason is None and (upper is None or math.isnan(upper)):
                reason = f"the bootstrap gives no upper bound for {metric}"
        if reason is None and (value is None or math.isnan(value)):
            reason = f"{metric} is undefined on this data"
        check["value"] = value
        if reason is not None:
            check["passed"] = False
            check["reason"] = reason
            failures.append(
                f"{metric}{where}: {reason}; cannot support --max-{metric} {threshold:g}"
            )
        else:
            check["passed"] = bool(value <= threshold)
            if not check["passed"]:
                bound = (
                    "" if gate.bound == "estimate" else f" (upper end of the {level:g} interval)"
                )
                failures.append(
                    f"{metric}{where} = {_fmt(value)}{bound} exceeds --max-{metric} {threshold:g}"
                )
        checks.append(check)
    return checks, failures


def evaluate_gate(
    pooled: tuple[dict[str, Any], dict[str, str]],
    groups: dict[str, tuple[dict[str, Any], dict[str, str]]] | None,
    gate: Gate,
    level: float | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The report's ``gate`` object and the failure lines, for the pooled figures (and groups)."""
    checks, failures = _checks(*pooled, gate, None, level)
    failed_groups: list[str] = []
    if gate.each and groups:
        for name, (section, closed) in groups.items():
            group_checks, group_failures = _checks(section, closed, gate, name, level)
            checks += group_checks
            failures += group_failures
            if group_failures:
                failed_groups.append(name)
    body: dict[str, Any] = {"passed": not failures, "bound": gate.bound, "checks": checks}
    if gate.each:
        body["failed_groups"] = failed_groups
    return body, failures


# --------------------------------------------------------------------------- group warnings


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
        listed = ", ".join(f"{g} ({n.detail})" if n.detail else g for g, n in items)
        general = items[0][1].general or items[0][1].text
        out.append(Note(kind, f"{len(items)} groups, {listed}: {general}", explains=explains))
    return out


# --------------------------------------------------------------------------- perplexity


_PPL_KEYS = ("perplexity", "byte_perplexity", "word_perplexity")


def _perplexity_section(data: Any) -> tuple[dict[str, Any], list[Note], dict[str, str]]:
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
    if math.isinf(data.total_nll):
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
    if getattr(data, "fmt", None) == "logprobs":
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
    return section, notes, closed


def perplexity_report(data: Any, gate: Gate) -> Report:
    """The perplexity report: token figures, bytes and words, logprob counts, groups, gate."""
    section, notes, closed = _perplexity_section(data)
    body: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "command": "perplexity"}
    body["format"] = getattr(data, "fmt", "jsonl")
    body.update(section)
    groups = _sections(data.groups, _perplexity_section)
    if groups is not None:
        body["groups"] = {name: g[0] for name, g in groups.items()}
        notes += _group_notes({name: g[1] for name, g in groups.items()})
    failures: list[str] = []
    if gate:
        body["gate"], failures = evaluate_gate((section, closed), _gate_groups(groups), gate)
    return finish(body, notes, failures)


def _sections(groups: dict[str, Any] | None, build: Any) -> dict[str, tuple] | None:
    if groups is None:
        return None
    return {str(name): build(value) for name, value in groups.items()}


def _gate_groups(groups: dict[str, tuple] | None) -> dict[str, tuple] | None:
    if groups is None:
        return None
    return {name: (g[0], g[2]) for name, g in groups.items()}


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


def reliability_section(
    data: Any, min_bins: int
) -> tuple[dict[str, Any], list[Note], dict[str, str]]:
    """The reliability report's figures for one set of rows (pooled, or one group)."""
    stats = data.stats
    section = {
        "n": int(stats.n),
        "bins": int(stats.bins),
        "populated_bins": int(stats.populated_bins),
        "accuracy": float(stats.total_accuracy) if stats.n else None,
        "mean_confidence": float(stats.total_mean_confidence) if stats.n else None,
        "reliability": reliability_fields(stats, *_wilson(stats)),
    }
    notes = _empty_notes(stats.n) + _bin_notes(stats, min_bins)
    return section, notes, {}


def reliability_report(data: Any, *, min_bins: int = DEFAULT_MIN_POPULATED_BINS) -> Report:
    """The reliability report: per-bin table with Wilson intervals, format and groups."""
    min_bins = min(min_bins, int(data.stats.bins))
    section, notes, _ = reliability_section(data, min_bins)
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "reliability",
        "format": getattr(data, "fmt", "jsonl"),
        **section,
    }
    groups = _sections(data.groups, lambda g: reliability_section(g, min_bins))
    if groups is not None:
        body["groups"] = {name: g[0] for name, g in groups.items()}
        notes += _group_notes({name: g[1] for name, g in groups.items()})
    return finish(body, notes, [])


@dataclass(frozen=True)
class Bootstrap:
    """--ci settings: interval level, resamples and seed."""

    level: float
    samples: int = 1000
    seed: int = 0


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
) -> tuple[dict[str, Any], list[Note], dict[str, str]]:
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
        return _order(section), _empty_notes(0), closed

    from calibcli.metrics.estimators import calibration_estimates

    est = calibration_estimates(
        columns,
        bins=bins,
        strategy=strategy,
        stats=stats,
        reorder_ok=reorder_ok and bootstrap is None,
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
            workers=_bootstrap_workers(n * bootstrap.samples),
        )
        section["ci"] = {k: [_num(lo), _num(hi)] for k, (lo, hi) in result.intervals.items()}
    closed = {}
    if est.stats.populated_bins < min_bins:
        reason = (
            f"only {est.stats.populated_bins} of {est.stats.bins} bins are populated "
            f"(minimum {min_bins})"
        )
        closed = dict.fromkeys(BINNED_GATES, reason)
    return _order(section), notes, closed


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
    gate = gate or Gate({})
    min_bins = min(min_bins, bins)

    def build(d: Any) -> tuple[dict[str, Any], list[Note], dict[str, str]]:
        return calibration_section(
            d.columns,
            bins=bins,
            strategy=strategy,
            min_bins=min_bins,
            bootstrap=bootstrap,
            stats=getattr(d, "stats", None),
            reorder_ok=reorder_ok,
        )

    section, notes, closed = build(data)
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "calibrate",
        "format": getattr(data, "fmt", "jsonl"),
        **{k: v for k, v in section.items() if k != "ci"},
    }
    if bootstrap is not None:
        body.update(
            ci=section.get("ci"),
            ci_level=bootstrap.level,
            bootstrap_samples=bootstrap.samples,
            seed=bootstrap.seed,
        )
    groups = _sections(data.groups, build)
    if groups is not None:
        body["groups"] = {name: g[0] for name, g in groups.items()}
        notes += _group_notes({name: g[1] for name, g in groups.items()})
    failures: list[str] = []
    if gate:
        level = bootstrap.level if bootstrap else None
        body["gate"], failures = evaluate_gate((section, closed), _gate_groups(groups), gate, level)
    return finish(body, notes, failures)
