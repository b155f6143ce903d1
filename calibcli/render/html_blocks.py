"""The block kinds of the HTML report: a figure table, a per-bin table, a reliability diagram,
a table by group or file, recalibration before and after, the gate, the warnings.

Each block reads one part of a report body and returns HTML (an empty string when the body
lacks that part); :mod:`calibcli.render.html_pages` lists which blocks each command shows.
Strings from the report are escaped here, through :func:`calibcli.render.markup.text`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from calibcli.render.digits import (
    as_given,
    chosen_at,
    gate_decimals,
    group_cell,
    threshold_decimals,
)
from calibcli.render.markup import MINUS, cell, interval, is_number, number, signed, text
from calibcli.render.report_shape import gate_passed
from calibcli.render.svg import reliability_bins, reliability_chart
from calibcli.reports import RECALIBRATION, Figure, decides, has, lookup

SMALL_MULTIPLES = 12  # groups or files beyond this many get a table row, not a diagram each
MAX_TABLE_ROWS = 500  # longer per-bin and risk–coverage tables are thinned (the JSON has all)
ALL_BINS_UP_TO = 50  # with more bins than this, the per-bin table lists the populated ones


class Ids:
    """Unique element ids within one page (charts and sections refer to them). ``page`` opens
    every id: a notebook shows several reports in one document, each with its own."""

    def __init__(self, page: str = "") -> None:
        self.count = 0
        self.page = page

    def __call__(self, prefix: str) -> str:
        self.count += 1
        return f"{self.page}{prefix}{self.count}"

    def named(self, name: str) -> str:
        """The id of the page's one block of a kind (``gate``), which links point at."""
        return f"{self.page}{name}"


Row = tuple[str, Sequence[str]] | tuple[str, Sequence[str], str]


def table(caption: str, headers: Sequence[str], rows: Iterable[Row], *, note: str = "") -> str:
    """A table: ``caption`` and ``headers`` are plain text (escaped here); each row is (row
    header, cells[, row class]) in HTML already. The first column heads the rows."""
    head = "".join(f'<th scope="col">{text(h)}</th>' for h in headers)
    body = []
    for row in rows:
        name, cells, css = (*row, "")[:3]
        attr = f' class="{css}"' if css else ""
        tds = "".join(f"<td>{c}</td>" for c in cells)
        body.append(f'<tr{attr}><th scope="row">{name}</th>{tds}</tr>')
    foot = f'<p class="note">{text(note)}</p>' if note else ""
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{text(caption)}">'
        f"<table><caption>{text(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>{foot}"
    )


def section(ids: Ids, title: str, *parts: str, anchor: str | None = None) -> str:
    """A titled section of the page; empty when every part is."""
    if not any(parts):
        return ""
    hid = anchor or ids("s")
    inner = "".join(parts)
    return f'<section aria-labelledby="{hid}"><h2 id="{hid}">{text(title)}</h2>{inner}</section>'


def note(html: str) -> str:
    return f'<p class="note">{html}</p>'


# --------------------------------------------------------------------------- figures


def bins_total(section: dict[str, Any]) -> Any:
    """How many bins a section's ``populated_bins`` is out of."""
    total = section.get("bins_used", section.get("bins"))
    if total is None and isinstance(section.get("reliability"), dict):
        total = len(reliability_bins(section["reliability"]))
    return total


def value(section: dict[str, Any], figure: Figure, *, exact: bool = True) -> str:
    """One figure of a section as a table cell (``k of M`` for populated bins); ``exact`` adds
    its full precision (left out of the tables that grow with the groups, to keep them small)."""
    x = lookup(section, figure.key)
    if figure.kind == "bins" and is_number(x):
        return f"{number(x)} of {number(bins_total(section))}"
    digits = chosen_at(section, figure.key) if figure.kind == "threshold" else 4
    return cell(x, digits) if exact else number(x, digits)


def figure_table(section: dict[str, Any], figures: Sequence[Figure], caption: str) -> str:
    """The figures a section holds, in registry order, with their bootstrap intervals when it
    has ``ci``."""
    ci = section.get("ci") if isinstance(section.get("ci"), dict) else None
    headers = ["figure", "value"]
    if ci is not None:
        level = section.get("ci_level")
        headers.append(f"{level * 100:g}% interval" if is_number(level) else "interval")
    rows = []
    for figure in figures:
        if not has(section, figure.key):
            continue
        name = text(figure.label)
        cells = [value(section, figure)]
        if ci is not None:
            cells.append(interval(ci.get(figure.key)))
        rows.append((f'<span class="sub">{name}</span>' if figure.level else name, cells))
    return table(caption, headers, rows) if rows else ""


