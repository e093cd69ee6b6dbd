"""Horizontal bar charts with confidence-interval whiskers, as inline SVG.

Hand-made rather than matplotlib: the report must be one self-contained, dependency-free page,
and a bar chart with whiskers is a few dozen lines of SVG; matplotlib would add a large
dependency (not in the environment) and base64 PNGs that cannot be searched or zoomed.
Every text that reaches the SVG is escaped here.

The chart is drawn in a 1000-unit-wide viewBox and scaled by CSS to the page's full width,
so its 15-unit text renders at about 15-16 px on a desktop page.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

# Colour per Joshi class 0..5 (a sequential palette, dark = low-resource); grey = unclassified.
CLASS_COLOURS = ("#7a0177", "#c51b8a", "#f768a1", "#3182bd", "#6baed6", "#9ecae1")
NO_CLASS_COLOUR = "#969696"
WIDTH = 1000
FONT_SIZE = 15


@dataclass(frozen=True)
class Bar:
    """One bar: label, value, optional interval, optional Joshi class (colour)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    joshi_class: int | None = None
    colour: str | None = None  # overrides the class colour
    flagged: bool = False  # drawn hatched-outline and marked in its label


def _colour(joshi_class: int | None) -> str:
    if joshi_class is None or not 0 <= joshi_class < len(CLASS_COLOURS):
        return NO_CLASS_COLOUR
    return CLASS_COLOURS[joshi_class]


def _ticks(lo: float, hi: float, count: int = 6) -> list[float]:
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
        ticks.append(round(value, 10) + 0.0)  # + 0.0 turns -0.0 into 0.0 (no "-0" tick)
        value += step
    return ticks


def _tick_text(value: float) -> str:
    """Short tick text; large counts with thousands separators, never ``1e+06``."""
    return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:g}"


