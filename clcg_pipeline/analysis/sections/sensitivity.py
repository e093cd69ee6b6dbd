"""Metric sensitivity: H1 micro, macro and nets under Token-F1, ROUGE-L and semantic similarity.

Each metric runs on the primary band's rows (rule A) with the same article draws, side by
side. A metric whose column is absent or entirely empty on the band is reported as not
computed, with the reason, never as 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.analysis._h1 import h1_core
from clcg_pipeline.analysis._prepare import KEY_COLUMNS, apply_rule, score_values
from clcg_pipeline.analysis.sections.h1 import languages_of as h1_languages

METRICS = ("token_f1", "rouge_l", "semsim")
KEYS = ("h1_micro", "macro", "micro_net", "macro_net", "pt_gap")


def _not_computed(ctx: SuiteContext, metric: str, band: pd.DataFrame) -> str | None:
    """Why ``metric`` cannot be estimated on ``band`` (None when it can)."""
    if metric not in band.columns:
        return f"column {metric!r} is not in the scores"
    ok = (band["status"] == "ok").to_numpy()
    values = band[metric].to_numpy(dtype=np.float64, na_value=np.nan)
    if ok.any() and np.isfinite(values[ok]).any():
        return None
    if metric == "semsim":
        if ctx.config.study.semsim_model is None:
            return (
                "semantic similarity not computed: study.semsim is off (set it and install the semsim extra)"
            )
        return "semantic similarity column is empty in the scores: rescore with study.semsim on"
    return f"column {metric!r} is empty on the band's scored rows"


def metric_sensitivity(
    ctx: SuiteContext, band: pd.DataFrame, band_metric: str, core: Any = None
) -> dict[str, Any]:
    """``band``: primary-band rows of the panel languages, before a parse rule is applied.

    ``core``: the primary H1 computation, reused for the band's own metric (same rows, rule A).
    """
    out: dict[str, Any] = {
        "band_metric": band_metric,
        "rule": "A",
        "note": "same band, same article draws; failed responses score 0 under every metric",
        "metrics": {},
    }
    for metric in METRICS:
        reason = _not_computed(ctx, metric, band)
        if reason is not None:
            out["metrics"][metric] = {"status": "not computed", "computed": False, "reason": reason}
            continue
        if metric == band_metric and core is not None:
            this = core
        else:
            # The columns a metric's rows need, not the other metrics of every band row.
            needed = [c for c in (*KEY_COLUMNS, metric, "accuracy") if c in band.columns]
            narrow = band[list(dict.fromkeys(needed))]
            rows = apply_rule(narrow, score_values(narrow, metric), "A")
            this = h1_core(
                rows,
                ctx.config.languages,
                ctx.config.study,
                replicates=ctx.replicates,
                seed=ctx.seed,
                rows=rows,
                presorted=True,  # the suite's band rows, in its canonical order
            )
        entry: dict[str, Any] = {"status": "estimated", "computed": True}
        for key in KEYS:
            # p values belong to the H1 tests, not to this side-by-side view.
            entry[key] = ctx.stats(this.panel, this.vectors[key], h1_languages(ctx, key))
            ctx.add(f"{key}_metric", metric, entry[key])
        out["metrics"][metric] = entry
    return out
