"""The error taxonomy's checks on its judges: agreement, delta contributions, order bias, self-preference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import MISSING, as_float
from clcg_pipeline.report._page import Part
from clcg_pipeline.report._studies import (
    by_group_parts,
    chart,
    ci_cell,
    col,
    opening,
    record_table,
    records,
    row_flags,
    words,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.storage import ErrorTaxonomyResults


def judges_phrase(block: Mapping[str, Any]) -> str:
    """How to name the judges: LLM judges, or the offline rule-based stand-ins when those ran."""
    judges = [j for j in block.get("judges") or [] if isinstance(j, Mapping)]
    count = {1: "one", 2: "two", 3: "three"}.get(len(judges), str(len(judges))) if judges else "two"
    plural = "" if count == "one" else "s"
    if judges and all(j.get("family") == "rule" for j in judges):
        return f"{count} rule-based stand-in judge{plural} (offline and deterministic, not LLMs)"
    return f"{count} LLM judge{plural}"


def judge_of(record: Mapping[str, Any]) -> str:
    return str(record.get("judge") or MISSING)


def agreement_parts(block: ErrorTaxonomyResults, status: str) -> list[Part]:
    rows = records(block, "agreement")
    parts = opening("Judge agreement (percent and Cohen's kappa)", bool(rows), status, "agreement statistics")
    if not rows:
        return parts
    level_order = {"fine": 0, "collapsed": 1, "binary": 2}
    rows = sorted(rows, key=lambda r: level_order.get(str(r.get("level")), 3))
    parts += record_table(
        rows,
        [
            col("level", "level"),
            (
                "judges",
                lambda r: " vs ".join(str(r[k]) for k in ("judge_a", "judge_b") if r.get(k)) or MISSING,
                False,
            ),
            col("percent", "percent", "pct"),
            (
                "percent interval",
                lambda r: ci_cell(r, "percent", low="percent_ci_low", high="percent_ci_high", pct=True),
                True,
            ),
            col("kappa", "kappa", "num"),
            ("kappa interval", lambda r: ci_cell(r, "kappa"), True),
            col("n", "n", "int"),
            col("articles", "n_articles", "int"),
        ],
        value_key="kappa",
        section_status=status,
        known={
            "level",
            "judge_a",
            "judge_b",
            "percent",
            "percent_ci_low",
            "percent_ci_high",
            "kappa",
            "ci_low",
            "ci_high",
            "n",
            "n_articles",
            "unit",
        },
    )
    parts.append(
        Part(
            "note",
            text="fine = the nine labels; collapsed = the seven-class mapping; binary = semantic error or "
            f"not. Agreement between {judges_phrase(block)} is coding consistency, not validity.",
        )
    )
    return parts


def delta_parts(block: ErrorTaxonomyResults, status: str) -> list[Part]:
    rows = records(block, "delta_contribution")
    parts = opening(
        "Contribution of each target label to the EN \u2212 target score delta",
        bool(rows),
        status,
        "delta contributions",
    )
    if not rows:
        return parts
    totals = records(block, "delta")
    if totals:
        parts += record_table(
            totals,
            [
                col("judge", "judge"),
                col("delta", "estimate", "num"),
                ("interval", ci_cell, True),
                col("pairs", "n", "int"),
                col("articles", "n_articles", "int"),
            ],
            section_status=status,
            known={"judge", "estimate", "ci_low", "ci_high", "n", "n_articles"},
        )
    bars = [
        Bar(
            label=f"{judge_of(r)} \u00b7 {words(r.get('label'))}",
            value=value,
            low=as_float(r.get("ci_low")),
            high=as_float(r.get("ci_high")),
            colour="#756bb1",
            flagged=bool(row_flags(r, "contribution", section_status=status)),
        )
        for r in rows
        if (value := as_float(r.get("contribution"))) is not None
    ]
    parts += chart(
        bar_chart_svg(
            bars,
            title="Contribution to the score delta (frequency x mean loss) per judge and target label",
            x_label="contribution to mean(EN score \u2212 target score)",
            legend=False,
            chart_id="chart-taxonomy-delta",
        )
    )
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("target label", "label", "words"),
            col("pairs", "n", "int"),
            col("frequency", "frequency", "pct"),
            col("mean loss", "mean_loss", "num"),
            (
                "mean loss interval",
                lambda r: ci_cell(r, "mean_loss", low="mean_loss_ci_low", high="mean_loss_ci_high"),
                True,
            ),
            col("contribution", "contribution", "num"),
            ("interval", lambda r: ci_cell(r, "contribution"), True),
        ],
        value_key="contribution",
        section_status=status,
        known={
            "judge",
            "label",
            "n",
            "frequency",
            "mean_loss",
            "mean_loss_ci_low",
            "mean_loss_ci_high",
            "contribution",
            "ci_low",
            "ci_high",
            "n_articles",
        },
    )
    return parts


def order_bias_parts(block: ErrorTaxonomyResults, status: str) -> list[Part]:
    rows = records(block, "order_bias")
    parts = opening(
        "Order bias (a pair shown both ways round)", bool(rows), status, "order-bias measurements"
    )
    if not rows:
        return parts
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("pairs", "pairs", "int"),
            col("flips", "flips", "int"),
            col("flip rate", "flip_rate", "pct"),
            ("interval", lambda r: ci_cell(r, "flip_rate", pct=True), True),
            col("first shown preferred", "first_shown_preferred", "pct"),
        ],
        value_key="flip_rate",
        section_status=status,
        known={
            "judge",
            "pairs",
            "flips",
            "flip_rate",
            "ci_low",
            "ci_high",
            "first_shown_preferred",
            "n_articles",
        },
    )
    parts.append(
        Part(
            "note",
            text="Flip rate = share of pairs whose preferred response changes when the order is swapped "
            "(0 = no order effect).",
        )
    )
    return parts


def self_preference_parts(block: ErrorTaxonomyResults, status: str) -> list[Part]:
    rows = records(block, "self_preference")
    parts = opening(
        "Self-preference (a judge rating its own family's responses)",
        bool(rows),
        status,
        "self-preference measurements",
    )
    if not rows:
        return parts
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("family", "judge_family"),
            col("own family correct", "own_rate", "pct"),
            col("other families correct", "other_rate", "pct"),
            col("difference", "difference", "num"),
            ("interval", lambda r: ci_cell(r, "difference"), True),
            col("excess over other judges", "excess", "num"),
            (
                "excess interval",
                lambda r: ci_cell(r, "excess", low="excess_ci_low", high="excess_ci_high"),
                True,
            ),
            col("n", "n", "int"),
        ],
        value_key="difference",
        section_status=status,
        known={
            "judge",
            "judge_family",
            "own_rate",
            "other_rate",
            "difference",
            "ci_low",
            "ci_high",
            "excess",
            "excess_ci_low",
            "excess_ci_high",
            "n",
            "n_articles",
        },
    )
    return parts


def order_bias_group_parts(block: ErrorTaxonomyResults, status: str, by: str) -> list[Part]:
    """The flip rate per target language or per script (``order_bias_by_<by>``)."""
    return by_group_parts(
        block,
        grouped=f"order_bias_by_{by}",
        pooled="order_bias",
        by=by,
        title="Order bias",
        what="order-bias measurements",
        columns=[
            col("judge", "judge"),
            col("pairs", "pairs", "int"),
            col("flips", "flips", "int"),
            col("flip rate", "flip_rate", "pct"),
            ("interval", lambda r: ci_cell(r, "flip_rate", pct=True), True),
            col("articles", "n_articles", "int"),
        ],
        value_key="flip_rate",
        status=status,
        known={"judge", "pairs", "flips", "flip_rate", "ci_low", "ci_high", "n_articles"}
        | {"first_shown_preferred"},
    )


def self_preference_group_parts(block: ErrorTaxonomyResults, status: str, by: str) -> list[Part]:
    """Self-preference per target language or per script (``self_preference_by_<by>``)."""
    return by_group_parts(
        block,
        grouped=f"self_preference_by_{by}",
        pooled="self_preference",
        by=by,
        title="Self-preference",
        what="self-preference measurements",
        columns=[
            col("judge", "judge"),
            col("own family correct", "own_rate", "pct"),
            col("other families correct", "other_rate", "pct"),
            col("difference", "difference", "num"),
            ("interval", lambda r: ci_cell(r, "difference"), True),
            col("excess over other judges", "excess", "num"),
            (
                "excess interval",
                lambda r: ci_cell(r, "excess", low="excess_ci_low", high="excess_ci_high"),
                True,
            ),
            col("n", "n", "int"),
            col("articles", "n_articles", "int"),
        ],
        value_key="difference",
        status=status,
        known={"judge", "judge_family", "own_rate", "other_rate", "difference", "ci_low", "ci_high", "n"}
        | {"n_articles", "n_own", "n_other", "excess", "excess_ci_low", "excess_ci_high"},
    )
