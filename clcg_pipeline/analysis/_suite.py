"""The whole estimator suite of STUDY.md section 6: ``study_results.json`` and ``estimates``.

Every bootstrapped section resamples the articles of its own rows with the study seed; when
two sections use the same article set (the usual case) their draws are identical, so
cross-section identities also hold replicate by replicate.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p, nanmean_rows, percentile_ci
from clcg_pipeline.analysis._gaps import GapPanel, Roles, build_panel
from clcg_pipeline.analysis._h1 import h1_core, roles_of
from clcg_pipeline.analysis._prepare import KEY_COLUMNS, apply_rule, check_columns, score_values, select_rows
from clcg_pipeline.config import LEVELS, ProjectConfig

# The ``estimates`` contract's columns (storage/_tables.py; a test keeps them equal). Not
# imported from there because ``clcg_pipeline.storage`` imports dagster, and ``clcg estimate``
# must start fast.
ESTIMATE_COLUMNS = ["estimand", "group", "estimate", "ci_low", "ci_high", "p", "p_adj", "n"]


@dataclass
class StudyResults:
    """``results``: the JSON document; ``estimates``: the long table; ``timings``: seconds per part."""

    results: dict[str, Any]
    estimates: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


@dataclass
class _Ctx:
    config: ProjectConfig
    roles: Roles
    replicates: int
    seed: int
    confidence: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    def summ(self, vec: np.ndarray, *, n: int | None = None, p: float | None = None) -> dict[str, Any]:
        """``{estimate, ci_low, ci_high}`` (+ ``n``, ``p`` when given) from a point-first vector."""
        low, high = percentile_ci(vec[1:], self.confidence)
        out: dict[str, Any] = {"estimate": _num(vec[0]), "ci_low": _num(low), "ci_high": _num(high)}
        if p is not None:
            out["p"] = _num(p)
        if n is not None:
            out["n"] = int(n)
        return out

    def add(self, estimand: str, group: str, s: dict[str, Any], *, n: int | None = None) -> None:
        """One row of the long ``estimates`` table."""
        self.rows.append(
            {
                "estimand": estimand,
                "group": group,
                "estimate": s.get("estimate"),
                "ci_low": s.get("ci_low"),
                "ci_high": s.get("ci_high"),
                "p": s.get("p"),
                "p_adj": None,
                "n": s.get("n", n),
            }
        )

    def panel(self, rows: pd.DataFrame, cell_cols: list[str]) -> tuple[GapPanel, np.ndarray]:
        return build_panel(rows, self.roles, cell_cols=cell_cols, replicates=self.replicates, seed=self.seed)


def run_suite(
    scores: pd.DataFrame,
    config: ProjectConfig,
    *,
    articles: pd.DataFrame | None = None,
    fertility: pd.DataFrame | None = None,
    replication_scores: pd.DataFrame | None = None,
    replicates: int | None = None,
    seed: int | None = None,
) -> StudyResults:
    """Run every estimator and test of STUDY.md section 6 on a ``scores`` frame."""
    study = config.study
    ctx = _Ctx(
        config=config,
        roles=roles_of(config.languages),
        replicates=int(replicates if replicates is not None else study.bootstrap_replicates),
        seed=int(seed if seed is not None else study.seed),
        confidence=study.confidence,
    )
    timings: dict[str, float] = {}

    @contextmanager
    def timed(name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start

    band = study.band
    with timed("prepare"):
        scores = _usable(scores, band.metric)
        panel_langs = [ctx.roles.reference, ctx.roles.baseline, *ctx.roles.targets]
        scores = _canonical_order(scores.loc[scores["language"].isin(panel_langs).to_numpy()], band.metric)
        rows_a = apply_rule(scores, score_values(scores, band.metric), "A")
        band_sel = {
            "levels": band.levels,
            "item_source": band.item_source,
            "context_scope": band.context_scope,
        }
        band_a = select_rows(rows_a, **band_sel)

    results: dict[str, Any] = {}
    with timed("h1"):
        core = h1_core(scores, config.languages, study, replicates=ctx.replicates, seed=ctx.seed, rows=band_a)
        results["h1"] = core.result
        p_h1 = _h1_estimates(ctx, core)
        results["language_net"] = _language_net(ctx, core)
    with timed("joshi_class"):
        results["joshi_class"] = _joshi_classes(ctx, core)
    with timed("h3"):
        results["h3"] = _h3(
            ctx, select_rows(rows_a, item_source=band.item_source, context_scope=band.context_scope)
        )
    with timed("h2"):
        h2, h2_rows = _h2(ctx, band_a, articles)
        results["h2"] = h2
    with timed("h4"):
        human = select_rows(rows_a, item_source="human", context_scope=band.context_scope)
        results["h4"] = _h4(ctx, band_a, human)
    with timed("parse_rule"):
        band_b = apply_rule(
            select_rows(scores, **band_sel), score_values(select_rows(scores, **band_sel), band.metric), "B"
        )
        results["parse_rule"] = _parse_rule(ctx, core, band_b)
    with timed("equivalence"):
        results["equivalence"] = _equivalence(ctx, core, band_a)
    with timed("mixed_effects"):
        results["mixed_effects"] = _mixed(ctx, band_a, h2_rows)
    with timed("multiplicity"):
        results["multiplicity"] = _multiplicity(ctx, results, p_h1)
    with timed("repetitions"):
        results["repetitions"] = _repetitions(ctx, band_a)
    with timed("context_gain"):
        results["context_gain"] = _context_gain(ctx, scores, band.metric)
    with timed("nomological"):
        results["nomological"] = _nomological(ctx, core.result, fertility)
    with timed("context_scope"):
        scope_rows = select_rows(rows_a, levels=band.levels, item_source=band.item_source)
        results["context_scope"] = _context_scope(ctx, scope_rows, band.context_scope)
    with timed("replication"):
        results["replication"] = _replication(ctx, core.result, replication_scores)

    results["settings"] = {
        "seed": ctx.seed,
        "replicates": ctx.replicates,
        "confidence": ctx.confidence,
        "band": band.model_dump(),
        "rule": "A",
        "config_hash": config.config_hash,
        "bootstrap": "article-cluster, percentile interval; each section resamples the articles of its rows",
        "n_rows": len(scores),
    }
    results["languages"] = [
        {
            "iso": lang.iso,
            "name": lang.name,
            "script": lang.script,
            "joshi_class": lang.joshi_class,
            "joshi_class_sensitivity": lang.joshi_class_sensitivity,
            "role": lang.role,
            "non_latin": lang.non_latin,
            "isolate": lang.isolate,
        }
        for lang in config.languages.languages
    ]
    results["warnings"] = _warnings(results)
    results = {"settings": results.pop("settings"), **results}
    estimates = pd.DataFrame(ctx.rows, columns=ESTIMATE_COLUMNS)
    _fill_p_adj(estimates, results["multiplicity"])
    estimates = _typed(estimates)
    # Flat index of every estimand (same content as the estimates table) so two runs can be
    # compared key by key.
    results["estimands"] = {
        f"{r.estimand}/{r.group}": {
            "estimate": _num(r.estimate),
            "ci_low": _num(r.ci_low),
            "ci_high": _num(r.ci_high),
            "p": _num(r.p),
            "p_adj": _num(r.p_adj),
            "n": None if pd.isna(r.n) else int(r.n),
        }
        for r in estimates.itertuples(index=False)
    }
    return StudyResults(results=results, estimates=estimates, timings=timings)


def _usable(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Validate columns; an empty frame (even one without columns) becomes an empty contract frame."""
    if len(scores) == 0:
        from clcg_pipeline.storage import empty_frame

        return empty_frame("scores")
    check_columns(scores, [*KEY_COLUMNS, metric])
    return scores