def _num(value: float) -> str:
    text = f"{value:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def bar_chart_svg(
    bars: list[Bar],
    *,
    title: str,
    x_label: str = "CLCG",
    legend: bool = True,
    chart_id: str = "",
    reference: tuple[float, str] | None = None,
    value_format: Callable[[float], str] | None = None,
) -> str:
    """An SVG bar chart, bars in the given order; returns ``""`` when there is nothing to draw.

    ``reference`` = (value, label) draws a dashed vertical line there (e.g. alpha = 0.67);
    ``value_format`` writes the values (default three decimals; e.g. counts as integers).
    """
    if not bars:
        return ""
    longest = max(len(b.label) for b in bars)
    label_w = min(max(120, int(longest * FONT_SIZE * 0.55) + 16), 380)
    value_w = 185  # the estimate and interval as text, right of the plot
    plot_w = WIDTH - label_w - value_w - 16
    row_h, top, bottom = 30, 14, 58
    if reference is not None:
        top = 36  # room for the reference line's label above the plot
    entries = _legend_entries(bars, label_w) if legend else []
    bottom += 30 * (entries[-1][1] + 1) if entries else 0
    height = top + row_h * len(bars) + bottom
    lo, hi = _value_range(bars, reference)

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    show = value_format or _num
    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    out = [
        f'<svg{ident} class="chart" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'preserveAspectRatio="xMinYMin meet" font-size="{FONT_SIZE}" aria-label="{escape(title)}" '
        f'data-bars="{len(bars)}">',
        f"<title>{escape(title)}</title>",
    ]
    plot_bottom = top + row_h * len(bars)
    for tick in _ticks(lo, hi):
        tx = x(tick)
        out.append(
            f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{plot_bottom}" class="grid"/>'
            f'<text x="{tx:.1f}" y="{plot_bottom + 19}" class="tick">{_tick_text(tick)}</text>'
        )
    out.append(f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{plot_bottom}" class="zero"/>')
    if reference is not None:
        rx = x(reference[0])
        out.append(
            f'<line x1="{rx:.1f}" y1="{top - 8}" x2="{rx:.1f}" y2="{plot_bottom}" class="reference"/>'
            f'<text x="{rx:.1f}" y="{top - 14}" class="reference-label">{escape(reference[1])}</text>'
        )
    for i, bar in enumerate(bars):
        out += _bar_row(bar, top + i * row_h, row_h, label_w, x, show)
    out.append(
        f'<text x="{label_w + plot_w / 2:.1f}" y="{plot_bottom + 42}" class="axis">{escape(x_label)}</text>'
    )
    for lx, line, joshi_class in entries:
        name = "unclassified" if joshi_class is None else f"Joshi class {joshi_class}"
        ly = plot_bottom + 60 + 30 * line
        out.append(
            f'<rect x="{lx:.1f}" y="{ly}" width="14" height="14" fill="{_colour(joshi_class)}" '
            'class="swatch"/>'
            f'<text x="{lx + 20:.1f}" y="{ly + 12}" class="legend">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


LegendEntry = tuple[float, int, int | None]  # x, legend row, class


def _legend_entries(bars: list[Bar], label_w: int) -> list[LegendEntry]:
    """Legend entries flow left to right and wrap, so no name runs past the right edge."""
    entries: list[LegendEntry] = []
    lx, line = float(label_w), 0
    # A bar with its own colour and no class (e.g. "all pairs") is no "unclassified" language.
    classes = {b.joshi_class for b in bars if b.joshi_class is not None or b.colour is None}
    for joshi_class in sorted(classes, key=lambda c: (c is None, c or 0)):
        name = "unclassified" if joshi_class is None else f"Joshi class {joshi_class}"
        width = 20 + FONT_SIZE * 0.62 * len(name) + 24  # swatch, text (generous), gap
        if lx + width > WIDTH and lx > label_w:
            lx, line = float(label_w), line + 1
        entries.append((lx, line, joshi_class))
        lx += width
    return entries


def _value_range(bars: list[Bar], reference: tuple[float, str] | None) -> tuple[float, float]:
    """The x range: every value and interval end, zero, and the reference line, padded a little."""
    values = [b.value for b in bars]
    values += [v for b in bars for v in (b.low, b.high) if v is not None]
    if reference is not None:
        values.append(reference[0])
    lo, hi = min(0.0, *values), max(0.0, *values)
    if hi == lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.04
    lo, hi = (lo - pad if lo < 0 else lo), hi + pad
    return lo, hi


def _bar_row(
    bar: Bar,
    y: int,
    row_h: int,
    label_w: int,
    x: Callable[[float], float],
    show: Callable[[float], str],
) -> list[str]:
    """One bar: its label, the bar, the interval whiskers and the value as text, with a tooltip."""
    out: list[str] = []
    x0, x1 = sorted((x(0.0), x(bar.value)))
    interval = ""
    if bar.low is not None and bar.high is not None:
        interval = f" [{show(bar.low)}, {show(bar.high)}]"
    tip = f"{bar.label}: {show(bar.value)}{interval}" + (" (flagged)" if bar.flagged else "")
    label = bar.label + (" \u26a0" if bar.flagged else "")
    fill = escape(bar.colour or _colour(bar.joshi_class))
    out.append(
        f"<g><title>{escape(tip)}</title>"
        f'<text x="{label_w - 8}" y="{y + row_h * 0.66:.1f}" class="label">{escape(label)}</text>'
        f'<rect x="{x0:.1f}" y="{y + 5}" width="{max(x1 - x0, 0.5):.1f}" height="{row_h - 10}" '
        f'fill="{fill}" class="bar{" flagged" if bar.flagged else ""}"/>'
    )
    if bar.low is not None and bar.high is not None:
        mid = y + row_h / 2
        wl, wh = x(bar.low), x(bar.high)
        out.append(
            f'<line x1="{wl:.1f}" y1="{mid:.1f}" x2="{wh:.1f}" y2="{mid:.1f}" class="ci"/>'
            f'<line x1="{wl:.1f}" y1="{mid - 6:.1f}" x2="{wl:.1f}" y2="{mid + 6:.1f}" class="ci"/>'
            f'<line x1="{wh:.1f}" y1="{mid - 6:.1f}" x2="{wh:.1f}" y2="{mid + 6:.1f}" class="ci"/>'
        )
    out.append(
        f'<text x="{WIDTH - 4}" y="{y + row_h * 0.66:.1f}" class="value">{escape(show(bar.value))}'
        f"{escape(interval)}</text>"
    )
    out.append("</g>")
    return out
