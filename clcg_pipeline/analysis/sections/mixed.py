"""The mixed-effects convergent checks of H1 and H2 as a suite section."""

from __future__ import annotations

from typing import Any

import pandas as pd

from clcg_pipeline.analysis._context import SuiteContext, withheld_reason
from clcg_pipeline.analysis._prepare import as_str

#: Stands for "a fit would give an estimate" when the rule is asked before fitting: below
#: ``study.min_articles`` articles the fit is not run at all, its interval and p would be withheld.
_FITTABLE = 0.0


def _counts(ctx: SuiteContext, rows: pd.DataFrame | None) -> tuple[int, int]:
    """Scored rows of the reference and targets entering the fit, and their articles."""
    if rows is None or rows.empty:
        return 0, 0
    keep = rows["language"].isin([ctx.roles.reference, *ctx.roles.targets]).to_numpy()
    # Only the article column of the kept rows: a filtered copy of every column was most of
    # the section's time at a hundred models.
    return int(keep.sum()), _distinct_strings(rows["doc_id"][keep])


def _distinct_strings(series: pd.Series) -> int:
    """``as_str(series).nunique()``, from the distinct values rather than one string per row."""
    codes, uniques = pd.factorize(series)
    if (codes < 0).any():  # a missing value reads as the string as_str writes for it
        return int(as_str(series).nunique())
    return len({str(u) for u in uniques})


def mixed(ctx: SuiteContext, band: pd.DataFrame, h2_rows: pd.DataFrame | None) -> dict[str, Any]:
    from clcg_pipeline.analysis._mixed import AGGREGATION, mixed_h1, mixed_h2

    tg = list(ctx.roles.targets)
    counts = {"h1": _counts(ctx, band), "h2": _counts(ctx, h2_rows)}

    def too_few(name: str) -> dict[str, Any] | None:
        """The fit not run, with the suite's reason, when the rule withholds it for its articles.

        Without articles there is nothing to fit: the fit itself says why (too few cells).
        """
        n_art = counts[name][1]
        reason = withheld_reason(_FITTABLE, n_art, ctx.min_articles) if n_art else None
        if reason is None:
            return None
        return {
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "p": None,
            "converged": False,
            "status": f"not identifiable: {reason}",
            "reason": reason,
        }

    out: dict[str, Any] = {
        "aggregation": AGGREGATION,
        "h1": too_few("h1") or mixed_h1(band, ctx.roles.reference, tg, ctx.confidence),
    }
    if h2_rows is not None and len(h2_rows):
        out["h2"] = too_few("h2") or mixed_h2(h2_rows, ctx.roles.reference, tg, ctx.confidence)
        est, p = out["h2"].get("estimate"), out["h2"].get("p")
        if est is not None and p is not None:
            # The directional hypothesis (memorizable narrows the gap) is tested one-sided.
            out["h2"]["p_one_sided_less"] = p / 2 if est < 0 else 1 - p / 2
    else:
        out["h2"] = {"status": "not identifiable: no memorability groups", "converged": False}
    for name in ("h1", "h2"):
        fit = out[name]
        fit["n"], fit["n_articles"] = counts[name]
        converged = bool(fit.get("converged"))
        fit["identifiable"] = fit.get("estimate") is not None
        fit["reason"] = None if fit["identifiable"] else fit.get("reason") or str(fit.get("status"))
        flags = [] if converged or not fit["identifiable"] else ["not converged: gives no support"]
        fit["flags"] = flags + [str(w) for w in fit.get("warnings", [])]
        fit["p_bound"] = False
        ctx.add(
            f"mixed_{name}",
            "all",
            {
                "estimate": fit.get("estimate"),
                "ci_low": fit.get("ci_low"),
                "ci_high": fit.get("ci_high"),
                "p": fit.get("p"),
                "n": fit["n"],
                "n_articles": fit["n_articles"],
                "identifiable": fit["identifiable"],
                "p_bound": False,
                "status": fit.get("status"),
                "flags": fit["flags"],
            },
        )
    return out
