"""The report section of the granularity- and position-aware tasks (STUDY.md section 8, issue 11).

Shown: a position x granularity heat map of the cross-lingual gap per language group (Joshi
class groups), the position curve (score and gap by region and paragraph position, per
language group, with intervals), the no-context ablation, cloze error labels, the paragraph
judges' agreement and spread, prompt tokens by task, and the score and gap tables.
Metrics differ across granularities, so each heat-map row has its own colour scale.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from markupsafe import Markup

from clcg_pipeline.report._format import MISSING, as_float, fmt_int, fmt_num, fmt_p
from clcg_pipeline.report._heatmap import Cell, heatmap_svg
from clcg_pipeline.report._linechart import Point, Series, line_chart_svg
from clcg_pipeline.report._page import Part, Row, Section
from clcg_pipeline.report._studies import (
    FOLD_ROWS,
    MAX_TABLE_ROWS,
    caveat_parts,
    ci_cell,
    clean,
    col,
    empty_note,
    facts_part,
    normal_status,
    record_table,
    records,
    row_flags,
    status_part,
    withheld_everywhere,
    words,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg

Walk = Callable[[object, list[str], list[Part], str, str], None]
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
KNOWN_KEYS = {
    "status",
    "reason",
    "documents",
    "scores",
    "gaps",
    "position_curve",
    "middle_vs_edges",
    "heatmap",
    "no_context",
    "cloze_errors",
    "judge_agreement",
    "human_judge_correlation",
    "human_judge_correlation_reason",
    "prompt_tokens_by_task",
    "unpaired",
    "settings",
    "caveats",
}
_METRICS = {
    "accuracy": "accuracy",
    "rouge_l": "ROUGE-L",
    "bleu": "BLEU",
    "chrf": "chrF",
    "judge_total": "judge total",
}


def _chart(svg: str) -> list[Part]:
    return [Part("chart", chart=Markup(svg))] if svg else []  # built by the SVG modules, which escape


def _rank(value: object, order: tuple[str, ...]) -> tuple[int, str]:
    text = str(value)
    return (order.index(text) if text in order else len(order), text)


def _group_label(group: object) -> str:
    text = str(group)
    names = {
        "high": "high-resource (Joshi 4\u20135)",
        "mid": "mid-resource (Joshi 2\u20133)",
        "low": "low-resource (Joshi 0\u20131)",
        "targets": "all target languages",
        "reference": "reference (English)",
    }
    return names.get(text, text)


def _row_key(record: Mapping[str, Any]) -> str:
    metric = record.get("metric")
    granularity = str(record.get("granularity") or MISSING)
    return f"{granularity} \u00b7 {_METRICS.get(str(metric), str(metric))}" if metric else granularity


def granularity_section(raw: Mapping[str, Any] | None, walk: Walk) -> Section:
    section = Section(
        key="granularity",
        title="Granularity and position: where in a long document the gap opens",
        caption="Long documents with tasks at four granularities (word QA, sentence cloze, paragraph "
        "filling, document summary and translation), stratified by where the evidence sits. Gap = English "
        "minus the language on the same task; language groups pool languages by Joshi resource class.",
    )
    block = clean(raw) if isinstance(raw, Mapping) else None
    extra = ""
    if normal_status(block) == "ok" and withheld_everywhere(
        block or {}, ("scores", "gaps", "position_curve", "no_context"), ("estimate", "gap", "drop")
    ):
        extra = "Every interval is withheld (too few documents to identify them): see the caveats."
    section.parts.append(
        status_part(
            block, key="granularity", what="the granularity task family", extra=extra, warn=bool(extra)
        )
    )
    if block is None:
        return section
    status = normal_status(block)
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
    section.parts += _heatmaps(block, status)
    section.parts += _curves(block, status)
    section.parts += _middle(block, status)
    section.parts += _no_context(block, status)
    section.parts += _cloze(block, status)
    section.parts += _judges(block, status)
    section.parts += _tokens(block, status)
    section.parts += _tables(block, status)
    section.parts += caveat_parts(block)
    settings = block.get("settings")
    if isinstance(settings, Mapping) and settings:
        section.parts.append(Part("heading", text="Settings of this analysis"))
        facts = facts_part([(words(k), v) for k, v in settings.items() if not isinstance(v, Mapping)])
        if facts:
            section.parts.append(facts)
    rest = {k: v for k, v in block.items() if k not in KNOWN_KEYS}
    if rest:
        section.parts.append(Part("heading", text="Further results"))
        walk(rest, [], section.parts, "granularity", "granularity")
    return section


def heatmap_grid(
    rows: list[Mapping[str, Any]],
) -> tuple[list[str], list[str], list[str], dict[str, dict[tuple[str, str], Cell]], dict[str, float]]:
    """(groups, row keys, regions, cells per group, colour scale per row) of the gap heat maps."""
    usable = [
        r for r in rows if str(r.get("region")) not in NO_POSITION and r.get("language_group") is not None
    ]
    groups = sorted({str(r["language_group"]) for r in usable}, key=lambda g: _rank(g, GROUP_ORDER))
    keyed = sorted(
        {(_rank(r.get("granularity"), GRANULARITIES), _row_key(r)) for r in usable},
        key=lambda t: (t[0], t[1]),
    )
    row_keys = list(dict.fromkeys(k for _, k in keyed))
    regions = sorted({str(r.get("region")) for r in usable}, key=lambda g: _rank(g, POSITIONS))
    cells: dict[str, dict[tuple[str, str], Cell]] = {g: {} for g in groups}
    scales: dict[str, float] = {}
    for r in usable:
        gap = as_float(r.get("gap"))
        key, region, group = _row_key(r), str(r.get("region")), str(r["language_group"])
        interval = ci_cell(r, "gap")
        cells[group][(key, region)] = Cell(
            value=gap,
            text=fmt_num(gap) if gap is not None else "no gap",
            sub=interval if gap is not None else "",
            tip=f"{_group_label(group)}, {key}, {region} of the document: gap {fmt_num(gap)} {interval}"
            + (f" (n = {fmt_int(r.get('n'))})" if r.get("n") is not None else ""),
        )
        if gap is not None:
            scales[key] = max(scales.get(key, 0.0), abs(gap))
    return groups, row_keys, regions, cells, scales


def _heatmaps(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "heatmap")
    parts = [Part("heading", text="Cross-lingual gap by granularity and document region, per language group")]
    groups, row_keys, regions, cells, scales = heatmap_grid(rows)
    if not groups:
        return parts + empty_note(status, "heat-map cells") if status == "ok" else []
    parts.append(
        Part(
            "note",
            text="Each cell: the gap (English minus the language group) and its interval. Red = English "
            "ahead, blue = the language ahead; each row (a granularity and its metric) has its own colour "
            "scale, shared by every language group, because the metrics differ.",
        )
    )
    for group in groups:
        parts.append(Part("chart-title", text=_group_label(group)))
        parts += _chart(
            heatmap_svg(
                row_keys,
                regions,
                cells[group],
                title=f"Cross-lingual gap by granularity x region: {_group_label(group)}",
                desc=f"Heat map with {len(row_keys)} rows (granularity and metric) and {len(regions)} "
                f"columns (region of the document where the evidence sits); each cell holds the gap "
                f"English minus {_group_label(group)}, red where English scores higher.",
                row_title="granularity \u00b7 metric",
                column_title="region of the document \u2192",
                diverging=True,
                row_scales=scales,
                chart_id=f"heatmap-granularity-{group}",
            )
        )
    return parts


def _curves(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = [r for r in records(block, "position_curve") if str(r.get("region")) not in NO_POSITION]
    parts = [Part("heading", text="Position curve: score and gap from the beginning to the end")]
    if not rows:
        return parts + empty_note(status, "position-curve points") if status == "ok" else []
    panels = sorted({(_rank(r.get("granularity"), GRANULARITIES), _row_key(r)) for r in rows})
    keys = list(dict.fromkeys(k for _, k in panels))
    for key in keys[:MAX_CURVES]:
        mine = [r for r in rows if _row_key(r) == key]
        places = sorted(
            {(str(r.get("region")), str(r.get("position"))) for r in mine},
            key=lambda p: (_rank(p[0], POSITIONS), _rank(p[1], POSITIONS)),
        )
        with_position = any(p[1] not in NO_POSITION and p[1] != "None" for p in places)
        all_groups = sorted({str(r.get("language_group")) for r in mine}, key=lambda g: _rank(g, GROUP_ORDER))
        groups = [g for g in all_groups if g != "reference"]
        scores = []
        for group in all_groups:
            by_place = {
                (str(r.get("region")), str(r.get("position"))): r
                for r in mine
                if str(r.get("language_group")) == group
            }
            points = [Point(as_float(by_place.get(place, {}).get("score"))) for place in places]
            scores.append(
                Series(_group_label(group), tuple(points), intervals=False, colour=GROUP_COLOURS.get(group))
            )
        axis = [p[1] if with_position else p[0] for p in places]
        slug = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")
        parts.append(Part("chart-title", text=f"{key}: score by position (descriptive, no intervals)"))
        parts += _chart(
            line_chart_svg(
                axis,
                scores,
                title=f"Score by region and paragraph position per language group ({key})",
                y_label=f"score ({key})",
                chart_id=f"score-curve-{slug}",
                groups=[p[0] for p in places] if with_position else None,
                zero_line=False,
            )
        )
        series = []
        for group in groups:
            by_place = {
                (str(r.get("region")), str(r.get("position"))): r
                for r in mine
                if str(r.get("language_group")) == group
            }
            points = []
            for place in places:
                r = by_place.get(place, {})
                points.append(
                    Point(as_float(r.get("gap")), as_float(r.get("ci_low")), as_float(r.get("ci_high")))
                )
            series.append(Series(_group_label(group), tuple(points), colour=GROUP_COLOURS.get(group)))
        parts.append(Part("chart-title", text=f"{key}: cross-lingual gap by position, with intervals"))
        parts += _chart(
            line_chart_svg(
                axis,
                series,
                title=f"Position curve ({key}): cross-lingual gap by region and paragraph position, per "
                "language group",
                y_label=f"gap: English minus language group ({key})",
                chart_id=f"curve-{slug}",
                groups=[p[0] for p in places] if with_position else None,
            )
        )
    parts.append(
        Part(
            "note",
            text="Lines: the gap per language group, with interval whiskers; hollow points have "
            "their interval withheld. Along the axis: the paragraph position inside each document "
            "region (in bold).",
        )
    )
    if len(keys) > MAX_CURVES:
        parts.append(Part("note", text=f"{len(keys) - MAX_CURVES} more curves are in the table below."))
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
            _row_key(r),
            _rank(r.get("language_group"), GROUP_ORDER),
            _rank(r.get("region"), POSITIONS),
            _rank(r.get("position"), POSITIONS),
        ),
    )
    parts += record_table(
        ordered,
        [
            ("granularity \u00b7 metric", _row_key, False),
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
    return parts


def _contrast_cells(block: object) -> tuple[str, str, list[str]]:
    if not isinstance(block, Mapping):
        return MISSING, MISSING, []
    return fmt_num(block.get("estimate")), ci_cell(block), row_flags(block)


def _middle(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "middle_vs_edges")
    if not rows:
        return []
    parts = [Part("heading", text="Does the middle lose most? Middle minus the mean of begin and end")]
    body = []
    for r in rows:
        s_est, s_ci, s_flags = _contrast_cells(r.get("score_contrast"))
        g_est, g_ci, g_flags = _contrast_cells(r.get("gap_contrast"))
        body.append(
            Row(
                cells=[
                    _row_key(r),
                    words(r.get("axis")),
                    _group_label(r.get("language_group")),
                    s_est,
                    s_ci,
                    g_est,
                    g_ci,
                    "",
                ],
                flags=[f"score: {f}" for f in s_flags] + [f"gap: {f}" for f in g_flags],
            )
        )
    parts.append(
        Part(
            "table",
            columns=[
                "granularity \u00b7 metric",
                "along",
                "language group",
                "score contrast",
                "interval",
                "gap contrast",
                "gap interval",
                "flags and notes",
            ],
            rows=body[:MAX_TABLE_ROWS],
            numeric=["score contrast", "interval", "gap contrast", "gap interval"],
            summary=f"Table: {len(body)} rows \u2014 click to show" if len(body) > FOLD_ROWS else "",
        )
    )
    parts.append(
        Part(
            "note",
            text="A negative score contrast: the middle scores lowest. A positive gap contrast: the "
            "cross-lingual gap is largest in the middle.",
        )
    )
    return parts


def _no_context(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "no_context")
    parts = [Part("heading", text="No-context ablation (the same tasks without the document)")]
    if not rows:
        return parts + empty_note(status, "no-context results") if status == "ok" else []
    parts += record_table(
        rows,
        [
            col("task", "task", "words"),
            col("metric", "metric"),
            col("language", "language"),
            col("model", "model"),
            col("with context", "with_context", "num"),
            col("without context", "without_context", "num"),
            col("drop", "drop", "num"),
            ("interval", lambda r: ci_cell(r, "drop"), True),
        ],
        value_key="drop",
        section_status=status,
        known={
            "task",
            "metric",
            "language",
            "model",
            "with_context",
            "without_context",
            "drop",
            "ci_low",
            "ci_high",
            "n",
            "n_documents",
        },
    )
    return parts


def _cloze(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "cloze_errors")
    parts = [Part("heading", text="Cloze errors by judge label (M1\u2013M3, tags S1\u2013S8)")]
    if not rows:
        return parts + empty_note(status, "labelled cloze errors") if status == "ok" else []
    bars = [
        Bar(
            label=f"{r.get('judge')} \u00b7 {r.get('label')}" + (" (tag)" if r.get("kind") == "tag" else ""),
            value=value,
            colour="#31688e" if r.get("kind") != "tag" else "#9ecae1",
        )
        for r in rows
        if (value := as_float(r.get("share"))) is not None
    ]
    parts += _chart(
        bar_chart_svg(
            bars,
            title="Share of labelled cloze errors per judge and label (tags: light)",
            x_label="share of the judge's labelled cloze errors",
            legend=False,
            chart_id="chart-granularity-cloze",
        )
    )
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("kind", "kind"),
            col("label", "label"),
            col("n", "n", "int"),
            col("share", "share", "pct"),
        ],
        value_key="share",
        section_status=status,
        known={"judge", "kind", "label", "n", "share"},
    )
    return parts


def _judges(block: Mapping[str, Any], status: str) -> list[Part]:
    agreement = block.get("judge_agreement")
    parts = [Part("heading", text="Paragraph-filling judges: agreement and spread")]
    if isinstance(agreement, Mapping) and agreement:
        icc = agreement.get("icc")
        facts = facts_part(
            [
                (
                    "Krippendorff's alpha (ordinal, 0\u2013100 totals)",
                    fmt_num(agreement.get("alpha_ordinal")),
                ),
                (
                    "ICC",
                    fmt_num(icc)
                    if as_float(icc) is not None
                    else "not computed"
                    + (f": {agreement['icc_reason']}" if agreement.get("icc_reason") else ""),
                ),
                ("answers rated by two or more judges", fmt_int(agreement.get("n"))),
                ("judges", agreement.get("judges")),
                ("mean spread (max \u2212 min judge total)", fmt_num(agreement.get("spread_mean"), 2)),
                ("spread rule", agreement.get("spread_rule")),
            ]
        )
        if facts:
            parts.append(facts)
        by_dim = agreement.get("alpha_ordinal_by_dimension")
        if isinstance(by_dim, Mapping) and by_dim:
            parts.append(
                Part(
                    "table",
                    columns=["dimension", "alpha (ordinal)"],
                    rows=[Row(cells=[words(k), fmt_num(v)]) for k, v in by_dim.items()],
                    numeric=["alpha (ordinal)"],
                )
            )
    elif status == "ok":
        parts.append(
            Part("note", text="No paragraph-filling judgements with a total: agreement not computed.")
        )
    else:
        parts = []
    correlation = block.get("human_judge_correlation")
    reason = block.get("human_judge_correlation_reason")
    if isinstance(correlation, Mapping) and correlation:
        parts.append(Part("heading", text="Human vs judge (paragraph filling)"))
        facts = facts_part(
            [
                ("Pearson r", fmt_num(correlation.get("pearson_r"))),
                ("Pearson p", fmt_p(correlation.get("pearson_p"))),
                ("Spearman rho", fmt_num(correlation.get("spearman_rho"))),
                ("Spearman p", fmt_p(correlation.get("spearman_p"))),
                ("answers", fmt_int(correlation.get("n"))),
            ]
        )
        if facts:
            parts.append(facts)
        if correlation.get("simulated"):
            parts.append(
                Part("note", text="SIMULATED ratings (the demo's simulated annotator): no human rated these.")
            )
    elif reason or status == "ok":
        parts.append(
            Part(
                "note",
                text="Human vs judge correlation: not available" + (f" ({reason})." if reason else "."),
            )
        )
    return parts


def _tokens(block: Mapping[str, Any], status: str) -> list[Part]:
    raw = block.get("prompt_tokens_by_task")
    if isinstance(raw, Mapping):
        rows: list[Mapping[str, Any]] = [
            {"task": k, **v} if isinstance(v, Mapping) else {"task": k, "prompt_tokens_total": v}
            for k, v in raw.items()
        ]
    else:
        rows = records(block, "prompt_tokens_by_task")
    parts = [Part("heading", text="Prompt tokens by task (long prompts dominate the cost)")]
    if not rows:
        return parts + empty_note(status, "prompt-token counts") if status == "ok" else []
    bars = [
        Bar(label=words(r.get("task")), value=value, colour="#636363")
        for r in rows
        if (value := as_float(r.get("prompt_tokens_total"))) is not None
    ]
    parts += _chart(
        bar_chart_svg(
            bars,
            title="Prompt tokens per task (all calls)",
            x_label="prompt (input) tokens, all calls",
            legend=False,
            value_format=lambda v: f"{v:,.0f}",
            chart_id="chart-granularity-tokens",
        )
    )
    parts += record_table(
        rows,
        [
            col("task", "task", "words"),
            col("calls", "calls", "int"),
            col("prompt tokens", "prompt_tokens_total", "int"),
            col("mean per call", "prompt_tokens_mean", "int"),
            col("max per call", "prompt_tokens_max", "int"),
            col("output tokens", "output_tokens_total", "int"),
            ("cost (USD)", lambda r: fmt_num(r.get("cost_usd"), 4), True),
        ],
        value_key="prompt_tokens_total",
        known={
            "task",
            "calls",
            "prompt_tokens_total",
            "prompt_tokens_mean",
            "prompt_tokens_max",
            "output_tokens_total",
            "cost_usd",
        },
    )
    return parts


def _tables(block: Mapping[str, Any], status: str) -> list[Part]:
    parts: list[Part] = []
    gaps = records(block, "gaps")
    if gaps:
        parts.append(Part("heading", text="Cross-lingual gaps (English minus language)"))
        parts += record_table(
            gaps,
            [
                ("granularity \u00b7 metric", _row_key, False),
                col("region", "region"),
                col("position", "position"),
                col("language", "language"),
                col("Joshi class", "joshi_class"),
                col("model", "model"),
                col("gap", "gap", "num"),
                ("interval", lambda r: ci_cell(r, "gap"), True),
                col("n", "n", "int"),
            ],
            value_key="gap",
            section_status=status,
            known={
                "granularity",
                "metric",
                "region",
                "position",
                "language",
                "joshi_class",
                "model",
                "gap",
                "ci_low",
                "ci_high",
                "n",
                "n_documents",
                "estimate",
                "tasks",
            },
        )
    scores = records(block, "scores")
    if scores:
        parts.append(
            Part("heading", text="Scores by task, granularity, region, position, language and model")
        )
        parts += record_table(
            scores,
            [
                col("task", "task", "words"),
                ("granularity \u00b7 metric", _row_key, False),
                col("region", "region"),
                col("position", "position"),
                col("language", "language"),
                col("model", "model"),
                col("score", "estimate", "num"),
                ("interval", ci_cell, True),
                col("n", "n", "int"),
                col("documents", "n_documents", "int"),
            ],
            section_status=status,
            known={
                "task",
                "granularity",
                "metric",
                "region",
                "position",
                "language",
                "model",
                "estimate",
                "ci_low",
                "ci_high",
                "n",
                "n_documents",
            },
        )
    elif status == "ok":
        parts += empty_note(status, "scores")
    unpaired = records(block, "unpaired")
    if unpaired:
        parts.append(Part("heading", text="Rows without an English counterpart (in scores, not in gaps)"))
        parts += record_table(
            unpaired,
            [col("task", "task", "words"), col("language", "language"), col("rows", "rows", "int")],
            known={"task", "language", "rows"},
        )
    return parts


__all__ = ["granularity_section", "heatmap_grid"]
