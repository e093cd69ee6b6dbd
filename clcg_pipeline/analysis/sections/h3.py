"""H3: the level profile (within-level standardized CLCG and its slope on ordered level)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p
from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.analysis._gaps import GapPanel
from clcg_pipeline.config import LEVELS


def h3(ctx: SuiteContext, rows: pd.DataFrame) -> dict[str, Any]:
    """Within-level standardized CLCG per level, its slope on ordered level, raw per-level CLCG."""
    if rows.empty:
        return {"status": "not available: no rows", "identifiable": False, "reason": "no rows"}
    codes, uniques = _level_codes(rows["level"])
    names = np.array([str(u) for u in uniques] + ["nan"], dtype=object)
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
    # Only the columns a panel reads, as views of the rows' own columns (copy=False): each
    # copy of millions of rows (column selection and ``assign`` both copy) was slow.
    narrow = {c: rows[c] for c in ("model", "language", "doc_id", "item_id") if c in rows.columns}
    # A categorical level column as read groups like its names (cluster_table sorts labels as
    # strings) without hashing one string per row; a missing level is the cell "nan" as before.
    # (One name per row only then: an object array of millions of rows otherwise unused.)
    labels = (
        names[np.where(codes >= 0, codes, len(uniques))]
        if (codes < 0).any() or not isinstance(rows["level"].dtype, pd.CategoricalDtype)
        else rows["level"]
    )
    del codes
    finite = np.isfinite(z)
    # Every H3 estimand pools all models' rows (micro gaps per level): cells without the model
    # (issue 37), so each panel's replicate arrays are languages x levels wide at any number of
    # models rather than models x languages x levels (760 MB a panel at 500 models).
    cell_cols = ["language", "level"]
    if finite.all():
        # Every row in both panels: the rows are reduced to codes once for the two (issue 37).
        panels = ctx.panels(_frame(rows.index, narrow, level=labels), cell_cols, [z, y])
        # The rows are reduced to per-article sums as the first panel is built: none of them
        # is held here beside its replicates (the caller passes the rows without keeping them).
        del z, y, narrow, labels, rows, m
        zpanel = next(panels)
    else:
        zpanel, _ = ctx.panel(_frame(rows.index, narrow, y=z, level=labels).loc[finite], cell_cols)
        del z
        panels = (ctx.panel(_frame(rows.index, narrow, y=y, level=labels), cell_cols)[0] for _ in (0,))
    del finite
    levels = [lvl for lvl in LEVELS if zpanel.n(level=lvl) > 0]
    langs = [ctx.roles.reference, *ctx.roles.targets]
    # One panel at a time (each holds replicates x cells sums and counts, the section's
    # largest arrays): everything read from the z panel is taken before the raw one is built.
    vecs = [zpanel.micro(level=lvl) for lvl in levels]
    std = {lvl: ctx.stats(zpanel, zv, langs, level=lvl) for lvl, zv in zip(levels, vecs, strict=True)}
    slope = _slope(ctx, zpanel, vecs, levels, langs) if len(levels) >= 2 else None
    del zpanel
    rpanel = next(panels)
    raw = {lvl: ctx.stats(rpanel, rpanel.micro(level=lvl), langs, level=lvl) for lvl in levels}
    del rpanel
    for lvl in levels:
        ctx.add("h3_standardized_clcg", lvl, std[lvl])
        ctx.add("h3_raw_clcg_descriptive", lvl, raw[lvl])
    out: dict[str, Any] = {
        "standardized": std,
        "raw_descriptive": raw,
        "standardization": standardization,
        "note": "z-scores within each level over all analysed rows (full sample, held fixed across "
        "replicates); raw per-level CLCGs are descriptive only (L0 uses accuracy)",
    }
    if slope is not None:
        out["slope"] = slope
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


def _level_codes(level: pd.Series) -> tuple[np.ndarray, list[object]]:
    """Each row's level code and the level of each code (-1: missing).

    A categorical's own codes (one byte a row) and its categories; other columns factorized.
    Only the rows of each code are used, never the codes' order, so both give the same masks.
    """
    if isinstance(level.dtype, pd.CategoricalDtype):
        return level.cat.codes.to_numpy(), list(level.cat.categories)
    # Level names via codes: astype(str) on a column of millions of rows is slow.
    codes, uniques = pd.factorize(level)
    return codes, list(uniques)


def _frame(index: pd.Index, columns: dict[str, pd.Series], **extra: Any) -> pd.DataFrame:
    """``columns`` plus ``extra`` as one frame that shares their data (no copy of any row).

    Series enter as their arrays: all share ``index`` already, so nothing is aligned.
    """
    data = {k: v.array if isinstance(v, pd.Series) else v for k, v in {**columns, **extra}.items()}
    return pd.DataFrame(data, index=index, copy=False)


def _slope(
    ctx: SuiteContext, zpanel: GapPanel, vecs: list[np.ndarray], levels: Sequence[str], langs: list[str]
) -> dict[str, Any]:
    """The least-squares slope of the standardized CLCG on the level number, per replicate."""
    x = np.array([int(lvl[1]) for lvl in levels], dtype=float)
    xc = x - x.mean()
    mat = np.column_stack(vecs)
    slope = (mat - mat.mean(axis=1, keepdims=True)) @ xc / float((xc**2).sum())
    p = bootstrap_p(slope[1:], "greater")
    out = ctx.stats(zpanel, slope, langs, p=p, level=levels)
    out["alternative"] = "greater (one-sided)"
    out["levels"] = list(levels)
    return out
