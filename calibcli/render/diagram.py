"""Reliability diagrams drawn in the terminal.

`DiagramSeries` is the drawing input shared by this module and `calibcli.render.image`: per-bin mean
confidence, accuracy and count plus the headline numbers, built from a `BinStats` with
`DiagramSeries.from_stats`. Importing this module needs numpy only; rich is imported when a
diagram is rendered.

The terminal diagram has one column per bin. Each column holds a bar up to the bin's accuracy, the
gap between accuracy and the bin's mean confidence is marked (``:`` / ``░`` where the model is
over-confident, ``+`` / ``▓`` where it is under-confident), the diagonal of perfect calibration
runs behind the bars (``/`` / ``·``), and a small histogram of the counts per bin sits underneath.
Empty bins are left blank (no bar, no count), so they never read as zero accuracy.

Columns are sized so the plot area is about 60 characters wide and the whole diagram fits the
requested width (80 by default). When a bin cannot get at least two characters (one for the bar,
one for the space after it; about 36 bins at 80 columns), groups of adjacent bins are merged
exactly (counts add, means are count-weighted) and the diagram says so.

Plain mode uses ASCII only and carries no styles, so it reads the same piped, in a log or with
``NO_COLOR``; the rich renderable picks it automatically when the console is not a terminal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from calibcli.render.digits import fixed

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement

    from calibcli.metrics import BinStats

__all__ = ["DiagramSeries", "ReliabilityDiagram", "diagram_lines", "render_diagram"]

DEFAULT_WIDTH = 80
MIN_WIDTH = 32
DEFAULT_HEIGHT = 16
DEFAULT_HIST_HEIGHT = 4
_TARGET_AREA = 60  # preferred width of the plot area in characters
_MAX_COLUMN = 12  # widest column (bar plus separating space) for very few bins
_MARGIN = 7  # tick labels right-aligned in 5 characters, a space, the axis


@dataclass(frozen=True, eq=False)
class DiagramSeries:
    """One reliability curve to draw: per-bin statistics plus the headline numbers.

    ``confidence`` and ``accuracy`` are the per-bin mean confidence and accuracy; their values in
    bins with ``count == 0`` are ignored by every drawing (`from_stats` stores nan there).
    ``accuracy_ci`` is an optional (lower, upper) pair of per-bin interval bounds, e.g. Wilson.
    """

    label: str
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray
    accuracy_ci: tuple[np.ndarray, np.ndarray] | None
    ece: float
    brier: float
    n: int
    mean_confidence: float
    accuracy_total: float

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("bin_lower", "bin_upper", "confidence", "accuracy", "count"):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.ndim != 1:
                raise ValueError(f"{name} must be one-dimensional, got shape {value.shape}")
            arrays[name] = value
        bins = arrays["count"].shape[0]
        for name, value in arrays.items():
            if value.shape[0] != bins:
                raise ValueError(f"{name} has {value.shape[0]} entries, count has {bins}")
            object.__setattr__(self, name, value)
        if np.any(arrays["bin_upper"] < arrays["bin_lower"]):
            raise ValueError("bin_upper must not be below bin_lower")
        if np.any(arrays["count"] < 0):
            raise ValueError("count must be non-negative")
        if self.accuracy_ci is not None:
            lower, upper = (np.asarray(a, dtype=np.float64) for a in self.accuracy_ci)
            if lower.shape != (bins,) or upper.shape != (bins,):
                raise ValueError(f"accuracy_ci bounds must have {bins} entries each")
            object.__setattr__(self, "accuracy_ci", (lower, upper))

    @classmethod
    def from_stats(
        cls,
        stats: BinStats,
        *,
        label: str = "",
        accuracy_ci: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> DiagramSeries:
        """Build a series from pooled bin statistics; empty bins get nan confidence/accuracy."""
        edges = np.asarray(stats.edges, dtype=np.float64)
        count = np.asarray(stats.count, dtype=np.float64)
        empty = count == 0
        confidence = np.where(empty, np.nan, np.asarray(stats.mean_confidence, dtype=np.float64))
        accuracy = np.where(empty, np.nan, np.asarray(stats.accuracy, dtype=np.float64))
        return cls(
            label=label,
            bin_lower=edges[:-1],
            bin_upper=edges[1:],
            confidence=confidence,
            accuracy=accuracy,
            count=count,
            accuracy_ci=accuracy_ci,
            ece=float(stats.ece()),
            brier=float(stats.brier()),
            n=int(stats.n),
            mean_confidence=float(stats.total_mean_confidence),
            accuracy_total=float(stats.total_accuracy),
        )

    @classmethod
    def from_section(
        cls, section: dict, *, label: str = "", with_ci: bool = False
    ) -> DiagramSeries:
        """Build a series from a report section (its ``reliability`` data and headline figures);
        ``with_ci`` keeps the per-bin accuracy intervals the report holds."""
        rel = section["reliability"]
        count = np.asarray(rel["count"], dtype=np.float64)

        def column(values: list) -> np.ndarray:
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

        accuracy_ci = None
        if with_ci and "accuracy_ci" in rel:
            pairs = [(np.nan, np.nan) if p is None else p for p in rel["accuracy_ci"]]
            lower, upper = (np.array(side, dtype=np.float64) for side in zip(*pairs, strict=True))
            accuracy_ci = (lower, upper)

        def number(key: str) -> float:
            value = section.get(key)
            return math.nan if value is None else float(value)

        return cls(
            label=label,
            bin_lower=np.asarray(rel["bin_lower"], dtype=np.float64),
            bin_upper=np.asarray(rel["bin_upper"], dtype=np.float64),
            confidence=column(rel["confidence"]),
            accuracy=column(rel["accuracy"]),
            count=count,
            accuracy_ci=accuracy_ci,
            ece=number("ece"),
            brier=number("brier"),
            n=int(section["n"]),
            mean_confidence=number("mean_confidence"),
            accuracy_total=number("accuracy"),
        )

    @property
    def bins(self) -> int:
        return int(self.count.shape[0])

    @property
    def populated(self) -> np.ndarray:
        """Boolean mask of the bins holding at least one prediction."""
        return self.count > 0

    def merge_adjacent(self, group: int) -> DiagramSeries:
        """Merge runs of ``group`` adjacent bins (the last run may be shorter).

        Counts add; confidence and accuracy are count-weighted means, so the merged bins are exactly
        what binning with the coarser edges would give. Intervals cannot be merged and are dropped.
        """
        if group < 1:
            raise ValueError(f"group must be at least 1, got {group}")
        if group == 1:
            return self
        starts = np.arange(0, self.bins, group)
        populated = self.populated
        count = np.add.reduceat(self.count, starts)
        sum_conf = np.add.reduceat(np.where(populated, self.confidence * self.count, 0.0), starts)
        sum_acc = np.add.reduceat(np.where(populated, self.accuracy * self.count, 0.0), starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            confidence = np.where(count > 0, sum_conf / count, np.nan)
            accuracy = np.where(count > 0, sum_acc / count, np.nan)
        ends = np.minimum(starts + group, self.bins) - 1
        return DiagramSeries(
            label=self.label,
            bin_lower=self.bin_lower[starts],
            bin_upper=self.bin_upper[ends],
            confidence=confidence,
            accuracy=accuracy,
            count=count,
            accuracy_ci=None,
            ece=self.ece,
            brier=self.brier,
            n=self.n,
            mean_confidence=self.mean_confidence,
            accuracy_total=self.accuracy_total,
        )


# --- layout -------------------------------------------------------------------------------------
# A drawing is a list of lines; a line is a list of (text, kind) runs. Plain mode joins the texts,
# the rich renderable styles each run by its kind.

_PLAIN = {
    "acc": "#",
    "over": ":",
    "under": "+",
    "diag": "/",
    "count": "#",
    "hline": "-",
    "vline": "|",
    "corner": "+",
    "tick": "+",
    "sep": "-",
}
_UNICODE = {
    "acc": "█",
    "over": "░",
    "under": "▓",
    "diag": "·",
    "count": "█",
    "hline": "─",
    "vline": "│",
    "corner": "└",
    "tick": "┤",
    "sep": "·",
}
_EIGHTHS = " ▁▂▃▄▅▆▇█"
_STYLES = {
    "acc": "cyan",
    "over": "red",
    "under": "yellow",
    "diag": "dim",
    "count": "cyan",
    "axis": "dim",
    "title": "bold",
    "text": "",
}

Run = tuple[str, str]


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _compact(value: float) -> str:
    """A count in at most 5 characters: 987, 12.3k, 123k, 1.2M."""
    if value < 1000:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"
    for scale, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")):
        scaled = value / scale
        if scaled < 999.5:
            return f"{scaled:.1f}{suffix}" if scaled < 99.95 else f"{scaled:.0f}{suffix}"
    return f"{value:.0e}"


def _fmt(value: float, digits: int = 4) -> str:
    return "n/a" if not math.isfinite(value) else fixed(value, digits)


def _wrap_items(items: list[list[Run]], width: int, gap: str = "   ") -> list[list[Run]]:
    """Lay items out left to right, starting a new line when the next one would pass ``width``."""
    lines: list[list[Run]] = []
    line: list[Run] = []
    used = 0
    for item in items:
        size = sum(len(text) for text, _ in item)
        if line and used + len(gap) + size > width:
            lines.append(line)
            line, used = [], 0
        if line:
            line.append((gap, "text"))
            used += len(gap)
        line.extend(item)
        used += size
    if line:
        lines.append(line)
    return lines


def _crop(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def _columns(bins: int, width: int) -> tuple[int, int]:
    """(group, column width): bins merged per column and characters per column."""
    avail = width - _MARGIN - 3  # a leading space in the plot area; room for the last label
    max_columns = avail // 2
    group = 1
    if bins > max_columns:
        group = math.ceil(bins / max_columns)
        # prefer a group size that divides the bins (round edges, equal columns) if one is near
        group = next((g for g in range(group, 2 * group + 1) if bins % g == 0), group)
    columns = math.ceil(bins / group)
    column = min(avail // columns, max(2, _TARGET_AREA // columns), _MAX_COLUMN)
    return group, column


def _layout(
    series: DiagramSeries, width: int, height: int, hist_height: int, plain: bool
) -> list[list[Run]]:
    if width < MIN_WIDTH:
        raise ValueError(f"width must be at least {MIN_WIDTH} characters, got {width}")
    if height < 4 or hist_height < 1:
        raise ValueError("height must be at least 4 rows and hist_height at least 1")
    chars = _PLAIN if plain else _UNICODE
    out: list[list[Run]] = []

    title = "Reliability diagram" + (f": {series.label}" if series.label else "")
    out.append([(_crop(title, width), "title")])
    n_text = f"{series.n:,}"
    stats = [
        f"ECE {_fmt(series.ece)}",
        f"Brier {_fmt(series.brier)}",
        f"N {n_text}",
        f"accuracy {_fmt(series.accuracy_total)}",
        f"mean confidence {_fmt(series.mean_confidence)}",
    ]
    out.extend(_wrap_items([[(s, "text")] for s in stats], width))
    if series.bins == 0 or series.n == 0:
        out.append([("(no predictions to draw)", "text")])
        return out

    group, column = _columns(series.bins, width)
    if group > 1:
        out.append([(f"({series.bins} bins, {group} per column)", "text")])
        series = series.merge_adjacent(group)
    bins = series.bins
    bar = column - 1
    area = 1 + bins * column  # leading space, then each column: bar characters and one space

    populated = series.populated
    acc_rows = np.zeros(bins, dtype=np.int64)
    conf_rows = np.zeros(bins, dtype=np.int64)
    for i in np.flatnonzero(populated):
        acc_rows[i] = _round_half_up(float(np.clip(series.accuracy[i], 0, 1)) * height)
        conf_rows[i] = _round_half_up(float(np.clip(series.confidence[i], 0, 1)) * height)

    # x value under each character of the plot area, for the diagonal
    xs = np.empty(area)
    for i in range(bins):
        lo, hi = series.bin_lower[i], series.bin_upper[i]
        xs[i * column] = lo
        xs[i * column + 1 : i * column + 1 + bar] = lo + (np.arange(bar) + 0.5) / bar * (hi - lo)
    xs[bins * column] = series.bin_upper[-1]
    diag_rows = np.minimum(np.floor(xs * height).astype(np.int64), height - 1)

    def cell(row: int, pos: int) -> str:
        """Kind of the main-panel cell at ``row`` (0 = bottom) and plot-area position ``pos``."""
        i, offset = divmod(pos - 1, column)
        if pos >= 1 and offset < bar and populated[i]:
            top_acc, top_conf = acc_rows[i], conf_rows[i]
            if row < min(top_acc, top_conf):
                return "acc"
            if top_conf <= row < top_acc:
                return "under"
            if top_acc <= row < top_conf:
                return "over"
        return "diag" if diag_rows[pos] == row else " "

    ticks = {height - 1: "1.0", _round_half_up(height / 2) - 1: "0.5"}
    if height % 4 == 0:
        ticks[height // 4 - 1] = "0.25"
        ticks[3 * height // 4 - 1] = "0.75"
    out.append([("accuracy", "text")])
    for row in range(height - 1, -1, -1):
        label = ticks.get(row)
        runs: list[Run] = [
            (f"{label or '':>5} ", "axis"),
            (chars["tick"] if label else chars["vline"], "axis"),
        ]
        runs.extend(_merge_runs([cell(row, pos) for pos in range(area)], chars))
        out.append(runs)
    out.append([(f"{'0.0':>5} ", "axis"), (chars["corner"] + chars["hline"] * area, "axis")])

    # count histogram, scaled to the largest bin
    peak = float(series.count.max())
    levels = hist_height * (1 if plain else 8)
    heights = np.zeros(bins, dtype=np.int64)
    for i in np.flatnonzero(populated):
        heights[i] = max(1, _round_half_up(series.count[i] / peak * levels))
    step = 1 if plain else 8
    for row in range(hist_height - 1, -1, -1):
        label = _compact(peak) if row == hist_height - 1 else ("count" if row == 0 else "")
        runs = [
            (f"{label:>5} ", "axis"),
            (chars["tick"] if row == hist_height - 1 else chars["vline"], "axis"),
        ]
        kinds = [" "]
        glyphs = [" "]
        for i in range(bins):
            fill = int(np.clip(heights[i] - row * step, 0, step))
            glyph = chars["count"] if plain or fill == step else _EIGHTHS[fill]
            glyph = glyph if fill else " "
            kinds.extend(["count" if fill else " "] * bar + [" "])
            glyphs.extend([glyph] * bar + [" "])
        runs.extend(_merge_glyphs(glyphs, kinds))
        out.append(runs)
    out.append([(f"{'0':>5} ", "axis"), (chars["corner"] + chars["hline"] * area, "axis")])

    out.append(_x_labels(series, column, area))
    out.append([(" " * (_MARGIN + area - len("confidence")) + "confidence", "text")])

    legend = [
        [(chars["acc"], "acc"), (" accuracy", "text")],
        [(chars["over"], "over"), (" over-confident gap", "text")],
        [(chars["under"], "under"), (" under-confident gap", "text")],
        [(chars["diag"], "diag"), (" perfect calibration", "text")],
        [("blank column: empty bin", "text")],
    ]
    out.extend(_wrap_items(legend, width))
    return out


def _merge_runs(kinds: list[str], chars: dict[str, str]) -> list[Run]:
    glyphs = [chars[k] if k != " " else " " for k in kinds]
    return _merge_glyphs(glyphs, kinds)


def _merge_glyphs(glyphs: list[str], kinds: list[str]) -> list[Run]:
    runs: list[Run] = []
    for glyph, kind in zip(glyphs, kinds, strict=True):
        kind = "text" if kind == " " else kind
        if runs and runs[-1][1] == kind:
            runs[-1] = (runs[-1][0] + glyph, kind)
        else:
            runs.append((glyph, kind))
    return runs


def _x_labels(series: DiagramSeries, column: int, area: int) -> list[Run]:
    """Bin edges under the column boundaries, as many as fit without touching."""
    edges = np.append(series.bin_lower, series.bin_upper[-1])
    for digits in (1, 2):  # one decimal when the labelled edges are exact with it, else two
        labels = [f"{e:.{digits}f}" for e in edges]
        chosen = _label_positions(len(edges), column, max(len(s) for s in labels))
        if all(abs(float(labels[k]) - edges[k]) < 1e-9 for k in chosen):
            break
    size = max(len(s) for s in labels)
    text = [" "] * (_MARGIN + area + size)
    for k in chosen:
        start = _MARGIN + k * column - len(labels[k]) // 2
        text[start : start + len(labels[k])] = labels[k]
    return [("".join(text).rstrip(), "axis")]


def _label_positions(count: int, column: int, size: int) -> list[int]:
    """Every step-th boundary such that labels of ``size`` characters keep a space between them."""
    step = 1
    while step * column < size + 1:
        step += 1
    last = count - 1
    chosen = list(range(0, last + 1, step))
    if chosen[-1] != last:  # always label the right end; drop its neighbour if they would touch
        if (last - chosen[-1]) * column < size + 1:
            chosen.pop()
        chosen.append(last)
    return chosen


def diagram_lines(
    series: DiagramSeries,
    *,
    plain: bool = True,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    hist_height: int = DEFAULT_HIST_HEIGHT,
) -> list[str]:
    """The diagram as text lines, none longer than ``width``; ASCII only when ``plain``."""
    layout = _layout(series, width, height, hist_height, plain)
    return ["".join(text for text, _ in line).rstrip() for line in layout]


class ReliabilityDiagram:
    """rich renderable for one series; fits the console width (at most ``width``, default 80).

    ``plain=None`` draws plain ASCII without styles when the console is not a terminal or is
    limited to ASCII, and block characters with colours otherwise (rich drops the colours itself
    under ``NO_COLOR``; the characters still tell the gaps apart).
    """

    def __init__(
        self,
        series: DiagramSeries,
        *,
        width: int | None = None,
        plain: bool | None = None,
        height: int = DEFAULT_HEIGHT,
        hist_height: int = DEFAULT_HIST_HEIGHT,
    ) -> None:
        self.series = series
        self.width = width
        self.plain = plain
        self.height = height
        self.hist_height = hist_height

    def _width(self, max_width: int) -> int:
        return max(MIN_WIDTH, min(self.width or DEFAULT_WIDTH, max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        plain = self.plain
        if plain is None:
            plain = options.ascii_only or not console.is_terminal
        layout = _layout(
            self.series, self._width(options.max_width), self.height, self.hist_height, plain
        )
        for line in layout:
            text = Text(no_wrap=True, overflow="crop", end="\n")
            for chunk, kind in line:
                text.append(chunk, style=None if plain else (_STYLES.get(kind) or None))
            text.rstrip()
            yield text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        width = self._width(options.max_width)
        return Measurement(min(MIN_WIDTH, width), width)


def render_diagram(
    series: DiagramSeries,
    *,
    width: int | None = None,
    plain: bool | None = None,
    height: int = DEFAULT_HEIGHT,
    hist_height: int = DEFAULT_HIST_HEIGHT,
) -> Any:
    """A rich renderable drawing ``series``; print it with ``Console().print(...)``."""
    return ReliabilityDiagram(
        series, width=width, plain=plain, height=height, hist_height=hist_height
    )
