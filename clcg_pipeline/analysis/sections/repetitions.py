"""Repetitions: CLCG per repetition and agreement of model rankings across repetitions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.analysis._prepare import as_str, distinct_strs
from clcg_pipeline.storage import finite


def repetitions(ctx: SuiteContext, band: pd.DataFrame) -> dict[str, Any]:
    """CLCG per repetition on the stability articles; agreement of model rankings across runs."""
    from clcg_pipeline.analysis._stats import kendalls_w, spearman

    if band.empty:
        return {"status": "not available: no rows"}
    n_stable, in_stable = _stable_articles(band)
    if n_stable == 0:
        return {"status": "not available: no article has more than one repetition"}
    # The panel's columns of the stability rows only, the repetition as its string.
    kept = band.loc[in_stable, [c for c in _ROW_COLUMNS if c in band.columns]]
    data = {c: kept[c].array for c in kept.columns}
    data["rep"] = as_str(kept["rep"]).to_numpy()
    # Listed from the repetition numbers and the model codes: a set of one string per row was
    # most of the section's own time (issue 37). The same strings as ``as_str`` writes.
    reps = sorted(distinct_strs(kept["rep"]), key=int)
    rows = pd.DataFrame(data, index=kept.index, copy=False)
    del kept
    panel, _ = ctx.panel(rows, ["model", "language", "rep"])
    models = sorted(distinct_strs(rows["model"]))
    per_rep: dict[str, Any] = {}
    points = []
    grid = np.full((len(reps), len(models)), np.nan)
    for i, r in enumerate(reps):
        per_rep[r] = ctx.stats(panel, panel.micro(rep=r), [ctx.roles.reference, *ctx.roles.targets], rep=r)
        ctx.add("clcg_repetition", f"rep={r}", per_rep[r])
        points.append(per_rep[r]["estimate"])
        for j, m in enumerate(models):
            grid[i, j] = panel.micro(rep=r, model=m)[0]
    pts = np.array([p for p in points if p is not None], dtype=float)
    pairs: dict[str, Any] = {}
    for i in range(len(reps)):
        for j in range(i + 1, len(reps)):
            pairs[f"{reps[i]}-{reps[j]}"] = spearman(grid[i], grid[j])
    rhos = [v["rho"] for v in pairs.values() if v["rho"] is not None]
    complete = grid[:, np.isfinite(grid).all(axis=0)]
    return {
        "articles": n_stable,
        "per_repetition": per_rep,
        "summary": {
            "mean": finite(pts.mean()) if pts.size else None,
            "sd": finite(pts.std(ddof=1)) if pts.size > 1 else None,
            "min": finite(pts.min()) if pts.size else None,
            "max": finite(pts.max()) if pts.size else None,
        },
        "by_model": {m: {r: finite(grid[i, j]) for i, r in enumerate(reps)} for j, m in enumerate(models)},
        "kendalls_w": kendalls_w(complete) if complete.shape[1] >= 2 else None,
        "pairwise_spearman": pairs,
        "mean_pairwise_spearman": finite(np.mean(rhos)) if rhos else None,
    }


_ROW_COLUMNS = ("model", "language", "doc_id", "item_id", "y", "rep")


def _stable_articles(band: pd.DataFrame) -> tuple[int, np.ndarray]:
    """Articles with more than one repetition (their number) and which rows belong to them.

    Counted on the codes of the article and repetition columns: grouping one string per row
    of millions of band rows was most of the section's time.
    """
    doc_codes, doc_values = pd.factorize(band["doc_id"])
    rep_codes, rep_values = pd.factorize(band["rep"])
    one_string_each = len({str(d) for d in doc_values}) == len(doc_values)
    if (doc_codes < 0).any() or (rep_codes < 0).any() or not one_string_each:
        # A missing article or repetition, or two ids with one string: the string grouping.
        reps_per_doc = band.groupby(as_str(band["doc_id"]), observed=True)["rep"].nunique()
        stable = reps_per_doc.index[reps_per_doc > 1]
        return len(stable), as_str(band["doc_id"]).isin(stable).to_numpy()
    pairs = np.unique(doc_codes.astype(np.int64) * len(rep_values) + rep_codes)
    per_doc = np.bincount(pairs // len(rep_values), minlength=int(doc_codes.max()) + 1)
    stable_doc = per_doc > 1
    return int(stable_doc.sum()), stable_doc[doc_codes]
