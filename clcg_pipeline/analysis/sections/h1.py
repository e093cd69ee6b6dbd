"""H1 breakdowns: the estimates of the H1 family, net per language, Joshi classes, parse rule, TOST."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p, fixed_mean_rows, valid_replicates
from clcg_pipeline.analysis._context import SuiteContext, class_map
from clcg_pipeline.analysis._h1 import H1_KEYS, contrast_languages, h1_core
from clcg_pipeline.analysis._prepare import as_str
from clcg_pipeline.storage import finite


def languages_of(ctx: SuiteContext, key: str) -> list[str]:
    """Languages whose rows enter an H1-family contrast (the reference is always one)."""
    return contrast_languages(ctx.roles, key)


def qualify_core(ctx: SuiteContext, core: Any, p: dict[str, float | None] | None = None) -> None:
    """Replace the H1 family's summaries in ``core.result`` by fully qualified estimands.

    Same estimate and interval; adds ``n`` (rows entering the contrast), ``n_articles``,
    ``valid_replicates``, ``identifiable``/``reason``, ``p_bound`` and ``flags``.
    """
    p = p or {}
    v, r, panel = core.vectors, core.result, core.panel
    for key in H1_KEYS:
        r[key] = ctx.stats(panel, v[key], languages_of(ctx, key), p=p.get(key))
    for iso in list(r["by_language"]):
        r["by_language"][iso] = ctx.stats(panel, v[f"clcg/{iso}"], [ctx.roles.reference, iso])
    for model, entry in r["by_model"].items():
        for key in ("h1_micro", "pt_gap", "macro_net"):
            entry[key] = ctx.stats(
                panel, v[f"{key}/{model}"], languages_of(ctx, key), p=p.get(f"{key}/{model}"), model=model
            )


def h1_estimates(ctx: SuiteContext, core: Any) -> dict[str, float | None]:
    """Add the H1 family to the estimates table; return the one-sided p of each H1 test."""
    v, r = core.vectors, core.result
    p: dict[str, float | None] = {"all": bootstrap_p(v["h1_micro"][1:], "greater")}
    p_core: dict[str, float | None] = {"h1_micro": p["all"]}
    for model in r["by_model"]:
        p[model] = bootstrap_p(v[f"h1_micro/{model}"][1:], "greater")
        p_core[f"h1_micro/{model}"] = p[model]
    qualify_core(ctx, core, p_core)
    for key in H1_KEYS:
        ctx.add(key, "all", r[key])
    for iso, s in r["by_language"].items():
        ctx.add("clcg_language", iso, s)
    for model, s in r["by_model"].items():
        ctx.add("h1_micro_model", model, s["h1_micro"])
        ctx.add("pt_gap_model", model, s["pt_gap"])
        ctx.add("macro_net_model", model, s["macro_net"])
    # H1 tests whose estimand is withheld (too few articles) leave the BH family.
    # Returned p values are those of the qualified estimands (None when withheld).
    out: dict[str, float | None] = {"all": r["h1_micro"].get("p")}
    for model, entry in r["by_model"].items():
        if "h1_micro" in entry:
            out[model] = entry["h1_micro"].get("p")
    return out


def language_net(ctx: SuiteContext, core: Any) -> dict[str, Any]:
    """Net_l = CLCG_l - PT gap (= mean_pt - mean_l), computed within each replicate."""
    out: dict[str, Any] = {}
    en, pt = ctx.roles.reference, ctx.roles.baseline
    for iso in core.result["by_language"]:
        vec = core.vectors[f"clcg/{iso}"] - core.vectors["pt_gap"]
        out[iso] = ctx.stats(core.panel, vec, [en, pt, iso])
        ctx.add("net_language", iso, out[iso])
    return out


def _language_clcg(ctx: SuiteContext, core: Any, iso: str) -> np.ndarray:
    """CLCG_l vector; for Portuguese that is the PT gap."""
    return core.vectors["pt_gap"] if iso == ctx.roles.baseline else core.vectors[f"clcg/{iso}"]


def joshi_classes(ctx: SuiteContext, core: Any) -> dict[str, Any]:
    """Class mean of language CLCGs (raw and net) for the primary and sensitivity mappings.

    Portuguese enters class 4 with its CLCG (the PT gap); only languages with data enter.
    """
    en, pt = ctx.roles.reference, ctx.roles.baseline
    present = set(core.result["by_language"])
    if core.result["pt_gap"].get("estimate") is not None:
        present.add(pt)
    out: dict[str, Any] = {
        "unclassified": [
            iso for iso in (pt, *ctx.roles.targets) if ctx.config.languages.get(iso).joshi_class is None
        ],
        "rule": "class mean of language CLCGs; Portuguese (baseline) enters its class with the PT gap; "
        "unclassified languages only in the sensitivity mapping; languages without data left out",
    }
    for name, sens in (("primary", False), ("sensitivity", True)):
        table: dict[str, Any] = {}
        for cls, isos in class_map(ctx, sens).items():
            langs = [i for i in isos if i in present]
            if not langs:
                continue
            raw = fixed_mean_rows([_language_clcg(ctx, core, i) for i in langs])
            net = raw - core.vectors["pt_gap"]
            entry: dict[str, Any] = {
                "languages": langs,
                "raw": ctx.stats(core.panel, raw, [en, *langs]),
                "net": ctx.stats(core.panel, net, sorted({en, pt, *langs}, key=[en, pt, *langs].index)),
            }
            table[str(cls)] = entry
            ctx.add(f"class_raw_{name}", f"class={cls}", entry["raw"])
            ctx.add(f"class_net_{name}", f"class={cls}", entry["net"])
        out[name] = table
    return out


def parse_rule(ctx: SuiteContext, core_a: Any, band_b: pd.DataFrame) -> dict[str, Any]:
    study = ctx.config.study
    core_b = h1_core(
        band_b,
        ctx.config.languages,
        study,
        replicates=ctx.replicates,
        seed=ctx.seed,
        rule="B",
        rows=band_b,
        presorted=True,  # the suite's band rows, in its canonical order
    )
    keys = H1_KEYS
    out: dict[str, Any] = {
        "A": {k: core_a.result[k] for k in keys} | {"n": core_a.result["n"]},
        "B": {k: core_b.result[k] for k in keys} | {"n": core_b.result["n"]},
    }
    qualify_core(ctx, core_b)
    for k in keys:
        ctx.add(f"{k}_rule_b", "all", core_b.result[k])
    if core_a.result["n"]["articles"] == core_b.result["n"]["articles"]:
        diff = core_a.vectors["h1_micro"] - core_b.vectors["h1_micro"]
        out["difference_h1_micro"] = ctx.stats(
            core_a.panel, diff, languages_of(ctx, "h1_micro"), sided="two-sided"
        )
    return out


def equivalence(ctx: SuiteContext, core: Any, band: pd.DataFrame) -> dict[str, Any]:
    from clcg_pipeline.analysis._stats import bootstrap_tost, paired_tost

    bounds = ctx.config.study.equivalence_bounds
    out: dict[str, Any] = {
        "contrast": "EN - PT (pt_gap)",
        "bootstrap": bootstrap_tost(core.vectors["pt_gap"][1:], bounds, ctx.confidence),
    }
    out["estimate"] = finite(core.vectors["pt_gap"][0])
    sub = band.loc[band["language"].isin([ctx.roles.reference, ctx.roles.baseline]).to_numpy()]
    if len(sub):
        means = sub.assign(language=as_str(sub["language"]), doc_id=as_str(sub["doc_id"])).pivot_table(
            index="doc_id", columns="language", values="y", aggfunc="mean", observed=True
        )
        if {ctx.roles.reference, ctx.roles.baseline} <= set(means.columns):
            out["paired_article_means"] = paired_tost(
                means[ctx.roles.reference].to_numpy(), means[ctx.roles.baseline].to_numpy(), bounds
            )
    out["equivalent"] = out["bootstrap"]["equivalent"]
    out["note"] = "failure to show equivalence is a finding (a measurable cost outside English), not an error"
    langs = [ctx.roles.reference, ctx.roles.baseline]
    out["n"] = core.panel.n(language=langs)
    out["n_articles"] = core.panel.n_articles(language=langs)
    ctx.add(
        "tost_en_pt",
        "all",
        ctx.qualify(
            {
                "estimate": out["estimate"],
                "p": out["bootstrap"]["p"],
                "n": out["n"],
                "n_articles": out["n_articles"],
                "valid_replicates": valid_replicates(core.vectors["pt_gap"]),
            }
        ),
    )
    return out
