"""Paired model contrasts and model ranks with bootstrap intervals (issue 21).

Every pair of models is compared on the (language, article, item) units both answered, with
the suite's article draws (the same multiplicity matrix as H1), so the two gaps of a pair move
together replicate by replicate and their difference is a paired contrast. Ranks come from the
H1 by-model gaps, again one set of draws for every model, so a replicate ranks all models at once.
"""

from __future__ import annotations

from itertools import combinations, pairwise
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import (
    dense_unique,
    draw_multiplicities,
    sorted_factorize,
    valid_replicates,
)
from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.analysis._gaps import GapPanel
from clcg_pipeline.analysis._index import finite_values, paused_collection
from clcg_pipeline.analysis._pair_store import (
    PairReuse,
    model_prints,
    pair_store,
    settings_print,
)
from clcg_pipeline.analysis._pairwise import AllPairs, PairRows
from clcg_pipeline.analysis.sections.h1 import languages_of
from clcg_pipeline.storage import finite

#: The gaps compared, with the suffix of their estimand families (``model_contrast_<suffix>``).
KEYS: dict[str, str] = {"h1_micro": "micro", "macro": "macro", "macro_net": "net"}
ONE_MODEL = "one model: no pair to compare"
NO_MODEL = "no model with scored rows in the study band: nothing to compare"
UNIT_COLUMNS = ["language", "doc_id", "item_id"]

CONTRAST_RULE = (
    "first model minus second: the difference of their gaps on the (language, article, item) units "
    "both models answered, with the same article-cluster bootstrap draws for both (paired); p is the "
    "two-sided bootstrap p, adjusted by Benjamini-Hochberg across the pairs of each gap"
)
RANK_RULE = (
    "1 = smallest gap, ties share the better rank; each model's rank among the models in every "
    "bootstrap replicate of the H1 by-model gaps (one set of article draws for all); interval: the "
    "lower and upper percentile of the rank over the replicates, whole ranks"
)
TIE_RULE = (
    "models in H1 micro rank order (equal ranks by model id); a tie group is a maximal run of "
    "consecutive models in which every adjacent pair's H1 micro contrast is not significant after "
    "Benjamini-Hochberg across all pairs (p_adj >= the level, 1 - confidence); groups are numbered "
    "from 1 (smallest gaps); withheld, with the reason, when any rank or adjacent contrast is"
)


def model_contrasts(
    ctx: SuiteContext, core: Any, band: pd.DataFrame, reuse: PairReuse | None = None
) -> dict[str, Any]:
    """The ``model_contrasts`` block: ``pairs``, ``ranks``, ``english_score`` and their BH families.

    ``reuse``: the pairs of the last analysis to take instead of computing them (``_pairs``);
    ranks, the BH families and the tie groups are always recomputed over every model.
    """
    models = _models(ctx, core)
    status = "estimated" if len(models) >= 2 else ONE_MODEL if models else NO_MODEL
    out: dict[str, Any] = {"status": status, "models": models, "contrast": CONTRAST_RULE}
    out["ranking"] = RANK_RULE
    pairs = _pairs(ctx, band, models, reuse) if len(models) >= 2 else {}
    out["pairs"] = pairs
    with paused_collection():  # BH's rows and the estimates rows: a dict per pair and gap
        out["multiplicity"] = _adjust(pairs)
        out["ranks"] = _ranks(ctx, core, models)
        out["english_score"] = _english(ctx, core, models)
        _add_rows(ctx, out)
    # Last, so the blocks above keep their place in the document (issue 37).
    out["tie_groups"] = tie_groups(out, round(1 - ctx.confidence, 12))
    return out


def _models(ctx: SuiteContext, core: Any) -> list[str]:
    """Models with H1 by-model estimates: the configured order first, then any others, sorted."""
    present = list(core.result.get("by_model", {}))
    configured = [m.id for m in ctx.config.models.evaluated if m.id in present]
    return configured + sorted(m for m in present if m not in configured)


def pair_label(first: str, second: str) -> str:
    return f"{first} vs {second}"


def model_gap(panel: GapPanel, key: str, model: str) -> np.ndarray:
    """One model's gap ``key`` (point first, then replicates) on ``panel``."""
    if key == "h1_micro":
        return panel.micro(model=model)
    macro = panel.macro(model=model)
    return macro if key == "macro" else macro - panel.pt_gap(model=model)