def _warnings(results: dict[str, Any]) -> list[str]:
    """Plain-language notes on estimands that are missing, not identifiable or not converged."""
    out: list[str] = []
    for name, section in results.items():
        if isinstance(section, dict) and str(section.get("status", "")).startswith("not"):
            out.append(f"{name}: {section['status']}")
    for model, entry in results.get("h2", {}).get("by_model", {}).items():
        if entry.get("status") == "not identifiable":
            out.append(f"h2 {model}: not identifiable (one memorability group)")
    for name, fit in results.get("mixed_effects", {}).items():
        if isinstance(fit, dict) and not fit.get("converged", True):
            out.append(f"mixed model {name}: {fit.get('status', 'not converged')}; it gives no support")
    if results.get("multiplicity", {}).get("not_available"):
        missing = ", ".join(results["multiplicity"]["not_available"])
        out.append(f"BH family: not available and left out: {missing}")
    return out


def _canonical_order(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows sorted by their key and score, so every float sum is independent of input row order."""
    if scores.empty:
        return scores
    from clcg_pipeline.analysis._bootstrap import sorted_factorize

    keys = [
        sorted_factorize(scores[c])[0] for c in ("model", "language", "doc_id", "item_id", "context_scope")
    ]
    keys.append(sorted_factorize(scores["status"])[0])
    keys.append(scores["rep"].to_numpy())
    keys.append(scores[metric].to_numpy(dtype=np.float64, na_value=np.nan))
    order = np.lexsort(keys[::-1])
    return scores.iloc[order].reset_index(drop=True)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in ("estimate", "ci_low", "ci_high", "p", "p_adj"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("float64")
    out["n"] = pd.array(out["n"], dtype="Int64")
    out["estimand"] = out["estimand"].astype(str)
    out["group"] = out["group"].astype(str)
    return out


# --- H1 and its breakdowns -------------------------------------------------------------


def _h1_estimates(ctx: _Ctx, core: Any) -> dict[str, float | None]:
    """Add the H1 family to the estimates table; return the one-sided p of each H1 test."""
    v, r = core.vectors, core.result
    p: dict[str, float | None] = {"all": bootstrap_p(v["h1_micro"][1:], "greater")}
    r["h1_micro"]["p"] = _num(p["all"])
    counts = r["n"]
    for key in ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net"):
        n = counts["english"] + (counts["baseline"] if key == "pt_gap" else counts["target"])
        ctx.add(key, "all", {**r[key], "p": _num(p["all"]) if key == "h1_micro" else None}, n=n)
    for iso, s in r["by_language"].items():
        ctx.add("clcg_language", iso, s)
    for model, s in r["by_model"].items():
        pm = bootstrap_p(v[f"h1_micro/{model}"][1:], "greater")
        p[model] = pm
        s["h1_micro"]["p"] = _num(pm)
        n_m = core.panel.n(model=model)
        ctx.add("h1_micro_model", model, s["h1_micro"], n=n_m)
        ctx.add("pt_gap_model", model, s["pt_gap"], n=n_m)
        ctx.add("macro_net_model", model, s["macro_net"], n=n_m)
    return p


def _language_net(ctx: _Ctx, core: Any) -> dict[str, Any]:
    """Net_l = CLCG_l - PT gap (= mean_pt - mean_l), computed within each replicate."""
    out: dict[str, Any] = {}
    for iso in core.result["by_language"]:
        vec = core.vectors[f"clcg/{iso}"] - core.vectors["pt_gap"]
        out[iso] = ctx.summ(vec, n=core.panel.n(language=iso))
        ctx.add("net_language", iso, out[iso])
    return out


def _class_map(ctx: _Ctx, sensitivity: bool) -> dict[int, list[str]]:
    classes: dict[int, list[str]] = {}
    for iso in ctx.roles.targets:
        lang = ctx.config.languages.get(iso)
        cls = lang.joshi_class
        if cls is None and sensitivity:
            cls = lang.joshi_class_sensitivity
        if cls is not None:
            classes.setdefault(int(cls), []).append(iso)
    return dict(sorted(classes.items()))


def _joshi_classes(ctx: _Ctx, core: Any) -> dict[str, Any]:
    """Class mean of language CLCGs (raw and net) for the primary and sensitivity mappings."""
    present = set(core.result["by_language"])
    out: dict[str, Any] = {
        "unclassified": [
            iso for iso in ctx.roles.targets if ctx.config.languages.get(iso).joshi_class is None
        ],
    }
    for name, sens in (("primary", False), ("sensitivity", True)):
        table: dict[str, Any] = {}
        for cls, isos in _class_map(ctx, sens).items():
            langs = [i for i in isos if i in present]
            if not langs:
                continue
            raw = nanmean_rows([core.vectors[f"clcg/{i}"] for i in langs])
            net = raw - core.vectors["pt_gap"]
            n = core.panel.n(language=langs)
            entry = {"languages": langs, "raw": ctx.summ(raw, n=n), "net": ctx.summ(net, n=n)}
            table[str(cls)] = entry
            ctx.add(f"class_raw_{name}", f"class={cls}", entry["raw"])
            ctx.add(f"class_net_{name}", f"class={cls}", entry["net"])
        out[name] = table
    return out


# --- H3 -----------------------------------------------------------------------------------


def _h3(ctx: _Ctx, rows: pd.DataFrame) -> dict[str, Any]:
    """Within-level standardized CLCG per level, its slope on ordered level, raw per-level CLCG."""
    if rows.empty:
        return {"status": "not available: no rows"}
    level = rows["level"].astype(str).to_numpy()
    y = rows["y"].to_numpy()
    z = np.full(len(rows), np.nan)
    standardization: dict[str, Any] = {}
    for lvl in LEVELS:
        m = level == lvl
        if m.sum() < 2:
            continue
        mu, sd = float(y[m].mean()), float(y[m].std(ddof=1))
        standardization[lvl] = {"mean": mu, "sd": sd}
        if sd > 0:
            z[m] = (y[m] - mu) / sd
    zrows = rows.assign(y=z, level=level).loc[np.isfinite(z)]
    zpanel, _ = ctx.panel(zrows, ["model", "language", "level"])
    rpanel, _ = ctx.panel(rows.assign(level=level), ["model", "language", "level"])
    levels = [lvl for lvl in LEVELS if zpanel.n(level=lvl) > 0]
    std: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    vecs = []
    for lvl in levels:
        zv = zpanel.micro(level=lvl)
        vecs.append(zv)
        std[lvl] = ctx.summ(zv, n=zpanel.n(level=lvl))
        raw[lvl] = ctx.summ(rpanel.micro(level=lvl), n=rpanel.n(level=lvl))
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
        out["slope"] = ctx.summ(slope, p=p, n=zpanel.n(level=levels))
        out["slope"]["alternative"] = "greater (one-sided)"
        out["slope"]["levels"] = levels
        ctx.add("h3_slope", "all", out["slope"])
    else:
        out["slope"] = {
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "p": None,
            "status": "fewer than 2 levels",
        }
    return out


# --- H2 -----------------------------------------------------------------------------------


def _first_published(articles: pd.DataFrame) -> pd.Series:
    check_columns(articles, ["doc_id", "published"], source="articles")
    dates = pd.to_datetime(articles["published"], errors="coerce")
    return pd.Series(dates.to_numpy(), index=articles["doc_id"].astype(str)).groupby(level=0).min()


def _h2(
    ctx: _Ctx, band: pd.DataFrame, articles: pd.DataFrame | None
) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """CLCG(memorizable) - CLCG(new), pooled, per model (where identifiable) and per class."""
    if articles is None or len(articles) == 0:
        return {"status": "not identifiable: no article dates"}, None
    published = _first_published(articles)
    cutoffs = {
        m.id: pd.Timestamp(m.knowledge_cutoff)
        for m in ctx.config.models.models
        if m.knowledge_cutoff is not None
    }
    doc = band["doc_id"].astype(str)
    pub = doc.map(published).to_numpy(dtype="datetime64[ns]")
    cut = band["model"].astype(str).map(cutoffs).to_numpy(dtype="datetime64[ns]")
    known = ~np.isnat(pub) & ~np.isnat(cut)
    rows = band.loc[known].assign(memo=np.where(pub[known] < cut[known], "memorizable", "new"))
    out: dict[str, Any] = {
        "definition": "memorizable when the article's first publication date precedes the model's "
        "knowledge cutoff, else new",
        "alternative": "less (one-sided: memorizable narrows the gap)",
        "rows_without_date_or_cutoff": int((~known).sum()),
    }
    if rows.empty:
        return {**out, "status": "not identifiable: no dated rows"}, None
    panel, _ = ctx.panel(rows, ["model", "language", "memo"])
    en, tg = ctx.roles.reference, list(ctx.roles.targets)

    def identifiable(**where: object) -> bool:
        return all(
            panel.n(language=lang, memo=g, **where) > 0 for g in ("memorizable", "new") for lang in (en, tg)
        )

    def contrast(**where: object) -> dict[str, Any]:
        mem = panel.micro(memo="memorizable", **where)
        new = panel.micro(memo="new", **where)
        diff = mem - new
        return {
            "memorizable": ctx.summ(mem, n=panel.n(memo="memorizable", **where)),
            "new": ctx.summ(new, n=panel.n(memo="new", **where)),
            "difference": ctx.summ(diff, p=bootstrap_p(diff[1:], "less"), n=panel.n(**where)),
        }

    if identifiable():
        out["pooled"] = contrast()
        out["status"] = "estimated"
        ctx.add("h2_difference", "all", out["pooled"]["difference"])
        ctx.add("h2_clcg_memorizable", "all", out["pooled"]["memorizable"])
        ctx.add("h2_clcg_new", "all", out["pooled"]["new"])
    else:
        out["pooled"] = {"status": "not identifiable: one memorability group"}
        out["status"] = "not identifiable"
    by_model: dict[str, Any] = {}
    for model in sorted(set(rows["model"].astype(str))):
        n_mem = panel.n(model=model, memo="memorizable")
        n_new = panel.n(model=model, memo="new")
        if identifiable(model=model):
            by_model[model] = contrast(model=model)
            ctx.add("h2_difference_model", model, by_model[model]["difference"])
        else:
            by_model[model] = {"status": "not identifiable", "n_memorizable": n_mem, "n_new": n_new}
    out["by_model"] = by_model
    by_class: dict[str, Any] = {}
    for cls, isos in _class_map(ctx, False).items():

        def cls_contrast(group: str, isos: list[str] = isos) -> np.ndarray:
            return panel.mean(en, memo=group) - panel.mean(isos, memo=group)

        if all(
            panel.n(language=isos, memo=g) > 0 and panel.n(language=en, memo=g) > 0
            for g in ("memorizable", "new")
        ):
            diff = cls_contrast("memorizable") - cls_contrast("new")
            by_class[str(cls)] = ctx.summ(diff, n=panel.n(language=[en, *isos]))
            ctx.add("h2_difference_class", f"class={cls}", by_class[str(cls)])
        else:
            by_class[str(cls)] = {"status": "not identifiable"}
    out["by_class_sensitivity"] = by_class
    return out, rows


# --- H4, parse rule, equivalence, mixed models, multiplicity ---------------------------------


def _h4(ctx: _Ctx, llm: pd.DataFrame, human: pd.DataFrame) -> dict[str, Any]:
    """CLCG(human) - CLCG(llm primary band), two-sided."""
    if human.empty or llm.empty:
        return {"status": "not available: needs both human and llm rows"}
    rows = pd.concat(
        [
            llm[["doc_id", "model", "language", "y"]].assign(grp="llm"),
            human[["doc_id", "model", "language", "y"]].assign(grp="human"),
        ],
        ignore_index=True,
    )
    rows["model"] = rows["model"].astype(str)
    rows["language"] = rows["language"].astype(str)
    rows["doc_id"] = rows["doc_id"].astype(str)
    panel, _ = ctx.panel(rows, ["model", "language", "grp"])
    h = panel.micro(grp="human")
    g = panel.micro(grp="llm")
    diff = h - g
    out = {
        "human": ctx.summ(h, n=panel.n(grp="human")),
        "llm": ctx.summ(g, n=panel.n(grp="llm")),
        "difference": ctx.summ(diff, p=bootstrap_p(diff[1:], "two-sided"), n=panel.n()),
        "alternative": "two-sided",
        "note": "human: every human item under the band's context scope; llm: the primary band",
    }
    ctx.add("h4_difference", "all", out["difference"])
    ctx.add("h4_clcg", "human", out["human"])
    ctx.add("h4_clcg", "llm", out["llm"])
    return out


def _parse_rule(ctx: _Ctx, core_a: Any, band_b: pd.DataFrame) -> dict[str, Any]:
    study = ctx.config.study
    core_b = h1_core(
        band_b, ctx.config.languages, study, replicates=ctx.replicates, seed=ctx.seed, rule="B", rows=band_b
    )
    keys = ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net")
    out: dict[str, Any] = {
        "A": {k: core_a.result[k] for k in keys} | {"n": core_a.result["n"]},
        "B": {k: core_b.result[k] for k in keys} | {"n": core_b.result["n"]},
    }
    for k in keys:
        ctx.add(f"{k}_rule_b", "all", core_b.result[k])
    if core_a.result["n"]["articles"] == core_b.result["n"]["articles"]:
        diff = core_a.vectors["h1_micro"] - core_b.vectors["h1_micro"]
        out["difference_h1_micro"] = ctx.summ(diff)
    return out


def _equivalence(ctx: _Ctx, core: Any, band: pd.DataFrame) -> dict[str, Any]:
    from clcg_pipeline.analysis._stats import bootstrap_tost, paired_tost

    bounds = ctx.config.study.equivalence_bounds
    out: dict[str, Any] = {
        "contrast": "EN - PT (pt_gap)",
        "bootstrap": bootstrap_tost(core.vectors["pt_gap"][1:], bounds, ctx.confidence),
    }
    out["estimate"] = _num(core.vectors["pt_gap"][0])
    sub = band.loc[band["language"].isin([ctx.roles.reference, ctx.roles.baseline]).to_numpy()]
    if len(sub):
        means = sub.assign(
            language=sub["language"].astype(str), doc_id=sub["doc_id"].astype(str)
        ).pivot_table(index="doc_id", columns="language", values="y", aggfunc="mean", observed=True)
        if {ctx.roles.reference, ctx.roles.baseline} <= set(means.columns):
            out["paired_article_means"] = paired_tost(
                means[ctx.roles.reference].to_numpy(), means[ctx.roles.baseline].to_numpy(), bounds
            )
    out["equivalent"] = out["bootstrap"]["equivalent"]
    out["note"] = "failure to show equivalence is a finding (a measurable cost outside English), not an error"
    ctx.add("tost_en_pt", "all", {"estimate": out["estimate"], "p": out["bootstrap"]["p"]})
    return out


def _mixed(ctx: _Ctx, band: pd.DataFrame, h2_rows: pd.DataFrame | None) -> dict[str, Any]:
    from clcg_pipeline.analysis._mixed import AGGREGATION, mixed_h1, mixed_h2

    tg = list(ctx.roles.targets)
    out: dict[str, Any] = {
        "aggregation": AGGREGATION,
        "h1": mixed_h1(band, ctx.roles.reference, tg, ctx.confidence),
    }
    if h2_rows is not None and len(h2_rows):
        out["h2"] = mixed_h2(h2_rows, ctx.roles.reference, tg, ctx.confidence)
        est, p = out["h2"].get("estimate"), out["h2"].get("p")
        if est is not None and p is not None:
            # The directional hypothesis (memorizable narrows the gap) is tested one-sided.
            out["h2"]["p_one_sided_less"] = p / 2 if est < 0 else 1 - p / 2
    else:
        out["h2"] = {"status": "not identifiable: no memorability groups", "converged": False}
    for name in ("h1", "h2"):
        fit = out[name]
        ctx.add(
            f"mixed_{name}",
            "all",
            {
                "estimate": fit.get("estimate"),
                "ci_low": fit.get("ci_low"),
                "ci_high": fit.get("ci_high"),
                "p": fit.get("p"),
            },
            n=fit.get("n_cells"),
        )
    return out


def _multiplicity(ctx: _Ctx, results: dict[str, Any], p_h1: dict[str, float | None]) -> dict[str, Any]:
    """BH over the study's 10-test family (fewer when a test is not available, listed as such)."""
    from clcg_pipeline.analysis._stats import benjamini_hochberg

    tests: dict[str, float | None] = {"h1_micro/all": p_h1.get("all")}
    for model in (m.id for m in ctx.config.models.models):
        tests[f"h1_micro_model/{model}"] = p_h1.get(model)
    for model in p_h1:
        if model != "all" and f"h1_micro_model/{model}" not in tests:
            tests[f"h1_micro_model/{model}"] = p_h1[model]
    h2 = results["h2"].get("pooled", {})
    tests["h2_difference/all"] = h2.get("difference", {}).get("p") if isinstance(h2, dict) else None
    mixed_h2 = results["mixed_effects"]["h2"]
    # A non-converged mixed model gives no support, so it does not enter the family.
    tests["mixed_h2/all"] = mixed_h2.get("p_one_sided_less") if mixed_h2.get("converged") else None
    tests["h3_slope/all"] = results["h3"].get("slope", {}).get("p")
    tests["h4_difference/all"] = results["h4"].get("difference", {}).get("p")
    return benjamini_hochberg({k: _num(v) for k, v in tests.items()})


def _fill_p_adj(estimates: pd.DataFrame, family: dict[str, Any]) -> None:
    for row in family["tests"]:
        estimand, group = row["test"].split("/", 1)
        mask = (estimates["estimand"] == estimand) & (estimates["group"] == group)
        estimates.loc[mask, "p_adj"] = row["p_adj"]
        if estimand == "mixed_h2":
            estimates.loc[mask, "p"] = row["p"]


# --- repetitions, context gain, nomological network, probes ----------------------------------


def _repetitions(ctx: _Ctx, band: pd.DataFrame) -> dict[str, Any]:
    """CLCG per repetition on the stability articles; agreement of model rankings across runs."""
    from clcg_pipeline.analysis._stats import kendalls_w, spearman

    if band.empty:
        return {"status": "not available: no rows"}
    reps_per_doc = band.groupby(band["doc_id"].astype(str), observed=True)["rep"].nunique()
    stable = reps_per_doc.index[reps_per_doc > 1]
    if len(stable) == 0:
        return {"status": "not available: no article has more than one repetition"}
    rows = band.loc[band["doc_id"].astype(str).isin(stable).to_numpy()]
    rows = rows.assign(rep=rows["rep"].astype(str))
    panel, _ = ctx.panel(rows, ["model", "language", "rep"])
    reps = sorted(set(rows["rep"]), key=int)
    models = sorted(set(rows["model"].astype(str)))
    per_rep: dict[str, Any] = {}
    points = []
    grid = np.full((len(reps), len(models)), np.nan)
    for i, r in enumerate(reps):
        per_rep[r] = ctx.summ(panel.micro(rep=r), n=panel.n(rep=r))
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
        "articles": len(stable),
        "per_repetition": per_rep,
        "summary": {
            "mean": _num(pts.mean()) if pts.size else None,
            "sd": _num(pts.std(ddof=1)) if pts.size > 1 else None,
            "min": _num(pts.min()) if pts.size else None,
            "max": _num(pts.max()) if pts.size else None,
        },
        "by_model": {m: {r: _num(grid[i, j]) for i, r in enumerate(reps)} for j, m in enumerate(models)},
        "kendalls_w": kendalls_w(complete) if complete.shape[1] >= 2 else None,
        "pairwise_spearman": pairs,
        "mean_pairwise_spearman": _num(np.mean(rhos)) if rhos else None,
    }


