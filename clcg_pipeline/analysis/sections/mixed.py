"""The mixed-effects convergent checks of H1 and H2 as a suite section."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class H2Fit:
    """The H2 mixed model as the section reports it, fitted from the H2 rows (``h2_fit``)."""

    counts: tuple[int, int]  # rows and articles entering the fit
    fit: dict[str, Any]


def h2_fit(ctx: SuiteContext, h2_rows: pd.DataFrame | None) -> H2Fit:
    """The section's H2 fit from the H2 rows: the suite fits it as soon as H2 is done, so the H2
    rows are not held through the sections between (issue 37: their peak memory)."""
    from clcg_pipeline.analysis._mixed import mixed_h2

    counts = _counts(ctx, h2_rows)
    if h2_rows is None or not len(h2_rows):
        return H2Fit(counts, {"status": "not identifiable: no memorability groups", "converged": False})
    tg = list(ctx.roles.targets)
    fit = _too_few(ctx, counts) or mixed_h2(h2_rows, ctx.roles.reference, tg, ctx.confidence)
    est, p = fit.get("estimate"), fit.get("p")
    if est is not None and p is not None:
        # The directional hypothesis (memorizable narrows the gap) is tested one-sided.
        fit["p_one_sided_less"] = p / 2 if est < 0 else 1 - p / 2
    return H2Fit(counts, fit)


def _too_few(ctx: SuiteContext, counts: tuple[int, int]) -> dict[str, Any] | None:
    """The fit not run, with the suite's reason, when the rule withholds it for its articles.

    Without articles there is nothing to fit: the fit itself says why (too few cells).
    """
    n_art = counts[1]
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


def mixed(ctx: SuiteContext, band: pd.DataFrame, h2_rows: pd.DataFrame | H2Fit | None) -> dict[str, Any]:
    """The section: the H1 fit on ``band`` and the H2 fit (``h2_rows``, or ``h2_fit`` of them)."""
    from clcg_pipeline.analysis._mixed import AGGREGATION, mixed_h1

    tg = list(ctx.roles.targets)
    h2 = h2_rows if isinstance(h2_rows, H2Fit) else h2_fit(ctx, h2_rows)
    counts = {"h1": _counts(ctx, band), "h2": h2.counts}
    out: dict[str, Any] = {
        "aggregation": AGGREGATION,
        "h1": _too_few(ctx, counts["h1"]) or mixed_h1(band, ctx.roles.reference, tg, ctx.confidence),
        "h2": h2.fit,
    }
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
