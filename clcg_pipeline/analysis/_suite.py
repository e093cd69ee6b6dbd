"""The whole estimator suite (docs/ESTIMANDS.md): ``study_results.json`` and ``estimates``.

Every bootstrapped section resamples the articles of its own rows with the study seed; when
two sections use the same article set (the usual case) their draws are identical, so
cross-section identities also hold replicate by replicate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from clcg_pipeline.analysis._context import SuiteContext, usable, withheld_caveat
from clcg_pipeline.analysis._definitions import definitions_for
from clcg_pipeline.analysis._h1 import H1Core, h1_core, roles_of
from clcg_pipeline.analysis._index import estimand_index, paused_collection, reason_of
from clcg_pipeline.analysis._pair_store import PairReuse, PairStore
from clcg_pipeline.analysis._prepare import apply_rule, score_values, select_rows
from clcg_pipeline.analysis._settings import language_coverage, panel_languages, suite_settings
from clcg_pipeline.analysis._timing import COLLECT_FROM_ROWS, small_pages
from clcg_pipeline.analysis._timing import Timer as _Timer
from clcg_pipeline.analysis._timing import frozen as _frozen
from clcg_pipeline.analysis.sections import context as sec_context
from clcg_pipeline.analysis.sections import h1 as sec_h1
from clcg_pipeline.analysis.sections import h2 as sec_h2
from clcg_pipeline.analysis.sections import h3 as sec_h3
from clcg_pipeline.analysis.sections import h4 as sec_h4
from clcg_pipeline.analysis.sections import mixed as sec_mixed
from clcg_pipeline.analysis.sections import model_contrasts as sec_model_contrasts
from clcg_pipeline.analysis.sections import multiplicity as sec_multiplicity
from clcg_pipeline.analysis.sections import nomological as sec_nomological
from clcg_pipeline.analysis.sections import repetitions as sec_repetitions
from clcg_pipeline.analysis.sections import replication as sec_replication
from clcg_pipeline.analysis.sections import sensitivity as sec_sensitivity
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import TABLES, StudyResultsDocument

# The ``estimates`` contract's columns, in its order (storage/_tables.py).
ESTIMATE_COLUMNS: list[str] = list(TABLES["estimates"].names)


@dataclass
class StudyResults:
    """``results``: the JSON document; ``estimates``: the long table; ``timings``: seconds per part."""

    results: StudyResultsDocument
    estimates: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)
    # Every model pair's statistics with the fingerprints of their rows, for the next analysis to
    # reuse (``pair_store`` of run_suite); None without pairs.
    pair_store: PairStore | None = None


def run_suite(
    scores: pd.DataFrame,
    config: ProjectConfig,
    *,
    articles: pd.DataFrame | None = None,
    fertility: pd.DataFrame | None = None,
    replication_scores: pd.DataFrame | None = None,
    replicates: int | None = None,
    seed: int | None = None,
    pair_store: PairStore | None = None,
) -> StudyResults:
    """Run every estimator and test (docs/ESTIMANDS.md) on a ``scores`` frame.

    ``pair_store``: the last analysis's ``StudyResults.pair_store``; the model pairs it holds
    for unchanged models and settings are taken from it instead of computed (issue 37).
    """
    return suite_owning(
        [scores],
        config,
        articles=articles,
        fertility=fertility,
        replication_scores=replication_scores,
        replicates=replicates,
        seed=seed,
        pair_store=pair_store,
    )


def suite_owning(
    holder: list[pd.DataFrame],
    config: ProjectConfig,
    *,
    articles: pd.DataFrame | None = None,
    fertility: pd.DataFrame | None = None,
    replication_scores: pd.DataFrame | None = None,
    replicates: int | None = None,
    seed: int | None = None,
    pair_store: PairStore | None = None,
) -> StudyResults:
    """:func:`run_suite` on the one frame in ``holder``, which it takes out of the list.

    A caller that read the frame only for the suite (``estimate_file``) passes it this way,
    so the raw frame is freed as soon as its canonically ordered copy exists: one copy of
    every scored row less at the suite's peak.
    """
    ctx = _suite_context(config, replicates, seed)
    timer = _Timer(collect=sum(len(frame) for frame in holder) >= COLLECT_FROM_ROWS)
    with timer("prepare"), small_pages():  # the reordered copy of every row: see small_pages
        rows = _prepare(ctx, holder)
    reuse = PairReuse(previous=pair_store)
    with _frozen(timer.collect):
        results = _sections(ctx, rows, timer, articles, fertility, replication_scores, reuse)
    with_data, without_data = language_coverage(config, rows.scores)
    results["settings"] = suite_settings(ctx, rows.scores, rows.band_a, with_data, without_data)
    results["languages"] = panel_languages(config)
    results["languages_without_data"] = without_data
    results["excluded_versions"] = []
    if len(rows.band_a) == 0:
        _h1_without_band(results, rows.scores, config)
    with paused_collection():  # a row and an index entry per estimand: see paused_collection
        estimates = _estimates_table(ctx, results)
        results["warnings"] = _all_warnings(ctx, results, estimates, band_empty=len(rows.band_a) == 0)
        metric = config.study.band.metric
        results["definitions"] = definitions_for(list(pd.unique(estimates["estimand"])), metric)
        results["estimands"] = estimand_index(estimates, metric)
    # cast: the sections are filled in key by key under the document's own key names; mypy
    # cannot check a dict built that way against the TypedDict.
    document = cast(StudyResultsDocument, {"settings": results.pop("settings"), **results})
    return StudyResults(document, estimates, timer.seconds, reuse.current)


@dataclass(frozen=True)
class _Rows:
    """The suite's inputs after preparation: panel rows in canonical order and the band subsets."""

    scores: pd.DataFrame
    # Every row under parse rule A when rule A dropped some (an ok row without a score); None
    # when it keeps every row: a section's rule-A rows are then its selection of ``scores`` with
    # ``y`` computed on them (see :func:`_rule_a_rows`), not a ``y`` over every row held throughout.
    rows_a: pd.DataFrame | None
    band_a: pd.DataFrame  # the study band under rule A
    band_raw: pd.DataFrame  # the study band before a parse rule: rule B, other metrics