def _doc_sort_key(doc: str) -> tuple[int, float, str]:
    """Numeric ids first in numeric order, then the rest lexicographically."""
    try:
        return (0, float(doc), doc)
    except ValueError:
        return (1, 0.0, doc)


def _context_gain(ctx: _Ctx, scores: pd.DataFrame, metric: str) -> dict[str, Any]:
    """full_body minus closed_book on the study's selector items (valid responses only)."""
    cb_all = select_rows(scores, context_scope="closed_book")
    if cb_all.empty:
        return {"status": "not available: no closed_book rows"}
    fb_llm = select_rows(scores, context_scope="full_body", item_source="llm")
    order = [m.id for m in ctx.config.models.models]
    have = set(fb_llm["model"].astype(str))
    chooser = next((m for m in order if m in have), min(have) if have else None)
    if chooser is None:
        return {"status": "not available: no full_body rows"}
    mine = fb_llm.loc[(fb_llm["model"].astype(str) == chooser).to_numpy(), ["doc_id", "item_id", "level"]]
    mine = mine.assign(
        doc_id=mine["doc_id"].astype(str),
        item_id=mine["item_id"].astype(str),
        level=mine["level"].astype(str),
    )
    docs = sorted(set(mine["doc_id"]), key=_doc_sort_key)[:6]
    items: list[str] = []
    for d in docs:
        for lvl in ("L3", "L4", "L5"):
            ids = sorted(set(mine.loc[(mine["doc_id"] == d) & (mine["level"] == lvl), "item_id"]))
            items.extend(ids[:2])

    def valid(frame: pd.DataFrame) -> pd.DataFrame:
        sub = frame.loc[frame["item_id"].astype(str).isin(items).to_numpy()]
        sub = apply_rule(sub, score_values(sub, metric), "B")
        return sub.assign(
            model=sub["model"].astype(str),
            item_id=sub["item_id"].astype(str),
            language=sub["language"].astype(str),
        )

    fb = (
        valid(select_rows(scores, context_scope="full_body"))
        .groupby(["model", "item_id", "language"])["y"]
        .mean()
    )
    cb = valid(cb_all).groupby(["model", "item_id"])["y"].mean().rename("closed")
    joined = fb.rename("open").reset_index().merge(cb.reset_index(), on=["model", "item_id"], how="inner")
    joined["gain"] = joined["open"] - joined["closed"]
    by_lang = {
        iso: {"gain": _num(g["gain"].mean()), "n": len(g)} for iso, g in joined.groupby("language", sort=True)
    }
    by_class: dict[str, Any] = {}
    for cls, isos in _class_map(ctx, False).items():
        g = joined.loc[joined["language"].isin(isos)]
        if len(g):
            by_class[str(cls)] = {"gain": _num(g["gain"].mean()), "n": len(g), "languages": isos}
    for iso, v in by_lang.items():
        ctx.add("context_gain_language", iso, {"estimate": v["gain"], "n": v["n"]})
    for cls, v in by_class.items():
        ctx.add("context_gain_class", f"class={cls}", {"estimate": v["gain"], "n": v["n"]})
    return {
        "selector": {
            "model": chooser,
            "doc_ids": docs,
            "items": len(items),
            "rule": "first six doc ids "
            "(numeric sort), first two item ids (lexicographic) at each of L3, L4, L5",
        },
        "closed_book_mean": _num(cb.mean()) if len(cb) else None,
        "matched_rows": len(joined),
        "by_language": by_lang,
        "by_class": by_class,
        "note": "descriptive; valid (status ok) responses only; closed_book averaged over languages and "
        "repetitions per model x item; Ayacucho Quechua (unclassified) excluded from class means",
    }


