"""Labelled heat maps (a grid of coloured cells with their values written in) as inline SVG.

Hand-made for the same reasons as the bar charts in ``_svg``: one self-contained page, text that
can be searched and zoomed. Every cell carries its value as text (colour is never the only
carrier), its row and column as data attributes, and a tooltip; the chart has a ``<title>``
and a ``<desc>`` for screen readers. Every text that reaches the SVG is escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from clcg_pipeline.report._svg import FONT_SIZE, WIDTH

NO_DATA_FILL = "#f0f0f0"
_SLANT = 35  # degrees of slanted column labels
# Sequential (0 -> white, max -> dark blue) and diverging (negative blue, positive red) ramps.
_SEQ_LOW, _SEQ_HIGH = (255, 255, 255), (8, 69, 148)
_DIV_NEG, _DIV_POS = (33, 102, 172), (178, 24, 43)


@dataclass(frozen=True)
class Cell:
    """One cell: its value (None = no data), the text written in it, and an optional tooltip."""

    value: float | None
    text: str
    tip: str = ""
    sub: str = ""  # a second, smaller line (e.g. a share under a count)


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> tuple[int, int, int]:
    t = min(max(t, 0.0), 1.0)
    return (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t), round(a[2] + (b[2] - a[2]) * t))


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _fill(value: float, scale: float, diverging: bool) -> tuple[str, bool]:
    """The cell colour and whether its text must be white (dark background)."""
    t = 0.0 if scale <= 0 else (abs(value) if diverging else value) / scale
    # A square root spreads small values apart, so a 5% cell is visibly different from 0%.
    t = math.sqrt(min(max(t, 0.0), 1.0))
    end = (_DIV_POS if value >= 0 else _DIV_NEG) if diverging else _SEQ_HIGH
    rgb = _mix(_SEQ_LOW, end, t)
    luminance = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return _hex(rgb), luminance < 140


def _wrap(text: str, width_units: float, max_lines: int = 3) -> list[str]:
    """Words of ``text`` wrapped to ``width_units``; an overlong line is cut with an ellipsis."""
    per_line = max(int(width_units / (FONT_SIZE * 0.56)), 3)
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= per_line:
            lines[-1] += " " + word
        else:
            lines.append(word)
    lines = [line if len(line) <= per_line else line[: per_line - 1] + "\u2026" for line in lines]
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], lines[max_lines - 1][: per_line - 1] + "\u2026"]
    return lines or [""]


def heatmap_svg(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], Cell],
    *,
    title: str,
    desc: str,
    row_title: str = "",
    column_title: str = "",
    diverging: bool = False,
    scale: float | None = None,
    row_scales: Mapping[str, float] | None = None,
    chart_id: str = "",
    label: Callable[[str], str] = str,
) -> str:
    """A rows x columns grid; ``cells`` maps (row, column) to a :class:`Cell` (absent = no data).

    ``scale`` is the value drawn at full colour (default: the largest absolute value), so
    several maps can share one scale and be compared; ``row_scales`` gives a row its own (rows
    on different metrics, e.g. accuracy and BLEU, cannot share one). Returns ``""`` without rows
    or columns.
    """
    if not rows or not columns:
        return ""
    values = [c.value for c in cells.values() if c.value is not None and math.isfinite(c.value)]
    if scale is None:
        scale = max((abs(v) for v in values), default=1.0) or 1.0
    longest = max(len(label(r)) for r in rows)
    label_w = min(max(110, int(longest * FONT_SIZE * 0.56) + 18), 300)
    right = 12
    grid_w = WIDTH - label_w - right
    col_w = grid_w / len(columns)
    char_w = FONT_SIZE * 0.56
    # A word wider than its column cannot wrap: then every column label is drawn slanted.
    slanted = any(len(w) * char_w > col_w - 6 for c in columns for w in label(c).split())
    head_lines = [_wrap(label(c), col_w - 6) for c in columns]
    if slanted:
        longest_column = max(len(label(c)) for c in columns) * char_w
        head_h = int(longest_column * math.sin(math.radians(_SLANT))) + 26 + (20 if column_title else 0)
    else:
        head_h = 22 + 18 * max(len(lines) for lines in head_lines) + (20 if column_title else 0)
    row_h = 44
    legend_h = 58
    top = head_h
    height = top + row_h * len(rows) + legend_h
    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    title_id = f"{chart_id or 'heatmap'}-title"
    desc_id = f"{chart_id or 'heatmap'}-desc"
    drawn = sum(1 for r in rows for c in columns if (r, c) in cells)
    any_missing = any(
        (cell := cells.get((r, c))) is None or cell.value is None or not math.isfinite(cell.value)
        for r in rows
        for c in columns
    )
    out = [
        f'<svg{ident} class="chart heatmap" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'preserveAspectRatio="xMinYMin meet" font-size="{FONT_SIZE}" '
        f'aria-labelledby="{escape(title_id)} {escape(desc_id)}" data-cells="{drawn}" '
        f'data-rows="{len(rows)}" data-columns="{len(columns)}">',
        f'<title id="{escape(title_id)}">{escape(title)}</title>',
        f'<desc id="{escape(desc_id)}">{escape(desc)}</desc>',
    ]
    if column_title:
        out.append(f'<text x="{label_w + grid_w / 2:.1f}" y="16" class="axis">{escape(column_title)}</text>')
    out += _column_heads(head_lines, [label(c) for c in columns], label_w, col_w, head_h, slanted)
    if row_title:
        ry = 16 if slanted else head_h - 10  # slanted column labels reach down-left over that corner
        out.append(f'<text x="4" y="{ry}" class="row-title">{escape(row_title)}</text>')
    for i, row in enumerate(rows):
        y = top + i * row_h
        row_text = label(row)
        if len(row_text) * FONT_SIZE * 0.56 > label_w - 14:
            row_text = row_text[: max(int((label_w - 14) / (FONT_SIZE * 0.56)) - 1, 3)] + "\u2026"
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h / 2 + 5:.1f}" class="label">{escape(row_text)}</text>'
        )
        for j, column in enumerate(columns):
            x = label_w + j * col_w
            cell = cells.get((row, column))
            scale_here = (row_scales or {}).get(row) or scale
            out.append(_cell(row, column, cell, label, x, y, col_w, row_h, scale_here, diverging))
    out += _colour_key(top + row_h * len(rows) + 18, label_w, scale, diverging, bool(row_scales), any_missing)
    out.append("</svg>")
    return "".join(out)


def _column_heads(
    head_lines: list[list[str]],
    column_labels: list[str],
    label_w: int,
    col_w: float,
    head_h: int,
    slanted: bool,
) -> list[str]:
    """The column labels: wrapped over lines, or slanted when a word is wider than its column."""
    out: list[str] = []
    for j, lines in enumerate(head_lines):
        cx = label_w + (j + 0.5) * col_w
        if slanted:
            # Anchored at its end just above its column, reading down to it from the upper left.
            ty = head_h - 8
            out.append(
                f'<text x="{cx:.1f}" y="{ty}" transform="rotate({_SLANT} {cx:.1f} {ty})" '
                f'class="column-label slanted">{escape(column_labels[j])}</text>'
            )
            continue
        first = head_h - 10 - 18 * (len(lines) - 1)
        tspans = "".join(
            f'<tspan x="{cx:.1f}" y="{first + 18 * k:.1f}">{escape(line)}</tspan>'
            for k, line in enumerate(lines)
        )
        out.append(f'<text class="column-label">{tspans}</text>')
    return out


def _cell(
    row: str,
    column: str,
    cell: Cell | None,
    label: Callable[[str], str],
    x: float,
    y: int,
    col_w: float,
    row_h: int,
    scale: float,
    diverging: bool,
) -> str:
    """One cell: its colour (``scale`` = the value at full colour), value, second line and tooltip."""
    if cell is None or cell.value is None or not math.isfinite(cell.value):
        text = cell.text if cell is not None else "no data"
        fill, dark = NO_DATA_FILL, False
        value_attr = ""
        klass = "cell empty" if cell is not None else "nodata"
    else:
        text = cell.text
        fill, dark = _fill(cell.value, scale, diverging)
        value_attr = f' data-value="{cell.value:.6g}"'
        klass = "cell"
    tip = cell.tip if cell is not None and cell.tip else f"{label(row)} \u2192 {label(column)}: {text}"
    sub = cell.sub if cell is not None else ""
    # Zero cells are written in grey, so the few non-zero cells of a sparse matrix stand out.
    on_dark = " on-dark" if dark else " nil" if cell is not None and cell.value == 0 else ""
    text_y = y + row_h / 2 + (0 if sub else 5)
    second = (
        f'<text x="{x + col_w / 2:.1f}" y="{y + row_h / 2 + 15:.1f}" font-size="12" '
        f'class="cell-value cell-sub{on_dark}">{escape(sub)}</text>'
        if sub
        else ""
    )
    return (
        f"<g><title>{escape(tip)}</title>"
        f'<rect x="{x + 1:.1f}" y="{y + 1}" width="{col_w - 2:.1f}" height="{row_h - 2}" '
        f'fill="{fill}" class="{klass}" data-row="{escape(row)}" data-column="{escape(column)}"'
        f"{value_attr}/>"
        f'<text x="{x + col_w / 2:.1f}" y="{text_y:.1f}" '
        f'class="cell-value{on_dark}">{escape(text)}</text>{second}</g>'
    )


def _colour_key(
    ly: int, key_x: int, scale: float, diverging: bool, row_scales: bool, any_missing: bool
) -> list[str]:
    """The colour key: the ends of the scale, written out, and the no-data swatch when one is drawn."""
    out: list[str] = []
    steps = 9
    key_w = 30
    lows = (
        [-scale + 2 * scale * k / (steps - 1) for k in range(steps)]
        if diverging
        else [scale * k / (steps - 1) for k in range(steps)]
    )
    for k, v in enumerate(lows):
        fill, _ = _fill(v, scale, diverging)
        out.append(
            f'<rect x="{key_x + k * key_w}" y="{ly}" width="{key_w}" height="14" fill="{fill}" '
            'class="swatch"/>'
        )
    if row_scales:
        low_text, high_text = ("− row max", "+ row max") if diverging else ("0", "row max")
    else:
        low_text, high_text = _num(lows[0]), _num(lows[-1])
    out.append(
        f'<text x="{key_x}" y="{ly + 34}" class="legend">{escape(low_text)}</text>'
        f'<text x="{key_x + steps * key_w}" y="{ly + 34}" class="legend" text-anchor="end">'
        f"{escape(high_text)}</text>"
    )
    if any_missing:
        out.append(
            f'<rect x="{key_x + steps * key_w + 30}" y="{ly}" width="30" height="14" fill="{NO_DATA_FILL}" '
            'class="swatch"/>'
            f'<text x="{key_x + steps * key_w + 66}" y="{ly + 12}" class="legend">no data</text>'
        )
    return out


def _num(value: float) -> str:
    text = f"{value:.3g}"
    return "0" if text in ("-0", "0.0", "-0.0") else text
