"""Which blocks each command's HTML page shows, in order, and the facts under its title.

A page function takes the ids of the page and the report body and returns its sections
(:mod:`calibcli.render.html_blocks`); the warnings and the gate frame every page
(:mod:`calibcli.render.html`). :data:`PAGES` maps each command (and ``calibrator``, the file
``calibcli fit`` writes) to its page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calibcli.render import html_blocks as b
from calibcli.render.digits import as_given, chosen_decimals, cut, group_cell, table_decimals
from calibcli.render.markup import cell, interval, is_number, number, signed, text
from calibcli.render.sentences import UNPAIRED, mcnemar_counts, paired_on, plug_in_evaluated
from calibcli.render.svg import coverage_chart
from calibcli.reports import (
    CALIBRATION,
    PERPLEXITY,
    RELIABILITY,
    THRESHOLD,
    Figure,
    auroc_test_name,
    confidence,
    lookup,
    mcnemar_name,
    shown,
)

Page = Callable[[b.Ids, dict[str, Any]], list[str]]
METHODS = {"ltt": "Learn then Test, fixed sequence", "sgr": "Selection with Guaranteed Risk"}


# --------------------------------------------------------------------------- calibration


def _calibration(
    ids: b.Ids, body: dict[str, Any], figures: tuple[Figure, ...], title: str
) -> list[str]:
    """calibrate and reliability: the figures beside the diagram, recalibration, the bins,
    then the files and groups."""
    recalibrated = isinstance(body.get("recalibration"), dict)
    chart = b.diagram(ids, body, "after recalibration" if recalibrated else "all rows")
    headline = b.figure_table(body, figures, "Figures")
    return [
        b.section(ids, title, f'<div class="pair">{headline}{chart}</div>'),
        b.recalibration(ids, body),
        b.section(ids, "Per bin", b.bins_table(body.get("reliability"), "Reliability per bin")),
        b.per_file(ids, body, CALIBRATION),
        b.groups(ids, body, figures),
    ]


def calibrate(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    return _calibration(ids, body, CALIBRATION, "Calibration")


def reliability(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    return _calibration(ids, body, RELIABILITY, "Reliability")


def perplexity(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    remark = ""
    if "bits_per_byte" in body:
        remark = b.note("Only bits per byte compares across tokenizers; per-token figures do not.")
    return [
        b.section(ids, "Perplexity", b.figure_table(body, PERPLEXITY, "Figures"), remark),
        b.groups(ids, body, PERPLEXITY),
    ]


# --------------------------------------------------------------------------- threshold


def _chosen(section: Any) -> dict[str, Any]:
    """A chosen threshold as evaluated: realised on the main rows when chosen on --fit rows."""
    if not isinstance(section, dict):
        return {}
    realised = section.get("realised")
    return realised if isinstance(realised, dict) else section


def _curve(ids: b.Ids, body: dict[str, Any]) -> str:
    """The accuracy–coverage curve (the denser ``coverage_curve`` when present) with the
    target, the lower bound and both chosen thresholds marked."""
    dense = body.get("coverage_curve")
    table = body.get("curve") if isinstance(body.get("curve"), dict) else {}
    source = dense if isinstance(dense, dict) else table
    if not source:
        return ""
    marks = []
    for key, css, name in (("guaranteed", "mark", "guaranteed"), ("plug_in", "plug", "plug-in")):
        chosen = body.get(key)
        if isinstance(chosen, dict) and is_number(chosen.get("threshold")):
            seen = _chosen(chosen)
            label = f"{name} t = {number(chosen['threshold'], chosen_decimals(chosen))}"
            marks.append((css, seen.get("coverage"), seen.get("accuracy"), label))
    target = body.get("target_accuracy")
    delta = body.get("delta")
    level = f"{confidence(delta, percent=True)} " if is_number(delta) else ""
    chart = coverage_chart(
        source.get("coverage"),
        source.get("accuracy"),
        uid=ids("c"),
        title="Accuracy against coverage (risk–coverage curve)",
        summary=(
            "Accuracy of the rows accepted against the share of rows accepted, as the "
            f"threshold is lowered; target accuracy {as_given(target)}; "
            + "; ".join(f"{label} at coverage {number(c)}" for _, c, _, label in marks if c)
            + "."
        ),
        target=target,
        lower=(table.get("coverage"), table.get("accuracy_lower_bound")) if table else None,
        marks=marks,
    )
    caption = (
        '<span class="legend"><span class="key curve"></span>accuracy of accepted rows '
        f'<span class="key lower"></span>{level}lower bound '
        '<span class="key target"></span>target '
        '<span class="key mark"></span>guaranteed threshold '
        '<span class="key plug"></span>plug-in threshold</span>'
    )
    return f'<figure class="chart">{chart}<figcaption>{caption}</figcaption></figure>'


def _thresholds_table(body: dict[str, Any]) -> str:
    """Both chosen thresholds; chosen on --fit rows, their figures there and on the evaluated
    rows side by side, each header naming its rows."""
    fit = "fit_n" in body
    where = " (fit rows)" if fit else ""
    headers = ["choice", "threshold", *(h + where for h in ("accepted", "errors", "coverage"))]
    headers += [h + where for h in ("accuracy", "accuracy lower bound", "p-value")]
    if fit:
        seen_keys = ("coverage", "accuracy", "accuracy_lower_bound")
        headers += [f"{h} (evaluated rows)" for h in ("coverage", "accuracy", "lower bound")]
    rows = []
    for key, name in (("guaranteed", "guaranteed"), ("plug_in", "plug-in (no guarantee)")):
        c = body.get(key)
        if not isinstance(c, dict):
            continue
        keys = ("threshold", "accepted", "errors", "coverage", "accuracy")
        keys += ("accuracy_lower_bound", "p_value")
        cells = [cell(c[k], _digits(k, c)) if k in c else "" for k in keys]
        if fit:
            seen = c.get("realised") if isinstance(c.get("realised"), dict) else {}
            cells += [cell(seen[k]) if k in seen else "" for k in seen_keys]
        rows.append((name, cells))
    return b.table("Chosen thresholds", headers, rows) if rows else ""


def _digits(key: str, chosen: dict[str, Any]) -> int:
    """The decimals of a chosen threshold's cell: a threshold is printed to accept the rows it
    accepts (:func:`~calibcli.render.digits.chosen_decimals`)."""
    return chosen_decimals(chosen) if key == "threshold" else 4


def _curve_table(body: dict[str, Any]) -> str:
    curve = body.get("curve")
    if not isinstance(curve, dict) or not isinstance(curve.get("threshold"), list):
        return ""
    keys = ("coverage", "accepted", "errors", "accuracy", "accuracy_lower_bound")
    size = len(curve["threshold"])
    columns = [(curve.get(k) if isinstance(curve.get(k), list) else []) for k in keys]
    picked, remark = range(size), ""
    if size > b.MAX_TABLE_ROWS:
        step = size / b.MAX_TABLE_ROWS
        picked = [int(k * step) for k in range(b.MAX_TABLE_ROWS)]
        remark = f"{b.MAX_TABLE_ROWS} of {size:,} rows, evenly spaced; the JSON has all."
    delta = body.get("delta")
    bound = "lower bound"
    if is_number(delta):
        bound += f" ({confidence(delta, percent=True)})"
    headers = ["threshold", "coverage", "accepted", "errors", "accuracy", bound]
    digits = table_decimals(curve["threshold"], curve.get("highest_rejected"))
    rows = [
        (
            cell(curve["threshold"][i], shown=cut(curve["threshold"][i], digits)),
            [cell(col[i]) if i < len(col) else "" for col in columns],
        )
        for i in picked
    ]
    return b.table("Risk–coverage", headers, rows, note=remark)


def threshold(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    target, delta = body.get("target_accuracy"), body.get("delta")
    method = METHODS.get(body.get("method"), text(body.get("method", "?")))
    grid = body.get("grid")
    if body.get("method") == "ltt" and is_number(grid):
        method += (
            f" over {number(grid)} thresholds fixed in advance"
            if grid
            else (" over every distinct confidence")
        )
    level = confidence(delta) if is_number(delta) else "n/a"
    scored = "recalibrated confidence" if "recalibration" in body else "confidence"
    intro = (
        f"<p>Rows with {scored} ≥ the threshold are accepted. The guaranteed threshold keeps "
        f"their accuracy ≥ {as_given(target)} with probability ≥ {level} ({method}); "
        f"{_plug_in(body)}.</p>"
    )
    fit = body.get("fit")
    if isinstance(fit, dict) and isinstance(fit.get("files"), list):
        files = ", ".join(f"<code>{text(f)}</code>" for f in fit["files"])
        rows = f" ({number(body['fit_n'])} rows)" if "fit_n" in body else ""
        intro += (
            f"<p>Chosen on {files}{rows}; coverage and accuracy realised on the rows evaluated.</p>"
        )
    figures = shown(THRESHOLD, body)
    headline, chart = b.figure_table(body, figures, "Figures"), _curve(ids, body)
    return [
        b.section(ids, "Threshold", intro, f'<div class="pair">{headline}{chart}</div>'),
        b.section(ids, "Chosen thresholds", _thresholds_table(body), _curve_table(body)),
        b.recalibration(ids, body),
        b.groups(ids, body, figures),
    ]


def _plug_in(body: dict[str, Any]) -> str:
    """What the plug-in threshold reaches, on the rows it was chosen on: chosen on --fit rows,
    what it does on the evaluated rows too."""
    fit = "fit_n" in body
    plug = body.get("plug_in")
    if isinstance(plug, dict) and plug.get("threshold") is None:
        return f"no threshold reaches that accuracy on {'the fit' if fit else 'these'} rows"
    said = plug_in_evaluated(body)
    if said is not None:
        return text(said)
    where = "the fit rows" if fit else "these rows"
    return f"the plug-in threshold reaches that accuracy on {where}, with no guarantee"


# --------------------------------------------------------------------------- compare


def _reading(figure: Figure, row: dict[str, Any]) -> str:
    """What the interval of NEW − BASE says, for a figure with a better direction."""
    pair = row.get("interval")
    if figure.better is None or not (isinstance(pair, list) and len(pair) == 2):
        return ""
    lo, hi = pair
    if not (is_number(lo) and is_number(hi)):
        return ""
    if lo == hi == 0:
        return "same"
    if lo > 0 or hi < 0:
        higher_better = figure.better == "higher"
        return "NEW better" if (lo > 0) == higher_better else "<strong>NEW worse</strong>"
    return "no clear change"


def _comparison(body: dict[str, Any]) -> str:
    found = body.get("figures")
    if not isinstance(found, dict) or not found:
        return ""
    level = body.get("ci_level")
    headers = ["figure", "BASE", "NEW", "NEW − BASE"]
    headers += [f"{level * 100:g}% interval" if is_number(level) else "interval", "reading"]
    rows = []
    for f in CALIBRATION:
        row = found.get(f.key)
        if not isinstance(row, dict):
            continue
        name = f'<span class="sub">{text(f.label)}</span>' if f.level else text(f.label)
        cells = [cell(row.get("base")), cell(row.get("new")), signed(row.get("difference"))]
        rows.append((name, [*cells, interval(row.get("interval")), _reading(f, row)]))
    return b.table("Comparison (NEW − BASE)", headers, rows)


def _tests(body: dict[str, Any]) -> str:
    lines = []
    m = body.get("mcnemar")
    if isinstance(m, dict):
        counts = mcnemar_counts(body, shown=number)
        lines.append(
            f"Accuracy: {text(mcnemar_name(m))} p = {number(m.get('p_value'))} ({counts})."
        )
    t = body.get("auroc_test")
    if isinstance(t, dict) and t.get("test") == "delong":
        lines.append(
            f"AUROC: {text(auroc_test_name(t))} p = {number(t.get('p_value'))} "
            f"(z = {number(t.get('z'), 3)}, "
            f"difference {signed(t.get('difference'))}, standard error "
            f"{number(t.get('standard_error'))}; the same answers are right on both sides)."
        )
    elif isinstance(t, dict) and t.get("reason"):
        lines.append(f"AUROC: {text(t['reason'])}.")
    return "".join(f"<p>{line}</p>" for line in lines)


def _group_differences(body: dict[str, Any]) -> str:
    found = body.get("groups")
    if not isinstance(found, dict) or not found:
        return ""
    keys = ("accuracy", "ece", "brier")
    headers = ["group", "N"]
    for k in keys:
        headers += [f"{'ECE' if k == 'ece' else k.capitalize()} NEW − BASE", "interval"]
    rows = []
    for name, g in found.items():
        g = g if isinstance(g, dict) else {}
        cells = [number(g.get("n_base"))]
        for k in keys:
            row = lookup(g, f"figures.{k}")
            row = row if isinstance(row, dict) else {}
            cells += [signed(row.get("difference")), interval(row.get("interval"))]
        rows.append((text(group_cell(name)), cells))
    return b.table(f"By group ({len(rows):,})", headers, rows)


def compare(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    if body.get("paired"):
        pairing = (
            f"<p>Paired on {paired_on(body, shown=number)} matched by "
            f"<code>{text(body.get('id_field'))}</code> ({number(body.get('unmatched_base'))} "
            f"BASE and {number(body.get('unmatched_new'))} NEW rows unmatched); intervals from "
            f"{number(body.get('bootstrap_samples'))} paired bootstrap resamples.</p>"
        )
    else:
        pairing = f"<p>{UNPAIRED}.</p>"
    sides = body.get("sides")
    sides = (
        {k: v for k, v in sides.items() if isinstance(v, dict)} if isinstance(sides, dict) else {}
    )
    named = {("BASE" if k == "base" else "NEW" if k == "new" else k): v for k, v in sides.items()}
    return [
        b.section(ids, "NEW against BASE", pairing, _comparison(body), _tests(body)),
        b.section(
            ids,
            "Both sides",
            b.groups_table(named, {}, CALIBRATION, "side", "Each side"),
            b.diagrams(ids, named, "sides"),
        ),
        b.section(ids, "By group", _group_differences(body)),
    ]


# --------------------------------------------------------------------------- fit


def _params(params: Any) -> list[tuple[str, list[str]]]:
    if not isinstance(params, dict):
        return []
    rows = []
    for key, v in params.items():
        if isinstance(v, list):
            shown = ", ".join(number(x) for x in v[:8])
            more = f", … ({len(v):,} values, the last {number(v[-1])})" if len(v) > 8 else ""
            rows.append((text(key), [f"[{shown}{more}]"]))
        else:
            rows.append((text(key), [cell(v)]))
    return rows


def _fit_groups(ids: b.Ids, found: Any) -> str:
    if not isinstance(found, dict) or not found:
        return ""
    rows = []
    with_ece = False
    for name, g in found.items():
        g = g if isinstance(g, dict) else {}
        params = "; ".join(f"{k} = {c[0]}" for k, c in _params(g.get("params")))
        cells = [number(g.get("n")), params]
        if isinstance(g.get("in_sample"), dict):
            with_ece = True
            cells += [cell(lookup(g["in_sample"], k)) for k in ("before.ece", "after.ece")]
        rows.append((text(group_cell(name)), cells))
    headers = ["group", "N", "parameters", *(["ECE before", "ECE after"] if with_ece else [])]
    return b.section(ids, "By group", b.table(f"By group ({len(rows):,})", headers, rows))


def fit(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    in_sample, params = body.get("in_sample"), _params(body.get("params"))
    return [
        b.section(ids, "Calibrator", b.table("Parameters", ["parameter", "value"], params)),
        b.section(
            ids,
            "In-sample figures",
            b.before_after_table(in_sample, "Before and after (in-sample)", "after (in-sample)"),
            b.note(
                "Fitted and scored on the same rows, which flatters the map; score held-out "
                "rows with <code>calibcli calibrate --calibrator FILE</code>."
            ),
        )
        if isinstance(in_sample, dict)
        else "",
        _fit_groups(ids, body.get("groups")),
    ]


UNNAMED = "(a run without model arguments)"


def calibrator(ids: b.Ids, body: dict[str, Any]) -> list[str]:
    """The calibrator file ``calibcli fit`` writes: its map, what it was fitted on, its groups."""
    fitted = body.get("fitted_on") if isinstance(body.get("fitted_on"), dict) else {}
    rows = []
    for key, v in fitted.items():
        shown = v
        if isinstance(v, list):  # a model recorded as "" is a run without model arguments
            shown = ", ".join(UNNAMED if key == "models" and m == "" else str(m) for m in v)
        rows.append((text(key), [cell(v) if is_number(v) else text(shown)]))
    return [
        *fit(ids, {"params": body.get("params")}),
        b.section(ids, "Fitted on", b.table("Fitted on", ["field", "value"], rows)),
        _fit_groups(ids, body.get("groups")),
    ]


# --------------------------------------------------------------------------- the title's facts


def facts(kind: str, body: dict[str, Any]) -> list[str]:
    """The line under the page title (HTML, escaped): what was read and how."""
    out = []
    if kind in ("calibrate", "reliability", "threshold") and "n" in body:
        out.append(f"{number(body['n'])} predictions")
    if kind == "calibrate" and "bins_used" in body:
        out.append(f"{number(body['bins_used'])} {text(body.get('strategy', 'uniform'))} bins")
    elif kind == "reliability" and "bins" in body:
        out.append(f"{number(body['bins'])} bins")
    if kind == "calibrate" and is_number(body.get("ci_level")):
        out.append(
            f"{body['ci_level'] * 100:g}% bootstrap intervals "
            f"({number(body.get('bootstrap_samples'))} resamples, seed {number(body.get('seed'))})"
        )
    if kind == "compare" and isinstance(body.get("files"), dict):
        for side in ("base", "new"):
            names = body["files"].get(side)
            names = names if isinstance(names, list) else [names]
            out.append(f"{side.upper()}: " + ", ".join(f"<code>{text(n)}</code>" for n in names))
    if kind == "perplexity":
        out.append(f"{number(body.get('sequences'))} sequences")
        out.append(f"{number(body.get('total_tokens'))} tokens")
    if kind in ("fit", "calibrator"):
        n = body.get("n", lookup(body, "fitted_on.n"))
        out.append(f"method {text(body.get('method', '?'))}, fitted on {number(n)} rows")
    return out


PAGES: dict[str, Page] = {
    "perplexity": perplexity,
    "calibrate": calibrate,
    "reliability": reliability,
    "threshold": threshold,
    "fit": fit,
    "compare": compare,
    "calibrator": calibrator,
}
