"""Line and stacked-bar charts as inline SVG text, for the self-contained HTML page.

Hand-drawn rather than matplotlib's SVG: a page holds a dozen charts per task, and these cost
next to nothing, scale with the browser's zoom, and carry a tooltip (<title>) per point.
Values are data (task names, failure kinds): every text goes through `html.escape`. Each
line has its own dash and hollow marker shape, and the legend names a line another one
covers (evo.analysis.overlaps): lines that coincide stay told apart.
"""

from __future__ import annotations

import dataclasses
import html
import math
from typing import Callable, Sequence

from evo.analysis.overlaps import legend_labels

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
CORRECT_COLOR = "#2ca02c"
WIDTH, HEIGHT = 440, 250
LEFT, RIGHT, TOP, BOTTOM = 56, 14, 40, 40
"""Margins around the plot area, in SVG units: tick labels left, title and a legend row
above, the x label below."""
LEGEND_Y = 31
"""Baseline of the legend's first row (the title's is 15); more rows add 14 each."""
MAX_MARKERS = 80
"""A series with more points than this is drawn as a line alone."""
CHAR_W = 6.4
"""Rough width of a legend character at font-size 11, to wrap legend rows."""
DASHES = ("", "6 3", "2 3", "8 3 2 3")
"""stroke-dasharray of a chart's lines, in turn ("": solid)."""
SHAPES = ("circle", "square", "triangle", "diamond")
"""Marker shape of a chart's lines, in turn."""
CORNERS = {"square": ((-2.6, -2.6), (2.6, -2.6), (2.6, 2.6), (-2.6, 2.6)),
           "triangle": ((0.0, -3.2), (3.0, 2.4), (-3.0, 2.4)),
           "diamond": ((0.0, -3.4), (3.4, 0.0), (0.0, 3.4), (-3.4, 0.0))}
"""Corners of the polygon markers, around the point."""


@dataclasses.dataclass(frozen=True)
class Series:
    """One line: y may hold NaN (a gap); `step` draws a best-so-far as horizontal steps."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    step: bool = False


def _nice_step(span: float, count: int = 5) -> float:
    raw = span / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)


def _ticks(low: float, high: float, integer: bool = False) -> list[float]:
    if high <= low:
        low, high = low - 0.5, high + 0.5
    step = _nice_step(high - low)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(low / step - 1e-9) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _label(value: float) -> str:
    """Returns a tick label short enough for the left margin (12,000,000 -> 12M)."""
    for at_least, unit, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(value) >= at_least:
            return f"{value / unit:.4g}{suffix}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _dash(index: int) -> str:
    dash = DASHES[index % len(DASHES)]
    return f' stroke-dasharray="{dash}"' if dash else ""


def _marker(index: int, x: float, y: float, color: str, tooltip: str = "") -> str:
    """Returns the hollow marker of a chart's index-th line at (x, y), `tooltip` inside it."""
    shape = SHAPES[index % len(SHAPES)]
    style = f'fill="none" stroke="{color}" stroke-width="1.3" pointer-events="all"'
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.8" {style}>{tooltip}</circle>'
    corners = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in CORNERS[shape])
    return f'<polygon points="{corners}" {style}>{tooltip}</polygon>'


def _line_swatch(index: int, color: str) -> Callable[[float, float], str]:
    """Returns what draws a line's legend sample: its dash and its marker."""
    def draw(x: float, y: float) -> str:
        return (f'<line x1="{x:.0f}" x2="{x + 16:.0f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{color}" stroke-width="1.8"{_dash(index)}/>'
                + _marker(index, x + 8, y, color))
    return draw


def _box_swatch(color: str) -> Callable[[float, float], str]:
    """Returns what draws a bar stack's legend sample: a box of its color."""
    return lambda x, y: (f'<rect x="{x + 3:.0f}" y="{y - 5:.1f}" width="10" height="10" '
                         f'fill="{color}"/>')


