"""Horizontal bar charts with confidence-interval whiskers, as inline SVG.

Hand-made rather than matplotlib: the report must be one self-contained, dependency-free page,
and a bar chart with whiskers is a few dozen lines of SVG; matplotlib would add a large
dependency (not in the environment) and base64 PNGs that cannot be searched or zoomed.
Every text that reaches the SVG is escaped here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# Colour per Joshi class 0..5 (a sequential palette, dark = low-resource); grey = unclassified.
CLASS_COLOURS = ("#7a0177", "#c51b8a", "#f768a1", "#3182bd", "#6baed6", "#9ecae1")
NO_CLASS_COLOUR = "#969696"


@dataclass(frozen=True)
class Bar:
    """One bar: label, value, optional interval, optional Joshi class (colour)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    joshi_class: int | None = None
    colour: str | None = None  # overrides the class colour


def _colour(joshi_class: int | None) -> str:
    if joshi_class is None or not 0 <= joshi_class < len(CLASS_COLOURS):
        return NO_CLASS_COLOUR
    return CLASS_COLOURS[joshi_class]


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1-2-5 steps)."""
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def bar_chart_svg(bars: list[Bar], *, title: str, x_label: str = "CLCG", legend: bool = True) -> str:
    """An SVG bar chart, bars in the given order; returns ``""`` when there is nothing to draw."""
    if not bars:
        return ""
    label_w, plot_w, right_pad = 250, 430, 24
    row_h, top, bottom = 22, 12, 46 + (22 if legend else 0)
    width = label_w + plot_w + right_pad
    height = top + row_h * len(bars) + bottom
    values = [b.value for b in bars]
    values += [v for b in bars for v in (b.low, b.high) if v is not None]
    lo, hi = min(0.0, *values), max(0.0, *values)
    if hi == lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.05
    lo, hi = (lo - pad if lo < 0 else lo), hi + pad

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    plot_bottom = top + row_h * len(bars)
    for tick in _ticks(lo, hi):
        tx = x(tick)
        out.append(
            f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{plot_bottom}" class="grid"/>'
            f'<text x="{tx:.1f}" y="{plot_bottom + 14}" class="tick">{tick:g}</text>'
        )
    out.append(f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{plot_bottom}" class="zero"/>')
    for i, bar in enumerate(bars):
        y = top + i * row_h
        x0, x1 = sorted((x(0.0), x(bar.value)))
        tip = f"{bar.label}: {bar.value:.3f}"
        if bar.low is not None and bar.high is not None:
            tip += f" [{bar.low:.3f}, {bar.high:.3f}]"
        out.append(
            f"<g><title>{escape(tip)}</title>"
            f'<text x="{label_w - 6}" y="{y + row_h * 0.68:.1f}" class="label">{escape(bar.label)}</text>'
            f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(x1 - x0, 0.5):.1f}" height="{row_h - 8}" '
            f'fill="{escape(bar.colour or _colour(bar.joshi_class))}"/>'
        )
        if bar.low is not None and bar.high is not None:
            mid = y + row_h / 2
            wl, wh = x(bar.low), x(bar.high)
            out.append(
                f'<line x1="{wl:.1f}" y1="{mid:.1f}" x2="{wh:.1f}" y2="{mid:.1f}" class="ci"/>'
                f'<line x1="{wl:.1f}" y1="{mid - 5:.1f}" x2="{wl:.1f}" y2="{mid + 5:.1f}" class="ci"/>'
                f'<line x1="{wh:.1f}" y1="{mid - 5:.1f}" x2="{wh:.1f}" y2="{mid + 5:.1f}" class="ci"/>'
            )
        out.append("</g>")
    out.append(
        f'<text x="{label_w + plot_w / 2:.1f}" y="{plot_bottom + 32}" class="axis">{escape(x_label)}</text>'
    )
    if legend:
        classes = sorted({b.joshi_class for b in bars}, key=lambda c: (c is None, c or 0))
        lx = label_w
        for joshi_class in classes:
            name = "unclassified" if joshi_class is None else f"class {joshi_class}"
            colour = _colour(joshi_class)
            out.append(
                f'<rect x="{lx}" y="{plot_bottom + 44}" width="10" height="10" fill="{colour}"/>'
                f'<text x="{lx + 14}" y="{plot_bottom + 53}" class="legend">{escape(name)}</text>'
            )
            lx += 24 + 7 * len(name)
    out.append("</svg>")
    return "".join(out)
