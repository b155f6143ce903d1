"""The HTML report's charts as inline SVG: the reliability diagram and the accuracy–coverage
curve, drawn from a report's JSON sections (no numpy, no matplotlib, nothing fetched).

Each chart is an ``<svg role="img">`` named by its ``<title>`` and described by its ``<desc>``
(what it shows and its main numbers), so a screen reader gets what the picture says. Colours
come from CSS classes (``acc``, ``gap-over``, ``curve``, ...) that the page's stylesheet sets for
light, dark and print; the drawing itself holds no colour. Marks carry ``data-*`` attributes with
the values they were drawn from, so tests (and anyone reading the page's source) can check them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from calibcli.render.digits import as_given, threshold_decimals
from calibcli.render.markup import is_number, number, text

MAX_CURVE_POINTS = 400  # a denser curve than this adds bytes, not visible detail


def _n(value: float) -> str:
    """A coordinate with 2 decimals, trailing zeros dropped (SVG size grows with every digit)."""
    shown = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if shown in ("", "-0") else shown


def _open(uid: str, width: int, height: int, title: str, desc: str, css: str) -> str:
    return (
        f'<svg class="{css}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="{uid}-t {uid}-d"><title id="{uid}-t">{text(title)}</title>'
        f'<desc id="{uid}-d">{text(desc)}</desc>'
    )


def _list(section: dict[str, Any], key: str, length: int) -> list[Any]:
    values = section.get(key)
    values = list(values) if isinstance(values, list) else []
    return (values + [None] * length)[:length]


# --------------------------------------------------------------------------- reliability

_W, _H = 400, 318
_L, _R, _T = 46, 10, 12
_TOP = 200  # height of the accuracy panel
_COUNT_TOP, _COUNT_H = _T + _TOP + 16, 58
_PW = _W - _L - _R


def _x(c: float) -> float:
    return _L + max(0.0, min(1.0, c)) * _PW


def _y(a: float) -> float:
    return _T + (1.0 - max(0.0, min(1.0, a))) * _TOP


def _axes(count_max: int) -> list[str]:
    """Grid, axes, tick labels and axis titles of the reliability diagram."""
    out = ['<g class="grid">']
    for v in (0.25, 0.5, 0.75, 1.0):
        out.append(f'<path d="M{_L} {_n(_y(v))}H{_W - _R}M{_n(_x(v))} {_T}V{_T + _TOP}"/>')
    out.append("</g>")
    bottom, count_bottom = _T + _TOP, _COUNT_TOP + _COUNT_H
    out.append(
        f'<path class="axis" d="M{_L} {_T}V{bottom}H{_W - _R}M{_L} {_COUNT_TOP}'
        f'V{count_bottom}H{_W - _R}"/>'
    )
    out.append('<g class="ticks">')
    for v in (0.0, 0.5, 1.0):
        out.append(f'<text x="{_L - 5}" y="{_n(_y(v) + 4)}" text-anchor="end">{v:g}</text>')
    for i in range(6):
        v = i / 5
        out.append(
            f'<text x="{_n(_x(v))}" y="{count_bottom + 14}" text-anchor="middle">{v:g}</text>'
        )
    out.append(
        f'<text x="{_L - 5}" y="{_COUNT_TOP + 8}" text-anchor="end">{count_max:,}</text>'
        f'<text x="{_L - 5}" y="{count_bottom}" text-anchor="end">0</text>'
    )
    out.append("</g>")
    mid = _T + _TOP / 2
    out.append(
        f'<text class="label" x="12" y="{_n(mid)}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_n(mid)})">accuracy</text>'
        f'<text class="label" x="12" y="{_n(_COUNT_TOP + _COUNT_H / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_n(_COUNT_TOP + _COUNT_H / 2)})">count</text>'
        f'<text class="label" x="{_n(_L + _PW / 2)}" y="{_H - 4}" text-anchor="middle">'
        "confidence</text>"
    )
    return out


def reliability_bins(rel: Any) -> list[dict[str, Any]]:
    """The bins of a ``reliability`` section as one dict per bin (missing values as None)."""
    if not isinstance(rel, dict) or not isinstance(rel.get("count"), list):
        return []
    size = len(rel["count"])
    columns = {
        key: _list(rel, key, size)
        for key in ("bin_lower", "bin_upper", "confidence", "accuracy", "count", "accuracy_ci")
    }
    return [{key: values[i] for key, values in columns.items()} for i in range(size)]


def _bin_marks(i: int, b: dict[str, Any], count_max: int, places: int = 2) -> list[str]:
    lo, hi, acc, conf, count = (
        b["bin_lower"],
        b["bin_upper"],
        b["accuracy"],
        b["confidence"],
        b["count"],
    )
    if not (is_number(lo) and is_number(hi) and is_number(count) and count > 0):
        return []
    pad = (hi - lo) * _PW * 0.08
    left, width = _x(lo) + pad, max((hi - lo) * _PW - 2 * pad, 0.5)
    out = []
    if is_number(acc):
        tip = f"bin [{lo:.{places}f}, {hi:.{places}f}]: {count:,} predictions, accuracy "
        tip += number(acc, 3)
        if is_number(conf):
            tip += f", mean confidence {number(conf, 3)}"
        out.append(
            f'<rect class="acc" x="{_n(left)}" y="{_n(_y(acc))}" width="{_n(width)}" '
            f'height="{_n(_y(0) - _y(acc))}" data-bin="{i}" data-accuracy="{acc!r}" '
            f'data-count="{count}"><title>{text(tip)}</title></rect>'
        )
        if is_number(conf) and conf != acc:
            kind = "gap-over" if conf > acc else "gap-under"
            top = _y(max(acc, conf))
            out.append(
                f'<rect class="{kind}" x="{_n(left)}" y="{_n(top)}" width="{_n(width)}" '
                f'height="{_n(abs(_y(conf) - _y(acc)))}" data-bin="{i}" '
                f'data-confidence="{conf!r}"/>'
            )
        ci = b["accuracy_ci"]
        if isinstance(ci, list) and len(ci) == 2 and all(is_number(v) for v in ci):
            cx, y1, y2 = left + width / 2, _y(ci[0]), _y(ci[1])
            cap = min(4.0, width / 3)
            out.append(
                f'<path class="ci" d="M{_n(cx)} {_n(y1)}V{_n(y2)}M{_n(cx - cap)} {_n(y1)}'
                f'H{_n(cx + cap)}M{_n(cx - cap)} {_n(y2)}H{_n(cx + cap)}"/>'
            )
    height = count / count_max * _COUNT_H if count_max else 0
    out.append(
        f'<rect class="count" x="{_n(left)}" y="{_n(_COUNT_TOP + _COUNT_H - height)}" '
        f'width="{_n(width)}" height="{_n(height)}" data-bin="{i}" data-count="{count}"/>'
    )
    return out


def reliability_chart(rel: Any, *, uid: str, title: str, summary: str) -> str:
    """The reliability diagram of one ``reliability`` section: accuracy per bin as bars against
    the diagonal of perfect calibration, the gap to each bin's mean confidence shaded
    (``gap-over`` where over-confident, ``gap-under`` where under-confident), Wilson intervals
    as whiskers when the section has ``accuracy_ci``, and the counts per bin below.

    ``summary`` opens the chart's text description (the figures it illustrates)."""
    bins = reliability_bins(rel)
    counts = [b["count"] for b in bins if is_number(b["count"])]
    count_max = int(max(counts, default=0))
    populated = [b for b in bins if is_number(b["count"]) and b["count"] > 0]
    drawn = [b for b in populated if is_number(b["accuracy"]) and is_number(b["confidence"])]
    over = sum(1 for b in drawn if b["confidence"] > b["accuracy"])
    desc = (
        f"{summary} Bars: accuracy in each of {len(bins)} confidence bins "
        f"({len(populated)} populated), against the diagonal of perfect calibration; "
        f"{over} populated bin(s) lie below the diagonal (over-confident) and "
        f"{len(drawn) - over} on or above it. Lower panel: predictions per bin, at most "
        f"{count_max:,}. The per-bin table lists the same values."
    )
    out = [_open(uid, _W, _H, title, desc, "chart reliability"), *_axes(count_max)]
    out.append(f'<path class="diag" d="M{_n(_x(0))} {_n(_y(0))}L{_n(_x(1))} {_n(_y(1))}"/>')
    # the edges with as many decimals as tell the bins apart (and apart from 0 and 1), as the
    # per-bin table gives them
    edges = [b[k] for b in populated for k in ("bin_lower", "bin_upper") if is_number(b[k])]
    places = threshold_decimals(edges, 2)
    for i, b in enumerate(bins):
        out += _bin_marks(i, b, count_max, places)
    out.append("</svg>")
    return "".join(out)


