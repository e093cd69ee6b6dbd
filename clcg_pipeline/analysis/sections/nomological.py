"""The nomological network (exploratory language-level correlates of the CLCG)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._context import SuiteContext, withheld_reason, withhold_fields
from clcg_pipeline.analysis._prepare import check_columns


def nomological(ctx: SuiteContext, h1: dict[str, Any], fertility: pd.DataFrame | None) -> dict[str, Any]:
    """Language-level Spearman of CLCG with Joshi class, fertility, script and isolate probes."""
    from clcg_pipeline.analysis._stats import partial_spearman, spearman_bootstrap, standardized_ols

    clcg = {iso: s["estimate"] for iso, s in h1["by_language"].items() if s["estimate"] is not None}
    if h1["pt_gap"]["estimate"] is not None:
        clcg[ctx.roles.baseline] = h1["pt_gap"]["estimate"]
    fert: dict[str, float] = {}
    if fertility is not None and len(fertility):
        key = "language" if "language" in fertility.columns else "iso"
        check_columns(fertility, [key, "fertility"], source="fertility")
        fert = {str(k): float(v) for k, v in zip(fertility[key], fertility["fertility"], strict=True)}
    langs = [ctx.roles.baseline, *ctx.roles.targets]

    def frame(sensitivity: bool) -> pd.DataFrame:
        recs = []
        for iso in langs:
            lang = ctx.config.languages.get(iso)
            cls = (
                lang.joshi_class
                if lang.joshi_class is not None
                else (lang.joshi_class_sensitivity if sensitivity else None)
            )
            if iso not in clcg or cls is None:
                continue
            recs.append(
                {
                    "language": iso,
                    "clcg": clcg[iso],
                    "joshi_class": float(cls),
                    "fertility": fert.get(iso, np.nan),
                    "non_latin": float(lang.non_latin),
                    "isolate": float(lang.isolate != "none"),
                }
            )
        return pd.DataFrame(
            recs, columns=["language", "clcg", "joshi_class", "fertility", "non_latin", "isolate"]
        )

    prim, sens = frame(False), frame(True)
    # The language CLCGs correlated here are estimates on the study's articles: below
    # study.min_articles they are not identifiable, and nothing computed from them is either.
    n_articles = (h1.get("n") or {}).get("articles")
    kw: dict[str, Any] = {"resamples": ctx.replicates, "seed": ctx.seed, "confidence": ctx.confidence}
    y = prim["clcg"].to_numpy(dtype=float)
    out: dict[str, Any] = {"languages": prim["language"].tolist(), "spearman": {}}
    for var in ("joshi_class", "fertility", "non_latin", "isolate"):
        res = spearman_bootstrap(prim[var].to_numpy(dtype=float), y, **kw)
        out["spearman"][var] = res = language_level(ctx, res, n_articles)
        ctx.add(
            "nomological_spearman",
            var,
            res,
        )
    sres = spearman_bootstrap(
        sens["joshi_class"].to_numpy(dtype=float), sens["clcg"].to_numpy(dtype=float), **kw
    )
    sres = language_level(ctx, sres, n_articles)
    out["spearman_joshi_sensitivity"] = {**sres, "languages": sens["language"].tolist()}
    ctx.add(
        "nomological_spearman_sensitivity",
        "joshi_class",
        sres,
    )
    jc = prim["joshi_class"].to_numpy(dtype=float)
    out["partial_spearman_on_joshi"] = {
        var: withheld_below_min(ctx, partial_spearman(prim[var].to_numpy(dtype=float), y, jc), n_articles)
        for var in ("fertility", "non_latin")
    }
    preds = {v: prim[v].to_numpy(dtype=float) for v in ("joshi_class", "fertility", "non_latin")}
    out["standardized_ols"] = withheld_below_min(ctx, standardized_ols(y, preds), n_articles)
    out["note"] = "exploratory; language-level resamples for CIs; Portuguese enters with its PT gap"
    return out


#: Stands for "the statistic was computed" when the rule is asked about it: an undefined rho or
#: r\u00b2 (too few languages) is already null in the statistic itself, so only the articles decide.
_COMPUTED = 0.0


def withheld_below_min(ctx: SuiteContext, res: dict[str, Any], n_articles: int | None) -> dict[str, Any]:
    """A language-level statistic without a bootstrap, qualified by the suite's rule.

    The decision and its words are ``withheld_reason``'s (as ``SuiteContext.qualify`` for every
    estimand): a withheld statistic keeps its point value as a description and loses its p
    (``withhold_fields``); an OLS keeps its coefficients and loses r\u00b2, a fit on too few units.
    """
    out = {**res, "n_articles": n_articles}
    reason = withheld_reason(_COMPUTED, n_articles, ctx.min_articles)
    out["identifiable"], out["reason"] = reason is None, reason
    if reason is not None:
        withhold_fields(out)
        if "r2" in out:
            out["r2"] = None
    return out


def language_level(ctx: SuiteContext, res: dict[str, Any], n_articles: int | None = None) -> dict[str, Any]:
    """A language-level Spearman as an estimand: ``n`` counts languages (the resampled unit).

    ``n_articles``: the articles behind the language CLCGs it correlates; below
    study.min_articles its interval and p are withheld, as for every estimand.
    """
    if "identifiable" in res:
        return res
    out = {**res, "estimate": res.get("rho"), "valid_replicates": res.get("valid_resamples", 0)}
    if n_articles is not None:
        out["n_articles"] = int(n_articles)
    if res.get("rho") is None:
        out["flags"] = []
        out["identifiable"] = False
        out["reason"] = f"Spearman undefined: {res.get('n', 0)} languages with data (needs 3, not all tied)"
        out["p_bound"] = False
        return out
    return ctx.qualify(out, sided=None)
