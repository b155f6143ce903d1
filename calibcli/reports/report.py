"""JSON reports for the commands: figures, warnings and the gate's verdict, built from summaries.

A report is a pure function of summaries and settings (:mod:`calibcli.summaries`), built once
and never changed: no printing, no typer, no files. Each set of rows (the pooled input, one
``--by`` group) becomes a :class:`Section`; the gate (:mod:`calibcli.reports.gate`) checks
sections. The JSON body is the whole product: every renderer (tables, diagram, image, Markdown)
reads it and nothing else. Every report is strict JSON: numpy values become Python numbers,
non-finite numbers become ``null``, are explained in ``warnings`` and, where infinite, listed in
``non_finite`` (path -> ``"inf"`` or ``"-inf"``) so a renderer shows ``inf``, not ``n/a``.
Nothing depends on the clock, so the same input gives a byte-identical report.

``schema_version`` (1) changes only for breaking changes. Revision 1.1 added keys, all
optional to readers: ``by`` (the group field, beside ``groups``), ``per_file`` (several
files), ``non_finite``, the pooled before/after
``n`` and ``reliability`` of a recalibration, threshold sections' ``coverage_curve`` and
compare's ``sides``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from calibcli.reports.gate import Gate, evaluate
from calibcli.reports.paths import path_to, put_marks, split_path

SCHEMA_VERSION = 1
DEFAULT_MIN_POPULATED_BINS = 3
SMALL_BIN_COUNT = 30  # the small-sample warning fires when the median populated bin holds fewer
GROUPS_NAMED = 10  # a warning about many groups names this many and counts the rest
SMOOTH_GROUPS = 1000  # above this many --by groups, smece is computed for the pooled rows only


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


@dataclass(frozen=True)
class Report:
    """A finished report: the JSON body and the gate's failure messages (one line each)."""

    body: dict[str, Any]
    failures: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return self.body["warnings"]

    @property
    def passed(self) -> bool:
        return not self.failures

    def _has_group_table(self) -> bool:
        table = _group_table_type()
        return table is not None and any(type(v) is table for v in self.body.values())

    def to_json(self) -> str:
        if not self._has_group_table():
            return json.dumps(self.body, allow_nan=False) + "\n"
        return "".join(self.json_pieces())

    def json_pieces(self) -> Iterator[str]:
        """:meth:`to_json` in pieces, made as they are asked for: a table of many groups is
        written a few thousand groups at a time, never held whole."""
        if not self._has_group_table():
            yield self.to_json()
            return
        # a table of groups writes its own text, spliced in as json.dumps would write it
        for i, (k, v) in enumerate(self.body.items()):
            yield f"{', ' if i else '{'}{json.dumps(k)}: "
            if type(v) is _group_table_type():
                yield from v.json_pieces()
            else:
                yield json.dumps(v, allow_nan=False)
        yield "}\n"


# --------------------------------------------------------------------------- JSON helpers


def _group_table_type() -> type | None:
    """:class:`~calibcli.reports.group_table.GroupTable` once its module is loaded, else None:
    no table of groups exists before, and a report without groups (perplexity, one file) does
    not pay for loading it."""
    module = sys.modules.get("calibcli.reports.group_table")
    return None if module is None else module.GroupTable


def num(x: Any) -> Any:
    """A Python int/float (or None) from a numpy or Python number; non-finite floats kept."""
    if x is None:
        return None
    if hasattr(x, "item"):
        x = x.item()
    return x


