"""Cross-corpus replication: the H1 estimators on a second corpus, Spearman of rankings.

The replication band (docs/ESTIMANDS.md, "replication"): the study band when the replication
scores have rows in it; otherwise the band of the replication corpus itself: its most frequent
item source, every level it has, the study's context scope when present (else every scope),
and the score ``accuracy`` for multiple-choice items (level ``MC``, e.g. Belebele) or the
study metric otherwise. The band used and its row count are reported; with fewer than three
languages in common the Spearman is not identifiable, never a silent number.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.analysis._h1 import h1_core
from clcg_pipeline.analysis._prepare import KEY_COLUMNS, apply_rule, check_columns, score_values, select_rows
from clcg_pipeline.analysis.sections.h1 import qualify_core
from clcg_pipeline.analysis.sections.nomological import language_level

MC_LEVEL = "MC"


def replication_band(other: pd.DataFrame, ctx: SuiteContext) -> tuple[dict[str, Any], pd.DataFrame]:
    """The band the replication uses (see the module docstring) and its rows with ``y`` (rule A)."""
    band = ctx.config.study.band
    study_rows = select_rows(
        other, levels=band.levels, item_source=band.item_source, context_scope=band.context_scope
    )
    if len(study_rows) and band.metric in other.columns:
        rows = apply_rule(study_rows, score_values(study_rows, band.metric), "A")
        spec = {
            "rule": "study band",
            "item_source": band.item_source,
            "levels": list(band.levels),
            "context_scope": band.context_scope,
            "metric": band.metric,
        }
        return spec, rows
    if other.empty:
        return {"rule": "no rows"}, other.assign(y=pd.Series(dtype=float))
    source = str(other["item_source"].astype(str).value_counts().sort_index().idxmax())
    sub = select_rows(other, item_source=source)
    scopes = set(sub["context_scope"].astype(str))
    scope = band.context_scope if band.context_scope in scopes else None
    sub = select_rows(sub, context_scope=scope)
    levels = sorted(set(sub["level"].astype(str)))
    mc = (sub["level"].astype(str) == MC_LEVEL).to_numpy()
    # A column name here, and below a description of a mixed bank: any string, not only a metric.
    metric: str = "accuracy" if mc.all() else band.metric
    if metric not in sub.columns:
        raise ValueError(f"replication scores: missing column {metric!r} needed by the replication band")
    if mc.any() and not mc.all():
        # Mixed bank: MC items by accuracy, the rest by the study metric.
        values = np.where(
            mc,
            sub["accuracy"].to_numpy(dtype=np.float64, na_value=np.nan),
            score_values(sub, band.metric),
        )
        metric = f"accuracy (level {MC_LEVEL}) / {band.metric} (other levels)"
    else:
        values = score_values(sub, metric)
    rows = apply_rule(sub, values, "A")
    spec = {
        "rule": "replication corpus band (no rows in the study band)",
        "item_source": source,
        "levels": levels,
        "context_scope": scope or "any",
        "metric": metric,
    }
    return spec, rows


def replication(ctx: SuiteContext, h1: dict[str, Any], other: pd.DataFrame | None) -> dict[str, Any]:
    """The H1 estimators on a second corpus and the Spearman of the language rankings."""
    from clcg_pipeline.analysis._stats import spearman_bootstrap

    if other is None or len(other) == 0:
        return {
            "status": "not available: no replication scores",
            "identifiable": False,
            "reason": "no replication scores (study.replication_scores not set or empty)",
        }
    check_columns(other, KEY_COLUMNS, source="replication scores")
    spec, rows = replication_band(other, ctx)
    study = ctx.config.study
    core = h1_core(other, ctx.config.languages, study, replicates=ctx.replicates, seed=ctx.seed, rows=rows)
    qualify_core(ctx, core)
    common = [
        iso
        for iso in h1["by_language"]
        if h1["by_language"][iso].get("estimate") is not None
        and core.result["by_language"].get(iso, {}).get("estimate") is not None
    ]
    a = np.array([h1["by_language"][i]["estimate"] for i in common], dtype=float)
    b = np.array([core.result["by_language"][i]["estimate"] for i in common], dtype=float)
    rho = language_level(
        ctx, spearman_bootstrap(a, b, resamples=ctx.replicates, seed=ctx.seed, confidence=ctx.confidence)
    )
    ctx.add("replication_spearman", "languages", rho)
    ctx.add("replication_h1_micro", "all", core.result["h1_micro"])
    out: dict[str, Any] = {
        "h1": core.result,
        "band": spec,
        "rows": spec["rule"],
        "n_rows": len(rows),
        "languages": common,
        "spearman": rho,
    }
    if not rho["identifiable"]:
        out["status"] = f"not identifiable: {rho['reason']}"
    return out
