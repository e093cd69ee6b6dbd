"""H4: item source (CLCG human - CLCG llm)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p
from clcg_pipeline.analysis._context import SuiteContext


def h4(ctx: SuiteContext, llm: pd.DataFrame, human: pd.DataFrame) -> dict[str, Any]:
    """CLCG(human) - CLCG(llm primary band), two-sided."""
    if human.empty or llm.empty:
        return {
            "status": "not available: needs both human and llm rows",
            "identifiable": False,
            "reason": "needs both human and llm rows",
        }
    rows = pd.concat(
        [
            llm[["doc_id", "model", "language", "y"]].assign(grp=_group("llm", len(llm))),
            human[["doc_id", "model", "language", "y"]].assign(grp=_group("human", len(human))),
        ],
        ignore_index=True,
    )
    # No astype(str) here: cluster_table factorizes categoricals and strings alike.
    panel, _ = ctx.panel(rows, ["model", "language", "grp"])
    h = panel.micro(grp="human")
    g = panel.micro(grp="llm")
    diff = h - g
    langs = [ctx.roles.reference, *ctx.roles.targets]
    out: dict[str, Any] = {
        "human": ctx.stats(panel, h, langs, grp="human"),
        "llm": ctx.stats(panel, g, langs, grp="llm"),
        "difference": ctx.stats(panel, diff, langs, p=bootstrap_p(diff[1:], "two-sided"), sided="two-sided"),
        "alternative": "two-sided",
        "note": "human: every human item under the band's context scope; llm: the primary band",
    }
    ctx.add("h4_difference", "all", out["difference"])
    ctx.add("h4_clcg", "human", out["human"])
    ctx.add("h4_clcg", "llm", out["llm"])
    return out


def _group(name: str, size: int) -> pd.Categorical:
    """A constant group label as a categorical: factorized by its two categories, not per row."""
    return pd.Categorical.from_codes(np.full(size, _GROUPS.index(name), dtype=np.int8), categories=_GROUPS)


_GROUPS = ["human", "llm"]