def _pair_rows(rows: pd.DataFrame, models: list[str], langs: list[str]) -> PairRows:
    """The band rows (in the suite's canonical order) reduced once to codes.

    Every side's per-article sums are bincounts over a subset of these rows in this order, so
    they equal ``cluster_table``'s (presorted) bit for bit without re-sorting them for each pair.
    """
    art, articles = sorted_factorize(rows["doc_id"])
    model, lang = _index_of(rows["model"], models), _index_of(rows["language"], langs)
    item = pd.factorize(rows["item_id"])[0].astype(np.int64)
    n_items = int(item.max()) + 1
    _, unit = dense_unique(
        (lang * len(articles) + art) * n_items + item, len(langs) * len(articles) * n_items
    )
    y = rows["y"].to_numpy(dtype=np.float64)
    answered = np.zeros((int(unit.max()) + 1, len(models)), dtype=bool)
    answered[unit, model] = True
    return PairRows(len(articles), len(models), len(langs), art, model, lang, unit, y, answered, articles)


def _index_of(column: pd.Series, names: list[str]) -> np.ndarray:
    """Position of each row's value in ``names`` (the rows were selected to be among them)."""
    codes, uniques = pd.factorize(column)
    where = {name: k for k, name in enumerate(names)}
    return np.array([where[str(u)] for u in uniques], dtype=np.int64)[codes]


def _pairs(
    ctx: SuiteContext, band: pd.DataFrame, models: list[str], reuse: PairReuse | None = None
) -> dict[str, Any]:
    """Every pair's paired differences, in configured order (first model minus second).

    With ``reuse``, the pairs of ``reuse.previous`` whose models' rows and settings are
    unchanged are taken from it instead of computed, and ``reuse.current`` gets every pair.
    """
    langs = [ctx.roles.reference, ctx.roles.baseline, *ctx.roles.targets]
    keep = band["language"].isin(langs).to_numpy() & band["model"].isin(models).to_numpy()
    # The band itself when every row is kept (the usual case), else a copy of the read columns
    # only: a copy of every column of millions of rows was a third of the section's time.
    rows = band if keep.all() else band.loc[keep, [c for c in _READ if c in band.columns]]
    if rows.empty:
        return {pair_label(a, b): _empty_pair(ctx, a, b) for a, b in combinations(models, 2)}
    coded = _pair_rows(rows, models, langs)
    # The H1 panel's article list, replicates and seed, hence its draws: pairs and H1 share replicates.
    weights = draw_multiplicities(coded.n_articles, ctx.replicates, ctx.seed)
    settings = settings_print(
        coded.articles if coded.articles is not None else [], langs, ctx.replicates, ctx.seed, ctx.confidence
    )
    store = pair_store(
        models,
        model_prints(rows, coded.model, models),
        settings,
        reuse.previous if reuse is not None else None,
        lambda: AllPairs(coded, weights, ctx.confidence),
    )
    if reuse is not None:
        reuse.current = store
    with paused_collection():  # a dict per pair and gap: see paused_collection
        return pair_entries(ctx, store.frame)


# The band columns the pairs read.
_READ = ["doc_id", "model", "language", "item_id", "y"]


def _empty_pair(ctx: SuiteContext, first: str, second: str) -> dict[str, Any]:
    """A pair without any band row: no estimate."""
    entry: dict[str, Any] = {"model_a": first, "model_b": second, "n_common_items": 0}
    for key in KEYS:
        entry[key] = ctx.qualify({"estimate": None, "n": 0, "n_articles": 0}, sided="two-sided")
        entry[key]["reason"] = "no item answered by both models"
    return entry


def pair_entries(ctx: SuiteContext, frame: pd.DataFrame) -> dict[str, Any]:
    """Every pair's entry, in ``frame``'s order, from the pair store's table (``STAT_COLUMNS``).

    Column by column into Python values first (one ``tolist`` each): at 500 models the
    124,750 pairs' values read one by one from NumPy were a third of this step (issue 37).
    """
    common = frame["common"].to_numpy(dtype=np.int64).tolist()
    gaps = {key: _gap_fields(frame, key) for key in KEYS}
    firsts, seconds = frame["model_a"].tolist(), frame["model_b"].tolist()
    return {
        pair_label(a, b): _pair(ctx, gaps, k, a, b, common[k])
        for k, (a, b) in enumerate(zip(firsts, seconds, strict=True))
    }


