"""rich tables for the three commands, drawn from the same report dictionaries as --json.

Tables go to stdout through a ``Console()`` created at print time (so NO_COLOR, pipes and test
runners are honoured: no escape codes unless stdout is a colour terminal). Cells, titles and
headers are plain ``Text``, never markup, so ``[0.1, 0.2)`` or a field ``x[/]`` prints as
written; names from the data are shown by :func:`calibcli.render.digits.group_cell`. A
character stdout's encoding lacks (cp1252, ASCII) is written as a backslash escape.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from calibcli.render.digits import (
    as_given,
    chosen_at,
    cut,
    fixed,
    gate_decimals,
    group_cell,
    table_decimals,
    threshold_decimals,
)
from calibcli.render.report_shape import gate_passed
from calibcli.render.sentences import UNPAIRED, mcnemar_counts, paired_on, plug_in_evaluated
from calibcli.reports import (
    CALIBRATION,
    PERPLEXITY,
    RECALIBRATION,
    RELIABILITY,
    THRESHOLD,
    Figure,
    auroc_test_name,
    confidence,
    decides,
    has,
    lookup,
    mcnemar_name,
    shown,
)

NA = "n/a"
_BAR_WIDTH = 10
_EIGHTHS = " ▏▎▍▌▋▊▉█"


class _Stdout(Console):
    def on_broken_pipe(self) -> None:
        """rich exits 1 here, which would read as a failed gate; let the CLI decide instead."""
        self.quiet = True
        raise BrokenPipeError


class _Escaping:
    """stdout, writing a character its encoding lacks as a backslash escape where it would
    raise (a group named in Japanese on cp1252); all else is stdout's (``isatty``, ``flush``)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"  # as rich reads it

    def write(self, text: str) -> int:
        shown = text.encode(self.encoding, "backslashreplace").decode(self.encoding)
        return self._stream.write(shown)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _console(width: int | None = None) -> Console:
    """stdout console; with NO_COLOR set (non-empty), no escape codes at all, not even bold."""
    colors = None if os.environ.get("NO_COLOR") else "auto"
    return _Stdout(file=_Escaping(sys.stdout), highlight=False, color_system=colors, width=width)


def _name(name: Any) -> str:
    """A name from the data (a group's, the --by field's) as the tables show it on stdout."""
    return group_cell(name, _Escaping(sys.stdout).encoding)


def _by(by: str | None) -> str:
    """The --by field as the tables name it (``group`` without one)."""
    return "group" if by is None else _name(by)


def _f(x: Any, digits: int = 4) -> str:
    if x is None:
        return NA
    if isinstance(x, int):
        return f"{x:,}"
    return fixed(x, digits)


def _interval(pair: Any, digits: int = 4) -> str:
    if not pair:
        return ""
    lo, hi = pair
    return f"[{_f(lo, digits)}, {_f(hi, digits)}]"


def _table(title: str | None, *columns: str, right_from: int = 1) -> Table:
    """A table of the renderer's one shape; the title and headers are text, never markup."""
    table = Table(
        title=None if title is None else Text(title, style="table.title"),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )
    for i, name in enumerate(columns):
        table.add_column(Text(name), justify="right" if i >= right_from else "left", no_wrap=True)
    return table


def _row(table: Table, *cells: Any) -> None:
    table.add_row(*(c if isinstance(c, Text) else Text(str(c)) for c in cells))


