"""Hand-written inline SVG charts for the HTML report: line, bar and scatter plots.

No plotting library and no external asset: each function returns one ``<svg>`` element as a string,
sized in CSS pixels, with its text escaped. Enough for the report's three kinds of figure, no more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

WIDTH = 600
HEIGHT = 280
MARGIN_LEFT = 56
MARGIN_RIGHT = 150
MARGIN_TOP = 28
MARGIN_BOTTOM = 44
#: Colour-blind-safe palette (Okabe & Ito, 2008), cycled per series.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")


def colour(index: int) -> str:
    """The palette colour of series ``index``."""
    return PALETTE[index % len(PALETTE)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]`` (steps of 1, 2 or 5 times a power of 10)."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _label(value: float) -> str:
    return f"{value:g}"


class _Frame:
    """Axes, ticks and the data-to-pixel mapping of one chart."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        self.x_ticks = nice_ticks(min(0.0, *xs), max(0.0, *xs))
        self.y_ticks = nice_ticks(min(0.0, *ys), max(0.0, *ys))

    def x(self, value: float) -> float:
        lo, hi = self.x_ticks[0], self.x_ticks[-1]
        return MARGIN_LEFT + (value - lo) / (hi - lo) * (WIDTH - MARGIN_LEFT - MARGIN_RIGHT)

    def y(self, value: float) -> float:
        lo, hi = self.y_ticks[0], self.y_ticks[-1]
        return HEIGHT - MARGIN_BOTTOM - (value - lo) / (hi - lo) * (HEIGHT - MARGIN_TOP - MARGIN_BOTTOM)

    def axes(self, title: str, x_label: str, y_label: str, x_tick_labels: bool = True) -> list[str]:
        parts = [f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>']
        bottom, left = HEIGHT - MARGIN_BOTTOM, MARGIN_LEFT
        for tick in self.y_ticks:
            y = self.y(tick)
            parts.append(
                f'<line x1="{left}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>'
            )
            parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>')
        if x_tick_labels:
            for tick in self.x_ticks:
                x = self.x(tick)
                parts.append(
                    f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{_label(tick)}</text>'
                )
        parts.append(
            f'<line x1="{left}" x2="{WIDTH - MARGIN_RIGHT}" y1="{bottom}" y2="{bottom}" stroke="#999"/>'
        )
        parts.append(f'<line x1="{left}" x2="{left}" y1="{MARGIN_TOP}" y2="{bottom}" stroke="#999"/>')
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle">{escape(x_label)}</text>')
        parts.append(
            f'<text x="14" y="{HEIGHT / 2}" text-anchor="middle" '
            f'transform="rotate(-90 14 {HEIGHT / 2})">{escape(y_label)}</text>'
        )
        return parts


def _svg(parts: list[str], legend: Sequence[str] = ()) -> str:
    rows = [
        f'<g transform="translate({WIDTH - MARGIN_RIGHT + 10},{MARGIN_TOP + 4 + 14 * i})">'
        f'<rect width="10" height="10" fill="{colour(i)}"/>'
        f'<text x="14" y="9">{escape(name)}</text></g>'
        for i, name in enumerate(legend)
    ]
    body = "".join(parts + rows)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11" class="chart">{body}</svg>'
    )


def line_chart(
    title: str, x_label: str, y_label: str, series: Sequence[tuple[str, Sequence[tuple[float, float]]]]
) -> str:
    """One polyline with point markers per ``(name, [(x, y), ...])`` series, and a legend."""
    points = [p for _, pts in series for p in pts]
    frame = _Frame([p[0] for p in points], [p[1] for p in points])
    parts = frame.axes(title, x_label, y_label)
    for i, (_, pts) in enumerate(series):
        coords = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in pts)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour(i)}" stroke-width="2"/>')
        parts.extend(
            f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="2.5" fill="{colour(i)}"/>'
            for x, y in pts
        )
    return _svg(parts, [name for name, _ in series])


def bar_chart(
    title: str,
    x_label: str,
    y_label: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
) -> str:
    """Grouped vertical bars: one group per label, one coloured bar per ``(name, values)`` series."""
    frame = _Frame([0.0], [v for _, values in series for v in values])
    frame.x_ticks = [0.0, float(max(len(labels), 1))]
    parts = frame.axes(title, x_label, y_label, x_tick_labels=False)
    slot = (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / max(len(labels), 1)
    bar = (slot - 2) / max(len(series), 1)
    for j, label in enumerate(labels):
        x = MARGIN_LEFT + j * slot
        for i, (name, values) in enumerate(series):
            top = frame.y(values[j])
            parts.append(
                f'<rect x="{x + 1 + i * bar:.1f}" y="{top:.1f}" width="{bar:.1f}" '
                f'height="{frame.y(0.0) - top:.1f}" fill="{colour(i)}">'
                f"<title>{escape(name)}, {escape(label)}: {values[j]:g}</title></rect>"
            )
        parts.append(
            f'<text x="{x + slot / 2:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 14}" text-anchor="middle" '
            f'font-size="9">{escape(label)}</text>'
        )
    return _svg(parts, [name for name, _ in series])


def scatter_chart(title: str, x_label: str, y_label: str, points: Sequence[tuple[str, float, float]]) -> str:
    """One labelled, coloured dot per ``(name, x, y)``."""
    frame = _Frame([p[1] for p in points], [p[2] for p in points])
    parts = frame.axes(title, x_label, y_label)
    for i, (name, x, y) in enumerate(points):
        parts.append(
            f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="5" fill="{colour(i)}">'
            f"<title>{escape(name)}: {x:g}, {y:g}</title></circle>"
        )
    return _svg(parts, [name for name, _, _ in points])