def summary(section: dict[str, Any]) -> str:
    """N, ECE, Brier and populated bins of a section, as one line of plain text."""
    parts = []
    if has(section, "n"):
        parts.append(f"N = {number(section['n'])}")
    for key, label in (("ece", "ECE"), ("brier", "Brier")):
        if has(section, key):
            parts.append(f"{label} {number(section[key])}")
    if is_number(section.get("populated_bins")):
        shown = f"{number(section['populated_bins'])} of {number(bins_total(section))}"
        parts.append(f"{shown} bins populated")
    return ", ".join(parts)


# --------------------------------------------------------------------------- reliability


def _bin_name(b: dict[str, Any], last: bool, digits: int = 2) -> str:
    lo, hi = b["bin_lower"], b["bin_upper"]
    if not (is_number(lo) and is_number(hi)):
        return "?"
    return f"[{number(lo, digits)}, {number(hi, digits)}{']' if last else ')'}"


def bins_table(rel: Any, caption: str) -> str:
    """Per bin: its range, count, mean confidence, accuracy (with the Wilson interval when the
    section has ``accuracy_ci``) and the gap, confidence − accuracy.

    Edges, mean confidences and accuracies of the bins listed have as many decimals (at least
    2, 3 and 3) as keep distinct values apart, and apart from 0 and 1: 200 bins' edges 0.005
    apart, or quantile bins above 0.999, would otherwise read alike (``[1.00, 1.00)``)."""
    bins = reliability_bins(rel)
    if not bins:
        return ""
    with_ci = "accuracy_ci" in rel
    rows, shown_note = list(enumerate(bins)), ""
    if len(rows) > ALL_BINS_UP_TO:
        rows = [(i, b) for i, b in rows if is_number(b["count"]) and b["count"] > 0]
        shown_note = f"The {len(rows):,} populated bins of {len(bins):,}."
    if len(rows) > MAX_TABLE_ROWS:
        step = len(rows) / MAX_TABLE_ROWS
        rows = [rows[int(k * step)] for k in range(MAX_TABLE_ROWS)]
        shown_note = f"{MAX_TABLE_ROWS} of the populated bins, evenly spaced; the JSON has all."
    headers = ["bin", "count", "mean confidence", "accuracy"]
    headers += ["95% interval (Wilson)"] if with_ci else []
    headers.append("gap (confidence − accuracy)")
    edge = threshold_decimals([b[k] for _, b in rows for k in ("bin_lower", "bin_upper")], 2)
    conf_digits = threshold_decimals([b["confidence"] for _, b in rows], 3)
    acc_digits = threshold_decimals([b["accuracy"] for _, b in rows], 3)
    out = []
    for i, b in rows:
        conf, acc = b["confidence"], b["accuracy"]
        cells = [number(b["count"]), cell(conf, conf_digits), cell(acc, acc_digits)]
        if with_ci:
            cells.append(interval(b["accuracy_ci"], 3))
        gap = conf - acc if is_number(conf) and is_number(acc) else None
        cells.append("" if gap is None else signed(gap, 3))
        css = "" if gap is None else ("over" if gap > 0 else "under")
        out.append((_bin_name(b, i == len(bins) - 1, edge), cells, css))
    return table(caption, headers, out, note=shown_note)


LEGEND = (
    '<span class="legend"><span class="key acc"></span>accuracy '
    '<span class="key gap-over"></span>over-confident gap '
    '<span class="key gap-under"></span>under-confident gap '
    '<span class="key diag"></span>perfect calibration</span>'
)


def diagram(ids: Ids, section: Any, name: str, *, legend: bool = True) -> str:
    """The reliability diagram of a section, with a caption naming it and its figures (and
    the legend, unless a grid of diagrams shows it once)."""
    if not isinstance(section, dict) or not reliability_bins(section.get("reliability")):
        return ""
    line = summary(section)
    title = f"Reliability diagram: {name}"
    chart = reliability_chart(
        section["reliability"],
        uid=ids("c"),
        title=title,
        summary=f"{title}." + (f" {line}." if line else ""),
    )
    caption = f"<strong>{text(name)}</strong>" + (f" — {text(line)}" if line else "")
    key = f"<br>{LEGEND}" if legend else ""
    return f'<figure class="chart">{chart}<figcaption>{caption}{key}</figcaption></figure>'