def printable(text: str) -> str:
    """``text`` with lone surrogates (which JSON strings may hold but no output encoding can
    write) shown as backslash escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def strict(obj: Any, path: str = "", bad: list[tuple[str, float]] | None = None) -> Any:
    """A strict-JSON copy of ``obj``: numpy values as Python numbers, non-finite floats as
    None with ``(path, value)`` appended to ``bad``."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            kind = type(v)
            if kind in _PLAIN:  # the common leaves, copied without a call or a path
                out[k] = v
            elif kind is float:
                out[k] = v if v - v == 0.0 else _non_finite(v, path_to(path, k), bad)
            elif kind is CheckedFigures or kind is _group_table_type():
                out[k] = v.strict(path_to(path, k), bad)
            else:
                out[k] = strict(v, path_to(path, k), bad)
        return out
    if isinstance(obj, (list, tuple)) or hasattr(obj, "tolist"):
        items = obj.tolist() if hasattr(obj, "tolist") else obj
        if not isinstance(items, list):  # a numpy scalar
            return strict(items, path, bad)
        out_list = []
        for i, v in enumerate(items):
            kind = type(v)
            if kind in _PLAIN:
                out_list.append(v)
            elif kind is float:
                out_list.append(v if v - v == 0.0 else _non_finite(v, f"{path}[{i}]", bad))
            else:
                out_list.append(strict(v, f"{path}[{i}]", bad))
        return out_list
    if isinstance(obj, float) and not math.isfinite(obj):
        return _non_finite(obj, path, bad)
    return obj


class CheckedFigures(dict):
    """A section's figures already in strict-JSON form (Python numbers, strings, None, lists
    and dicts of them, every float finite) except for the top-level floats named in ``loose``,
    which may be non-finite: :func:`strict` checks only those, not every value. Thousands of
    --by groups then cost a few lookups each instead of a walk over their hundred values."""

    __slots__ = ("loose",)

    def __init__(self, items: Any, loose: tuple[str, ...] = ()) -> None:
        super().__init__(items)
        self.loose = loose  # in the figures' key order, as the walk would meet them

    def strict(self, path: str, bad: list[tuple[str, float]] | None) -> dict[str, Any]:
        """What :func:`strict` makes of these figures: themselves, or a copy with the
        non-finite ``loose`` values as None (``(path, value)`` appended to ``bad``)."""
        out: dict[str, Any] = self
        for key in self.loose:
            v = self[key]
            if type(v) is float and v - v == 0.0:
                continue
            if out is self:
                out = dict(self)
            out[key] = strict(v, path_to(path, key), bad)
        return out


# leaves that strict JSON takes as they are (exact types: a float subclass may be numpy's)
_PLAIN = frozenset((int, bool, str, type(None)))


def _non_finite(value: float, path: str, bad: list[tuple[str, float]] | None) -> None:
    if bad is not None:
        bad.append((path, value))
    return None


