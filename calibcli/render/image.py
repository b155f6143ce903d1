"""Reliability diagrams as images (PNG, SVG, PDF) with matplotlib, an optional dependency.

The figure follows Guo et al. (2017), "On Calibration of Modern Neural Networks", and netcal:
the top panel shows the accuracy per bin as bars (or as points with interval bars when the series
carries `accuracy_ci`) against the diagonal of perfect calibration, with the gap to each bin's mean
confidence shaded (hatched ``//`` where over-confident, ``\\\\`` where under-confident) and
ECE / Brier / N in the corner; the bottom panel is the histogram of counts per bin with the mean
confidence (dashed) and the accuracy (solid) as vertical lines. Empty bins get no bar at all.
Several series are drawn side by side inside each bin, in distinct colours, with a legend.

matplotlib is imported only inside the functions here and only through its object-oriented API
(`matplotlib.figure.Figure` and the Agg canvas), so no GUI backend or pyplot state is involved. The
output is deterministic: the same input gives a byte-identical SVG (fixed ``svg.hashsalt``, no date,
no version-bearing creator fields) and PNGs without a Software/time stamp.

Artists carry gids so tests (and anyone post-processing the SVG) can find them:
``diagonal``, ``accuracy-bar-{series}-{bin}``, ``accuracy-points-{series}``,
``gap-over-{series}-{bin}``, ``gap-under-{series}-{bin}``, ``count-bar-{series}-{bin}``,
``mean-confidence-{series}``, ``accuracy-line-{series}``, ``legend``, ``metrics``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from calibcli.render.diagram import DiagramSeries

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "FORMATS",
    "PlotUnavailable",
    "coverage_figure",
    "image_format",
    "install_hint",
    "plot_reliability",
    "reliability_figure",
]

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}

# Okabe & Ito's colour-blind-safe palette, without the vermillion and purple used for the gaps.
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
OVER_COLOUR = "#D55E00"
UNDER_COLOUR = "#7B3294"
OVER_HATCH = "////"
UNDER_HATCH = "\\\\\\\\"

_METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}
_RC = {
    "svg.hashsalt": "calibcli",
    "svg.fonttype": "path",
    "pdf.compression": 6,
    "font.size": 9,
    "axes.titlesize": 11,
    "legend.fontsize": 8,
}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed; the message says how to install it."""


def _matplotlib():
    try:
        import matplotlib
        import matplotlib.figure
        import matplotlib.style
    except ImportError as exc:
        raise PlotUnavailable(install_hint()) from exc
    return matplotlib


def install_hint() -> str:
    """How to add matplotlib to the installation that is running: calibcli is not on a package
    index, so ``pip install 'calibcli[plot]'`` would find nothing."""
    import sys

    return (
        "drawing images needs matplotlib, which is not installed where calibcli runs: "
        f"{sys.executable} -m pip install matplotlib (or reinstall calibcli with its plot extra: "
        'pip install "calibcli[plot] @ <calibcli\'s folder or git URL>")'
    )