def diagrams(ids: Ids, sections: dict[str, Any], what: str) -> str:
    """One diagram per section (files, groups, sides), the first SMALL_MULTIPLES of them, each
    named as the tables name it (:func:`~calibcli.render.digits.group_cell`): a group named
    ``(pooled)`` is shown ``'(pooled)'``, not as the pooled rows."""
    names = list(sections)[:SMALL_MULTIPLES]
    drawn = [diagram(ids, sections[name], group_cell(name), legend=False) for name in names]
    if not any(drawn):
        return ""
    more = ""
    if len(sections) > SMALL_MULTIPLES:
        more = (
            f" Diagrams of the first {SMALL_MULTIPLES} of {len(sections):,} {what}; the table "
            "lists every one."
        )
    return f'<div class="grid">{"".join(drawn)}</div>{note(LEGEND + more)}'


# --------------------------------------------------------------------------- groups


def groups_table(
    groups: Any, pooled: dict[str, Any], figures: Sequence[Figure], what: str, caption: str
) -> str:
    """One row per group (or file) and the pooled row, over the registry's columns."""
    if not isinstance(groups, dict) or not groups:
        return ""
    sections = [g for g in groups.values() if isinstance(g, dict)]
    columns = [f for f in figures if f.column and any(has(g, f.key) for g in sections)]
    rows: list[Row] = [
        (
            text(group_cell(name)),
            [value(g, f, exact=False) if isinstance(g, dict) else "" for f in columns],
        )
        for name, g in groups.items()
    ]
    if any(has(pooled, f.key) for f in columns):
        pooled_cells = [value(pooled, f, exact=False) for f in columns]
        rows.append(("<em>all (pooled)</em>", pooled_cells, "pooled"))
    macro = pooled.get("macro")  # lm-eval's group row: the groups weighted by sequences
    if isinstance(macro, dict):
        cells = [value(macro, f, exact=False) if has(macro, f.key) else "" for f in columns]
        rows.append(("<em>macro (by sequences)</em>", cells, "pooled"))
    return table(f"{caption} ({len(groups):,})", [what, *(f.column for f in columns)], rows)


def groups(ids: Ids, body: dict[str, Any], figures: Sequence[Figure]) -> str:
    """The --by groups: their table and, for a few groups, their reliability diagrams."""
    found = body.get("groups")
    if not isinstance(found, dict) or not found:
        return ""
    parts = [groups_table(found, body, figures, "group", "By group")]
    if any(isinstance(g, dict) and "reliability" in g for g in found.values()):
        parts.append(diagrams(ids, found, "groups"))
    return section(ids, "By group", *parts)


def per_file(ids: Ids, body: dict[str, Any], figures: Sequence[Figure]) -> str:
    """The input files read without --by: their table and their reliability diagrams."""
    files = body.get("per_file")
    if not isinstance(files, dict) or not files:
        return ""
    return section(
        ids,
        "By input file",
        groups_table(files, body, figures, "file", "By input file"),
        diagrams(ids, files, "files"),
    )


# --------------------------------------------------------------------------- recalibration


def before_after_table(block: dict[str, Any], caption: str, after: str = "after") -> str:
    """The recalibration figures before and after, and the change."""
    first = block.get("before") if isinstance(block.get("before"), dict) else {}
    then = block.get("after") if isinstance(block.get("after"), dict) else {}
    rows = []
    for f in RECALIBRATION:
        if not (has(first, f.key) or has(then, f.key)):
            continue
        b, a = lookup(first, f.key), lookup(then, f.key)
        change = signed(a - b) if is_number(a) and is_number(b) else ""
        rows.append((text(f.label), [cell(b), cell(a), change]))
    return table(caption, ["figure", "before", after, "change"], rows)


def has_both_diagrams(body: dict[str, Any]) -> bool:
    """True when the recalibration block holds the reliability bins before and after."""
    block = body.get("recalibration")
    return isinstance(block, dict) and all(
        isinstance(block.get(k), dict) and reliability_bins(block[k].get("reliability"))
        for k in ("before", "after")
    )


def recalibration(ids: Ids, body: dict[str, Any]) -> str:
    """Figures before and after recalibration, both reliability diagrams when the body has
    them, and each group's ECE and Brier before and after."""
    block = body.get("recalibration")
    if not isinstance(block, dict):
        return ""
    if block.get("folds"):
        how = (
            f"cross-fitted over {number(block['folds'])} folds: each row is mapped by a "
            "calibrator fitted on the other folds"
        )
        if block.get("maps") == "per_group":
            how = f"one map per --by group ({text(body.get('by') or '?')}), {how} of its group"
    else:
        how = f"calibrator <code>{text(block.get('calibrator') or '?')}</code>"
    parts = [
        f"<p>Method: <strong>{text(block.get('method', '?'))}</strong>, {how}. The other "
        "figures on this page are those after recalibration.</p>",
        before_after_table(block, "Before and after recalibration"),
    ]
    if has_both_diagrams(body):
        parts.append(diagrams(ids, {"before": block["before"], "after": block["after"]}, "sides"))
    by_group = block.get("groups")
    if isinstance(by_group, dict) and by_group:
        rows = []
        for name, g in by_group.items():
            g = g if isinstance(g, dict) else {}
            keys = ("before.ece", "after.ece", "before.brier", "after.brier")
            rows.append((text(group_cell(name)), [number(lookup(g, k)) for k in keys]))
        headers = ["group", "ECE before", "ECE after", "Brier before", "Brier after"]
        parts.append(table(f"Recalibration by group ({len(rows):,})", headers, rows))
    return section(ids, "Recalibration", *parts)


