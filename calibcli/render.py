"""rich tables for the three commands, drawn from the same report dictionaries as --json.

Tables go to stdout through a ``Console()`` created at print time (so NO_COLOR, pipes and test
runners are honoured: no escape codes unless stdout is a colour terminal). Cells are plain
``Text``, never markup, so a value like ``[0.1, 0.2)`` prints as written.
"""

from __future__ import annotations

import os
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

NA = "n/a"
_BAR_WIDTH = 10
_EIGHTHS = " ▏▎▍▌▋▊▉█"


class _Stdout(Console):
    def on_broken_pipe(self) -> None:
        """rich exits 1 here, which would read as a failed gate; let the CLI decide instead."""
        self.quiet = True
        raise BrokenPipeError


def _console() -> Console:
    """stdout console; with NO_COLOR set (non-empty), no escape codes at all, not even bold."""
    plain = bool(os.environ.get("NO_COLOR"))
    return _Stdout(highlight=False, color_system=None if plain else "auto")


def _f(x: Any, digits: int = 4) -> str:
    if x is None:
        return NA
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}f}"


def _interval(pair: Any, digits: int = 4) -> str:
    if not pair:
        return ""
    lo, hi = pair
    return f"[{_f(lo, digits)}, {_f(hi, digits)}]"


def _table(title: str | None, *columns: str, right_from: int = 1) -> Table:
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )
    for i, name in enumerate(columns):
        table.add_column(name, justify="right" if i >= right_from else "left", no_wrap=True)
    return table


def _row(table: Table, *cells: Any) -> None:
    table.add_row(*(c if isinstance(c, Text) else Text(str(c)) for c in cells))


def _print(*renderables: Any) -> None:
    console = _console()
    for i, r in enumerate(renderables):
        if i and not isinstance(r, Text):
            console.print()
        console.print(r)


# --------------------------------------------------------------------------- perplexity

_PPL_GROUP_COLUMNS = (
    ("sequences", "sequences"),
    ("total_tokens", "tokens"),
    ("perplexity", "perplexity"),
    ("bits_per_token", "bits/token"),
    ("bits_per_byte", "bits/byte"),
    ("word_perplexity", "word ppl"),
)


def print_perplexity(report: dict[str, Any], by: str | None = None) -> None:
    table = _table("Perplexity", "metric", "value")
    rows = [
        ("perplexity (per token)", "perplexity"),
        ("mean NLL (nats/token)", "mean_nll"),
        ("bits per token", "bits_per_token"),
        ("tokens", "total_tokens"),
        ("sequences", "sequences"),
        ("total NLL (nats)", "total_nll"),
        ("bytes", "total_bytes"),
        ("bits per byte", "bits_per_byte"),
        ("byte perplexity", "byte_perplexity"),
        ("words", "total_words"),
        ("word perplexity", "word_perplexity"),
        ("null logprobs (skipped)", "null_logprobs"),
        ("sentinel logprobs (<= -9999)", "sentinel_logprobs"),
    ]
    for label, key in rows:
        if key in report:
            _row(table, label, _f(report[key]))
    out: list[Any] = [table]
    if "bits_per_byte" in report or "word_perplexity" in report:
        out.append(Text("Only bits per byte compares across tokenizers; per-token figures do not."))
    if "groups" in report:
        columns = [(k, h) for k, h in _PPL_GROUP_COLUMNS if k in report]
        group_table = _table(f"By {by or 'group'}", by or "group", *(h for _, h in columns))
        for name, g in report["groups"].items():
            _row(group_table, name, *(_f(g.get(k)) for k, _ in columns))
        _row(group_table, "all (pooled)", *(_f(report.get(k)) for k, _ in columns))
        out.append(group_table)
    out += _gate(report)
    _print(*out)


# --------------------------------------------------------------------------- calibrate

_CAL_ROWS = (
    ("N", "n"),
    ("accuracy", "accuracy"),
    ("mean confidence", "mean_confidence"),
    ("ECE", "ece"),
    ("populated bins", "populated_bins"),
    ("Brier", "brier"),
    ("  reliability", "brier_decomposition.reliability"),
    ("  resolution", "brier_decomposition.resolution"),
    ("  uncertainty", "brier_decomposition.uncertainty"),
    ("  within-bin variance", "brier_decomposition.within_bin_variance"),
    ("  within-bin covariance", "brier_decomposition.within_bin_covariance"),
    ("MCE", "mce"),
    ("RMSCE", "rmsce"),
    ("RMSCE (debiased)", "rmsce_debiased"),
    ("smECE", "smece"),
    ("  smECE bandwidth", "smece_bandwidth"),
    ("ECE (1 bin)", "ece_1bin"),
    ("NLL (log loss)", "nll"),
    ("AUROC", "auroc"),
)

_CAL_GROUP_COLUMNS = (
    ("n", "N"),
    ("accuracy", "accuracy"),
    ("mean_confidence", "confidence"),
    ("ece", "ECE"),
    ("brier", "Brier"),
    ("smece", "smECE"),
    ("populated_bins", "bins"),
)