def _natural_width(console: Console, renderable: Any) -> int:
    """The width ``renderable`` takes when nothing limits it."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(1 << 20), renderable).maximum


_PLAIN_ROWS = 200  # tables of this many rows or more, printed without styles, skip rich's layout


def _print(*renderables: Any) -> None:
    """Print on stdout; a table is never narrower than its content (rich would otherwise cut
    numbers to fit 80 columns when stdout is a pipe, or a narrow terminal). A large table
    printed without styles is written as the lines rich would print
    (:mod:`calibcli.render.plain_table`), without rich's layout of every cell, in the box rich
    would draw (ASCII where stdout's encoding has no box characters)."""
    from calibcli.render.plain_table import table_lines

    console = _console()
    plain: dict[int, tuple[list[str], int]] = {}
    if console.color_system is None:
        for r in renderables:
            if isinstance(r, Table) and r.row_count >= _PLAIN_ROWS:
                r.box = r.box.substitute(console.options, safe=r.safe_box is not False)
                lines = table_lines(r)
                if lines is not None:
                    plain[id(r)] = lines
    wide = max(
        (
            plain[id(r)][1] if id(r) in plain else _natural_width(console, r)
            for r in renderables
            if isinstance(r, Table)
        ),
        default=0,
    )
    if wide > console.width:
        console = _console(wide)
    for i, r in enumerate(renderables):
        if i and not isinstance(r, Text):
            console.print()
        if id(r) in plain:
            console.file.write("".join(line + "\n" for line in plain[id(r)][0]))
        else:
            console.print(r)


# --------------------------------------------------------------------------- figures


def _cell(report: dict[str, Any], figure: Figure) -> str:
    value = lookup(report, figure.key)
    if figure.kind == "bins" and value is not None:
        return f"{value} of {report.get('bins_used', report.get('bins'))}"
    if figure.kind == "threshold":  # printed so as to accept the rows the threshold accepts
        return _f(value, chosen_at(report, figure.key))
    return _f(value)


def _figure_table(title: str, report: dict[str, Any], figures: tuple[Figure, ...]) -> Table:
    """The headline table: one row per figure the report holds, with its interval if any."""
    ci = report.get("ci")
    columns = ["metric", "value"]
    if "ci_level" in report:
        columns.append(f"{report['ci_level'] * 100:g}% CI")
    table = _table(title, *columns)
    for figure in figures:
        if not has(report, figure.key):
            continue
        cells = ["  " * figure.level + figure.label, _cell(report, figure)]
        if len(columns) == 3:
            cells.append(_interval((ci or {}).get(figure.key)))
        _row(table, *cells)
    return table


def _group_table(report: dict[str, Any], figures: tuple[Figure, ...], by: str | None) -> Table:
    """One row per --by group and the pooled row, over the figures that have a column."""
    columns = [f for f in figures if f.column is not None and has(report, f.key)]
    table = _table(f"By {_by(by)}", _by(by), *(f.column for f in columns))
    rows = [(_name(k), v) for k, v in report["groups"].items()]
    rows.append(("all (pooled)", report))
    if "macro" in report:  # lm-eval's group row: the groups' figures, weighted by sequences
        rows.append(("macro (by sequences)", report["macro"]))
    for name, section in rows:
        _row(table, name, *(_cell(section, f) for f in columns))
    return table


def _print_figures(
    title: str, report: dict[str, Any], figures: tuple[Figure, ...], by: str | None, *notes: Any
) -> None:
    out: list[Any] = [_figure_table(title, report, figures), *notes]
    if "groups" in report:
        out.append(_group_table(report, figures, by))
    out += _gate(report)
    _print(*out)


def print_perplexity(report: dict[str, Any], by: str | None = None) -> None:
    notes = []
    if "bits_per_byte" in report or "word_perplexity" in report:
        notes.append(
            Text("Only bits per byte compares across tokenizers; per-token figures do not.")
        )
    _print_figures("Perplexity", report, PERPLEXITY, by, *notes)


def print_calibrate(report: dict[str, Any], by: str | None = None) -> None:
    title = f"Calibration ({report['bins_used']} {report.get('strategy', 'uniform')} bins)"
    _print_figures(title, report, CALIBRATION, by, *_recalibration(report))


def _recalibration(report: dict[str, Any]) -> list[Any]:
    """The before/after table of a recalibrated report (empty list without one)."""
    block = report.get("recalibration")
    if block is None:
        return []
    if block.get("folds"):
        how = (
            f"cross-fitted over {block['folds']} folds: each row is mapped by a calibrator "
            "fitted on the other folds"
        )
        if block.get("maps") == "per_group":
            how = f"one map per --by group ({_by(report.get('by'))}), {how} of its group"
    else:
        how = f"calibrator {block.get('calibrator')}"
    line = Text(f"Recalibration: {block['method']}, {how}")
    return [line, _before_after_table(block, "after")]


def _before_after_table(block: dict[str, Any], after_label: str) -> Table:
    table = _table(None, "metric", "before", after_label, "change")
    for figure in RECALIBRATION:
        before, after = block["before"].get(figure.key), block["after"].get(figure.key)
        change = "" if before is None or after is None else f"{after - before:+.4f}"
        _row(table, figure.label, _f(before), _f(after), change)
    return table


# --------------------------------------------------------------------------- reliability


def _bar(fraction: float | None, *, ascii_only: bool = False) -> str:
    """Accuracy as a bar of _BAR_WIDTH cells with eighth-cell resolution (whole cells of ``#``
    when the output encoding has no block characters)."""
    if fraction is None:
        return ""
    if ascii_only:
        return ("#" * round(max(0.0, min(1.0, fraction)) * _BAR_WIDTH)).ljust(_BAR_WIDTH)
    eighths = round(max(0.0, min(1.0, fraction)) * _BAR_WIDTH * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[rest] if rest else "")).ljust(_BAR_WIDTH)