# --------------------------------------------------------------------------- coverage

_CW, _CH = 420, 272
_CL, _CR, _CT, _CPH = 46, 12, 12, 220
_CPW = _CW - _CL - _CR


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most MAX_CURVE_POINTS points, evenly spaced along the list, both ends kept."""
    if len(points) <= MAX_CURVE_POINTS:
        return points
    step = (len(points) - 1) / (MAX_CURVE_POINTS - 1)
    return [points[round(k * step)] for k in range(MAX_CURVE_POINTS)]


def _pairs(xs: Any, ys: Any) -> list[tuple[float, float]]:
    if not isinstance(xs, list) or not isinstance(ys, list):
        return []
    return sorted((x, y) for x, y in zip(xs, ys, strict=False) if is_number(x) and is_number(y))


def _step(span: float) -> float:
    return next(s for s in (0.05, 0.1, 0.2, 0.25, 0.5) if span / s <= 6.0001)


def coverage_chart(
    coverage: Any,
    accuracy: Any,
    *,
    uid: str,
    title: str,
    summary: str,
    target: Any = None,
    lower: tuple[Any, Any] | None = None,
    marks: Sequence[tuple[str, Any, Any, str]] = (),
) -> str:
    """Accuracy of the accepted rows against coverage (the share accepted), as a line; the
    target accuracy as a dashed level, ``lower`` (coverages, lower bounds) as a dotted line, and
    each of ``marks`` — (css class, coverage, accuracy, label) — as a labelled vertical line.

    The risk–coverage curve, drawn as 1 − risk so it reads the same way as the table."""
    points = _thin(_pairs(coverage, accuracy))
    bound = _thin(_pairs(*lower)) if lower else []
    values = [a for _, a in points + bound] + ([target] if is_number(target) else [])
    low = min(values, default=0.0)
    low = max(0.0, min(0.9, math.floor(low * 10 - 1e-9) / 10))
    span = 1.0 - low

    def x(c: float) -> float:
        return _CL + max(0.0, min(1.0, c)) * _CPW

    def y(a: float) -> float:
        return _CT + (1.0 - max(low, min(1.0, a))) / span * _CPH

    if points:
        first, last = points[0], points[-1]
        shown = (
            f" It runs from accuracy {number(first[1])} at coverage {number(first[0])} to "
            f"{number(last[1])} at coverage {number(last[0])}."
        )
    else:
        shown = " The report holds no curve points."
    desc = f"{summary}{shown} Accuracy axis from {low:g} to 1."
    out = [_open(uid, _CW, _CH, title, desc, "chart coverage"), '<g class="grid">']
    step = _step(span)
    ticks = [low + k * step for k in range(int(span / step + 1e-9) + 1)]
    for t in ticks:
        out.append(f'<path d="M{_CL} {_n(y(t))}H{_CW - _CR}"/>')
    for k in range(1, 5):
        out.append(f'<path d="M{_n(x(k / 4))} {_CT}V{_CT + _CPH}"/>')
    out.append("</g>")
    bottom = _CT + _CPH
    out.append(f'<path class="axis" d="M{_CL} {_CT}V{bottom}H{_CW - _CR}"/><g class="ticks">')
    for t in ticks:
        out.append(f'<text x="{_CL - 5}" y="{_n(y(t) + 4)}" text-anchor="end">{t:.2f}</text>')
    for k in range(5):
        out.append(
            f'<text x="{_n(x(k / 4))}" y="{bottom + 14}" text-anchor="middle">{k / 4:g}</text>'
        )
    mid = _CT + _CPH / 2
    out.append(
        f'</g><text class="label" x="12" y="{_n(mid)}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_n(mid)})">accuracy of accepted rows</text>'
        f'<text class="label" x="{_n(_CL + _CPW / 2)}" y="{_CH - 6}" text-anchor="middle">'
        "coverage (share of rows accepted)</text>"
    )
    if is_number(target):
        out.append(
            f'<path class="target" d="M{_CL} {_n(y(target))}H{_CW - _CR}" '
            f'data-accuracy="{target!r}"/><text class="note" x="{_CW - _CR - 2}" '
            f'y="{_n(y(target) - 4)}" text-anchor="end">target {as_given(target)}</text>'
        )
    if bound:
        line = " ".join(f"{_n(x(c))},{_n(y(a))}" for c, a in bound)
        out.append(f'<polyline class="lower" points="{line}"/>')
    if points:
        line = " ".join(f"{_n(x(c))},{_n(y(a))}" for c, a in points)
        out.append(f'<polyline class="curve" points="{line}" data-points="{len(points)}"/>')
    for k, (css, cov, acc, label) in enumerate(marks):
        if not is_number(cov):
            continue
        out.append(
            f'<path class="{css}" d="M{_n(x(cov))} {_CT}V{bottom}" data-coverage="{cov!r}"/>'
        )
        if is_number(acc):
            out.append(f'<circle class="{css}" cx="{_n(x(cov))}" cy="{_n(y(acc))}" r="3.5"/>')
        anchor, dx = ("end", -4) if cov > 0.6 else ("start", 4)
        out.append(
            f'<text class="note" x="{_n(x(cov) + dx)}" y="{_CT + 12 + 13 * k}" '
            f'text-anchor="{anchor}">{text(label)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