#: A pair's fields in its entry, from the pair store's ``<gap>.<field>`` columns, in entry order.
_ENTRY_FIELDS = {
    "estimate": "estimate",
    "ci_low": "low",
    "ci_high": "high",
    "p": "p",
    "n": "n",
    "n_articles": "n_articles",
    "valid_replicates": "valid",
}
_FLOAT_FIELDS = ("estimate", "ci_low", "ci_high", "p")
#: A gap's entry fields, each with the list of its values over the pairs.
_Fields = list[tuple[str, list[Any]]]


def _gap_fields(frame: pd.DataFrame, key: str) -> _Fields:
    """One gap's entry fields, each as the Python list of its values (``finite``'s None for NaN)."""
    out = []
    for name, column in _ENTRY_FIELDS.items():
        values = frame[f"{key}.{column}"].to_numpy()
        listed = finite_values(values) if name in _FLOAT_FIELDS else values.astype(np.int64).tolist()
        out.append((name, listed))
    return out


def _pair(
    ctx: SuiteContext, gaps: dict[str, _Fields], k: int, first: str, second: str, units: int
) -> dict[str, Any]:
    """One pair's three paired differences on its ``units`` common rows (``ContextSuite.stats``'s
    fields); ``gaps``: each gap's fields as lists (``_gap_fields``), ``k`` the pair's row."""
    entry: dict[str, Any] = {"model_a": first, "model_b": second, "n_common_items": units}
    for key, fields in gaps.items():
        entry[key] = ctx.qualify({name: values[k] for name, values in fields}, sided="two-sided")
        if units == 0:
            entry[key]["reason"] = "no item answered by both models"
    return entry


def _adjust(pairs: dict[str, Any]) -> dict[str, Any]:
    """BH across the pairs, one family per gap; each pair's estimand gets its ``p_adj``."""
    from clcg_pipeline.analysis._stats import benjamini_hochberg

    families: dict[str, Any] = {}
    for key in KEYS:
        family = benjamini_hochberg({name: finite(entry[key].get("p")) for name, entry in pairs.items()})
        for row in family["tests"]:
            pairs[row["test"]][key]["p_adj"] = row["p_adj"]
        families[key] = family
    return families


def rank_rows(gaps: np.ndarray) -> np.ndarray:
    """Rank of each column within every row (1 = smallest, ties ``min``); NaN rows stay NaN.

    A replicate in which one model's gap is undefined ranks no model (the suite's replicate rule).
    """
    from scipy.stats import rankdata

    ok = np.isfinite(gaps).all(axis=1)
    ranks = np.full(gaps.shape, np.nan)
    if ok.any():
        ranks[ok] = rankdata(gaps[ok], axis=1, method="min")
    return ranks