def image_format(path: str | Path) -> str:
    """'png', 'svg' or 'pdf' from the path's extension (any case); ValueError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        shown = f"'{suffix}'" if suffix else "no extension"
        raise ValueError(
            f"cannot tell the image format of {str(path)!r} ({shown}): "
            "use a path ending in .png, .svg or .pdf"
        )
    return FORMATS[suffix]


@contextlib.contextmanager
def _style() -> Iterator[None]:
    """matplotlib's default style plus our fixed settings, whatever the user's matplotlibrc says."""
    mpl = _matplotlib()
    with mpl.style.context("default"), mpl.rc_context(_RC):
        yield


def plot_reliability(
    series_list: Sequence[DiagramSeries],
    path: str | Path,
    *,
    title: str | None = None,
    size: tuple[float, float] = (6.4, 6.4),
    dpi: int = 150,
) -> None:
    """Draw the reliability diagram of ``series_list`` to ``path`` (format from the extension).

    Raises ValueError for an unknown extension or an empty list and `PlotUnavailable` when
    matplotlib is missing. A PNG is ``size`` inches at ``dpi``, i.e. ``size * dpi`` pixels.
    """
    Path(path).write_bytes(
        reliability_image(series_list, image_format(path), title=title, size=size, dpi=dpi)
    )


def reliability_image(
    series_list: Sequence[DiagramSeries],
    fmt: str,
    *,
    title: str | None = None,
    size: tuple[float, float] = (6.4, 6.4),
    dpi: int = 150,
) -> bytes:
    """The reliability diagram of ``series_list`` as the bytes of a ``fmt`` image (png, svg,
    pdf), for a caller that writes it where and when it chooses."""
    import io

    buffer = io.BytesIO()
    with _style():
        figure = reliability_figure(series_list, title=title, size=size)
        figure.savefig(buffer, format=fmt, dpi=dpi, metadata=_METADATA[fmt])
    return buffer.getvalue()


def reliability_sections(body: dict) -> dict[str, dict]:
    """The sections of a report body that a reliability image draws, by name: one per --by
    group of a calibrate or reliability report; else the two sides of a comparison; else the
    rows before and after a recalibration; else one per input file; else the body itself. A
    --by report of no rows has no group: it draws what the report without --by draws."""
    if body.get("groups") and body["command"] in ("calibrate", "reliability"):
        return dict(body["groups"])
    if body.get("sides"):
        return dict(body["sides"])
    recalibration = body.get("recalibration") or {}
    if "reliability" in (recalibration.get("before") or {}):
        return {"before": recalibration["before"], "after": recalibration["after"]}
    if body.get("per_file"):
        return dict(body["per_file"])
    return {"": body}


def coverage_sections(body: dict) -> dict[str, dict]:
    """The accuracy–coverage curves of a threshold report body, by name (one per --by group,
    else the pooled rows; a --by report of no rows has no group, so its pooled rows), with the
    marks :func:`coverage_image` draws: the target accuracy and the coverage of the guaranteed
    and plug-in thresholds (realised on the evaluated rows when they were chosen on --fit
    rows). A section of no rows has no curve: its coverage and accuracy are empty lists."""
    sections = body.get("groups") or {"": body}
    out = {}
    for name, section in sections.items():
        curve = section.get("coverage_curve") or {}
        chosen = section.get("guaranteed") or {}
        plug = section.get("plug_in") or {}
        out[name] = {
            "coverage": curve.get("coverage", []),
            "accuracy": curve.get("accuracy", []),
            "target_accuracy": body["target_accuracy"],
            "guaranteed": (chosen.get("realised") or chosen).get("coverage") if chosen else None,
            "guaranteed_threshold": chosen.get("threshold"),
            "plug_in": (plug.get("realised") or plug).get("coverage") if plug else None,
        }
    return out


def report_series(
    sections: dict[str, dict], labels: Sequence[str] | None = None, *, with_ci: bool = False
) -> list[DiagramSeries]:
    """One series per report section to draw (a --by group or an input file), named by
    ``labels`` when given, else by group or file name; ``with_ci`` keeps the report's per-bin
    accuracy intervals."""
    names = labels or ["<stdin>" if n == "-" else Path(n).name for n in sections]
    return [
        DiagramSeries.from_section(section, label=name, with_ci=with_ci)
        for name, section in zip(names, sections.values(), strict=True)
    ]


def reliability_figure(
    series_list: Sequence[DiagramSeries],
    *,
    title: str | None = None,
    size: tuple[float, float] = (6.4, 6.4),
) -> Figure:
    """Build (without saving) the two-panel figure; axes are ``figure.axes[0]`` (reliability)
    and ``figure.axes[1]`` (counts)."""
    series_list = list(series_list)
    if not series_list:
        raise ValueError("nothing to plot: the list of series is empty")
    with _style():
        from matplotlib.figure import Figure

        figure = Figure(figsize=size, layout="constrained")
        top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
        _draw_reliability(top, series_list)
        _draw_counts(bottom, series_list)
        if title:
            top.set_title(title)
    return figure


def _slots(series: DiagramSeries, k: int, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Left edge and width of series ``k``'s bars: side by side inside each bin."""
    width = (series.bin_upper - series.bin_lower) / total
    return series.bin_lower + k * width, width


def _label(series: DiagramSeries, k: int) -> str:
    return series.label or f"series {k + 1}"


