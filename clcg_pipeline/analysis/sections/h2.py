"""H2: memorability (CLCG memorizable - CLCG new), pooled, per model and per class."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import bootstrap_p
from clcg_pipeline.analysis._context import SuiteContext, class_map
from clcg_pipeline.analysis._prepare import check_columns, distinct_strs, map_strs


def first_published(articles: pd.DataFrame) -> pd.Series:
    check_columns(articles, ["doc_id", "published"], source="articles")
    dates = pd.to_datetime(articles["published"], errors="coerce")
    return pd.Series(dates.to_numpy(), index=articles["doc_id"].astype(str)).groupby(level=0).min()


_GROUPS = ("memorizable", "new")


def h2(
    ctx: SuiteContext, band: pd.DataFrame, articles: pd.DataFrame | None
) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """CLCG(memorizable) - CLCG(new), pooled, per model (where identifiable) and per class."""
    if articles is None or len(articles) == 0:
        return {
            "status": "not identifiable: no article dates",
            "identifiable": False,
            "reason": "no article dates",
        }, None
    cutoffs = {
        m.id: pd.Timestamp(m.knowledge_cutoff)
        for m in ctx.config.models.evaluated
        if m.knowledge_cutoff is not None
    }
    rows, undated = _memorability_rows(band, first_published(articles), cutoffs)
    out: dict[str, Any] = {
        "definition": "memorizable when the article's first publication date precedes the model's "
        "knowledge cutoff, else new",
        "alternative": "less (one-sided: memorizable narrows the gap)",
        "rows_without_date_or_cutoff": undated,
    }
    if rows.empty:
        return {
            **out,
            "status": "not identifiable: no dated rows",
            "identifiable": False,
            "reason": "no row has both an article date and a model knowledge cutoff",
        }, None
    groups = _Memorability(ctx, rows)
    if groups.identifiable():
        out["pooled"] = groups.contrast()
        out["status"] = "estimated"
        ctx.add("h2_difference", "all", out["pooled"]["difference"])
        ctx.add("h2_clcg_memorizable", "all", out["pooled"]["memorizable"])
        ctx.add("h2_clcg_new", "all", out["pooled"]["new"])
    else:
        reason = groups.missing_group()
        out["pooled"] = {"status": f"not identifiable: {reason}", "identifiable": False, "reason": reason}
        out["status"] = "not identifiable"
    out["by_model"] = _by_model(ctx, groups, rows, band, cutoffs)
    out["by_class_sensitivity"] = _by_class(ctx, groups)
    return out, rows


def _memorability_rows(
    band: pd.DataFrame, published: pd.Series, cutoffs: dict[str, pd.Timestamp]
) -> tuple[pd.DataFrame, int]:
    """Band rows with both dates, labelled ``memo``; and how many rows lack a date or cutoff."""
    # Looked up per distinct article and model: a string per band row was most of the step.
    pub = map_strs(band["doc_id"], published).to_numpy(dtype="datetime64[ns]")
    cut = map_strs(band["model"], cutoffs).to_numpy(dtype="datetime64[ns]")
    known = ~np.isnat(pub) & ~np.isnat(cut)
    # Only the columns the memorability panel and the mixed model read, copied once (``assign``
    # on the filtered band copied every column of millions of rows twice).
    kept = band.loc[known, [c for c in _ROW_COLUMNS if c in band.columns]]
    data = {c: kept[c].array for c in kept.columns}
    # A categorical label: a string object per row (as an object column holds them) cost
    # more memory than every other column of these rows together.
    memo_codes = np.where(pub[known] < cut[known], 0, 1).astype(np.int8)
    data["memo"] = pd.Categorical.from_codes(memo_codes, categories=list(_GROUPS))
    return pd.DataFrame(data, index=kept.index, copy=False), int((~known).sum())


_ROW_COLUMNS = ("model", "language", "doc_id", "item_id", "y")


class _Memorability:
    """The memorability panel and the contrasts every part of H2 takes on it."""

    def __init__(self, ctx: SuiteContext, rows: pd.DataFrame) -> None:
        self.ctx = ctx
        self.panel, _ = ctx.panel(rows, ["model", "language", "memo"])
        self.en, self.tg = ctx.roles.reference, list(ctx.roles.targets)
        self.langs = [self.en, *self.tg]

    def identifiable(self, **where: object) -> bool:
        return all(
            self.panel.n(language=lang, memo=g, **where) > 0 for g in _GROUPS for lang in (self.en, self.tg)
        )

    def contrast(self, **where: object) -> dict[str, Any]:
        ctx, panel, langs = self.ctx, self.panel, self.langs
        mem = panel.micro(memo="memorizable", **where)
        new = panel.micro(memo="new", **where)
        diff = mem - new
        # p and sided passed by name (the defaults, for the two means): the type checker then
        # knows the column filters in ``where`` cannot fill them.
        return {
            "memorizable": ctx.stats(
                panel, mem, langs, p=None, sided="one-sided", memo="memorizable", **where
            ),
            "new": ctx.stats(panel, new, langs, p=None, sided="one-sided", memo="new", **where),
            "difference": ctx.stats(
                panel, diff, langs, p=bootstrap_p(diff[1:], "less"), sided="one-sided", **where
            ),
        }

    def missing_group(self, **where: object) -> str:
        groups = [g for g in _GROUPS if self.panel.n(language=self.langs, memo=g, **where) > 0]
        if not groups:
            return "no dated rows"
        if len(groups) == 1:
            return f"only {groups[0]} rows (both memorability groups are needed, in English and targets)"
        return "a memorability group lacks English or target rows"


def _by_model(
    ctx: SuiteContext,
    groups: _Memorability,
    rows: pd.DataFrame,
    band: pd.DataFrame,
    cutoffs: dict[str, pd.Timestamp],
) -> dict[str, Any]:
    """Every model of the config is listed; one that cannot be classified says why."""
    by_model: dict[str, Any] = {}
    with_rows = distinct_strs(rows["model"])
    band_models = distinct_strs(band["model"])
    for model in sorted({m.id for m in ctx.config.models.evaluated} | with_rows):
        if model in with_rows and groups.identifiable(model=model):
            by_model[model] = groups.contrast(model=model)
            ctx.add("h2_difference_model", model, by_model[model]["difference"])
            # Its two groups too, as the pooled ones: the estimates table then holds every H2
            # estimate the document shows, and what it says is not identifiable is all of it.
            ctx.add("h2_clcg_memorizable_model", model, by_model[model]["memorizable"])
            ctx.add("h2_clcg_new_model", model, by_model[model]["new"])
            continue
        if model in with_rows:
            reason = groups.missing_group(model=model)
        elif model in band_models and model not in cutoffs:
            reason = "no knowledge_cutoff for this model in models.yaml"
        elif model in band_models:
            reason = "no article of this model's rows has a publication date"
        else:
            reason = "no scored rows for this model in the analysis band"
        panel = groups.panel
        by_model[model] = {
            "status": "not identifiable",
            "identifiable": False,
            "reason": reason,
            "n_memorizable": panel.n(model=model, memo="memorizable") if model in with_rows else 0,
            "n_new": panel.n(model=model, memo="new") if model in with_rows else 0,
        }
    return by_model


def _by_class(ctx: SuiteContext, groups: _Memorability) -> dict[str, Any]:
    """The memorability difference of each Joshi class's gap (primary class mapping)."""
    panel, en = groups.panel, groups.en
    by_class: dict[str, Any] = {}
    for cls, mapped in class_map(ctx, False).items():
        isos = [i for i in mapped if panel.n(language=i) > 0]  # only languages with data
        if not isos:
            continue

        def cls_contrast(group: str, isos: list[str] = isos) -> np.ndarray:
            return panel.mean(en, memo=group) - panel.mean(isos, memo=group)

        if all(panel.n(language=isos, memo=g) > 0 and panel.n(language=en, memo=g) > 0 for g in _GROUPS):
            diff = cls_contrast("memorizable") - cls_contrast("new")
            by_class[str(cls)] = {**ctx.stats(panel, diff, [en, *isos]), "languages": isos}
            ctx.add("h2_difference_class", f"class={cls}", by_class[str(cls)])
        else:
            by_class[str(cls)] = {
                "status": "not identifiable",
                "identifiable": False,
                "reason": "a memorability group lacks English or class rows",
                "languages": isos,
            }
    return by_class