def reliability_table(rel: dict[str, Any], title: str, *, ascii_only: bool = False) -> Table:
    """The per-bin table: range, count, mean confidence, accuracy (Wilson CI), gap, bar.

    Edges, mean confidences and accuracies have as many decimals (at least 2, 3 and 3) as
    keep distinct values apart, and apart from 0 and 1: 200 bins' edges 0.005 apart, or
    quantile bins above 0.999, would otherwise read alike (``[1.00, 1.00)``)."""
    has_ci = "accuracy_ci" in rel
    columns = ["bin", "count", "confidence", "accuracy"]
    columns += ["95% CI"] if has_ci else []
    table = _table(title, *columns, "gap", "accuracy bar")
    last = len(rel["count"]) - 1
    edge = threshold_decimals([*rel["bin_lower"], *rel["bin_upper"]], 2)
    conf_digits = threshold_decimals(rel["confidence"], 3)
    acc_digits = threshold_decimals(rel["accuracy"], 3)
    for i, count in enumerate(rel["count"]):
        lo, hi = rel["bin_lower"][i], rel["bin_upper"][i]
        conf, acc = rel["confidence"][i], rel["accuracy"][i]
        name = f"[{lo:.{edge}f}, {hi:.{edge}f}{']' if i == last else ')'}"
        cells = [name, f"{count:,}", _f(conf, conf_digits), _f(acc, acc_digits)]
        if has_ci:
            cells.append(_interval(rel["accuracy_ci"][i], 3))
        gap = None if acc is None else conf - acc
        cells.append("" if gap is None else f"{gap:+.3f}")
        cells.append(Text(_bar(acc, ascii_only=ascii_only), justify="left"))
        _row(table, *cells)
    table.caption = "gap = mean confidence - accuracy (> 0: over-confident)"
    table.caption_justify = "left"
    return table


def print_reliability(report: dict[str, Any], by: str | None = None) -> None:
    """The per-bin table, the report's reliability diagram drawn in the terminal, the groups."""
    from calibcli.render.diagram import DiagramSeries, render_diagram

    title = f"Reliability ({report['bins']} bins, N = {report['n']:,})"
    ascii_only = _console().options.ascii_only
    out: list[Any] = [reliability_table(report["reliability"], title, ascii_only=ascii_only)]
    out.append(render_diagram(DiagramSeries.from_section(report)))
    out += _recalibration(report)
    if "groups" in report:
        out.append(_group_table(report, RELIABILITY, by))
    _print(*out)


# --------------------------------------------------------------------------- gate


def _gate(report: dict[str, Any]) -> list[Any]:
    gate = report.get("gate")
    if gate is None:
        return []
    verdict = "passed" if gate_passed(gate) else "FAILED"
    upper = gate["bound"] == "upper"
    title = f"Gate: {verdict} (bound: {gate['bound']})"
    # a check that adds BASE's bias allowance to the upper end compares their sum (its value)
    allowed = upper and any("allowance" in check for check in gate["checks"])
    # a check with a rare-class floor compares the larger of it and the upper end (its value)
    floored = upper and any("floor" in check for check in gate["checks"])
    columns = ["metric", "group", *(["estimate", "upper"] if upper else ["value"])]
    columns += ["floor"] if floored else []
    columns += ["allowance"] if allowed else []
    columns += ["gated"] if allowed or floored else []
    table = _table(title, *columns, "threshold", "result", right_from=2)
    for check in gate["checks"]:
        failed = "fail (closed)" if "reason" in check else "fail"
        result = "pass" if check["passed"] else failed if decides(check) else "not gated"
        values = [check["value"]]
        if upper:  # a floor's count has no interval: its estimate and upper end are itself
            values = [check.get("estimate", check["value"]), check.get("upper", check["value"])]
        limit = check["minimum"] if "minimum" in check else check["threshold"]
        shown = [*values, check["value"]] if allowed or floored else values
        digits = gate_decimals([*shown, check.get("floor")] if floored else shown, limit)
        cells = [_f(v, digits) for v in values]
        if floored:  # blank for a check without one
            cells.append(_f(check["floor"], digits) if "floor" in check else "")
        if allowed:  # blank for a check without one: it reads its upper end (or count)
            extra = check.get("allowance")
            cells.append("" if extra is None else _f(extra, digits))
        if allowed or floored:
            gated = "allowance" in check or "floor" in check
            cells.append(_f(check["value"], digits) if gated else "")
        _row(
            table,
            check["metric"],
            _name(check["group"]) if "group" in check else "(pooled)",
            *cells,
            f">= {as_given(limit)}" if "minimum" in check else as_given(limit),
            result,
        )
    return [table]