def _suite_context(config: ProjectConfig, replicates: int | None, seed: int | None) -> SuiteContext:
    study = config.study
    return SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=int(replicates if replicates is not None else study.bootstrap_replicates),
        seed=int(seed if seed is not None else study.seed),
        confidence=study.confidence,
        min_articles=int(getattr(study, "min_articles", 10)),
    )


def _prepare(ctx: SuiteContext, holder: list[pd.DataFrame]) -> _Rows:
    """Panel languages only, in canonical row order, with rule A applied and the band selected.

    The frame is taken out of ``holder``, so this is its last reference once reordered.
    """
    band = ctx.config.study.band
    raw = usable(holder.pop(), band.metric)
    panel_langs = [ctx.roles.reference, ctx.roles.baseline, *ctx.roles.targets]
    in_panel = raw["language"].isin(panel_langs).to_numpy()
    # The usual file holds panel languages only: no filtered copy of every row then.
    holder.append(raw if in_panel.all() else raw.loc[in_panel])
    del raw
    scores = _canonical_order(holder, band.metric)
    # The raw frame is gone now; its float columns were Arrow buffers (read_scores converts
    # without copying), whose pages Arrow's allocator keeps until they are handed back: a
    # third of the suite's resident memory from here on at a hundred models otherwise.
    pa.default_memory_pool().release_unused()
    values = score_values(scores, band.metric)
    band_sel = {"levels": band.levels, "item_source": band.item_source, "context_scope": band.context_scope}
    band_raw = select_rows(scores, **band_sel)
    # The other metrics are read from the band rows only (metric sensitivity): every row's
    # copy of them is let go (three float columns over every scored row at a hundred models).
    scores = _without(scores, [m for m in OTHER_METRICS if m not in (band.metric, "accuracy")])
    if _rule_a_drops(scores, values):  # rule A drops rows (an ok row without a score): its own copies
        rows_a = apply_rule(scores, values, "A")
        return _Rows(scores, rows_a, select_rows(rows_a, **band_sel), band_raw)
    # Every row kept: the band's rule-A frame shares the columns of the band rows (the suite
    # never writes into a frame) instead of copying them; rule A's score (apply_rule's) is
    # computed on the band rows only (issue 37: an 8-byte array over every row at the peak).
    band_a = band_raw.copy(deep=False)
    band_values = values[scores.index.get_indexer(band_raw.index)]
    band_a["y"] = np.where((band_raw["status"] != "ok").to_numpy(), 0.0, band_values)
    return _Rows(_primary_score(scores, band.metric, values), None, band_a, band_raw)


def _rule_a_drops(scores: pd.DataFrame, values: np.ndarray) -> bool:
    """Whether rule A (``apply_rule``) drops a row: an ``ok`` row whose score is not finite."""
    return bool(((scores["status"] == "ok").to_numpy() & ~np.isfinite(values)).any())


