"""A Markdown summary of a report, appended to a file the user names (``--summary PATH``).

Made for CI job summaries (GitHub Actions: ``--summary "$GITHUB_STEP_SUMMARY"``): a heading, a
table of the headline figures, the gate's checks, and the warnings. It only reads the finished
report, so it shows exactly what the report says. The commands append it (never truncating, so
several calibcli steps share one summary file) with the other outputs (:mod:`calibcli.cli.staging`).
"""

from __future__ import annotations

import re
from typing import Any

from calibcli.render.digits import as_given, chosen_at, fixed, gate_decimals, group_cell
from calibcli.reports import (
    BY_COMMAND,
    CALIBRATION,
    RECALIBRATION,
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


def markdown_summary(body: dict[str, Any], sources: list[str]) -> str:
    """The Markdown text for one report body (as written to JSON) read from ``sources``."""
    command = body["command"]
    gate = body.get("gate")
    verdict = "" if gate is None else (" — gate passed" if gate["passed"] else " — gate FAILED")
    lines = [f"### calibcli {command}: {', '.join(map(_code, sources))}{verdict}"]
    figures = [
        f for f in shown(BY_COMMAND.get(command, ()), body) if f.summary and has(body, f.key)
    ]
    with_ci = bool(body.get("ci"))
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
    lines += _before_after(body)
    lines += _comparison(body)
    if gate is not None:
        lines += ["", "| gate | threshold | value | passed |", "| --- | ---: | ---: | --- |"]
        for check in gate["checks"]:
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
            passed = "yes" if check["passed"] else "**no**"
            shown_limit = (">= " if "minimum" in check else "") + _limit(limit)
            lines.append(f"| {_text(name)} | {shown_limit} | {value} | {passed} |")
        if gate["bound"] == "upper":
            lines += ["", "Gated on the upper end of the bootstrap interval."]
            if any("allowance" in check for check in gate["checks"]):
                lines[-1] = lines[-1][:-1] + (
                    ", plus BASE's bias allowance where shown (what the figure reads on BASE's "
                    "confidences with outcomes calibrated by construction)."
                )
            kinds = {c.get("floor_kind", "rare class") for c in gate["checks"] if "floor" in c}
            if "rare class" in kinds:
                lines[-1] = lines[-1][:-1] + (
                    ", or the rare-class floor where larger (the figure with the rarer of right "
                    "and wrong answers raised to its exact binomial upper count)."
                )
            if "discordant" in kinds:
                lines[-1] = lines[-1][:-1] + (
                    ", or the discordance floor where larger (NEW − BASE with the questions NEW "
                    "gets wrong where BASE is right raised to their exact binomial upper count)."
                )
    if body.get("warnings"):
        lines += [""] + [f"> warning: {_text(w)}" for w in body["warnings"]]
    return "\n".join(lines) + "\n\n"


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
        lines += [
            "",
            f"Accuracy: {mcnemar_name(mcnemar)} p = {mcnemar['p_value']:.4g} "
            f"({mcnemar['right_to_wrong']} right → wrong, "
            f"{mcnemar['wrong_to_right']} wrong → right).",
        ]
    return lines
