"""Models ranked per granularity, with whole-rank intervals, and each model's trend across the
granularities (docs/GRANULARITY.md "Analysis dimensions").

Ranks follow the main study's model contrasts (``rank_rows`` / ``rank_interval``): the ranks
are taken inside every bootstrap replicate of the shared document draws, and a replicate where
one model's score is undefined ranks no model. Rank 1 is the highest score.

The trend is the least-squares slope of the targets' pooled paired gap over the granularity
order (word 0, sentence 1, paragraph 2, document 3), taken in every replicate; each
granularity's gap is in its own tasks' metrics, so the slope reads as a direction, not a size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clcg_pipeline.analysis import FineTable
from clcg_pipeline.analysis.sections.model_contrasts import rank_interval, rank_rows
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis._estimates import Estimates, plain
from clcg_pipeline.granularity._analysis._gaps import language_modes
from clcg_pipeline.granularity._analysis._position import gran_key
from clcg_pipeline.granularity._analysis._rows import ALL, GRANULARITY_ORDER, TARGETS


def model_ranks(sfine: FineTable, est: Estimates) -> list[dict[str, Any]]:
    """Per granularity x metric, each model's score (all languages) and its rank with an interval."""
    cells = sfine.cells(["granularity", "metric", "model"], where={"primary": [True]})
    boot = sfine.boot
    stats = boot.table(cells)
    out: list[dict[str, Any]] = []
    pairs = sorted(set(zip(cells.cells["granularity"], cells.cells["metric"], strict=True)), key=gran_key)
    for g, m in pairs:
        cols = cells.where(granularity=g, metric=m)
        ranks = rank_rows(-cells.means[:, cols])
        for j, col in enumerate(cols):
            row = stats.iloc[int(col)]
            low, high = (
                rank_interval(ranks[1:, j], boot.ctx.confidence) if row["identifiable"] else (None, None)
            )
            entry = {
                "granularity": g,
                "metric": m,
                "model": str(row["model"]),
                "score": plain(row["estimate"]),
                "rank": None if not np.isfinite(ranks[0, j]) else int(ranks[0, j]),
                "rank_low": None if low is None else int(low),
                "rank_high": None if high is None else int(high),
                "n_models": len(cols),
                "n_documents": int(row["n_documents"]),
                "identifiable": bool(row["identifiable"]),
                "reason": plain(row["reason"]),
            }
            est.add("model_rank", {**entry, "estimate": entry["rank"], "ci_low": low, "ci_high": high},
                    {"granularity": g, "metric": m, "model": entry["model"], "language": ALL})  # fmt: skip
            out.append(entry)
    return out


def gap_trends(gfine: FineTable | None, config: ProjectConfig, est: Estimates) -> list[dict[str, Any]]:
    """Per model (and all models), the slope of the targets' gap over the granularity order."""
    if gfine is None:
        return []
    targets = list(language_modes(config)[TARGETS][0]["language"])
    per_model = gfine.cells(["granularity", "model"], where={"language": targets})
    pooled = gfine.cells(["granularity"], where={"language": targets}, constant={"model": ALL})
    out: list[dict[str, Any]] = []
    for cells in (per_model, pooled):
        for model in sorted(set(cells.cells["model"].astype(str))):
            labels = cells.cells["granularity"].astype(str)
            cols = sorted(
                (c for c in cells.where(model=model) if labels.iloc[c] in GRANULARITY_ORDER),
                key=lambda c: GRANULARITY_ORDER.index(labels.iloc[c]),
            )
            entry = {"model": model, "granularities": [str(cells.cells["granularity"].iloc[c]) for c in cols]}
            entry |= _slope(gfine, cells, cols)
            est.add("gap_trend_over_granularity", entry, {"model": model, "language": TARGETS})
            out.append(entry)
    return out


def _slope(gfine: FineTable, cells: Any, cols: list[int]) -> dict[str, Any]:
    """Least-squares slope of the cell means over their granularity order, per replicate."""
    if len(cols) < 2:
        return {"estimate": None, "ci_low": None, "ci_high": None, "identifiable": False,
                "reason": "fewer than two granularities with a gap", "n": 0, "n_documents": 0}  # fmt: skip
    x = np.array(
        [GRANULARITY_ORDER.index(str(cells.cells["granularity"].iloc[c])) for c in cols], dtype=float
    )
    weights = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    vec = cells.means[:, cols] @ weights
    (stats,) = gfine.boot.summaries(vec[:, None], [int(cells.n[cols].sum())], [cells.n_clusters(cols)])
    return stats
