"""The report section of the granularity- and position-aware tasks (docs/GRANULARITY.md).

Shown: a position x granularity heat map of the cross-lingual gap per language group (Joshi
class groups), the position curve (score and gap by region and paragraph position, per
language group, with intervals), the no-context ablation, cloze error labels, the paragraph
judges' agreement and spread, prompt tokens by task, the score and gap tables, and the extra
dimensions (length buckets, model ranks and gap trends, sentence position, key-sentence roles:
``_granularity_dimensions``).
Metrics differ across granularities, so each heat-map row has its own colour scale.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import as_float, fmt_int, fmt_num
from clcg_pipeline.report._granularity_dimensions import dimension_parts
from clcg_pipeline.report._granularity_tables import (
    cloze_parts,
    judges_parts,
    middle_parts,
    no_context_parts,
    score_tables,
    tokens_parts,
)
from clcg_pipeline.report._heatmap import Cell, heatmap_svg
from clcg_pipeline.report._labels import granularity_group_label, granularity_row_key, row_key_of
from clcg_pipeline.report._linechart import Point, Series, line_chart_svg
from clcg_pipeline.report._page import Part, Section
from clcg_pipeline.report._studies import (
    CI_WITHHELD,
    WITHHELD_MARK,
    Walk,
    caveat_parts,
    chart,
    ci_cell,
    clean,
    col,
    facts_part,
    further_results,
    normal_status,
    opening,
    record_table,
    records,
    status_part,
    withheld_everywhere,
    words,
)
from clcg_pipeline.storage import (
    CurvePointView,
    GranularityResults,
    GranularityView,
    HeatmapCellView,
    document_keys,
)

GRANULARITIES = ("word", "sentence", "paragraph", "document")
POSITIONS = ("begin", "middle", "end")
GROUP_ORDER = ("high", "mid", "low", "targets")
# Dark = low-resource, as the Joshi-class palette of the other charts; grey = English.
GROUP_COLOURS = {
    "high": "#3182bd",
    "mid": "#c51b8a",
    "low": "#7a0177",
    "targets": "#e6550d",
    "reference": "#636363",
}
NO_POSITION = ("-", "", "none", "None", "all")  # document-level rows and pools have no place in a document
MAX_CURVES = 8
GRANULARITY_KEYS = document_keys(GranularityResults)


def _rank(value: object, order: tuple[str, ...]) -> tuple[int, str]:
    text = str(value)
    return (order.index(text) if text in order else len(order), text)


def granularity_section(
    raw: GranularityResults | None, walk: Walk, view: GranularityView | None = None
) -> Section:
    """The section from ``view`` (the typed ``granularity``; the report builds it once for the whole
    document, a direct caller's ``raw`` is read into it here) and, for its record tables, ``raw``."""
    section = Section(
        key="granularity",
        title="Granularity and position: where in a long document the gap opens",
        caption="Long documents with tasks at four granularities (word QA, sentence cloze, paragraph "
        "filling, document summary and translation), stratified by where the evidence sits. Gap = English "
        "minus the language on the same task; language groups pool languages by Joshi resource class.",
    )
    if view is None:  # a direct call: clean the entry and read it into its view here
        block = clean(raw) if isinstance(raw, Mapping) else None
        view = GranularityView.model_validate(block) if block is not None else None
    else:
        block = raw  # cleaned by the report, once for the view and the tables
    extra = ""
    if normal_status(view) == "ok" and withheld_everywhere(
        block or {}, ("scores", "gaps", "position_curve", "no_context"), ("estimate", "gap", "drop")
    ):
        # Why is the document's to say (its caveats and each row's reason, from the rule's owner):
        # the report does not restate the rule.
        extra = "Every interval is withheld: see the caveats for why."
    section.parts.append(
        status_part(
            view, key="granularity", what="the granularity task family", extra=extra, warn=bool(extra)
        )
    )
    if block is None or view is None:
        return section
    status = normal_status(view)
    documents = records(block, "documents")
    if documents:
        section.parts.append(Part("heading", text="Documents"))
        section.parts += record_table(
            documents,
            [
                col("length bucket", "bucket"),
                col("documents", "n_documents", "int"),
                col("languages", "languages"),
            ],
            known={"bucket", "n_documents", "languages"},
        )
    section.parts += _heatmaps(block, view, status)
    section.parts += _curves(block, view, status)
    section.parts += middle_parts(block, status)
    section.parts += no_context_parts(block, status)
    section.parts += cloze_parts(block, status)
    section.parts += judges_parts(view, status)
    section.parts += tokens_parts(block, status)
    section.parts += score_tables(block, status)
    if status == "ok":
        section.parts += dimension_parts(block)
    section.parts += _left_out_parts(block)
    section.parts += caveat_parts(view)
    settings = view.settings
    if settings:
        section.parts.append(Part("heading", text="Settings of this analysis"))
        facts = facts_part([(words(k), v) for k, v in settings.items() if not isinstance(v, Mapping)])
        if facts:
            section.parts.append(facts)
    section.parts += further_results(block, (*GRANULARITY_KEYS, *LEFT_OUT_KEYS), "granularity", walk)
    return section


#: Results keys of what the estimates leave out (issue 20), shown by :func:`_left_out_parts`.
LEFT_OUT_KEYS = ("no_reference", "alignment")


def _left_out_parts(block: GranularityResults) -> list[Part]:
    """Rows left out of the means (no reference in their language) and paragraphs left out of
    every language version so the versions stay aligned."""
    parts: list[Part] = []
    no_reference = records(block, "no_reference")
    if no_reference:
        parts.append(Part("heading", text="Rows without a reference (left out of the means, not scored 0)"))
        parts += record_table(
            no_reference,
            [
                col("task", "task", "words"),
                col("language", "language"),
                col("model", "model"),
                col("context", "context"),
                col("rows", "n_no_reference", "int"),
                col("documents", "n_documents", "int"),
            ],
            known={"task", "language", "model", "context", "n_no_reference", "n_documents"},
        )
    alignment = records(block, "alignment")
    if alignment:
        parts.append(Part("heading", text="Paragraphs left out to keep the languages aligned"))
        parts.append(Part("text", text=str(alignment[0].get("decision") or "")))
        parts += record_table(
            alignment,
            [
                col("document", "doc_id"),
                col("length bucket", "bucket"),
                col("paragraph", "pid"),
                col("missing in", "missing_in"),
            ],
            known={"doc_id", "bucket", "pid", "missing_in", "decision"},
        )
    return parts


def heatmap_grid(
    typed: list[HeatmapCellView], rows: list[Mapping[str, Any]]
) -> tuple[list[str], list[str], list[str], dict[str, dict[tuple[str, str], Cell]], dict[str, float]]:
    """(groups, row keys, regions, cells per group, colour scale per row) of the gap heat maps.

    ``typed`` are the cells as the view reads them; ``rows`` the same records, for their intervals."""
    usable = [
        (c, r)
        for c, r in zip(typed, rows, strict=True)
        if str(c.region) not in NO_POSITION and c.language_group is not None
    ]
    groups = sorted({str(c.language_group) for c, _ in usable}, key=lambda g: _rank(g, GROUP_ORDER))
    keyed = sorted(
        {(_rank(c.granularity, GRANULARITIES), row_key_of(c.granularity, c.metric)) for c, _ in usable},
        key=lambda t: (t[0], t[1]),
    )
    row_keys = list(dict.fromkeys(k for _, k in keyed))
    regions = sorted({str(c.region) for c, _ in usable}, key=lambda g: _rank(g, POSITIONS))
    cells: dict[str, dict[tuple[str, str], Cell]] = {g: {} for g in groups}
    scales: dict[str, float] = {}
    for c, r in usable:
        gap = as_float(c.gap)
        key, region, group = row_key_of(c.granularity, c.metric), str(c.region), str(c.language_group)
        interval = ci_cell(r, "gap")
        # A withheld interval: a dash under the value (the note above the maps says so once) and the
        # words in the cell's tooltip, its spoken name; "CI withheld" in each of 27 cells buried them.
        withheld = interval == CI_WITHHELD
        cells[group][(key, region)] = Cell(
            value=gap,
            text=fmt_num(gap) if gap is not None else "no gap",
            sub=(WITHHELD_MARK if withheld else interval) if gap is not None else "",
            tip=f"{granularity_group_label(group)}, {key}, {region} of the document: "
            f"gap {fmt_num(gap)}{', interval withheld' if withheld else ' ' + interval}"
            + (f" (n = {fmt_int(c.n)})" if c.n is not None else ""),
        )
        if gap is not None:
            scales[key] = max(scales.get(key, 0.0), abs(gap))
    return groups, row_keys, regions, cells, scales


def _any_withheld(cells: dict[str, dict[tuple[str, str], Cell]]) -> bool:
    return any(cell.sub == WITHHELD_MARK for group in cells.values() for cell in group.values())


def _heatmaps(block: GranularityResults, view: GranularityView, status: str) -> list[Part]:
    groups, row_keys, regions, cells, scales = heatmap_grid(view.heatmap or [], records(block, "heatmap"))
    parts = opening(
        "Cross-lingual gap by granularity and document region, per language group",
        bool(groups),
        status,
        "heat-map cells",
    )
    if not groups:
        return parts
    parts.append(
        Part(
            "note",
            text="Each cell: the gap (English minus the language group) and its interval"
            + (f" (\u201c{WITHHELD_MARK}\u201d: interval withheld)" if _any_withheld(cells) else "")
            + ". Red = English ahead, blue = the language ahead; each row (a granularity and its metric) "
            "has its own colour scale, shared by every language group, because the metrics differ.",
        )
    )
    for group in groups:
        parts.append(Part("chart-title", text=granularity_group_label(group)))
        parts += chart(
            heatmap_svg(
                row_keys,
                regions,
                cells[group],
                title=f"Cross-lingual gap by granularity x region: {granularity_group_label(group)}",
                desc=f"Heat map with {len(row_keys)} rows (granularity and metric) and {len(regions)} "
                f"columns (region of the document where the evidence sits); each cell holds the gap "
                f"English minus {granularity_group_label(group)}, red where English scores higher.",
                row_title="granularity \u00b7 metric",
                column_title="region of the document \u2192",
                diverging=True,
                row_scales=scales,
                chart_id=f"heatmap-granularity-{group}",
            )
        )
    return parts


def _curves(block: GranularityResults, view: GranularityView, status: str) -> list[Part]:
    # The typed points draw the curves; the records beside them fill the table (every field shown).
    placed = [
        (point, record)
        for point, record in zip(view.position_curve or [], records(block, "position_curve"), strict=True)
        if str(point.region) not in NO_POSITION
    ]
    points, rows = [p for p, _ in placed], [r for _, r in placed]
    parts = opening(
        "Position curve: score and gap from the beginning to the end",
        bool(rows),
        status,
        "position-curve points",
    )
    if not rows:
        return parts
    panels = sorted(
        {(_rank(p.granularity, GRANULARITIES), row_key_of(p.granularity, p.metric)) for p in points}
    )
    keys = list(dict.fromkeys(k for _, k in panels))
    for key in keys[:MAX_CURVES]:
        parts += _curve_panel(key, [p for p in points if row_key_of(p.granularity, p.metric) == key])
    # Say whiskers only where some are drawn: with every interval withheld there are none.
    drawn = any(as_float(p.ci_low) is not None and as_float(p.ci_high) is not None for p in points)
    lines = (
        "Lines: the gap per language group, with interval whiskers; hollow points have their interval "
        "withheld."
        if drawn
        else "Lines: the gap per language group; every interval is withheld, so the points are hollow "
        "and carry no whiskers."
    )
    parts.append(
        Part(
            "note",
            text=f"{lines} Along the axis: the paragraph position inside each document region (in bold).",
        )
    )
    if len(keys) > MAX_CURVES:
        parts.append(Part("note", text=f"{len(keys) - MAX_CURVES} more curves are in the table below."))
    parts += _curve_table(rows, status)
    return parts


Place = tuple[str, str]  # (region, paragraph position)


def _by_place(mine: list[CurvePointView], group: str) -> dict[Place, CurvePointView]:
    return {(str(p.region), str(p.position)): p for p in mine if str(p.language_group) == group}


def _curve_panel(key: str, mine: list[CurvePointView]) -> list[Part]:
    """One granularity and metric: the score curve (descriptive) and the gap curve (with intervals)."""
    places = sorted(
        {(str(p.region), str(p.position)) for p in mine},
        key=lambda p: (_rank(p[0], POSITIONS), _rank(p[1], POSITIONS)),
    )
    with_position = any(p[1] not in NO_POSITION and p[1] != "None" for p in places)
    all_groups = sorted({str(p.language_group) for p in mine}, key=lambda g: _rank(g, GROUP_ORDER))
    scores = []
    for group in all_groups:
        by_place = _by_place(mine, group)
        points = [Point(as_float(by_place[place].score) if place in by_place else None) for place in places]
        scores.append(
            Series(
                granularity_group_label(group),
                tuple(points),
                intervals=False,
                colour=GROUP_COLOURS.get(group),
            )
        )
    series = []
    for group in [g for g in all_groups if g != "reference"]:
        by_place = _by_place(mine, group)
        points = []
        for place in places:
            at = by_place.get(place) or CurvePointView()
            points.append(Point(as_float(at.gap), as_float(at.ci_low), as_float(at.ci_high)))
        series.append(Series(granularity_group_label(group), tuple(points), colour=GROUP_COLOURS.get(group)))
    axis = [p[1] if with_position else p[0] for p in places]
    groups = [p[0] for p in places] if with_position else None
    slug = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")
    parts = [Part("chart-title", text=f"{key}: score by position (descriptive, no intervals)")]
    parts += chart(
        line_chart_svg(
            axis,
            scores,
            title=f"Score by region and paragraph position per language group ({key})",
            y_label=f"score ({key})",
            chart_id=f"score-curve-{slug}",
            groups=groups,
            zero_line=False,
        )
    )
    parts.append(Part("chart-title", text=f"{key}: cross-lingual gap by position, with intervals"))
    parts += chart(
        line_chart_svg(
            axis,
            series,
            title=f"Position curve ({key}): cross-lingual gap by region and paragraph position, per "
            "language group",
            y_label=f"gap: English minus language group ({key})",
            chart_id=f"curve-{slug}",
            groups=groups,
        )
    )
    return parts


def _curve_table(rows: list[Mapping[str, Any]], status: str) -> list[Part]:
    """Every curve point as a table row, in panel, group and position order."""
    # The reference (English) has a score and, by definition, no gap: nothing is withheld there.
    rows = [
        {k: v for k, v in r.items() if k not in ("reason", "identifiable")}
        if str(r.get("language_group")) == "reference" and r.get("gap") is None
        else r
        for r in rows
    ]
    ordered = sorted(
        rows,
        key=lambda r: (
            _rank(r.get("granularity"), GRANULARITIES),
            granularity_row_key(r),
            _rank(r.get("language_group"), GROUP_ORDER),
            _rank(r.get("region"), POSITIONS),
            _rank(r.get("position"), POSITIONS),
        ),
    )
    return record_table(
        ordered,
        [
            ("granularity \u00b7 metric", granularity_row_key, False),
            col("language group", "language_group"),
            col("region", "region"),
            col("position", "position"),
            col("score", "score", "num"),
            col("gap", "gap", "num"),
            ("gap interval", lambda r: ci_cell(r, "gap"), True),
            col("n", "n", "int"),
            col("documents", "n_documents", "int"),
        ],
        value_key="gap",
        section_status=status,
        known={
            "granularity",
            "metric",
            "language_group",
            "region",
            "position",
            "score",
            "gap",
            "ci_low",
            "ci_high",
            "n",
            "n_documents",
            "estimate",
        },
    )


__all__ = ["granularity_section", "heatmap_grid"]