def _nomological(ctx: _Ctx, h1: dict[str, Any], fertility: pd.DataFrame | None) -> dict[str, Any]:
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
    kw = {"resamples": ctx.replicates, "seed": ctx.seed, "confidence": ctx.confidence}
    y = prim["clcg"].to_numpy(dtype=float)
    out: dict[str, Any] = {"languages": prim["language"].tolist(), "spearman": {}}
    for var in ("joshi_class", "fertility", "non_latin", "isolate"):
        res = spearman_bootstrap(prim[var].to_numpy(dtype=float), y, **kw)
        out["spearman"][var] = res
        ctx.add(
            "nomological_spearman",
            var,
            {
                "estimate": res["rho"],
                "ci_low": res.get("ci_low"),
                "ci_high": res.get("ci_high"),
                "p": res["p"],
                "n": res["n"],
            },
        )
    sres = spearman_bootstrap(
        sens["joshi_class"].to_numpy(dtype=float), sens["clcg"].to_numpy(dtype=float), **kw
    )
    out["spearman_joshi_sensitivity"] = {**sres, "languages": sens["language"].tolist()}
    ctx.add(
        "nomological_spearman_sensitivity",
        "joshi_class",
        {
            "estimate": sres["rho"],
            "ci_low": sres.get("ci_low"),
            "ci_high": sres.get("ci_high"),
            "p": sres["p"],
            "n": sres["n"],
        },
    )
    jc = prim["joshi_class"].to_numpy(dtype=float)
    out["partial_spearman_on_joshi"] = {
        var: partial_spearman(prim[var].to_numpy(dtype=float), y, jc) for var in ("fertility", "non_latin")
    }
    preds = {v: prim[v].to_numpy(dtype=float) for v in ("joshi_class", "fertility", "non_latin")}
    out["standardized_ols"] = standardized_ols(y, preds)
    out["note"] = "exploratory; language-level resamples for CIs; Portuguese enters with its PT gap"
    return out


