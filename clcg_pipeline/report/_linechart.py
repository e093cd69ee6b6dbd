"""A categorical line chart with interval whiskers (one line per series), as inline SVG.

Used for the position curve (the cross-lingual gap from the beginning to the end of a
document, one line per language group). Hand-made like ``_svg``: one self-contained page.
Points without an interval are drawn hollow, so a withheld interval is visible as such.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from clcg_pipeline.report._svg import FONT_SIZE, WIDTH, _num, _ticks

SERIES_COLOURS = ("#7a0177", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#d6616b")


@dataclass(frozen=True)
class Point:
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[Point] = field(default_factory=tuple)  # one per x category, in order
    intervals: bool = True  # False: a descriptive series with no intervals at all (solid points)
    colour: str | None = None  # fixed per series name, so one group keeps its colour across charts


def line_chart_svg(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    y_label: str,
    chart_id: str = "",
    zero_line: bool = True,
    groups: Sequence[str] | None = None,
) -> str:
    """Returns ``""`` when no point has a value.

    ``groups`` (one per category) adds a second axis line naming runs of categories, e.g. the
    document region above the paragraph positions inside it.
    """
    values = [p.value for s in series for p in s.points if p.value is not None]
    if not categories or not values:
        return ""
    values += [v for s in series for p in s.points for v in (p.low, p.high) if v is not None]
    lo, hi = min(values), max(values)
    if zero_line:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.06
    lo, hi = lo - pad, hi + pad
    left, right, top = 80, 16, 16
    plot_h = 300
    plot_w = WIDTH - left - right
    entries = _legend_entries(series, left)
    legend_rows = (entries[-1][1] + 1) if entries else 0
    extra = 24 if groups else 0
    height = top + plot_h + 70 + extra + 28 * legend_rows

    def x(i: int, k: int) -> float:
        # Series are nudged apart so their whiskers do not hide each other.
        spread = min(plot_w / max(len(categories), 1) * 0.3, 40)
        offset = 0.0 if len(series) < 2 else (k / (len(series) - 1) - 0.5) * spread
        return left + (i + 0.5) * plot_w / len(categories) + offset

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    drawn = sum(1 for s in series for p in s.points if p.value is not None)
    out = [
        f'<svg{ident} class="chart linechart" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'preserveAspectRatio="xMinYMin meet" font-size="{FONT_SIZE}" aria-label="{escape(title)}" '
        f'data-points="{drawn}" data-series="{len(series)}">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in _ticks(lo, hi, 5):
        ty = y(tick)
        out.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" class="grid"/>'
            f'<text x="{left - 8}" y="{ty + 5:.1f}" class="label">{tick:g}</text>'
        )
    if zero_line:
        out.append(f'<line x1="{left}" y1="{y(0):.1f}" x2="{left + plot_w}" y2="{y(0):.1f}" class="zero"/>')
    for i, name in enumerate(categories):
        cx = left + (i + 0.5) * plot_w / len(categories)
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 20}" class="tick">{escape(name)}</text>')
    if groups:
        out += _group_axis(groups, len(categories), left, top, plot_w, plot_h)
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 44 + extra}" class="axis">'
        f"{escape(y_label)}</text>"
    )
    for k, s in enumerate(series):
        out += _series(s, k, categories, groups, x, y)
    for lx, row, k in entries:
        colour = series[k].colour or SERIES_COLOURS[k % len(SERIES_COLOURS)]
        ly = top + plot_h + 62 + extra + 28 * row
        out.append(
            f'<line x1="{lx:.1f}" y1="{ly + 7}" x2="{lx + 26:.1f}" y2="{ly + 7}" stroke="{colour}" '
            'stroke-width="3"/>'
            f'<text x="{lx + 32:.1f}" y="{ly + 12}" class="legend">{escape(series[k].name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _legend_entries(series: Sequence[Series], left: int) -> list[tuple[float, int, int]]:
    """Legend entries (x, legend row, series index) flow left to right and wrap."""
    entries: list[tuple[float, int, int]] = []
    lx, line = float(left), 0
    for k, s in enumerate(series):
        width = 34 + FONT_SIZE * 0.62 * len(s.name) + 24
        if lx + width > WIDTH and lx > left:
            lx, line = float(left), line + 1
        entries.append((lx, line, k))
        lx += width
    return entries


def _group_axis(
    groups: Sequence[str], n_categories: int, left: int, top: int, plot_w: int, plot_h: int
) -> list[str]:
    """The second axis line: each run of categories named once, separated by a vertical line."""
    out: list[str] = []
    step = plot_w / n_categories
    start = 0
    for i in range(1, n_categories + 1):
        if i == n_categories or groups[i] != groups[start]:
            cx = left + (start + i) / 2 * step
            out.append(
                f'<text x="{cx:.1f}" y="{top + plot_h + 42}" class="tick group">'
                f"{escape(groups[start])}</text>"
            )
            if i < n_categories:
                sx = left + i * step
                out.append(
                    f'<line x1="{sx:.1f}" y1="{top}" x2="{sx:.1f}" y2="{top + plot_h + 46}" '
                    'class="separator"/>'
                )
            start = i
    return out


def _series(
    s: Series,
    k: int,
    categories: Sequence[str],
    groups: Sequence[str] | None,
    x: Callable[[int, int], float],
    y: Callable[[float], float],
) -> list[str]:
    """One series: its line (broken where a value is missing) and its points with whiskers and tooltips."""
    out: list[str] = []
    colour = s.colour or SERIES_COLOURS[k % len(SERIES_COLOURS)]
    path: list[tuple[float, float] | None] = []
    for i, p in enumerate(s.points[: len(categories)]):
        if p.value is None:
            path.append(None)
            continue
        path.append((x(i, k), y(p.value)))
    segments: list[list[tuple[float, float]]] = [[]]
    for pt in path:
        if pt is None:
            segments.append([])
        else:
            segments[-1].append(pt)
    for seg in segments:
        if len(seg) > 1:
            d = " ".join(f"{'M' if n == 0 else 'L'}{px:.1f},{py:.1f}" for n, (px, py) in enumerate(seg))
            out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="2" class="series"/>')
    for i, p in enumerate(s.points[: len(categories)]):
        if p.value is None:
            continue
        px, py = x(i, k), y(p.value)
        interval = ""
        whisker = ""
        if p.low is not None and p.high is not None:
            interval = f" [{_num(p.low)}, {_num(p.high)}]"
            whisker = (
                f'<line x1="{px:.1f}" y1="{y(p.low):.1f}" x2="{px:.1f}" y2="{y(p.high):.1f}" '
                f'stroke="{colour}" stroke-width="1.6" class="whisker"/>'
            )
        else:
            interval = " (interval withheld)" if s.intervals else ""
        fill = colour if (p.low is not None and p.high is not None) or not s.intervals else "#fff"
        # With groups a category name repeats (a position in each region): name the group too.
        place = f"{groups[i]} · {categories[i]}" if groups else categories[i]
        out.append(
            f"<g><title>{escape(f'{s.name}, {place}: {_num(p.value)}{interval}')}</title>"
            f'{whisker}<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="{fill}" stroke="{colour}" '
            'stroke-width="2" class="point"/></g>'
        )
    return out