def _draw_reliability(ax, series_list: list[DiagramSeries]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    total = len(series_list)
    many = total > 1
    (diagonal,) = ax.plot([0, 1], [0, 1], linestyle="--", color="0.35", linewidth=1.0, zorder=4)
    diagonal.set_gid("diagonal")
    handles: list = []
    gaps_seen = {"over": False, "under": False}
    for k, series in enumerate(series_list):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        left, width = _slots(series, k, total)
        shown = np.flatnonzero(series.populated)
        acc = series.accuracy[shown]
        conf = series.confidence[shown]
        if series.accuracy_ci is None:
            bars = ax.bar(
                left[shown],
                acc,
                width=width[shown],
                align="edge",
                color=colour,
                alpha=0.85 if many else 0.8,
                edgecolor="white" if not many else colour,
                linewidth=0.6,
                zorder=2,
            )
            for i, bar in zip(shown, bars.patches, strict=True):
                bar.set_gid(f"accuracy-bar-{k}-{i}")
            handles.append(
                Patch(facecolor=colour, alpha=0.8, label=_accuracy_label(series, k, many))
            )
        else:
            lower, upper = series.accuracy_ci
            yerr = np.vstack([acc - lower[shown], upper[shown] - acc]).clip(min=0)
            # points sit at the centre of their slot, on the edge of their gap bar
            points = ax.errorbar(
                left[shown] + width[shown] / 2,
                acc,
                yerr=yerr,
                fmt="o",
                markersize=4,
                color=colour,
                ecolor=colour,
                elinewidth=1.0,
                capsize=2.5,
                zorder=5,
            )
            points.lines[0].set_gid(f"accuracy-points-{k}")
            label = _accuracy_label(series, k, many) + ("" if many else " with interval")
            handles.append(
                Line2D(
                    [], [], marker="o", linestyle="none", color=colour, markersize=4, label=label
                )
            )
        for kind, colour_gap, hatch in (
            ("over", OVER_COLOUR, OVER_HATCH),
            ("under", UNDER_COLOUR, UNDER_HATCH),
        ):
            mask = conf > acc if kind == "over" else conf < acc
            if not mask.any():
                continue
            gaps_seen[kind] = True
            lo = np.minimum(acc, conf)[mask]
            gap = ax.bar(
                left[shown][mask],
                np.abs(conf - acc)[mask],
                bottom=lo,
                width=width[shown][mask],
                align="edge",
                facecolor=(*_rgb(colour_gap), 0.18),
                edgecolor=(*_rgb(colour_gap), 0.9),
                hatch=hatch,
                linewidth=0.8,
                zorder=3,
            )
            for i, patch in zip(shown[mask], gap.patches, strict=True):
                patch.set_gid(f"gap-{kind}-{k}-{i}")
    if gaps_seen["over"]:
        handles.append(
            Patch(
                facecolor=(*_rgb(OVER_COLOUR), 0.18),
                edgecolor=OVER_COLOUR,
                hatch=OVER_HATCH,
                label="Gap: over-confident",
            )
        )
    if gaps_seen["under"]:
        handles.append(
            Patch(
                facecolor=(*_rgb(UNDER_COLOUR), 0.18),
                edgecolor=UNDER_COLOUR,
                hatch=UNDER_HATCH,
                label="Gap: under-confident",
            )
        )
    handles.append(Line2D([], [], linestyle="--", color="0.35", label="Perfect calibration"))
    legend = ax.legend(handles=handles, loc="upper left", framealpha=0.9)
    legend.set_gid("legend")

    lines = []
    for k, series in enumerate(series_list):
        prefix = f"{_label(series, k)}: " if many else ""
        lines.append(
            f"{prefix}ECE {_num(series.ece)}   Brier {_num(series.brier)}   N {series.n:,}"
        )
    metrics = ax.text(
        0.98,
        0.03,
        "\n".join(lines),
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8.5,
        zorder=6,
        bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "0.7", "alpha": 0.9},
    )
    metrics.set_gid("metrics")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("Accuracy")
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.grid(True, color="0.9", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.tick_params(labelbottom=False)


def _accuracy_label(series: DiagramSeries, k: int, many: bool) -> str:
    if many:
        return _label(series, k)
    return f"Accuracy ({series.label})" if series.label else "Accuracy"


def _draw_counts(ax, series_list: list[DiagramSeries]) -> None:
    from matplotlib.lines import Line2D

    total = len(series_list)
    many = total > 1
    peak = 0.0
    for k, series in enumerate(series_list):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        left, width = _slots(series, k, total)
        shown = np.flatnonzero(series.populated)
        bars = ax.bar(
            left[shown],
            series.count[shown],
            width=width[shown],
            align="edge",
            color=colour,
            alpha=0.8,
            edgecolor="white" if not many else colour,
            linewidth=0.6,
            zorder=2,
        )
        for i, bar in zip(shown, bars.patches, strict=True):
            bar.set_gid(f"count-bar-{k}-{i}")
        if series.n:
            peak = max(peak, float(series.count.max()))
            line_colour = "0.15" if not many else colour
            ax.axvline(
                series.mean_confidence, color=line_colour, linestyle="--", linewidth=1.2, zorder=4
            ).set_gid(f"mean-confidence-{k}")
            ax.axvline(
                series.accuracy_total, color=line_colour, linestyle="-", linewidth=1.2, zorder=4
            ).set_gid(f"accuracy-line-{k}")
    ax.legend(
        handles=[
            Line2D([], [], color="0.15", linestyle="--", label="Mean confidence"),
            Line2D([], [], color="0.15", linestyle="-", label="Accuracy"),
        ],
        loc="upper left",
        framealpha=0.9,
    )
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, peak * 1.15 if peak > 0 else 1.0)
    ax.set_xlabel("Confidence")
    ax.set_ylabel("Count")
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.grid(True, axis="y", color="0.9", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)