def _context_scope(ctx: _Ctx, rows: pd.DataFrame, primary: str) -> dict[str, Any]:
    """CLCG under item_grounded vs the primary scope on the articles that have item_grounded rows."""
    ig = rows.loc[(rows["context_scope"] == "item_grounded").to_numpy()]
    if ig.empty:
        return {"status": "not available: no item_grounded rows"}
    docs = set(ig["doc_id"].astype(str))
    sub = rows.loc[
        rows["context_scope"].isin(["item_grounded", primary]).to_numpy()
        & rows["doc_id"].astype(str).isin(docs).to_numpy()
    ]
    sub = sub.assign(context_scope=sub["context_scope"].astype(str))
    panel, arts = ctx.panel(sub, ["model", "language", "context_scope"])
    fb = panel.micro(context_scope=primary)
    igv = panel.micro(context_scope="item_grounded")
    out = {
        "articles": len(arts),
        primary: ctx.summ(fb, n=panel.n(context_scope=primary)),
        "item_grounded": ctx.summ(igv, n=panel.n(context_scope="item_grounded")),
        "difference": ctx.summ(fb - igv, p=bootstrap_p((fb - igv)[1:], "two-sided")),
        "difference_definition": f"{primary} - item_grounded",
    }
    ctx.add("context_scope_difference", "all", out["difference"])
    return out