def _primary_score(frame: pd.DataFrame, metric: str, values: np.ndarray) -> pd.DataFrame:
    """``frame`` with ``metric`` holding every row's primary score (``score_values``: L0 rows
    by accuracy), without its ``accuracy`` and ``rep`` columns, sharing the other columns' data.

    The sections read every row's score through ``score_values``, which gives the same values
    from this frame, and the repetition only from the band rows: two 8-byte columns over every
    scored row less held to the end (issue 37).
    """
    dropped = {"rep"} if metric == "accuracy" else {"rep", "accuracy"}
    kept = [c for c in frame.columns if c not in dropped]
    columns = {c: (values if c == metric else frame[c].array) for c in kept}
    return pd.DataFrame(columns, index=frame.index, copy=False)


# Score columns the sections read from the band rows only, never from every row.
OTHER_METRICS = ("exact_match", "rouge_l", "semsim", "token_f1")


def _without(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame`` less ``columns``, sharing the other columns' data (no copy of any row)."""
    if not any(c in frame.columns for c in columns):
        return frame
    kept = [c for c in frame.columns if c not in columns]
    return pd.DataFrame({c: frame[c].array for c in kept}, index=frame.index, copy=False)


def _sections(
    ctx: SuiteContext,
    rows: _Rows,
    timed: _Timer,
    articles: pd.DataFrame | None,
    fertility: pd.DataFrame | None,
    replication_scores: pd.DataFrame | None,
    reuse: PairReuse,
) -> dict[str, Any]:
    """Every section in document order (the order also fixes the estimates table's rows)."""
    config, study = ctx.config, ctx.config.study
    band, band_a = study.band, rows.band_a
    results: dict[str, Any] = {}
    with timed("h1"):
        core = h1_core(
            rows.scores,
            config.languages,
            study,
            replicates=ctx.replicates,
            seed=ctx.seed,
            rows=band_a,
            presorted=True,
        )
        results["h1"] = core.result
        p_h1 = sec_h1.h1_estimates(ctx, core)
        results["language_net"] = sec_h1.language_net(ctx, core)
    with timed("joshi_class"):
        results["joshi_class"] = sec_h1.joshi_classes(ctx, core)
    with timed("model_contrasts"):
        results["model_contrasts"] = sec_model_contrasts.model_contrasts(ctx, core, band_a, reuse)
    with timed("h3"):
        results["h3"] = _h3(ctx, rows)
    with timed("h2"):
        results["h2"], h2_rows = sec_h2.h2(ctx, band_a, articles)
    with timed("mixed_effects"):
        h2_fit = sec_mixed.h2_fit(ctx, h2_rows)  # fitted now: the H2 rows go before H4
    del h2_rows
    # Each section's own row subset is built in a helper and freed when the section returns:
    # held to the end of this function, they added up to more than the scored rows themselves.
    with timed("h4"):
        results["h4"] = _h4(ctx, rows)
    with timed("parse_rule"):
        results["parse_rule"] = _parse_rule(ctx, core, rows)
    with timed("equivalence"):
        results["equivalence"] = sec_h1.equivalence(ctx, core, band_a)
    with timed("mixed_effects"):
        results["mixed_effects"] = sec_mixed.mixed(ctx, band_a, h2_fit)
    with timed("multiplicity"):
        results["multiplicity"] = sec_multiplicity.multiplicity(ctx, results, p_h1)
    with timed("repetitions"):
        results["repetitions"] = sec_repetitions.repetitions(ctx, band_a)
    with timed("context_gain"):
        results["context_gain"] = sec_context.context_gain(ctx, rows.scores, band.metric)
    with timed("nomological"):
        results["nomological"] = sec_nomological.nomological(ctx, core.result, fertility)
    with timed("context_scope"):
        results["context_scope"] = _context_scope(ctx, rows)
    with timed("replication"):
        results["replication"] = sec_replication.replication(ctx, core.result, replication_scores)
    with timed("metric_sensitivity"):
        results["metric_sensitivity"] = sec_sensitivity.metric_sensitivity(
            ctx, rows.band_raw, band.metric, core
        )
    return results


# The columns a panel of a section reads besides its cell columns (``cluster_table``: the
# article, the analysed score, and the row's identity for an error message).
_PANEL_COLUMNS = ["model", "language", "doc_id", "item_id", "y"]


def _h3(ctx: SuiteContext, rows: _Rows) -> dict[str, Any]:
    """H3 on every level of the band's item source and context scope."""
    band = ctx.config.study.band
    # Passed without a name here, so the section can let the rows go once it has their sums.
    return sec_h3.h3(
        ctx,
        _rule_a_rows(
            ctx,
            rows,
            [*_PANEL_COLUMNS, "level"],
            item_source=band.item_source,
            context_scope=band.context_scope,
        ),
    )


def _h4(ctx: SuiteContext, rows: _Rows) -> dict[str, Any]:
    """H4 on the primary band and every human item under the band's context scope."""
    scope = ctx.config.study.band.context_scope
    human = _rule_a_rows(ctx, rows, _PANEL_COLUMNS, item_source="human", context_scope=scope)
    return sec_h4.h4(ctx, rows.band_a, human)


def _parse_rule(ctx: SuiteContext, core: H1Core, rows: _Rows) -> dict[str, Any]:
    """The H1 family again under parse rule B (failed answers dropped instead of scored 0)."""
    metric = ctx.config.study.band.metric
    # The other metrics' columns stay behind: rule B copies the band rows it keeps.
    band_raw = _without(rows.band_raw, [m for m in OTHER_METRICS if m not in (metric, "accuracy")])
    band_b = apply_rule(band_raw, score_values(band_raw, metric), "B")
    return sec_h1.parse_rule(ctx, core, band_b)


def _context_scope(ctx: SuiteContext, rows: _Rows) -> dict[str, Any]:
    """The band's levels and item source under every context scope."""
    band = ctx.config.study.band
    scope_rows = _rule_a_rows(
        ctx,
        rows,
        [*_PANEL_COLUMNS, "context_scope"],
        levels=band.levels,
        item_source=band.item_source,
    )
    return sec_context.context_scope(ctx, scope_rows, band.context_scope)


def _rule_a_rows(ctx: SuiteContext, rows: _Rows, columns: list[str], **selection: Any) -> pd.DataFrame:
    """The ``columns`` of the rule-A rows matching ``selection`` (``select_rows``'s filters).

    When rule A kept every row, ``y`` is rule A's score of the selected rows themselves: the
    values and the frame of selecting them from every row's rule-A frame.
    """
    if rows.rows_a is not None:
        return select_rows(rows.rows_a, **selection, columns=columns)
    metric = ctx.config.study.band.metric
    scored = [c for c in (metric, "accuracy", "status", "level") if c in rows.scores.columns]
    wanted = list(dict.fromkeys([*(c for c in columns if c != "y"), *scored]))
    sub = select_rows(rows.scores, **selection, columns=wanted)
    y = np.where((sub["status"] != "ok").to_numpy(), 0.0, score_values(sub, metric))
    data = {c: (y if c == "y" else sub[c].array) for c in columns}
    return pd.DataFrame(data, index=sub.index, copy=False)


def _h1_without_band(results: dict[str, Any], scores: pd.DataFrame, config: ProjectConfig) -> None:
    """H1 is not identifiable without band rows; say which rows there are instead."""
    band = config.study.band
    reason = (
        "no scored rows at all (nothing was scored: e.g. a source with no item bank)"
        if len(scores) == 0
        else "no scored rows in the study band (item_source="
        f"{band.item_source}, levels={list(band.levels)}, context_scope={band.context_scope}); "
        f"the scored rows are {_scored_kinds(scores)}: set study.band to match them"
    )
    results["h1"].update({"identifiable": False, "reason": reason, "status": f"not identifiable: {reason}"})


def _estimates_table(ctx: SuiteContext, results: dict[str, Any]) -> pd.DataFrame:
    """The long ``estimates`` table from every section's rows, with BH-adjusted p filled in."""
    estimates = pd.DataFrame(ctx.rows, columns=ESTIMATE_COLUMNS)
    sec_multiplicity.fill_p_adj(estimates, results["multiplicity"])
    sec_model_contrasts.fill_p_adj(estimates, results["model_contrasts"])
    return _typed(estimates)


def _all_warnings(
    ctx: SuiteContext, results: dict[str, Any], estimates: pd.DataFrame, *, band_empty: bool
) -> list[str]:
    """The document's warnings: sections first, then coverage, the suite's own and the table's."""
    out = _warnings(results)
    if band_empty:
        out.insert(0, f"H1 not identifiable: {results['h1']['reason']}")
    without_data = results["languages_without_data"]
    if without_data:
        names = ", ".join(e["iso"] for e in without_data)
        out.append(f"{len(without_data)} panel language(s) without scored rows: {names}")
    out.extend(ctx.warnings)
    out.extend(_estimate_warnings(estimates, ctx.min_articles))
    return out


def _scored_kinds(scores: pd.DataFrame) -> str:
    """What the scored rows are, e.g. ``item_source belebele at level MC (full_body)``."""
    columns = [c for c in ("item_source", "level", "context_scope") if c in scores]
    kinds = scores[columns].astype(str).drop_duplicates().sort_values(columns).head(6)
    return ", ".join(
        f"item_source {row.get('item_source')} at level {row.get('level')} ({row.get('context_scope')})"
        for row in kinds.to_dict("records")
    )


def _estimate_warnings(estimates: pd.DataFrame, min_articles: int) -> list[str]:
    """One line per kind of caveat found in the estimates table."""
    out: list[str] = []
    # The rule's owner decides which rows it withheld for too few articles and says so, from
    # each row's reason (its status without the "not identifiable: " prefix). One record per
    # distinct status, shared by its rows: it only reads them (a dict per row at 500 models
    # was 375,000 of them).
    statuses = estimates["status"].tolist()
    shared = {status: {"reason": reason_of(str(status))} for status in dict.fromkeys(statuses)}
    records = [shared[status] for status in statuses]
    few = withheld_caveat("estimates", records, min_articles)
    if few is not None:
        out.append(few)
    flagged = estimates.loc[estimates["flags"].str.contains("outside its own", na=False)]
    for r in flagged.itertuples(index=False):
        out.append(f"{r.estimand}/{r.group}: estimate outside its own percentile interval")
    bound = estimates.loc[estimates["p_bound"].fillna(False).astype(bool)]
    if len(bound):
        out.append(
            f"{len(bound)} p value(s) are the smallest the bootstrap can give (p <= 1/(B+1)); "
            "they are bounds, not exact values"
        )
    return out


def _warnings(results: dict[str, Any]) -> list[str]:
    """Plain-language notes on estimands that are missing, not identifiable or not converged."""
    out: list[str] = []
    for name, section in results.items():
        if isinstance(section, dict) and str(section.get("status", "")).startswith("not"):
            out.append(f"{name}: {section['status']}")
    for model, entry in results.get("h2", {}).get("by_model", {}).items():
        if entry.get("status") == "not identifiable":
            out.append(f"h2 {model}: not identifiable ({entry.get('reason', 'one memorability group')})")
    for metric, entry in results.get("metric_sensitivity", {}).get("metrics", {}).items():
        if not entry.get("computed"):
            out.append(f"metric sensitivity {metric}: not computed ({entry['reason']})")
    for name, fit in results.get("mixed_effects", {}).items():
        if isinstance(fit, dict) and not fit.get("converged", True):
            out.append(f"mixed model {name}: {fit.get('status', 'not converged')}; it gives no support")
    if results.get("multiplicity", {}).get("not_available"):
        missing = ", ".join(results["multiplicity"]["not_available"])
        out.append(f"BH family: not available and left out: {missing}")
    return out


def _canonical_order(holder: list[pd.DataFrame], metric: str) -> pd.DataFrame:
    """Rows sorted by their key and score, so every float sum is independent of input row order.

    The integer keys are folded into one mixed-radix int64 (most significant first), which
    sorts exactly like the lexicographic sort of the separate keys at a fraction of its cost.
    The frame is taken out of ``holder`` (see :func:`_take_columns`).
    """
    scores = holder.pop()
    if scores.empty:
        return scores
    from clcg_pipeline.analysis._bootstrap import sorted_factorize

    # Each key in the narrowest integer type that holds it: seven int64 arrays over every
    # scored row were most of the suite's peak memory at a hundred models.
    keys = [
        _narrow(sorted_factorize(scores[c], narrow=True)[0])
        for c in ("model", "language", "doc_id", "item_id", "context_scope", "status")
    ]
    reps, rep_codes = _sorted_codes(scores["rep"].to_numpy())
    keys.append(_narrow(rep_codes))
    sizes = [int(k.max()) + 1 for k in keys[:-1]] + [len(reps)]
    values = scores[metric].to_numpy(dtype=np.float64, na_value=np.nan)
    if math.prod(sizes) < 2**62:
        combined = np.zeros(len(scores), dtype=np.int64)
        for k, size in zip(keys, sizes, strict=True):
            combined *= size
            combined += k
        del keys
        order = _key_order(combined, values)
        del combined
    else:  # too many distinct keys to fold into one integer
        order = np.lexsort([values, *keys[::-1]])
    del values  # a view of the raw score column: it would keep that column alive
    if (order == np.arange(len(order))).all():
        return scores.reset_index(drop=True)
    holder.append(scores)
    del scores
    return _take_columns(holder, order)


def _take_columns(holder: list[pd.DataFrame], order: np.ndarray) -> pd.DataFrame:
    """``frame.iloc[order]`` with a new ``RangeIndex``, the frame taken out of ``holder``.

    Column by column, each source column let go once taken: when the suite owns the frame
    (``estimate_file``) the raw and the reordered rows are never both held in full.
    """
    frame = holder.pop()
    if not frame.columns.is_unique:  # columns by name would be ambiguous
        out = frame.iloc[order]
        out.index = pd.RangeIndex(len(out))
        return out
    names = list(frame.columns)
    sources = {c: frame[c].array for c in names}
    del frame
    taken = {}
    pool = pa.default_memory_pool()
    for c in names:
        taken[c] = _take(sources.pop(c), order)
        # A numeric source column is an Arrow buffer (read_scores converts without copying):
        # its pages go back now, not after every column is taken (the suite's peak, issue 37).
        pool.release_unused()
    return pd.DataFrame(taken, index=pd.RangeIndex(len(order)), copy=False)


def _take(column: Any, order: np.ndarray) -> Any:
    """``column.take(order)``; a constant column held as one value stays one value.

    ``read_scores`` gives an all-null score column (``semsim`` with study.semsim off) as a
    zero-stride read-only view: every row is the same value, so a view of the new length is
    that column reordered, without eight bytes per scored row (issue 37).
    """
    if isinstance(column, pd.arrays.NumpyExtensionArray):
        values = column.to_numpy()
        if values.ndim == 1 and len(values) and values.strides == (0,):
            return np.broadcast_to(values[:1], (len(order),))
    return column.take(order)


def _narrow(codes: np.ndarray) -> np.ndarray:
    """Non-negative codes in the smallest signed integer type that holds their maximum."""
    top = int(codes.max()) if len(codes) else 0
    for dtype in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dtype).max:
            return codes.astype(dtype)
    return codes