def _legend(labels: Sequence[str], swatches: Sequence[Callable[[float, float], str]],
            width: float) -> tuple[list[str], float]:
    """Returns legend items laid out in rows under the title, and the height they take;
    `swatches` draw each item's sample, given its left end and middle height."""
    items, x, y = [], LEFT, LEGEND_Y
    for label, swatch in zip(labels, swatches):
        size = 24 + CHAR_W * len(label)
        if x + size > width - RIGHT and x > LEFT:
            x, y = LEFT, y + 14
        items.append(swatch(x, y - 3) + f'<text x="{x + 19:.0f}" y="{y + 1}" class="legend">'
                     f"{html.escape(label)}</text>")
        x += size + 8
    return items, y - LEGEND_Y


def _frame(title: str, x_label: str, y_label: str, width: float, height: float,
           legend_h: float) -> tuple[list[str], tuple[float, float, float, float]]:
    """Returns the chart's opening parts (title, axis labels) and its plot box (left, top,
    right, bottom), below a legend `legend_h` high."""
    top = TOP + legend_h
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} '
             f'{height + legend_h}" width="{width}" height="{height + legend_h}" role="img" '
             f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>',
             f'<text x="{LEFT}" y="15" class="title">{html.escape(title)}</text>',
             f'<text x="{(LEFT + width - RIGHT) / 2:.0f}" y="{height + legend_h - 6}" '
             f'class="axis-label" text-anchor="middle">{html.escape(x_label)}</text>',
             f'<text transform="translate(13 {(top + height + legend_h - BOTTOM) / 2:.0f}) '
             f'rotate(-90)" class="axis-label" text-anchor="middle">{html.escape(y_label)}</text>']
    return parts, (LEFT, top, width - RIGHT, height + legend_h - BOTTOM)


def _no_data(parts: list[str], width: float, box: tuple[float, float, float, float]) -> str:
    return "".join(parts) + (f'<text x="{width / 2:.0f}" y="{(box[1] + box[3]) / 2:.0f}" '
                             'text-anchor="middle" class="empty">no data yet</text></svg>')


def _axes(parts: list[str], x_ticks, y_ticks, sx, sy, box) -> None:
    left, top, right, bottom = box
    for value in y_ticks:
        y = sy(value)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{left - 4}" y="{y + 3.5:.1f}" text-anchor="end" '
                     f'class="tick">{_label(value)}</text>')
    for value, text in x_ticks:
        x = sx(value)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}" '
                     'class="axis"/>'
                     f'<text x="{x:.1f}" y="{bottom + 15}" text-anchor="middle" class="tick">'
                     f'{html.escape(text)}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
                 'class="plot"/>')


def line_chart(series: Sequence[Series], *, title: str, x_label: str, y_label: str,
               y_range: tuple[float, float] | None = None, reference: float | None = None,
               integer_x: bool = False, width: float = WIDTH, height: float = HEIGHT,
               band: tuple[float, float] | None = None) -> str:
    """Returns an SVG line chart; `reference` draws a dashed horizontal line (1x speedup),
    `band` shades a range of y (the seeds' noise band, evo.analysis.noise)."""
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(series))]
    labels = legend_labels([(s.label, s.x, s.y) for s in series])
    legend, legend_h = _legend(labels, [_line_swatch(i, c) for i, c in enumerate(colors)], width)
    parts, box = _frame(title, x_label, y_label, width, height, legend_h)
    points = [(float(x), float(y)) for s in series for x, y in zip(s.x, s.y)
              if not (math.isnan(float(y)) or math.isnan(float(x)))]
    if not points:
        return _no_data(parts, width, box)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points] + ([reference] if reference is not None else []) + list(band or ())
    low_y, high_y = y_range or (min(ys), max(ys))
    if y_range is None:
        pad = (high_y - low_y) * 0.08 or abs(high_y) * 0.1 or 0.5
        low_y, high_y = low_y - pad, high_y + pad
    y_ticks = [t for t in _ticks(low_y, high_y) if low_y - 1e-9 <= t <= high_y + 1e-9]
    x_ticks = _ticks(min(xs), max(xs), integer_x)
    low_x, high_x = min(x_ticks[0], min(xs)), max(x_ticks[-1], max(xs))
    span_x, span_y = (high_x - low_x) or 1.0, (high_y - low_y) or 1.0

    def sx(value: float) -> float:
        return box[0] + (value - low_x) / span_x * (box[2] - box[0])

    def sy(value: float) -> float:
        return box[3] - (value - low_y) / span_y * (box[3] - box[1])

    _axes(parts, [(t, _label(t)) for t in x_ticks], y_ticks, sx, sy, box)
    parts.extend(legend)
    if band is not None:
        parts.append(f'<rect x="{box[0]}" y="{sy(band[1]):.1f}" width="{box[2] - box[0]}" '
                     f'height="{sy(band[0]) - sy(band[1]):.1f}" class="band"><title>seed\'s own '
                     f"spread {band[0]:.2f}x-{band[1]:.2f}x: timing noise</title></rect>")
    if reference is not None:
        parts.append(f'<line x1="{box[0]}" x2="{box[2]}" y1="{sy(reference):.1f}" '
                     f'y2="{sy(reference):.1f}" class="reference"/>')
    for index, (s, color) in enumerate(zip(series, colors)):
        parts.extend(_draw_series(s, index, color, sx, sy))
    parts.append("</svg>")
    return "".join(parts)