def _replication(ctx: _Ctx, h1: dict[str, Any], other: pd.DataFrame | None) -> dict[str, Any]:
    """The H1 estimators on a second corpus and the Spearman of the language rankings."""
    from clcg_pipeline.analysis._stats import spearman_bootstrap

    if other is None or len(other) == 0:
        return {"status": "not available: no replication scores"}
    study = ctx.config.study
    other = _usable(other, study.band.metric)
    core = h1_core(other, ctx.config.languages, study, replicates=ctx.replicates, seed=ctx.seed)
    band_note = "study band"
    if core.result["n"]["english"] == 0:
        rows = apply_rule(
            select_rows(other, item_source=study.band.item_source, context_scope=study.band.context_scope),
            score_values(
                select_rows(
                    other, item_source=study.band.item_source, context_scope=study.band.context_scope
                ),
                study.band.metric,
            ),
            "A",
        )
        core = h1_core(
            other, ctx.config.languages, study, replicates=ctx.replicates, seed=ctx.seed, rows=rows
        )
        band_note = "all levels (no rows in the study band)"
    common = [iso for iso in h1["by_language"] if iso in core.result["by_language"]]
    a = np.array([h1["by_language"][i]["estimate"] for i in common], dtype=float)
    b = np.array([core.result["by_language"][i]["estimate"] for i in common], dtype=float)
    rho = spearman_bootstrap(a, b, resamples=ctx.replicates, seed=ctx.seed, confidence=ctx.confidence)
    ctx.add(
        "replication_spearman",
        "languages",
        {
            "estimate": rho["rho"],
            "ci_low": rho.get("ci_low"),
            "ci_high": rho.get("ci_high"),
            "p": rho["p"],
            "n": rho["n"],
        },
    )
    ctx.add("replication_h1_micro", "all", core.result["h1_micro"])
    return {"h1": core.result, "rows": band_note, "languages": common, "spearman": rho}