def _sorted_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` by hashing: a few distinct values, many rows.

    Small non-negative integers (repetition numbers) by counting instead: no hash of every row.
    """
    if values.dtype.kind in "iu" and len(values) and values.min() >= 0 and values.max() < 1 << 20:
        present = np.bincount(values) > 0
        rank = (np.cumsum(present) - 1).astype(np.int32)  # the codes' type before _narrow's
        return np.flatnonzero(present).astype(values.dtype), rank[values]
    codes, uniques = pd.factorize(values)
    if (codes < 0).any():  # a missing value: np.unique's own placement of NaN
        reps, inverse = np.unique(values, return_inverse=True)
        return reps, inverse.ravel().astype(np.int64)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return np.asarray(uniques)[order], rank[codes]


def _key_order(combined: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.lexsort((values, combined))``: by key, then by value among rows sharing a key.

    Keys are nearly always unique (one row per model, language, item, scope and repetition);
    then one sort of the keys gives the same permutation, several times faster. It is the
    stable sort (timsort), whatever the uniqueness: files are written in runs already in key
    order (per model or block), which it merges in a few passes (4x faster than quicksort).
    """
    order = np.argsort(combined, kind="stable")
    if len(order) < 2:
        return order
    if _strictly_increasing(combined, order):
        return order
    return np.lexsort((values, combined))


def _strictly_increasing(values: np.ndarray, order: np.ndarray, chunk: int = 1 << 20) -> bool:
    """Whether ``values[order]`` strictly increases, a chunk at a time: no int64 array per row."""
    for start in range(0, len(order), chunk):
        ranked = values[order[start : start + chunk + 1]]
        if not (ranked[1:] > ranked[:-1]).all():
            return False
    return True


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in ("estimate", "ci_low", "ci_high", "p", "p_adj"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("float64")
    for col in ("n", "n_articles", "valid_replicates"):
        out[col] = pd.array(out[col], dtype="Int64")
    for col in ("p_bound", "identifiable"):
        out[col] = pd.array(out[col], dtype="boolean")
    for col in ("status", "flags"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    out["estimand"] = out["estimand"].astype(str)
    out["group"] = out["group"].astype(str)
    return out
