"""H3: the level profile (within-level standardized CLCG and its slope on ordered level)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p
from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.config import LEVELS


def h3(ctx: SuiteContext, rows: pd.DataFrame) -> dict[str, Any]:
    """Within-level standardized CLCG per level, its slope on ordered level, raw per-level CLCG."""
    if rows.empty:
        return {"status": "not available: no rows", "identifiable": False, "reason": "no rows"}
    # Level names via codes: astype(str) on a categorical of millions of rows is slow.
    codes, uniques = pd.factorize(rows["level"])
    names = np.array([str(u) for u in uniques] + ["nan"], dtype=object)
    level = names[np.where(codes >= 0, codes, len(uniques))]
    y = rows["y"].to_numpy()
    z = np.full(len(rows), np.nan)
    standardization: dict[str, Any] = {}
    for lvl in LEVELS:
        m = codes == (list(names).index(lvl) if lvl in names[:-1] else -2)
        if m.sum() < 2:
            continue
        mu, sd = float(y[m].mean()), float(y[m].std(ddof=1))
        standardization[lvl] = {"mean": mu, "sd": sd}
        if sd > 0:
            z[m] = (y[m] - mu) / sd
    # Only the columns a panel reads: copying every column of millions of rows twice was slow.
    narrow = rows[[c for c in ("model", "language", "doc_id", "item_id") if c in rows.columns]]
    # A categorical level column as read groups like its names (cluster_table sorts labels as
    # strings) without hashing one string per row; a missing level is the cell "nan" as before.
    labels = (
        level
        if (codes < 0).any() or not isinstance(rows["level"].dtype, pd.CategoricalDtype)
        else rows["level"]
    )
    zrows = narrow.assign(y=z, level=labels).loc[np.isfinite(z)]
    zpanel, _ = ctx.panel(zrows, ["model", "language", "level"])
    rpanel, _ = ctx.panel(narrow.assign(y=y, level=labels), ["model", "language", "level"])
    levels = [lvl for lvl in LEVELS if zpanel.n(level=lvl) > 0]
    std: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    vecs = []
    langs = [ctx.roles.reference, *ctx.roles.targets]
    for lvl in levels:
        zv = zpanel.micro(level=lvl)
        vecs.append(zv)
        std[lvl] = ctx.stats(zpanel, zv, langs, level=lvl)
        raw[lvl] = ctx.stats(rpanel, rpanel.micro(level=lvl), langs, level=lvl)
        ctx.add("h3_standardized_clcg", lvl, std[lvl])
        ctx.add("h3_raw_clcg_descriptive", lvl, raw[lvl])
    out: dict[str, Any] = {
        "standardized": std,
        "raw_descriptive": raw,
        "standardization": standardization,
        "note": "z-scores within each level over all analysed rows (full sample, held fixed across "
        "replicates); raw per-level CLCGs are descriptive only (L0 uses accuracy)",
    }
    if len(levels) >= 2:
        x = np.array([int(lvl[1]) for lvl in levels], dtype=float)
        xc = x - x.mean()
        mat = np.column_stack(vecs)
        slope = (mat - mat.mean(axis=1, keepdims=True)) @ xc / float((xc**2).sum())
        p = bootstrap_p(slope[1:], "greater")
        out["slope"] = ctx.stats(zpanel, slope, langs, p=p, level=levels)
        out["slope"]["alternative"] = "greater (one-sided)"
        out["slope"]["levels"] = levels
        ctx.add("h3_slope", "all", out["slope"])
    else:
        out["slope"] = {
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "p": None,
            "status": "not identifiable: fewer than 2 levels",
            "identifiable": False,
            "reason": "fewer than 2 levels with rows",
        }
    return out