def rank_interval(ranks: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """Whole-rank percentile interval of the finite replicate ranks (lower and upper percentile)."""
    kept = ranks[np.isfinite(ranks)]
    if kept.size == 0:
        return None, None
    alpha = 100 * (1 - confidence) / 2
    # "lower"/"higher": an interval of whole ranks that covers at least the stated share.
    low = float(np.percentile(kept, alpha, method="lower"))
    return low, float(np.percentile(kept, 100 - alpha, method="higher"))


def _ranks(ctx: SuiteContext, core: Any, models: list[str]) -> dict[str, Any]:
    """Per model, its rank on each gap among all models, with the whole-rank interval."""
    out: dict[str, Any] = {m: {} for m in models}
    if not models:
        return out
    panel = core.panel
    for key in KEYS:
        langs = languages_of(ctx, key)
        with np.errstate(invalid="ignore"):
            ranks = rank_rows(np.column_stack([model_gap(panel, key, m) for m in models]))
        # A rank compares every model: it rests on the articles of the least covered one.
        n_articles = min(panel.n_articles(language=langs, model=m) for m in models)
        for j, model in enumerate(models):
            low, high = rank_interval(ranks[1:, j], ctx.confidence)
            entry = {
                "estimate": finite(ranks[0, j]),
                "ci_low": low,
                "ci_high": high,
                "n": panel.n(language=langs, model=models),
                "n_articles": n_articles,
                "valid_replicates": valid_replicates(ranks[:, j]),
            }
            out[model][key] = ctx.qualify(entry, sided=None)
    return out


def _english(ctx: SuiteContext, core: Any, models: list[str]) -> dict[str, Any]:
    """Each model's mean English score in the band (the level its gaps are measured from)."""
    en = ctx.roles.reference
    return {m: ctx.stats(core.panel, core.panel.mean(en, model=m), [en], model=m) for m in models}


def _add_rows(ctx: SuiteContext, block: dict[str, Any]) -> None:
    for key, suffix in KEYS.items():
        for name, entry in block["pairs"].items():
            ctx.add(f"model_contrast_{suffix}", name, entry[key])
    for key, suffix in KEYS.items():
        for model, entry in block["ranks"].items():
            ctx.add(f"model_rank_{suffix}", model, entry[key])
    for model, entry in block["english_score"].items():
        ctx.add("english_score_model", model, entry)


def fill_p_adj(estimates: pd.DataFrame, block: dict[str, Any]) -> None:
    """The pairs' BH-adjusted p into the ``estimates`` rows of the contrasts (one lookup per row)."""
    pairs = block.get("pairs", {})
    for key, suffix in KEYS.items():
        adjusted = {name: entry[key].get("p_adj") for name, entry in pairs.items()}
        mask = (estimates["estimand"] == f"model_contrast_{suffix}").to_numpy()
        mask &= estimates["group"].isin(list(adjusted)).to_numpy()
        if mask.any():
            groups = estimates.loc[mask, "group"].to_numpy()
            estimates.loc[mask, "p_adj"] = pd.Series([adjusted[g] for g in groups], dtype=object).to_numpy()


def _rank_order(block: dict[str, Any]) -> tuple[list[str], str | None]:
    """The models by H1 micro rank (then id), or why they cannot be ordered with intervals."""
    keyed = []
    for model in block.get("models", []):
        rank = block["ranks"].get(model, {}).get("h1_micro", {})
        if rank.get("identifiable") is False:
            return [], str(rank.get("reason") or "the ranks are not identifiable")
        if rank.get("estimate") is None:
            return [], f"{model} has no H1 micro rank"
        keyed.append((float(rank["estimate"]), model))
    return [model for _, model in sorted(keyed)], None


def _adjacent_p_adj(pairs: dict[str, Any], first: str, second: str) -> tuple[float | None, str]:
    """The BH-adjusted p of the H1 micro contrast of two models, whichever way the pair is named."""
    name = pair_label(first, second)
    pair = pairs.get(name) or pairs.get(pair_label(second, first)) or {}
    entry = pair.get("h1_micro", {})
    reason = str(entry.get("reason") or "no adjusted p")
    return finite(entry.get("p_adj")), f"{name}: {reason}"


def tie_groups(block: dict[str, Any], level: float) -> dict[str, Any]:
    """Tie groups of the ``model_contrasts`` block at ``level`` (``TIE_RULE``); ``by_model``: group per model.

    Without intervals (too few articles) or with fewer than two models there are no groups:
    ``groups`` is empty and ``reason`` says why, once for all models.
    """
    out: dict[str, Any] = {"gap": "h1_micro", "level": level, "rule": TIE_RULE, "reason": None}
    out |= {"groups": [], "by_model": {}}
    if block.get("status") != "estimated":
        out["reason"] = str(block.get("status"))
        return out
    order, reason = _rank_order(block)
    groups: list[list[str]] = [order[:1]]
    for first, second in pairwise(order):
        if reason is not None:
            break
        p_adj, why = _adjacent_p_adj(block["pairs"], first, second)
        if p_adj is None:
            reason = why
        elif p_adj < level:  # separated: the next model opens a group
            groups.append([second])
        else:
            groups[-1].append(second)
    if reason is not None:
        out["reason"] = reason
        return out
    out["groups"] = groups
    out["by_model"] = {model: k for k, group in enumerate(groups, start=1) for model in group}
    return out