# --------------------------------------------------------------------------- threshold


def print_threshold(report: dict[str, Any], by: str | None = None) -> None:
    """The chosen thresholds and summary figures, the risk–coverage table, a text curve."""
    method = {"ltt": "Learn then Test, fixed sequence", "sgr": "SGR bisection"}[report["method"]]
    method += _grid(report.get("grid"))
    # a threshold chosen on recalibrated confidences is compared with the calibrator's output
    scored = "recalibrated confidence" if "recalibration" in report else "confidence"
    head = Text(
        f"Automation threshold: accuracy >= {as_given(report['target_accuracy'])} with "
        f"probability >= {confidence(report['delta'])} ({method}); rows with {scored} >= "
        "threshold are accepted"
    )
    figures = shown(THRESHOLD, report)
    table = _figure_table("Thresholds", report, figures)
    out: list[Any] = [head, table, *_recalibration(report)]
    plug = plug_in_evaluated(report)  # chosen on --fit rows: what it does on the evaluated ones
    if plug is not None:
        out.insert(2, Text(f"{plug[0].upper()}{plug[1:]}."))
    curve = report.get("curve")
    if curve:
        out.append(_curve_table(curve, report["delta"]))
        chart = _coverage_chart(curve, report["target_accuracy"], report.get("coverage"))
        out.append(Text("\n".join(chart)))
    if "groups" in report:
        out.append(_group_table(report, figures, by))
    out += _gate(report)
    _print(*out)


def _grid(size: int | None) -> str:
    """What Learn then Test walked down: a grid of thresholds, or every distinct confidence."""
    if size is None:
        return ""
    return (
        f" over {size:,} thresholds fixed in advance" if size else " over every distinct confidence"
    )


def _curve_table(curve: dict[str, Any], delta: float) -> Table:
    """The risk–coverage rows; each threshold cut to accept exactly its row's rows."""
    digits = table_decimals(curve["threshold"], curve.get("highest_rejected"))
    table = _table(
        "Risk-coverage",
        "threshold",
        "coverage",
        "accepted",
        "errors",
        "accuracy",
        f"lower bound ({confidence(delta, percent=True)})",
    )
    for i in range(len(curve["threshold"])):
        _row(
            table,
            cut(curve["threshold"][i], digits),
            _f(curve["coverage"][i]),
            _f(curve["accepted"][i]),
            _f(curve["errors"][i]),
            _f(curve["accuracy"][i]),
            _f(curve["accuracy_lower_bound"][i]),
        )
    return table


def _coverage_chart(
    curve: dict[str, Any], target: float, chosen: float | None, width: int = 50, height: int = 8
) -> list[str]:
    """Accuracy (up) against coverage (across) as text: ``*`` the curve, ``-`` the target
    accuracy, ``|`` the coverage of the guaranteed threshold."""
    points = sorted(zip(curve["coverage"], curve["accuracy"], strict=True))
    low = min(min(a for _, a in points), target)
    low = max(0.0, math.floor(low * 10) / 10)
    span = max(1.0 - low, 1e-9)
    grid = [[" "] * width for _ in range(height)]
    target_row = height - 1 - round((target - low) / span * (height - 1))
    for x in range(width):
        if 0 <= target_row < height:
            grid[target_row][x] = "-"
    if chosen:
        column = min(width - 1, round(chosen * (width - 1)))
        for row in grid:
            row[column] = "|"
    for x in range(width):
        coverage = x / (width - 1)
        accuracy = next((a for c, a in points if c >= coverage - 1e-12), points[-1][1])
        y = height - 1 - round((accuracy - low) / span * (height - 1))
        grid[y][x] = "*"
    lines = [f"{1.0 - i * span / (height - 1):5.2f} |{''.join(r)}" for i, r in enumerate(grid)]
    lines.append("      +" + "-" * width)
    lines.append("       0" + " " * (width - 10) + "coverage 1")
    lines.append("accuracy (*) against coverage; - target accuracy, | guaranteed threshold")
    return lines


# --------------------------------------------------------------------------- compare


