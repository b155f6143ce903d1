"""A report as one self-contained HTML page (``--html PATH``, ``calibcli render``).

:func:`html_report` is a pure function of a report's JSON body (what ``json.loads`` gives for
``calibcli COMMAND --json``, or a calibrator file): the page holds its stylesheet and its charts
(inline SVG, :mod:`calibcli.render.svg`) and refers to nothing outside itself. Its
Content-Security-Policy forbids every fetch, and it has no script. Every string of the report
is escaped (:mod:`calibcli.render.markup`). Tables are real tables (captions, ``<th scope>``),
each chart has a text description, colours follow the reader's light or dark scheme, and the
page prints black on white.

The page is the warnings, the command's blocks (:mod:`calibcli.render.html_pages`) and the gate;
keys a page does not know are ignored, and the figures, labels and columns come from the
registry in :mod:`calibcli.reports.figures`, so a figure added there shows here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calibcli.render import html_blocks as blocks
from calibcli.render.html_pages import PAGES, facts
from calibcli.render.markup import text
from calibcli.render.report_shape import NotAReport, check_shape, gate_passed
from calibcli.reports import decides, put_marks

SCHEMA_VERSION = 1  # the report schema this renderer reads
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

# Okabe & Ito's colour-blind-safe palette (as the --plot images use), lighter in dark mode;
# print is black on white whatever the screen's scheme.
STYLE = """
:root{--bg:#fff;--fg:#1c1d21;--muted:#5a5f69;--line:#d6d8dd;--panel:#f4f5f7;--acc:#0072b2;
--over:#d55e00;--under:#7b3294;--diag:#44474d;--count:#8c919a;--ok:#17692e;--bad:#b3261e;
--curve:#0072b2;--lower:#56b4e9;--target:#009e73;--mark:#d55e00;--plug:#7b3294}
@media (prefers-color-scheme:dark){:root{--bg:#16181b;--fg:#e6e7ea;--muted:#a7abb3;
--line:#3b3f46;--panel:#1f2226;--acc:#56b4e9;--over:#f0884a;--under:#c9a0dc;--diag:#c5c8ce;
--count:#7f858e;--ok:#5fd17f;--bad:#ff8a80;--curve:#56b4e9;--lower:#a6d8f5;--target:#3fd3a0;
--mark:#f0a040;--plug:#c9a0dc}}
html{background:var(--bg);color:var(--fg)}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",
sans-serif;max-width:75rem;margin:0 auto;padding:1rem 1.5rem 2rem}
h1{font-size:1.6rem;margin:.5rem 0 .25rem}
h2{font-size:1.2rem;margin:2rem 0 .5rem;padding-bottom:.2rem;border-bottom:1px solid var(--line)}
a{color:inherit}
code{font:.9em ui-monospace,"DejaVu Sans Mono",monospace;overflow-wrap:anywhere}
.facts,.note,footer{color:var(--muted)}
.note,footer{font-size:.875rem}
.verdict{font-weight:700;font-size:1.1rem}
.verdict.pass{color:var(--ok)}
.verdict.fail,tr.fail{color:var(--bad)}
.warnings li{margin:.2rem 0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.25rem 0 1rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{padding:.2rem .65rem;border-bottom:1px solid var(--line);text-align:right;
white-space:nowrap}
thead th{border-bottom:2px solid var(--muted);vertical-align:bottom}
th:first-child{text-align:left}
tbody th{font-weight:400;max-width:28rem;overflow-wrap:break-word;white-space:normal}
.sub{padding-left:1.2rem}
tr.pooled th,tr.pooled td{border-top:2px solid var(--muted)}
tr.over td:last-child{color:var(--over)}
tr.under td:last-child{color:var(--under)}
.pair{display:flex;flex-wrap:wrap;gap:1rem 2.5rem;align-items:flex-start}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(20rem,1fr));gap:1rem}
figure{margin:0}
.pair figure{flex:1 1 24rem;max-width:34rem}
figcaption{font-size:.85rem;color:var(--muted)}
.legend{display:inline-block}
.key{display:inline-block;width:.8rem;height:.8rem;margin:0 .25rem 0 .6rem;
vertical-align:-.1rem;border:1px solid var(--line)}
.key.acc{background:var(--acc)}.key.gap-over{background:var(--over)}
.key.gap-under{background:var(--under)}
.key.diag,.key.curve,.key.lower,.key.target{height:0;border:0;vertical-align:.25rem}
.key.diag{border-top:2px dashed var(--diag)}.key.curve{border-top:3px solid var(--curve)}
.key.lower{border-top:2px dotted var(--lower)}.key.target{border-top:2px dashed var(--target)}
.key.mark{background:var(--mark);width:3px}.key.plug{background:var(--plug);width:3px}
svg.chart{display:block;width:100%;height:auto}
svg text{fill:var(--fg);font-size:11px;font-family:inherit}
svg .label{font-size:12px}
svg .note{font-size:10.5px}
svg .grid path{stroke:var(--line);stroke-width:.6}
svg .axis{stroke:var(--muted);fill:none}
svg .diag{stroke:var(--diag);stroke-width:1.2;stroke-dasharray:5 3;fill:none}
svg .acc{fill:var(--acc)}
svg .gap-over{fill:var(--over);fill-opacity:.45;stroke:var(--over);stroke-width:.6}
svg .gap-under{fill:var(--under);fill-opacity:.75;stroke:var(--under);stroke-width:.6}
svg .ci{stroke:var(--fg);stroke-width:1;fill:none}
svg .count{fill:var(--count)}
svg .curve{stroke:var(--curve);stroke-width:2;fill:none}
svg .lower{stroke:var(--lower);stroke-width:1.4;stroke-dasharray:2 2;fill:none}
svg .target{stroke:var(--target);stroke-width:1.4;stroke-dasharray:6 3}
svg path.mark{stroke:var(--mark);stroke-width:1.5}svg circle.mark{fill:var(--mark)}
svg path.plug{stroke:var(--plug);stroke-width:1.2;stroke-dasharray:3 2}
svg circle.plug{fill:var(--plug)}
@media print{:root{--bg:#fff;--fg:#000;--muted:#333;--line:#999;--panel:#fff;--acc:#0072b2;
--over:#d55e00;--under:#7b3294;--diag:#000;--count:#777;--ok:#000;--bad:#000;--curve:#0072b2;
--lower:#56b4e9;--target:#009e73;--mark:#d55e00;--plug:#7b3294}
body{max-width:none;padding:0;font-size:10pt}
*{print-color-adjust:exact;-webkit-print-color-adjust:exact}
.scroll{overflow:visible}
figure,caption,h2{break-inside:avoid;break-after:avoid}
thead{display:table-header-group}
tr{break-inside:avoid}
header a{text-decoration:none}}
""".replace("\n", "")


def restore_non_finite(body: dict[str, Any]) -> dict[str, Any]:
    """The body with each null that its ``non_finite`` map names put back as that float (see
    :func:`calibcli.reports.paths.put_marks`, which the other renderers' :func:`as_shown`
    uses too), so it shows as inf, −inf or NaN instead of n/a."""
    marks = body.get("non_finite")
    return put_marks(body, marks) if isinstance(marks, dict) and marks else body


def page_kind(body: Any) -> str:
    """The page ``body`` gets: its command, or ``calibrator`` for a calibrator file; raises
    :class:`NotAReport` when it is neither, or lacks a field its page reads, holds one of the
    wrong type, or has a gate that contradicts its checks
    (:func:`~calibcli.render.report_shape.check_shape`)."""
    if not isinstance(body, dict):
        raise NotAReport("not a calibcli report: the JSON is not an object")
    commands = [k for k in PAGES if k != "calibrator"]
    if body.get("kind") == "calibcli-calibrator":
        return _checked_version(body, "calibrator")
    if "command" not in body:
        raise NotAReport("not a calibcli report: it has no 'command'")
    kind = body["command"]
    if kind not in commands:
        known = ", ".join(commands)
        shown = repr(kind).encode("ascii", "backslashreplace").decode("ascii")
        raise NotAReport(f"not a calibcli report: unknown command {shown} (known: {known})")
    return _checked_version(body, kind)


def _checked_version(body: dict[str, Any], kind: str) -> str:
    version = body.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        shown = repr(version).encode("ascii", "backslashreplace").decode("ascii")
        raise NotAReport(
            f"schema_version {shown} is not one this calibcli reads ({SCHEMA_VERSION})"
        )
    try:
        check_shape(kind, body)
    except NotAReport as exc:
        what = "calibrator file" if kind == "calibrator" else f"{kind} report"
        raise NotAReport(f"not a calibcli {what}: {exc}") from None
    return kind


def _header(kind: str, body: dict[str, Any], sources: Sequence[str], ids: blocks.Ids) -> str:
    """The page's title, what was read and, when there is a gate, its verdict."""
    found = facts(kind, body)
    if sources and not isinstance(body.get("files"), dict):  # compare's facts name its files
        names = ("standard input" if s == "-" else s for s in sources)
        found.insert(0, "input: " + ", ".join(f"<code>{text(s)}</code>" for s in names))
    fmt = body.get("format")
    if isinstance(fmt, dict):
        found.append("format: " + ", ".join(f"{text(k)} {text(v)}" for k, v in fmt.items()))
    elif isinstance(body.get("formats"), dict) and body["formats"]:
        each = ", ".join(f"<code>{text(k)}</code> {text(v)}" for k, v in body["formats"].items())
        found.append(f"formats: {each}")
    elif fmt is not None:
        found.append(f"format: {text(fmt)}")
    title = "calibrator" if kind == "calibrator" else kind
    lines = [f"<h1>calibcli {text(title)}</h1>"]
    if found:
        lines.append(f'<p class="facts">{" · ".join(found)}</p>')
    gate = body.get("gate")
    if isinstance(gate, dict):
        passed = gate_passed(gate)
        checks = [c for c in gate.get("checks") or [] if isinstance(c, dict)]
        deciding = [c for c in checks if decides(c)]
        ok = sum(1 for c in deciding if c.get("passed") is True)
        shown = len(checks) - len(deciding)  # beside the verdict, deciding nothing
        aside = f" ({shown:,} not gated)" if shown else ""
        lines.append(
            f'<p class="verdict {"pass" if passed else "fail"}"><a href="#{ids.named("gate")}">'
            f"{blocks.verdict(passed)}</a>: {ok:,} of {len(deciding):,} checks passed{aside}</p>"
        )
    return "<header>" + "".join(lines) + "</header>"


def _contents(kind: str, body: dict[str, Any], sources: Sequence[str], ids: blocks.Ids) -> str:
    """The header, then the warnings, the command's blocks and the gate."""
    parts = [
        blocks.warnings(ids, body),
        *PAGES[kind](ids, body),
        blocks.gate(ids, body.get("gate")),
    ]
    return f"{_header(kind, body, sources, ids)}<main>" + "".join(p for p in parts if p) + "</main>"


def html_report(body: dict[str, Any], *, sources: Sequence[str] = ()) -> str:
    """The HTML page of a report body; ``sources`` names the input files when the caller
    knows them (a body records them only for compare). The same body gives the same page.

    Raises :class:`NotAReport` (a ValueError) when ``body`` is no calibcli report."""
    kind = page_kind(body)
    body = restore_non_finite(body)
    title = f"calibcli {kind} report"
    if isinstance(body.get("gate"), dict):
        title += " — gate " + ("passed" if gate_passed(body["gate"]) else "FAILED")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        '<meta name="referrer" content="no-referrer">'
        f'<link rel="icon" href="data:,"><title>{text(title)}</title><style>{STYLE}</style>'
        f"</head><body>{_contents(kind, body, sources, blocks.Ids())}"
        + "<footer><p>Rendered by calibcli from the report's JSON "
        f"(schema_version {SCHEMA_VERSION}), which holds every value at full precision.</p>"
        "</footer></body></html>\n"
    )


FRAGMENT = "calibcli-report"  # the class of the element that holds a fragment


def html_fragment(body: dict[str, Any], *, sources: Sequence[str] = ()) -> str:
    """The page's contents without the page, for a notebook's output cell (Jupyter's
    ``_repr_html_``), which shares one document with the notebook and its other outputs: one
    ``<div>`` holding the header, the blocks and the gate, after a stylesheet whose every rule
    applies inside such a div only (the page's own rules would restyle the notebook's
    headings and tables). Element ids open with a hash of the body, so two reports shown in
    one notebook never share one. No script, and nothing loaded from anywhere.

    Raises :class:`NotAReport` (a ValueError) when ``body`` is no calibcli report."""
    import hashlib
    import json

    kind = page_kind(body)
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
    ids = blocks.Ids(f"r{digest[:8]}-")
    body = restore_non_finite(body)
    return (
        f"<style>{scoped_style(f'.{FRAGMENT}')}</style>"
        f'<div class="{FRAGMENT}">{_contents(kind, body, sources, ids)}</div>'
    )


def scoped_style(scope: str) -> str:
    """:data:`STYLE` with every selector applied inside ``scope``: the page's ``:root``,
    ``html`` and ``body`` become ``scope`` itself (its colours, font and width), any other
    selector is prefixed with it; ``@media`` blocks are scoped the same way."""
    out = []
    i = 0
    while i < len(STYLE):
        opening = STYLE.index("{", i)
        prelude = STYLE[i:opening].strip()
        depth, j = 1, opening + 1
        while depth:
            depth += {"{": 1, "}": -1}.get(STYLE[j], 0)
            j += 1
        inside = STYLE[opening + 1 : j - 1]
        if prelude.startswith("@"):
            out.append(f"{prelude}{{{_scoped_rules(inside, scope)}}}")
        else:
            out.append(_scoped_rules(f"{prelude}{{{inside}}}", scope))
        i = j
    return "".join(out)


def _scoped_rules(rules: str, scope: str) -> str:
    """Plain rules (``selectors{declarations}``, no nested blocks) with their selectors inside
    ``scope``."""
    out = []
    for rule in rules.split("}"):
        if not rule.strip():
            continue
        selectors, declarations = rule.split("{", 1)
        inside = [
            scope if sel.strip() in (":root", "html", "body") else f"{scope} {sel.strip()}"
            for sel in selectors.split(",")
        ]
        out.append(f"{','.join(dict.fromkeys(inside))}{{{declarations}}}")
    return "".join(out)
