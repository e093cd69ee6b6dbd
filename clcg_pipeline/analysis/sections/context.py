"""Context gain (full_body - closed_book) and the context-scope probe."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p
from clcg_pipeline.analysis._context import SuiteContext, class_map
from clcg_pipeline.analysis._prepare import apply_rule, as_str, distinct_strs, score_values
from clcg_pipeline.storage import finite


def _isin(col: pd.Series, values: list[str]) -> np.ndarray:
    """``col.astype(str).isin(values)`` without turning millions of categorical rows into strings."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        hit = np.asarray(col.cat.categories.astype(str).isin(values))
        codes = col.cat.codes.to_numpy()
        return np.where(codes >= 0, hit[np.maximum(codes, 0)], False)
    return col.astype(str).isin(values).to_numpy()


def doc_sort_key(doc: str) -> tuple[int, float, str]:
    """Numeric ids first in numeric order, then the rest lexicographically."""
    try:
        return (0, float(doc), doc)
    except ValueError:
        return (1, 0.0, doc)


def context_gain(ctx: SuiteContext, scores: pd.DataFrame, metric: str) -> dict[str, Any]:
    """full_body minus closed_book on the study's selector items (valid responses only)."""
    # Masks rather than filtered copies: only the selector's few rows are ever materialized.
    cb_mask = _isin(scores["context_scope"], ["closed_book"])
    if not cb_mask.any():
        return {"status": "not available: no closed_book rows"}
    fb_mask = _isin(scores["context_scope"], ["full_body"])
    llm_mask = fb_mask & _isin(scores["item_source"], ["llm"])
    order = [m.id for m in ctx.config.models.evaluated]
    have = {str(m) for m in scores["model"].loc[llm_mask].unique()}
    chooser = next((m for m in order if m in have), min(have) if have else None)
    if chooser is None:
        return {"status": "not available: no full_body rows"}
    docs, items = _selector(
        scores.loc[llm_mask & _isin(scores["model"], [chooser]), ["doc_id", "item_id", "level"]]
    )
    selected = _isin(scores["item_id"], items)

    def valid(mask: np.ndarray) -> pd.DataFrame:
        sub = scores.loc[mask & selected]
        sub = apply_rule(sub, score_values(sub, metric), "B")
        return sub.assign(
            model=sub["model"].astype(str),
            item_id=sub["item_id"].astype(str),
            language=sub["language"].astype(str),
        )

    fb_rows = valid(fb_mask)
    fb = fb_rows.assign(doc_id=fb_rows["doc_id"].astype(str)).groupby(["model", "item_id", "language"])
    fb = fb.agg(open=("y", "mean"), n_open=("y", "size"), doc_id=("doc_id", "first")).reset_index()
    cb = valid(cb_mask).groupby(["model", "item_id"])["y"].agg(closed="mean", n_closed="size")
    joined = fb.merge(cb.reset_index(), on=["model", "item_id"], how="inner")
    joined["gain"] = joined["open"] - joined["closed"]
    by_lang, by_class = _gains(ctx, joined)
    return {
        "selector": {
            "model": chooser,
            "doc_ids": docs,
            "items": len(items),
            "rule": "first six doc ids "
            "(numeric sort), first two item ids (lexicographic) at each of L3, L4, L5",
        },
        "closed_book_mean": finite(cb["closed"].mean()) if len(cb) else None,
        "matched_rows": len(joined),
        "matched_pairs": len(joined),
        "by_language": by_lang,
        "by_class": by_class,
        "note": "descriptive; valid (status ok) responses only; closed_book averaged over languages and "
        "repetitions per model x item; class = mean of the gains of its languages with data, "
        "Portuguese in class 4, unclassified languages (Ayacucho Quechua) left out",
    }


def _selector(mine: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The selector's articles and items: first six doc ids, first two item ids per level L3-L5."""
    mine = mine.assign(
        doc_id=mine["doc_id"].astype(str),
        item_id=mine["item_id"].astype(str),
        level=mine["level"].astype(str),
    )
    docs = sorted(set(mine["doc_id"]), key=doc_sort_key)[:6]
    items: list[str] = []
    for d in docs:
        for lvl in ("L3", "L4", "L5"):
            ids = sorted(set(mine.loc[(mine["doc_id"] == d) & (mine["level"] == lvl), "item_id"]))
            items.extend(ids[:2])
    return docs, items


def _pair_counts(g: pd.DataFrame) -> dict[str, int]:
    # n: scored rows entering (full_body rows of the language(s) plus the closed_book rows of
    # the matched model x item pairs, each counted once).
    closed = g.drop_duplicates(["model", "item_id"])["n_closed"].sum()
    return {
        "n": int(g["n_open"].sum() + closed),
        "n_pairs": len(g),
        "n_articles": int(g["doc_id"].nunique()),
    }


def _gains(ctx: SuiteContext, joined: pd.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mean gain per language and per Joshi class, each added to the estimates as descriptive."""
    by_lang = {
        iso: {"gain": finite(g["gain"].mean()), **_pair_counts(g)}
        for iso, g in joined.groupby("language", sort=True)
    }
    by_class: dict[str, Any] = {}
    for cls, isos in class_map(ctx, False).items():
        langs = [i for i in isos if i in by_lang]  # only languages with data
        if langs:
            g = joined.loc[joined["language"].isin(langs)]
            # Class mean of the language gains, the rule of every class result (issue 9: class 4
            # is the mean of Basque and Portuguese), not a mean over the pooled pairs.
            gain = finite(np.mean([by_lang[i]["gain"] for i in langs]))
            by_class[str(cls)] = {"gain": gain, **_pair_counts(g), "languages": langs}
    descriptive = {"identifiable": True, "status": "descriptive (no interval)", "flags": []}
    for iso, v in by_lang.items():
        ctx.add("context_gain_language", iso, {"estimate": v["gain"], **v, **descriptive})
    for label, v in by_class.items():
        ctx.add("context_gain_class", f"class={label}", {"estimate": v["gain"], **v, **descriptive})
    return by_lang, by_class


def context_scope(ctx: SuiteContext, rows: pd.DataFrame, primary: str) -> dict[str, Any]:
    """CLCG under item_grounded vs the primary scope on the articles that have item_grounded rows."""
    ig = rows.loc[(rows["context_scope"] == "item_grounded").to_numpy()]
    if ig.empty:
        return {"status": "not available: no item_grounded rows"}
    docs = distinct_strs(ig["doc_id"])
    sub = rows.loc[
        rows["context_scope"].isin(["item_grounded", primary]).to_numpy()
        & _isin(rows["doc_id"], sorted(docs))
    ]
    sub = sub.assign(context_scope=as_str(sub["context_scope"]))
    # Every estimand here pools all models' rows: cells without the model (issue 37), so the
    # replicate arrays are languages x scopes wide, not models x languages x scopes.
    panel, arts = ctx.panel(sub, ["language", "context_scope"])
    fb = panel.micro(context_scope=primary)
    igv = panel.micro(context_scope="item_grounded")
    langs = [ctx.roles.reference, *ctx.roles.targets]
    diff = fb - igv
    out: dict[str, Any] = {
        "articles": len(arts),
        primary: ctx.stats(panel, fb, langs, context_scope=primary),
        "item_grounded": ctx.stats(panel, igv, langs, context_scope="item_grounded"),
        "difference": ctx.stats(panel, diff, langs, p=bootstrap_p(diff[1:], "two-sided"), sided="two-sided"),
        "difference_definition": f"{primary} - item_grounded",
    }
    ctx.add("context_scope_difference", "all", out["difference"])
    return out
