"""JSON reports (schema_version 1) for the commands: figures, warnings and the gate's verdict.

Builds the report dictionaries from what :mod:`calibcli.io` read and :mod:`calibcli.metrics`
computed; no printing, no typer, no files. Each set of rows (the pooled input, one ``--by``
group) becomes a :class:`Section`; the gate (:mod:`calibcli.reports.gate`) checks sections.
Every report is strict JSON: numpy values become Python numbers, non-finite numbers become
``null`` and are explained in ``warnings``, and nothing depends on the clock, so the same input
gives a byte-identical report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from calibcli.reports import figures as registry
from calibcli.reports.gate import Gate, evaluate

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