def _get(report: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        report = (report or {}).get(part)
    return report


def print_calibrate(report: dict[str, Any], by: str | None = None) -> None:
    strategy = report.get("strategy", "uniform")
    title = f"Calibration ({report['bins_used']} {strategy} bins)"
    ci = report.get("ci")
    columns = ["metric", "value"]
    if "ci_level" in report:
        columns.append(f"{report['ci_level'] * 100:g}% CI")
    table = _table(title, *columns)
    for label, key in _CAL_ROWS:
        value = _get(report, key)
        cells = [label, _f(value)]
        if key == "populated_bins":
            cells[1] = f"{value} of {report['bins_used']}"
        if len(columns) == 3:
            cells.append(_interval((ci or {}).get(key)))
        _row(table, *cells)
    out: list[Any] = [table]
    if "groups" in report:
        group_table = _table(
            f"By {by or 'group'}", by or "group", *(h for _, h in _CAL_GROUP_COLUMNS)
        )
        for name, g in report["groups"].items():
            _row(group_table, name, *(_f(g.get(k)) for k, _ in _CAL_GROUP_COLUMNS))
        _row(group_table, "all (pooled)", *(_f(report.get(k)) for k, _ in _CAL_GROUP_COLUMNS))
        out.append(group_table)
    out += _gate(report)
    _print(*out)


# --------------------------------------------------------------------------- reliability


def _bar(fraction: float | None) -> str:
    """Accuracy as a bar of _BAR_WIDTH cells with eighth-cell resolution."""
    if fraction is None:
        return ""
    eighths = round(max(0.0, min(1.0, fraction)) * _BAR_WIDTH * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[rest] if rest else "")).ljust(_BAR_WIDTH)


def reliability_table(rel: dict[str, Any], title: str) -> Table:
    """The per-bin table: range, count, mean confidence, accuracy (Wilson CI), gap, bar."""
    has_ci = "accuracy_ci" in rel
    columns = ["bin", "count", "confidence", "accuracy"]
    columns += ["95% CI"] if has_ci else []
    table = _table(title, *columns, "gap", "accuracy bar")
    last = len(rel["count"]) - 1
    for i, count in enumerate(rel["count"]):
        lo, hi = rel["bin_lower"][i], rel["bin_upper"][i]
        conf, acc = rel["confidence"][i], rel["accuracy"][i]
        cells = [f"[{lo:.2f}, {hi:.2f}{']' if i == last else ')'}", f"{count:,}", _f(conf, 3)]
        cells.append(_f(acc, 3))
        if has_ci:
            cells.append(_interval(rel["accuracy_ci"][i], 3))
        gap = None if acc is None else conf - acc
        cells.append("" if gap is None else f"{gap:+.3f}")
        cells.append(Text(_bar(acc), justify="left"))
        _row(table, *cells)
    table.caption = "gap = mean confidence - accuracy (> 0: over-confident)"
    table.caption_justify = "left"
    return table


def print_reliability(report: dict[str, Any], stats: Any = None, by: str | None = None) -> None:
    """The per-bin table, the terminal diagram of ``stats`` (calibcli.diagram), the groups."""
    title = f"Reliability ({report['bins']} bins, N = {report['n']:,})"
    out: list[Any] = [reliability_table(report["reliability"], title)]
    if stats is not None:
        from calibcli.diagram import DiagramSeries, render_diagram

        out.append(render_diagram(DiagramSeries.from_stats(stats)))
    if "groups" in report:
        group_table = _table(
            f"By {by or 'group'}", by or "group", "N", "populated bins", "accuracy", "confidence"
        )
        for name, g in [*report["groups"].items(), ("all (pooled)", report)]:
            _row(
                group_table,
                name,
                f"{g['n']:,}",
                f"{g['populated_bins']}",
                _f(g["accuracy"]),
                _f(g["mean_confidence"]),
            )
        out.append(group_table)
    _print(*out)


def plot_parts(data: Any) -> dict[str, Any]:
    """What --plot draws as separate series: the --by groups, else the input files."""
    return data.groups if data.groups is not None else (data.per_source or {"": data})


def diagram_series(parts: dict[str, Any], labels: list[str] | None, *, with_ci: bool) -> list:
    """One DiagramSeries per part, named by --label, else by group or file name."""
    from pathlib import Path

    from calibcli.diagram import DiagramSeries
    from calibcli.metrics.estimators import wilson_interval

    names = labels or ["<stdin>" if n == "-" else Path(n).name for n in parts]
    return [
        DiagramSeries.from_stats(
            part.stats,
            label=name,
            accuracy_ci=wilson_interval(part.stats.sum_correct, part.stats.count)
            if with_ci
            else None,
        )
        for name, part in zip(names, parts.values(), strict=True)
    ]


# --------------------------------------------------------------------------- gate


def _gate(report: dict[str, Any]) -> list[Any]:
    gate = report.get("gate")
    if gate is None:
        return []
    verdict = "passed" if gate["passed"] else "FAILED"
    upper = gate["bound"] == "upper"
    title = f"Gate: {verdict} (bound: {gate['bound']})"
    columns = ["metric", "group", *(["estimate", "upper"] if upper else ["value"])]
    table = _table(title, *columns, "threshold", "result", right_from=2)
    for check in gate["checks"]:
        result = "pass" if check["passed"] else ("fail (closed)" if "reason" in check else "fail")
        values = [check["estimate"], check["upper"]] if upper else [check["value"]]
        _row(
            table,
            check["metric"],
            check.get("group", "(pooled)"),
            *(_f(v) for v in values),
            f"{check['threshold']:g}",
            result,
        )
    return [table]