def print_compare(report: dict[str, Any], by: str | None = None) -> None:
    """Both sides' figures, the difference with its interval, the tests, the groups, the gate."""
    out: list[Any] = []
    if report.get("paired"):
        unmatched = f"{report['unmatched_base']:,} BASE and {report['unmatched_new']:,} NEW rows"
        pairs = f"Paired on {paired_on(report)} matched by {report['id_field']}"
        out.append(Text(f"{pairs} ({unmatched} unmatched)"))
    else:
        out.append(Text(UNPAIRED))
    if report.get("figures"):
        out.append(_compare_table(report))
    tests = _compare_tests(report)
    if tests:
        out.append(Text("\n".join(tests)))
    if "groups" in report:
        level = f"{report['ci_level'] * 100:g}% CI"
        table = _table(
            f"By {_by(by)}", _by(by), "N", "ECE NEW-BASE", level, "Brier NEW-BASE", level
        )
        for name, g in report["groups"].items():
            rows = g.get("figures") or {}
            ece, brier = rows.get("ece", {}), rows.get("brier", {})
            _row(
                table,
                _name(name),
                _f(g["n_base"]),
                _signed(ece.get("difference")),
                _interval(ece.get("interval")),
                _signed(brier.get("difference")),
                _interval(brier.get("interval")),
            )
        out.append(table)
    out += _gate(report)
    _print(*out)


def _signed(x: float | None) -> str:
    return NA if x is None else f"{x:+.4f}"


def _compare_table(report: dict[str, Any]) -> Table:
    level = f"{report['ci_level'] * 100:g}% CI"
    table = _table("Comparison (NEW - BASE)", "metric", "BASE", "NEW", "NEW - BASE", level)
    for figure in CALIBRATION:
        row = report["figures"].get(figure.key)
        if row is None:
            continue
        _row(
            table,
            "  " * figure.level + figure.label,
            _f(row["base"]),
            _f(row["new"]),
            _signed(row["difference"]),
            _interval(row["interval"]),
        )
    return table


def _compare_tests(report: dict[str, Any]) -> list[str]:
    lines = []
    mcnemar = report.get("mcnemar")
    if mcnemar:
        counts = mcnemar_counts(report, ("right->wrong", "wrong->right"))
        lines.append(f"accuracy: {mcnemar_name(mcnemar)} p = {mcnemar['p_value']:.4g} ({counts})")
    test = report.get("auroc_test") or {}
    if test.get("test") == "delong":
        lines.append(
            f"AUROC: {auroc_test_name(test)} p = {_f(test['p_value'])} (z = {_f(test['z'], 3)}; "
            "the same answers are right on both sides)"
        )
    elif test.get("test") == "bootstrap":
        lines.append("AUROC: the sides differ in correctness, so only the bootstrap interval")
    elif test.get("reason"):  # no test (AUROC undefined on a side, or too few answers)
        lines.append(f"AUROC: {test['reason']}")
    return lines


def _params(params: dict[str, Any]) -> str:
    """A calibrator's parameters on one line (long lists summarised)."""
    parts = []
    for key, value in params.items():
        if isinstance(value, list):
            shown = f"{len(value)} values" if len(value) > 6 else ", ".join(_f(v) for v in value)
            parts.append(f"{key} = [{shown}]")
        else:
            parts.append(f"{key} = {_f(value)}")
    return "; ".join(parts)


def print_fit(report: dict[str, Any], by: str | None = None) -> None:
    """The fitted map and the in-sample figures before and after it."""
    out: list[Any] = [
        Text(f"Calibrator: {report['method']}, fitted on {report['n']:,} rows"),
        Text(f"parameters: {_params(report['params'])}"),
        _before_after_table(report["in_sample"], "after (in-sample)"),
        Text(
            "in-sample: fitted and scored on the same rows; score held-out rows with "
            "calibcli calibrate --calibrator FILE"
        ),
    ]
    if "groups" in report:
        groups = _table(f"By {_by(by)}", _by(by), "N", "parameters", "ECE before", "after")
        for name, g in report["groups"].items():
            ece = g["in_sample"]
            _row(
                groups,
                _name(name),
                _f(g["n"]),
                _params(g["params"]),
                _f(ece["before"]["ece"]),
                _f(ece["after"]["ece"]),
            )
        out.append(groups)
    _print(*out)


def print_report(report: dict[str, Any]) -> None:
    """Print the tables of a report body (as shown: infinities kept), chosen by its command;
    the group tables are titled by the report's ``by`` field."""
    printers = {
        "perplexity": print_perplexity,
        "calibrate": print_calibrate,
        "reliability": print_reliability,
        "fit": print_fit,
        "threshold": print_threshold,
        "compare": print_compare,
    }
    printers[report["command"]](report, report.get("by"))