def _draw_series(series: Series, index: int, color: str, sx, sy) -> list[str]:
    pairs = [(float(x), float(y)) for x, y in zip(series.x, series.y)]
    path, pen_down, drawn = [], False, []
    for x, y in pairs:
        if math.isnan(y) or math.isnan(x):
            pen_down = False
            continue
        if pen_down and series.step:
            path.append(f"H{sx(x):.1f}V{sy(y):.1f}")
        else:
            path.append(f"{'L' if pen_down else 'M'}{sx(x):.1f},{sy(y):.1f}")
        pen_down = True
        drawn.append((x, y))
    out = [f'<path d="{"".join(path)}" fill="none" stroke="{color}" stroke-width="1.8"'
           f'{_dash(index)} class="series" data-label="{html.escape(series.label)}"/>'
           ] if path else []
    if len(drawn) <= MAX_MARKERS:
        out.extend(_marker(index, sx(x), sy(y), color,
                           f"<title>{html.escape(series.label)}: {_label(x)}, {y:.4g}</title>")
                   for x, y in drawn)
    return out


def bar_chart(x: Sequence[float], stacks: dict[str, Sequence[float]], *, title: str,
              x_label: str, y_label: str, colors: dict[str, str] | None = None,
              width: float = WIDTH, height: float = HEIGHT) -> str:
    """Returns an SVG stacked bar chart: one bar per x, one colored segment per stack."""
    names = list(stacks)
    chosen = colors or {}
    palette = iter(c for c in PALETTE if c != CORRECT_COLOR)
    color_of = {n: chosen.get(n) or next(palette, "#999999") for n in names}
    legend, legend_h = _legend(names, [_box_swatch(color_of[n]) for n in names], width)
    parts, box = _frame(title, x_label, y_label, width, height, legend_h)
    totals = [sum(float(stacks[n][i]) for n in names) for i in range(len(x))]
    if not x or max(totals, default=0) <= 0:
        return _no_data(parts, width, box)
    y_ticks = _ticks(0, max(totals), integer=True)
    high = max(y_ticks[-1], max(totals))
    slot = (box[2] - box[0]) / len(x)

    def sy(value: float) -> float:
        return box[3] - value / high * (box[3] - box[1])

    every = max(1, math.ceil(len(x) / 12))
    x_ticks = [(i, _label(float(v))) for i, v in enumerate(x) if i % every == 0]
    _axes(parts, x_ticks, y_ticks, lambda i: box[0] + (i + 0.5) * slot, sy, box)
    parts.extend(legend)
    for i, value in enumerate(x):
        base = 0.0
        for name in names:
            count = float(stacks[name][i])
            if count <= 0:
                continue
            left = box[0] + i * slot + slot * 0.12
            parts.append(f'<rect x="{left:.1f}" y="{sy(base + count):.1f}" '
                         f'width="{slot * 0.76:.1f}" height="{sy(base) - sy(base + count):.1f}" '
                         f'fill="{color_of[name]}"><title>{html.escape(name)} at '
                         f"{_label(float(value))}: {count:g}</title></rect>")
            base += count
    parts.append("</svg>")
    return "".join(parts)
