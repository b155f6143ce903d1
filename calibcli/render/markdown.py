"""A Markdown summary of a report, appended to a file the user names (``--summary PATH``).

Made for CI job summaries (GitHub Actions: ``--summary "$GITHUB_STEP_SUMMARY"``): a heading, a
table of the headline figures, the gate's checks, and the warnings. It only reads the finished
report, so it shows exactly what the report says, and it stays under GitHub's size limit for a
step's summary, cutting the gate's table when it must (failing checks first). The commands
append it (never truncating, so several calibcli steps share one summary file) with the other
outputs (:mod:`calibcli.cli.staging`).
"""

from __future__ import annotations

import re
from typing import Any

from calibcli.render.digits import as_given, chosen_at, fixed, gate_decimals, group_cell
from calibcli.render.report_shape import gate_passed
from calibcli.render.sentences import mcnemar_counts, plug_in_evaluated
from calibcli.reports import (
    BY_COMMAND,
    CALIBRATION,
    RECALIBRATION,
    decides,
    has,
    lookup,
    mcnemar_name,
    shown,
)


def _cell(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return fixed(value, digits)
    return _text(str(value))


_ACTIVE = re.compile(r"[\\`*\[\]<>|~&$]|(?<![^\W_])_")
"""Characters that start inline Markdown (emphasis, code, links, HTML, entities, math on
GitHub) or end a table cell: escaped with a backslash in text from the data. An underscore
after a letter or digit cannot open emphasis, and stays as it is (``ece_increase``)."""


def _one_line(text: str) -> str:
    """``text`` on one line: a line break would end a table row or a blockquote, and the next
    line could start any block (a heading, a list, a table)."""
    return " ".join(text.splitlines())


def _text(text: str) -> str:
    """Text from the data (group names, file names, reasons, warnings) as literal Markdown
    inside a line: on one line, every character that Markdown reads as syntax escaped, so
    that it can neither start a block nor end a table cell."""
    return _ACTIVE.sub(lambda found: "\\" + found.group(), _one_line(text))


def _code(text: str) -> str:
    """``text`` as a code span (file names in the heading): on one line, fenced with more
    backticks than any run of them in it, padded when it starts or ends with one."""
    text = _one_line(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _bins_of(body: dict[str, Any]) -> int | None:
    """How many bins a report's ``populated_bins`` is out of."""
    total = body.get("bins_used", body.get("bins"))
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def _interval(body: dict[str, Any], key: str) -> str:
    lo, hi = (body.get("ci") or {}).get(key) or (None, None)
    return "" if lo is None and hi is None else f"[{_cell(lo)}, {_cell(hi)}]"


SIZE_LIMIT = 1_000_000
"""Bytes (UTF-8) one summary holds at most: GitHub refuses a step's job summary over 1 MiB
whole, verdict and all, so a longer one is cut (:func:`_cut`) well below that."""

_HEADING_SIZE = 4_096  # bytes of a cut summary's heading: the files it names, then a count
_NOTE_SIZE = 1_024  # room kept for the line that says what a cut summary leaves out
_LEAST_ROOM = 16_384
"""Bytes a summary may take however full its file is: the verdict, figures and first failing
rows are written even where earlier text leaves less room under :data:`SIZE_LIMIT`."""


def markdown_summary(
    body: dict[str, Any], sources: list[str], *, limit: int | None = None, held: int = 0
) -> str:
    """The Markdown text for one report body (as written to JSON) read from ``sources``: at
    most ``limit`` bytes of UTF-8 (by default :data:`SIZE_LIMIT` less the ``held`` bytes the
    summary file holds already, as earlier commands of one step write to it, but never less
    than :data:`_LEAST_ROOM`), cut as :func:`_cut` says when the whole text is longer."""
    command = body["command"]
    gate = body.get("gate")
    verdict = "" if gate is None else (" — gate passed" if gate_passed(gate) else " — gate FAILED")
    lines = _figures(body) + _plug_in(body) + _before_after(body) + _comparison(body)
    # a check shown beside the verdict, deciding nothing, is cut with the passing ones
    checks = [] if gate is None else gate["checks"]
    rows = [(c["passed"] or not decides(c), _gate_row(c)) for c in checks]
    table = [] if gate is None else ["", *_GATE_HEAD]
    notes = [] if gate is None else _gate_notes(gate)
    warnings = [f"> warning: {_text(w)}" for w in body.get("warnings") or ()]
    whole = _joined(
        [f"### calibcli {command}: {', '.join(map(_code, sources))}{verdict}"],
        lines,
        table + [row for _, row in rows] + notes,
        ["", *warnings] if warnings else [],
    )
    if limit is None:
        limit = max(SIZE_LIMIT - held, _LEAST_ROOM)
    if _size(whole) <= limit:
        return whole
    heading = f"### calibcli {command}: {_sources(sources, _HEADING_SIZE)}{verdict}"
    return _cut(limit, [heading, *lines], table, rows, notes, warnings)


_GATE_HEAD = ("| gate | threshold | value | passed |", "| --- | ---: | ---: | --- |")


def _joined(*parts: list[str]) -> str:
    return "\n".join(line for part in parts for line in part) + "\n\n"


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _sources(sources: list[str], size: int) -> str:
    """The files a cut heading names: as many as fit in ``size`` bytes, then how many more."""
    shown: list[str] = []
    used = 0
    for name in map(_code, sources):
        used += _size(name) + 2
        if used > size:
            break
        shown.append(name)
    left = len(sources) - len(shown)
    if not shown:
        return f"{left:,} files"
    return ", ".join(shown) + (f" and {left:,} more" if left else "")


def _cut(
    limit: int,
    top: list[str],
    table: list[str],
    rows: list[tuple[bool, str]],
    notes: list[str],
    warnings: list[str],
) -> str:
    """A summary too long for ``limit``: the heading (with the verdict) and the figures, then
    the gate's table with its failing checks before its passing ones, as many rows as fit
    (passing ones only once every failing one is in), its notes, the warnings that fit, and a
    last line that says what was left out and where the whole table is."""
    used = _size(_joined(top, table, notes)) + _NOTE_SIZE

    def fits(line: str) -> bool:
        nonlocal used
        if used + _size(line) + 1 > limit:
            return False
        used += _size(line) + 1
        return True

    failing = [row for passed, row in rows if not passed]
    kept = [row for row in failing if fits(row)]
    failing_left = len(failing) - len(kept)
    kept_warnings = [line for line in warnings if fits(line)]
    if not failing_left:
        kept += [row for passed, row in rows if passed and fits(row)]
    said = []
    if rows:
        left = len(rows) - len(kept)
        said.append(f"{left:,} of {len(rows):,} gate rows left out ({failing_left:,} failing)")
    if len(kept_warnings) < len(warnings):
        left = len(warnings) - len(kept_warnings)
        said.append(f"{left:,} of {len(warnings):,} warnings left out")
    note = (
        f"Cut to keep this summary under GitHub's size limit: {', '.join(said) or 'files named'}; "
        "the full table is in the JSON report (-o/--json)."
    )
    blocks = ["", *kept_warnings] if kept_warnings else []
    return _joined(top, table + kept + notes, blocks, ["", note])


def _figures(body: dict[str, Any]) -> list[str]:
    """The table of the report's headline figures (empty when it has none)."""
    figures = [
        f
        for f in shown(BY_COMMAND.get(body["command"], ()), body)
        if f.summary and has(body, f.key)
    ]
    with_ci = bool(body.get("ci"))
    lines = []
    if figures and with_ci:
        lines += ["", f"| metric | value | {body['ci_level']:g} interval |", "| --- | ---: | --- |"]
    elif figures:
        lines += ["", "| metric | value |", "| --- | ---: |"]
    for figure in figures:
        value = lookup(body, figure.key)
        if figure.kind == "threshold" and isinstance(value, float):
            row = f"| {figure.label} | {value:.{chosen_at(body, figure.key)}f} |"
        elif figure.kind == "bins" and isinstance(value, int) and _bins_of(body) is not None:
            row = f"| {figure.label} | {value:,} of {_bins_of(body):,} |"  # as the table says
        else:
            row = f"| {figure.label} | {_cell(value)} |"
        lines.append(row + (f" {_interval(body, figure.key)} |" if with_ci else ""))
    return lines


def _gate_row(check: dict[str, Any]) -> str:
    """One check of the gate as a row of its table."""
    group = f" ({group_cell(check['group'])})" if "group" in check else ""
    name = check["metric"] + group
    reason = f" — {_text(check['reason'])}" if "reason" in check else ""
    limit = check["minimum"] if "minimum" in check else check["threshold"]
    # the limit as given; the value with as many decimals as put it on its side of it
    value = _cell(check["value"], gate_decimals([check["value"]], limit))
    if "floor" in check:  # the larger of the upper end and the rare-class floor
        present = [v for v in (check["value"], check["floor"]) if v is not None]
        digits = gate_decimals(present, limit)
        parts = [_cell(check[k], digits) for k in ("upper", "floor")]
        extra = check.get("allowance")
        parts.append("" if extra is None else f", + allowance {_cell(extra, digits)}")
        kind = "discordance" if check.get("floor_kind") == "discordant" else "rare-class"
        value += f" (larger of upper end {parts[0]} and {kind} floor {parts[1]}{parts[2]})"
    elif "allowance" in check:  # the upper end plus BASE's bias allowance, both shown
        digits = gate_decimals([check["value"]], limit)
        parts = (_cell(check[k], digits) for k in ("upper", "allowance"))
        value += " (upper end {} + allowance {})".format(*parts)
    value += reason
    passed = "yes" if check["passed"] else "**no**" if decides(check) else "not gated"
    shown_limit = (">= " if "minimum" in check else "") + _limit(limit)
    return f"| {_text(name)} | {shown_limit} | {value} | {passed} |"


def _gate_notes(gate: dict[str, Any]) -> list[str]:
    """What the gate's table needs said under it: how an upper-end gate reads its value."""
    if gate["bound"] != "upper":
        return []
    note = "Gated on the upper end of the bootstrap interval."
    if any("allowance" in check for check in gate["checks"]):
        note = note[:-1] + (
            ", plus BASE's bias allowance where shown (what the figure reads on BASE's "
            "confidences with outcomes calibrated by construction)."
        )
    kinds = {c.get("floor_kind", "rare class") for c in gate["checks"] if "floor" in c}
    if "rare class" in kinds:
        note = note[:-1] + (
            ", or the rare-class floor where larger (the figure with the rarer of right "
            "and wrong answers raised to its exact binomial upper count)."
        )
    if "discordant" in kinds:
        note = note[:-1] + (
            ", or the discordance floor where larger (NEW − BASE with the questions NEW "
            "gets wrong where BASE is right raised to their exact binomial upper count)."
        )
    return ["", note]


def _limit(limit: Any) -> str:
    """A gate's limit as given (a number), or as any other cell (a hand-edited report)."""
    if isinstance(limit, (int, float)) and not isinstance(limit, bool):
        return as_given(limit)
    return _cell(limit)


def _before_after(body: dict[str, Any]) -> list[str]:
    """The before/after table of a recalibrated report or a fit (empty without one)."""
    block = body.get("recalibration") or body.get("in_sample")
    if block is None:
        return []
    method = block.get("method") or body.get("method")
    mode = block.get("mode") or "in-sample"
    if block.get("maps") == "per_group":
        by = group_cell(body.get("by"))
        mode = f"one map per --by group ({by}), {mode} over {block.get('folds')} folds"
    lines = ["", f"Recalibration: {_text(f'{method} ({mode})')}", ""]
    lines.append("| metric | before | after |")
    lines.append("| --- | ---: | ---: |")
    for figure in RECALIBRATION:
        before, after = block["before"].get(figure.key), block["after"].get(figure.key)
        lines.append(f"| {figure.label} | {_cell(before)} | {_cell(after)} |")
    return lines


def _comparison(body: dict[str, Any]) -> list[str]:
    """The NEW − BASE table of a compare report (empty for other reports)."""
    rows = body.get("figures") if body["command"] == "compare" else None
    if not rows:
        return []
    level = f"{body['ci_level']:g} interval"
    lines = ["", f"| metric | BASE | NEW | NEW − BASE | {level} |"]
    lines.append("| --- | ---: | ---: | ---: | --- |")
    for figure in CALIBRATION:
        row = rows.get(figure.key)
        if figure.summary and row is not None:
            lo, hi = row["interval"]
            cells = [_cell(row["base"]), _cell(row["new"]), _cell(row["difference"])]
            lines.append(f"| {figure.label} | {' | '.join(cells)} | [{_cell(lo)}, {_cell(hi)}] |")
    mcnemar = body.get("mcnemar")
    if mcnemar:
        counts = mcnemar_counts(body)
        lines += ["", f"Accuracy: {mcnemar_name(mcnemar)} p = {mcnemar['p_value']:.4g} ({counts})."]
    return lines


def _plug_in(body: dict[str, Any]) -> list[str]:
    """What a plug-in threshold chosen on --fit rows does on the evaluated rows (empty for
    other reports)."""
    said = plug_in_evaluated(body) if body["command"] == "threshold" else None
    return [] if said is None else ["", _text(said[0].upper() + said[1:]) + "."]