def _rgb(colour: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(colour)


def _num(value: float) -> str:
    from calibcli.render.digits import fixed

    return fixed(value) if np.isfinite(value) else "n/a"


def coverage_image(
    series: dict[str, dict], fmt: str, *, size: tuple[float, float] = (6.4, 4.8), dpi: int = 150
) -> bytes:
    """The accuracy–coverage curves of :func:`coverage_figure` as the bytes of a ``fmt`` image
    (png, svg, pdf)."""
    import io

    buffer = io.BytesIO()
    with _style():
        figure = coverage_figure(series, size=size)
        figure.savefig(buffer, format=fmt, dpi=dpi, metadata=_METADATA[fmt])
    return buffer.getvalue()


def coverage_figure(series: dict[str, dict], *, size: tuple[float, float] = (6.4, 4.8)) -> Figure:
    """Build (without saving) the accuracy–coverage curve of each series (a threshold report's
    pictures: one per --by group, or the pooled rows), with the target accuracy and the
    coverage of the guaranteed (solid) and plug-in (dotted) thresholds marked. A series of no
    rows (empty coverage) has no curve: a box (gid ``no-rows``) names it, as a reliability
    diagram of no rows draws its axes and N 0."""
    if not series:
        raise ValueError("nothing to plot: the list of series is empty")
    with _style():
        from matplotlib.figure import Figure

        figure = Figure(figsize=size, layout="constrained")
        ax = figure.subplots()
        target = None
        drawn, empty = 0, []
        for k, (name, curve) in enumerate(series.items()):
            target = curve["target_accuracy"]
            if not len(curve["coverage"]):
                empty.append(f"{name}: no rows" if name else "no rows")
                continue
            drawn += 1
            colour = f"C{k}"
            ax.step(
                curve["coverage"], curve["accuracy"], where="post", color=colour, label=name or None
            )
            if curve.get("guaranteed"):
                ax.axvline(curve["guaranteed"], color=colour, linestyle="-", linewidth=0.8)
            if curve.get("plug_in"):
                ax.axvline(curve["plug_in"], color=colour, linestyle=":", linewidth=0.8)
        if target is not None:
            ax.axhline(target, color="0.3", linestyle="--", linewidth=0.8)
        if empty:
            ax.text(
                0.5,
                0.5,
                "\n".join(empty),
                transform=ax.transAxes,
                ha="center",
                va="center",
                bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "0.7"},
            ).set_gid("no-rows")
        if not drawn:  # nothing sets the accuracy axis: the whole of it, as in a diagram
            ax.set_ylim(0, 1)
        ax.set_xlim(0, 1)
        ax.set_xlabel("coverage (share of rows accepted)")
        ax.set_ylabel("accuracy of the accepted rows")
        ax.set_title(
            "Accuracy against coverage: -- target, | guaranteed threshold, : plug-in",
            fontsize="medium",
        )
        if drawn > 1:
            ax.legend(loc="lower left")
    return figure
