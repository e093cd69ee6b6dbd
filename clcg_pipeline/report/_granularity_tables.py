"""The granularity section's blocks after the charts: middle vs edges, no-context ablation, cloze
errors, the paragraph judges, prompt tokens, and the score and gap tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import MISSING, as_float, fmt_int, fmt_num, fmt_p
from clcg_pipeline.report._labels import granularity_group_label, granularity_row_key
from clcg_pipeline.report._page import Part, Row
from clcg_pipeline.report._studies import (
    FOLD_ROWS,
    MAX_TABLE_ROWS,
    chart,
    ci_cell,
    col,
    empty_note,
    facts_part,
    opening,
    record_table,
    records,
    row_flags,
    words,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.storage import GranularityResults, GranularityView


def _contrast_cells(block: object) -> tuple[str, str, list[str]]:
    if not isinstance(block, Mapping):
        return MISSING, MISSING, []
    return fmt_num(block.get("estimate")), ci_cell(block), row_flags(block)


def middle_parts(block: GranularityResults, status: str) -> list[Part]:
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
                    granularity_row_key(r),
                    words(r.get("axis")),
                    granularity_group_label(r.get("language_group")),
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


def no_context_parts(block: GranularityResults, status: str) -> list[Part]:
    rows = records(block, "no_context")
    parts = opening(
        "No-context ablation (the same tasks without the document)", bool(rows), status, "no-context results"
    )
    if not rows:
        return parts
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


def cloze_parts(block: GranularityResults, status: str) -> list[Part]:
    rows = records(block, "cloze_errors")
    parts = opening(
        "Cloze errors by judge label (M1\u2013M3, tags S1\u2013S8)",
        bool(rows),
        status,
        "labelled cloze errors",
    )
    if not rows:
        return parts
    bars = [
        Bar(
            label=f"{r.get('judge')} \u00b7 {r.get('label')}" + (" (tag)" if r.get("kind") == "tag" else ""),
            value=value,
            colour="#31688e" if r.get("kind") != "tag" else "#9ecae1",
        )
        for r in rows
        if (value := as_float(r.get("share"))) is not None
    ]
    parts += chart(
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


def judges_parts(view: GranularityView, status: str) -> list[Part]:
    """The paragraph-filling judges' agreement and the human-vs-judge correlation, read from the
    typed ``granularity`` (an empty entry, ``{}``, is no result, as an absent one)."""
    agreement = view.judge_agreement
    parts = [Part("heading", text="Paragraph-filling judges: agreement and spread")]
    if agreement is not None and agreement.model_fields_set:
        icc = agreement.icc
        facts = facts_part(
            [
                ("Krippendorff's alpha (ordinal, 0\u2013100 totals)", fmt_num(agreement.alpha_ordinal)),
                (
                    "ICC",
                    fmt_num(icc)
                    if icc is not None
                    else "not computed" + (f": {agreement.icc_reason}" if agreement.icc_reason else ""),
                ),
                ("answers rated by two or more judges", fmt_int(agreement.n)),
                ("judges", agreement.judges),
                ("mean spread (max \u2212 min judge total)", fmt_num(agreement.spread_mean, 2)),
                ("spread rule", agreement.spread_rule),
            ]
        )
        if facts:
            parts.append(facts)
        by_dim = agreement.alpha_ordinal_by_dimension
        if by_dim:
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
    return parts + _correlation_parts(view, status)


def _correlation_parts(view: GranularityView, status: str) -> list[Part]:
    correlation, reason = view.human_judge_correlation, view.human_judge_correlation_reason
    parts: list[Part] = []
    if correlation is not None and correlation.model_fields_set:
        parts.append(Part("heading", text="Human vs judge (paragraph filling)"))
        facts = facts_part(
            [
                ("Pearson r", fmt_num(correlation.pearson_r)),
                ("Pearson p", fmt_p(correlation.pearson_p)),
                ("Spearman rho", fmt_num(correlation.spearman_rho)),
                ("Spearman p", fmt_p(correlation.spearman_p)),
                ("answers", fmt_int(correlation.n)),
            ]
        )
        if facts:
            parts.append(facts)
        if correlation.simulated:
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


def tokens_parts(block: GranularityResults, status: str) -> list[Part]:
    raw = block.get("prompt_tokens_by_task")
    if isinstance(raw, Mapping):
        rows: list[Mapping[str, Any]] = [
            {"task": k, **v} if isinstance(v, Mapping) else {"task": k, "prompt_tokens_total": v}
            for k, v in raw.items()
        ]
    else:
        rows = records(block, "prompt_tokens_by_task")
    parts = opening(
        "Prompt tokens by task (long prompts dominate the cost)", bool(rows), status, "prompt-token counts"
    )
    if not rows:
        return parts
    bars = [
        Bar(label=words(r.get("task")), value=value, colour="#636363")
        for r in rows
        if (value := as_float(r.get("prompt_tokens_total"))) is not None
    ]
    parts += chart(
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


def score_tables(block: GranularityResults, status: str) -> list[Part]:
    """The long tables last: the gaps, the scores, and the rows without an English counterpart."""
    return _gap_table(block, status) + _score_table(block, status) + _unpaired_table(block)


def _gap_table(block: GranularityResults, status: str) -> list[Part]:
    parts: list[Part] = []
    gaps = records(block, "gaps")
    if gaps:
        parts.append(Part("heading", text="Cross-lingual gaps (English minus language)"))
        parts += record_table(
            gaps,
            [
                ("granularity \u00b7 metric", granularity_row_key, False),
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
    return parts


def _score_table(block: GranularityResults, status: str) -> list[Part]:
    parts: list[Part] = []
    scores = records(block, "scores")
    if scores:
        parts.append(
            Part("heading", text="Scores by task, granularity, region, position, language and model")
        )
        parts += record_table(
            scores,
            [
                col("task", "task", "words"),
                ("granularity \u00b7 metric", granularity_row_key, False),
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
    return parts


def _unpaired_table(block: GranularityResults) -> list[Part]:
    parts: list[Part] = []
    unpaired = records(block, "unpaired")
    if unpaired:
        parts.append(Part("heading", text="Rows without an English counterpart (in scores, not in gaps)"))
        parts += record_table(
            unpaired,
            [col("task", "task", "words"), col("language", "language"), col("rows", "rows", "int")],
            known={"task", "language", "rows"},
        )
    return parts