# --------------------------------------------------------------------------- gate, warnings


def verdict(passed: bool) -> str:
    return "✓ Gate passed" if passed else "✗ Gate FAILED"


def gate(ids: Ids, found: Any) -> str:
    """The gate's verdict and every check: value (or estimate and upper end), limit, result."""
    if not isinstance(found, dict):
        return ""
    checks = [c for c in found.get("checks") or [] if isinstance(c, dict)]
    upper = found.get("bound") == "upper"
    # a check that adds BASE's bias allowance to the upper end compares their sum (its value)
    allowed = upper and any("allowance" in c for c in checks)
    # a check with a rare-class floor compares the larger of it and the upper end (its value)
    floored = upper and any("floor" in c for c in checks)
    headers = ["figure", "group", *(["estimate", "upper end"] if upper else ["value"])]
    headers += [*(["floor"] if floored else []), *(["allowance"] if allowed else [])]
    headers += [*(["gated value"] if allowed or floored else []), "limit", "result", "reason"]
    rows: list[Row] = []
    for c in checks:
        values = [c.get("value")]
        if upper:  # a floor's count has no interval: its estimate and upper end are itself
            values = [c.get("estimate", c.get("value")), c.get("upper", c.get("value"))]
        least = "minimum" in c
        given = c["minimum"] if least else c.get("threshold")
        listed = [*values, c.get("value")] if allowed or floored else values
        digits = gate_decimals([*listed, c.get("floor")] if floored else listed, given)
        limit = f"{'≥' if least else '≤'} {_limit(given)}"
        ok = c.get("passed") is True
        result = "pass" if ok else ("fail (closed)" if "reason" in c else "fail")
        if not decides(c):  # shown beside the verdict, which the other checks give
            ok, result = True, "not gated"
        shown = [number(v, digits) for v in values]
        if floored:  # blank for a check without one
            shown.append(number(c["floor"], digits) if "floor" in c else "")
        if allowed:  # blank for a check without one: it reads its upper end (or count)
            extra = c.get("allowance")
            shown.append("" if extra is None else number(extra, digits))
        if allowed or floored:
            gated = "allowance" in c or "floor" in c
            shown.append(number(c["value"], digits) if gated else "")
        cells = [text(group_cell(c["group"]) if "group" in c else "(pooled)"), *shown, limit]
        cells += [result if ok else f"<strong>{result}</strong>", text(c.get("reason", ""))]
        rows.append((text(c.get("metric", "?")), cells, "" if ok else "fail"))
    passed = gate_passed(found)
    on = "the upper end of each figure's bootstrap interval" if upper else "each estimate"
    on += ", plus BASE's bias allowance where shown" if allowed else ""
    kinds = {c.get("floor_kind", "rare class") for c in checks if "floor" in c}
    on += ", or its rare-class floor where larger" if "rare class" in kinds else ""
    on += ", or its discordance floor where larger" if "discordant" in kinds else ""
    parts = [f'<p class="verdict {"pass" if passed else "fail"}">{verdict(passed)}, on {on}.</p>']
    failed = found.get("failed_groups")
    if isinstance(failed, list) and failed:
        # each name as its Python literal, as the gate's lines on stderr name a group: a list
        # joined by commas must not read a group named "a, b" as two, nor "(pooled)" as the
        # pooled rows
        listed = ", ".join(text(repr(str(name))) for name in failed)
        parts.append(f"<p>Groups that failed ({len(failed):,}): {listed}</p>")
    parts.append(table("Gate checks", headers, rows))
    return section(ids, "Gate", *parts, anchor=ids.named("gate"))


def _limit(given: Any) -> str:
    """A gate's limit as the user gave it (``0.05``, not ``0.0500``), in the page's minus."""
    if is_number(given):
        return as_given(given).replace("-", MINUS)
    return number(given)


def warnings(ids: Ids, body: dict[str, Any]) -> str:
    found = body.get("warnings")
    if not isinstance(found, list) or not found:
        return ""
    items = "".join(f"<li>{text(w)}</li>" for w in found)
    return section(ids, f"Warnings ({len(found)})", f'<ul class="warnings">{items}</ul>')