class NonFiniteCells:
    """Non-finite floats of a table of groups, as :func:`strict`'s walk would list them
    (group by group, each group's ``keys`` in turn), kept in ``bad`` as one entry whose paths
    (``prefix.<group name>.<key>``) are made only for the values :func:`finish` reports: the
    null smece of 100,000 groups, explained by one warning, then cost no path each."""

    __slots__ = ("columns", "keys", "names", "prefix")

    def __init__(self, prefix: str, names: list[str], keys: tuple[str, ...], columns: list) -> None:
        self.prefix, self.names, self.keys = prefix, names, keys
        self.columns = columns  # a list of Python floats per key

    def entries(self, wanted: Callable[[str], bool], infinite: bool) -> list[tuple[str, float]]:
        """``(path, value)`` of each non-finite value (``infinite``: each infinity) of the keys
        ``wanted``, in the walk's order."""
        import numpy as np

        width = len(self.keys)
        found = []
        for k, (key, column) in enumerate(zip(self.keys, self.columns, strict=True)):
            if wanted(key):
                values = np.asarray(column, np.float64)
                hit = np.isinf(values) if infinite else ~np.isfinite(values)
                found.append(np.flatnonzero(hit) * width + k)
        if not found:
            return []
        keys, names, columns, prefix = self.keys, self.names, self.columns, self.prefix
        return [
            (
                path_to(path_to(prefix, names[c // width]), keys[c % width]),
                columns[c % width][c // width],
            )
            for c in np.sort(np.concatenate(found)).tolist()
        ]


def _entries(
    bad: list, wanted: Callable[[str], bool], infinite: bool
) -> Iterator[tuple[str, float]]:
    """The ``(path, value)`` entries of ``bad`` whose field name is ``wanted`` (``infinite``:
    only the infinities). A value nested in a figure's object (compare's
    ``figures.nll.new``) goes by the figure's name too: it is wanted only when both are."""
    for item in bad:
        if type(item) is NonFiniteCells:
            yield from item.entries(wanted, infinite)
        elif _wanted(item[0], wanted) and (not infinite or math.isinf(item[1])):
            yield item


def _wanted(path: str, wanted: Callable[[str], bool]) -> bool:
    """Whether the value at ``path`` is wanted: by its field name, and by its figure's name
    too when it sits in a figure's object (``figures.nll.new``, pooled or in a group), not
    by the name of the group holding it (a group called ``nll``: ``groups.nll.ece``)."""
    names = [part for part in split_path(path) if type(part) is str]
    if not wanted(names[-1]):  # the field name: ``groups.law.ci.nll[1]`` -> ``nll``
        return False
    return len(names) < 3 or names[-3] != "figures" or wanted(names[-2])


def finish(
    body: dict[str, Any],
    notes: list[Note],
    failures: list[str],
    *,
    tail: dict[str, Any] = (),
    mark_infinite: bool = False,
) -> Report:
    """Make ``body`` strict JSON, add the warnings (and one for unexplained nulls), with
    ``mark_infinite`` the map of infinities written as null (``non_finite``), ``tail`` (e.g.
    the gate) last, and wrap it."""
    bad: list[tuple[str, float]] = []
    out = strict(body, "", bad)
    explained = {name for note in notes for name in note.explains}
    unexplained = [p for p, _ in _entries(bad, lambda leaf: leaf not in explained, False)]
    warnings = [note.text for note in notes]
    if unexplained:
        # named as many groups are: one line, whatever the number of nulls
        named = ", ".join(unexplained[:GROUPS_NAMED])
        if len(unexplained) > GROUPS_NAMED:
            named += f" and {len(unexplained) - GROUPS_NAMED} more"
        warnings.append(
            f"{len(unexplained)} value(s) are not finite numbers and were written as null: {named}"
        )
    # the tail (the gate) repeats figures reported and explained above
    tail_out = strict(dict(tail), "", bad)
    infinite = {p: ("inf" if v > 0 else "-inf") for p, v in _entries(bad, bool, True)}
    if infinite and mark_infinite:
        out["non_finite"] = infinite
    out["warnings"] = warnings
    out.update(tail_out)
    return Report(out, list(failures))


def as_shown(body: dict[str, Any]) -> dict[str, Any]:
    """What renderers show of a report body (as ``json.loads`` gives it): the infinities that
    ``non_finite`` lists put back in place of their nulls, and strings made printable, but for
    names from the data: keys (a group's, a file's) and the values of ``group`` and ``by``
    stay as they are, to be shown by the renderers' one rule for names
    (:func:`calibcli.render.digits.group_cell`): escaped on their own, a group named by a
    lone surrogate and one named by the six characters ``\\udc80`` would read alike, as one
    key of ``groups`` holding one group's figures."""
    shown = _printable_copy(body)
    marks = body.get("non_finite")
    return put_marks(shown, marks) if isinstance(marks, dict) else shown


def _printable_copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: v if type(v) in _NUMBERS or (k in _NAMES and type(v) is str) else _printable_copy(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [v if type(v) in _NUMBERS else _printable_copy(v) for v in obj]
    if isinstance(obj, str):
        return obj if obj.isascii() else printable(obj)
    return obj


# keys whose text values are names from the data (a gate check's group, the --by field): kept
# as they are, for the renderers to show by their rule for names
_NAMES = frozenset(("group", "by"))

# what json.loads gives that has nothing to make printable (ASCII text never needs it)
_NUMBERS = frozenset((int, float, bool, type(None)))


# --------------------------------------------------------------------------- group warnings


def group_notes(per_group: dict[str, list[Note]]) -> list[Note]:
    """One warning line per kind, naming the groups it applies to (not one line per group)."""
    by_kind: dict[str, list[tuple[str, Note]]] = {}
    for name, notes in per_group.items():
        for note in notes:
            by_kind.setdefault(note.kind, []).append((name, note))
    return [
        _merged(kind, len(items), items[:GROUPS_NAMED], [n for _, n in items])
        for kind, items in by_kind.items()
    ]


def coded_group_notes(names: list[str], codes: list[int], lists: list[list[Note]]) -> list[Note]:
    """:func:`group_notes` of groups whose notes are ``lists[codes[g]]``, many groups sharing
    one list: each kind's groups are found with one pass over the codes, not per note."""
    import numpy as np

    coded = np.asarray(codes, dtype=np.intp)
    used = np.zeros(len(lists), dtype=bool)
    used[coded] = True
    holding: dict[str, list[int]] = {}  # kind -> the lists of some group that hold it
    for u, notes in enumerate(lists):
        if not used[u]:
            continue
        kinds = [note.kind for note in notes]
        if len(set(kinds)) < len(kinds):  # a kind twice in one group's notes
            return group_notes({name: lists[code] for name, code in zip(names, codes, strict=True)})
        for kind in kinds:
            holding.setdefault(kind, []).append(u)
    found = []
    for kind, us in holding.items():
        mask = np.zeros(len(lists), dtype=bool)
        mask[us] = True
        groups = np.flatnonzero(mask[coded])
        if groups.shape[0]:
            first = int(groups[0])
            place = [note.kind for note in lists[codes[first]]].index(kind)
            found.append((first, place, kind, groups))
    found.sort(key=lambda item: item[:2])  # the order the groups' notes meet the kinds

    def note_of(g: int, kind: str) -> Note:
        return next(note for note in lists[codes[g]] if note.kind == kind)

    out = []
    for _, _, kind, groups in found:
        named = [(names[g], note_of(g, kind)) for g in groups[:GROUPS_NAMED].tolist()]
        held = [note_of(int(groups[0]), kind)]
        held += [note for u in holding[kind] for note in lists[u] if note.kind == kind]
        out.append(_merged(kind, int(groups.shape[0]), named, held))
    return out


def _merged(kind: str, count: int, named: list[tuple[str, Note]], held: list[Note]) -> Note:
    """The one warning of ``kind`` for ``count`` groups: the first ones ``named`` (name, note),
    ``held`` the notes of every such group (or one of each distinct note, the first group's
    first)."""
    explains = tuple(sorted({x for n in held for x in n.explains}))
    if count == 1:
        name, note = named[0]
        return Note(kind, f"group {name!r}: {note.text}", explains=explains)
    shown = [f"{g} ({n.detail})" if n.detail else g for g, n in named]
    more = count - len(shown)
    listed = ", ".join(shown) + (f" and {more:,} more" if more else "")
    general = held[0].general or held[0].text
    return Note(kind, f"{count:,} groups, {listed}: {general}", explains=explains)


# --------------------------------------------------------------------------- assembling


def input_formats(summary: Any) -> dict[str, Any]:
    """``{"formats": {file: format}}`` when the files are in several formats, else nothing."""
    if summary.fmt != "mixed":
        return {}
    return {"formats": dict(summary.formats)}


def input_notes(summary: Any) -> list[Note]:
    """The reader's warnings about the input (a file skipped, and why)."""
    return [Note("input", text) for text in summary.warnings]


MIXED = "the rows are several models' (see the warning); read one model's files at a time"
"""Why a gate fails closed on rows that mix models (a summary's ``mixed``)."""
POOLED_MODELS = (
    "the figures over all groups pool several models' rows (see the warning); gate each --by "
    "model group with --gate-each"
)
"""Why a pooled gate fails closed when --by model keeps the models apart in groups."""
NOT_GATED = (
    "the figures over all groups pool several models' rows (see the warning): not gated, "
    "--gate-each gates each --by model group on its own rows"
)
"""Why the pooled checks fail closed, deciding nothing, beside --gate-each's --by model groups."""


REPEATS = (
    "the rows repeat their questions (see the warning), so the upper end of a bootstrap over "
    "rows is too low; gate the estimate"
)
"""Why a gate on an interval's upper end fails closed on rows that repeat their questions (a
summary's ``repeats``): the bootstrap takes them for independent answers."""


def run_closed(
    gate: Any, mixed: str | None, repeats: str | None, partial: str | None = None
) -> dict[str, str]:
    """The checks of ``gate`` that fail closed on what the runs say of the rows: every one
    on several models' rows, and on rows of only part of an input (``partial``, the reason:
    pieces of a file missing from a merge; the rows counted are not the file's, so a floor
    on them fails too), those on an interval's upper end on rows that repeat their
    questions."""
    if not gate:
        return {}
    if mixed:
        return dict.fromkeys([*gate.thresholds, *gate.minimums], MIXED)
    if partial:
        return dict.fromkeys([*gate.thresholds, *gate.minimums], partial)
    if repeats and gate.bound == "upper":
        return dict.fromkeys(gate.thresholds, REPEATS)
    return {}


MIXED_CONFIDENCES = (
    "the inspect-ai rows' confidences mix answer-token and sequence (see the warning): give "
    "--inspect-confidence answer-token or sequence"
)


# what --inspect-confidence auto does, which the warnings about rows it read both ways open with
AUTO_MODES = (
    "inspect-ai --inspect-confidence auto took the answer letter's probability (answer-token) "
    "where a sample's completion has an answer line, the whole completion's (sequence) where not"
)


def taken_by(name: str, rows: int, mode: str | None, counts: Any = None) -> str:
    """How a warning about auto's two modes names a log: by its samples taken each way where
    they are known (``counts``: answer-token's, sequence's), else by its rows and its mode
    (``auto``: both)."""
    if counts is not None and all(counts):
        return f"{name}: {counts[0]:,} of {rows:,} samples answer-token, {counts[1]:,} sequence"
    return f"{name}: {rows:,} rows, {'both modes' if mode == 'auto' else mode}"


def mixed_confidences(summary: Any) -> str | None:
    """The warning about inspect-ai rows that --inspect-confidence auto read by both of its
    modes (their sources' recorded modes join to ``auto``), naming the logs and, where their
    sources recorded them, the samples taken each way; else None."""
    if getattr(summary, "inspect_confidence", None) != "auto":
        return None
    logs = [s for s in summary.sources if s.format == "inspect-ai" and s.rows]
    named = [taken_by(s.display, s.rows, s.inspect_confidence, s.mode_counts()) for s in logs[:5]]
    return (
        f"{AUTO_MODES} ({'; '.join(named)}{'; ...' if len(logs) > 5 else ''}): the "
        "figures mix two definitions of confidence, so a gate on them fails; give "
        "--inspect-confidence answer-token or sequence to choose one"
    )


def assemble(
    command: str,
    summary: Any,
    build: Callable[[Any, str | None], Section],
    *,
    gate: Gate | None = None,
    level: float | None = None,
    after: Callable[[Section], dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    closing: Callable[[Section, dict[str, Section] | None], dict[str, Any]] | None = None,
    notes: list[Note] = (),
    build_groups: Callable[[dict[str, Any]], dict[str, Section] | None] | None = None,
    closed: dict[str, str] | None = None,
) -> Report:
    """A report from sections: the pooled one (``build(view, None)``), one per --by group
    (``build(view, name)``), the gate.

    The pooled section's figures open the body (after schema_version, command and format);
    ``after(pooled)`` gives the keys that follow them and may replace some (the bootstrap's
    settings after its intervals); then ``extra``, ``groups``, ``closing(pooled, groups)``,
    ``warnings`` (the input's, the sections', then ``notes``) and ``gate``.
    ``build_groups(views)``, when given, builds every group's section at once (the same
    sections ``build`` would), or returns None to leave them to ``build``. ``closed`` maps
    figures to the reason every section's gate check on them fails closed (a section's own
    reason comes first); every check fails closed on a summary whose rows mix models, or mix
    inspect-ai confidences taken two ways (:func:`mixed_confidences`).
    """
    views = summary.by_group()  # first: the pooled section may sort the rows in place
    pooled = build(summary.pooled(), None)
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "format": summary.fmt,
        **input_formats(summary),
        **pooled.figures,
    }
    if after is not None:
        body.update(after(pooled))
    body.update(extra or {})
    all_notes = input_notes(summary) + list(pooled.notes)
    groups = None
    if views is not None:
        if not all(type(name) is str for name in views):
            views = {str(name): view for name, view in views.items()}
        groups = build_groups(views) if build_groups is not None else None
        if groups is None:
            groups = {name: build(view, name) for name, view in views.items()}
        settings = getattr(summary, "settings", None)
        body["by"] = getattr(settings, "by", None)
        table = getattr(groups, "table", None)  # the figures as one table (GroupSections)
        body["groups"] = (
            table if table is not None else {name: g.figures for name, g in groups.items()}
        )
        coded = getattr(groups, "coded_notes", None)  # notes shared by many groups
        if coded is not None:
            all_notes += coded_group_notes(*coded())
        else:
            all_notes += group_notes({name: g.notes for name, g in groups.items()})
    if closing is not None:
        body.update(closing(pooled, groups))
    all_notes += list(notes)
    mixing = mixed_confidences(summary)
    if mixing is not None:  # every check fails on them, each section's own reason first
        all_notes.append(Note("inspect_confidence", mixing))
        if gate:
            checks = dict.fromkeys([*gate.thresholds, *gate.minimums], MIXED_CONFIDENCES)
            closed = {**checks, **(closed or {})}
    failures: list[str] = []
    tail: dict[str, Any] = {}
    mixed = getattr(summary, "mixed", None)
    by_model = mixed is not None and getattr(getattr(summary, "settings", None), "by", None) == (
        "model"
    )
    repeats, partial = getattr(summary, "repeats", None), getattr(summary, "partial", None)
    said = run_closed(gate, None if by_model else mixed, repeats, partial)
    # the --by groups whose rows are known to be one model's are gated on their own figures
    apart = getattr(summary, "single_model", frozenset()) if mixed and not by_model else ()
    own = {**(closed or {}), **run_closed(gate, None, repeats, partial)}
    if gate and said:
        closed = {**(closed or {}), **said}
    if gate:
        if closed:
            each = groups if gate.each else None
            pooled, groups = with_closed(closed, pooled, each, dict.fromkeys(apart, own))
        if by_model:  # the pooled figures mix the models' groups: alone they fail closed;
            # with --gate-each they are shown so too, and each model's group decides
            why = NOT_GATED if gate.each else POOLED_MODELS
            checks = dict.fromkeys([*gate.thresholds, *gate.minimums], why)
            pooled, _ = with_closed(checks, pooled, None)
        decides = not (by_model and gate.each)
        verdict = evaluate(gate, pooled, groups, level=level, pooled_decides=decides)
        tail["gate"], failures = verdict.body, verdict.failures
    return finish(body, all_notes, failures, tail=tail, mark_infinite=True)


def with_closed(
    closed: dict[str, str],
    pooled: Any,
    groups: Mapping[str, Any] | None,
    apart: Mapping[str, dict[str, str]] | None = None,
) -> tuple[Section, dict[str, Section] | None]:
    """The pooled and group sections as a gate reads them, ``closed``'s figures failing
    closed too (after each section's own reasons); a group in ``apart``, those it maps to."""

    def one(section: Any, shut: dict[str, str]) -> Section:
        return Section(section.figures, closed={**shut, **section.closed})

    if groups is None:
        return one(pooled, closed), None
    apart = apart or {}
    return one(pooled, closed), {k: one(g, apart.get(k, closed)) for k, g in groups.items()}
