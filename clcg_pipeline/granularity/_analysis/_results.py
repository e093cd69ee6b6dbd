"""The ``granularity_results`` document: every table of the analysis, its settings and caveats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, FineTable, SuiteContext, roles_of
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis._dimensions import (
    by_length,
    by_role,
    floor_caveat,
    sentence_positions,
)
from clcg_pipeline.granularity._analysis._estimates import (
    Estimates,
    empty_estimates,
    plain,
    records,
    too_few_documents,
)
from clcg_pipeline.granularity._analysis._excluded import (
    alignment_caveat,
    alignment_records,
    no_reference_caveat,
    no_reference_records,
    with_no_reference,
)
from clcg_pipeline.granularity._analysis._gaps import (
    SCORE_DIMS,
    gap_records,
    gap_tables,
    heatmap,
    no_context,
    score_tables,
)
from clcg_pipeline.granularity._analysis._judges import (
    cloze_error_shares,
    human_judge_correlation,
    judge_agreement,
)
from clcg_pipeline.granularity._analysis._position import position_curve
from clcg_pipeline.granularity._analysis._ranks import gap_trends, model_ranks
from clcg_pipeline.granularity._analysis._rows import (
    LANGUAGE_GROUPS,
    analysis_rows,
    categorical,
    check_frame,
    no_reference_cells,
    no_reference_counts,
    paired_gap_rows,
)
from clcg_pipeline.storage import DocumentBucket, GranularityResults, PromptTokens


@dataclass(frozen=True)
class GranularityAnalysis:
    """The ``granularity_results`` document and the long ``granularity_estimates`` table."""

    results: GranularityResults
    estimates: pd.DataFrame


def empty_results(status: str, reason: str) -> GranularityResults:
    """A results document with every contract key present and nothing estimated."""
    return {
        "status": status,
        "reason": reason,
        "documents": [],
        "scores": [],
        "gaps": [],
        "position_curve": [],
        "middle_vs_edges": [],
        "heatmap": [],
        "no_context": [],
        "cloze_errors": [],
        "judge_agreement": None,
        "human_judge_correlation": None,
        "human_judge_correlation_reason": reason,
        "prompt_tokens_by_task": [],
        "unpaired": [],
        "no_reference": [],
        "alignment": [],
        "length": {"gaps": [], "middle_vs_edges": [], "buckets": [], "note": reason},
        "model_ranks": [],
        "gap_trends": [],
        "sentence_position": {"curve": [], "middle_vs_edges": [], "note": reason},
        "roles": {"scores": [], "note": reason},
        "caveats": [reason],
    }


def _family(prompt_version: Any) -> str:
    text = str(prompt_version)
    head, _, tail = text.rpartition("-v")
    return head if head and tail.isdigit() else text


def prompt_tokens_by_task(calls: pd.DataFrame | None, predictions: pd.DataFrame | None) -> list[PromptTokens]:
    """Input tokens, calls and cost per task (judge calls under their prompt family)."""
    if calls is None or calls.empty:
        return []
    check_frame(calls, "task_calls", ["call_id", "prompt_version", "input_tokens"])
    frame = calls.drop_duplicates("call_id")
    if "task" not in frame.columns:
        task_of: pd.Series = pd.Series(dtype=object)
        if predictions is not None and len(predictions) and {"call_id", "task"} <= set(predictions.columns):
            task_of = predictions.drop_duplicates("call_id").set_index("call_id")["task"]
        frame = frame.assign(task=frame["call_id"].map(task_of))
    frame = frame.assign(
        task=frame["task"].where(frame["task"].notna(), frame["prompt_version"].map(_family))
    )
    agg = {"calls": ("call_id", "size"), "prompt_tokens_total": ("input_tokens", "sum")}
    agg |= {"prompt_tokens_mean": ("input_tokens", "mean"), "prompt_tokens_max": ("input_tokens", "max")}
    if "output_tokens" in frame.columns:
        agg["output_tokens_total"] = ("output_tokens", "sum")
    if "cost_usd" in frame.columns:
        agg["cost_usd"] = ("cost_usd", "sum")
    table = frame.groupby("task", sort=True).agg(**agg).reset_index()
    # The columns are the ``agg`` names above, PromptTokens' keys; pandas' records are untyped.
    return [
        cast(PromptTokens, {k: plain(v) for k, v in rec.items()}) for rec in table.to_dict(orient="records")
    ]


def documents_summary(documents: pd.DataFrame | None) -> list[DocumentBucket]:
    if documents is None or documents.empty:
        return []
    check_frame(documents, "long_documents", ["doc_id", "language", "bucket"])
    out: list[DocumentBucket] = []
    for bucket, grp in documents.groupby(documents["bucket"].astype(str), sort=True):
        out.append(
            {
                "bucket": bucket,
                "n_documents": int(grp["doc_id"].nunique()),
                "languages": sorted(set(grp["language"].astype(str))),
            }
        )
    return out


#: Columns the bootstrap tables factorize many times: categoricals, fast on their codes.
_CATEGORICAL = (
    "model",
    "language",
    "doc_id",
    "task",
    "granularity",
    "metric",
    "region",
    "position",
    "language_group",
    "bucket",
    "sentence_position",
    "role",
)


def analyse_granularity(
    scores: pd.DataFrame,
    config: ProjectConfig,
    *,
    documents: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    calls: pd.DataFrame | None = None,
    predictions: pd.DataFrame | None = None,
    human: pd.DataFrame | None = None,
    replicates: int | None = None,
    seed: int | None = None,
) -> GranularityAnalysis:
    """Every granularity result; ``scores`` should hold only evaluated models and panel languages."""
    if not config.study.granularity.enabled:
        reason = "study.granularity.enabled is false: the granularity task family is off"
        return GranularityAnalysis(empty_results("skipped", reason), empty_estimates())
    if scores is None or len(scores) == 0:
        reason = "no task_scores rows for the evaluated models and configured languages (nothing scored yet)"
        out = empty_results("empty", reason)
        out["documents"] = documents_summary(documents)
        out["alignment"] = alignment_records(documents, config.languages.reference)
        out["caveats"] += [c for c in (alignment_caveat(out["alignment"]),) if c]
        out["prompt_tokens_by_task"] = prompt_tokens_by_task(calls, predictions)
        return GranularityAnalysis(out, empty_estimates())
    ctx = _suite_context(config, replicates, seed)
    rows = categorical(analysis_rows(scores, config), list(_CATEGORICAL))
    boot = ClusterBootstrap(rows["doc_id"].unique(), ctx, unit="documents")
    est = Estimates()
    full = rows.loc[rows["context"] == "full"]
    paired, unpaired = paired_gap_rows(rows, ctx.roles.reference)

    no_reference = no_reference_counts(scores)
    alignment = alignment_records(documents, ctx.roles.reference)

    sfine = boot.fine(full, [*SCORE_DIMS, "primary"], "y")
    score_records = with_no_reference(score_tables(sfine, est), no_reference_cells(scores))
    gfine = boot.fine(paired, ["granularity", "metric", "region", "position", "language", "model"], "d")
    tasks = paired.groupby(["granularity", "metric"], observed=True)["task"].agg(lambda t: sorted(set(t)))
    gaps = gap_tables(gfine, config, tasks, est) if len(paired) else {}
    curve, contrasts = position_curve(sfine, gfine if len(paired) else None, config, est)
    drops = no_context(boot, rows, est)
    dimensions = _dimensions(boot, sfine, gfine if len(paired) else None, full, paired, config, est)
    agreement = judge_agreement(judgements)
    if agreement is not None:
        est.add(
            "judge_alpha_ordinal",
            {"estimate": agreement["alpha_ordinal"], "n": agreement["n"], "identifiable": True},
            {"task": "paragraph_fill", "granularity": "paragraph", "metric": "judge_total"},
        )
    correlation, corr_reason = human_judge_correlation(judgements, human)
    results: dict[str, Any] = {
        "status": "ok",
        "reason": None,
        "documents": documents_summary(documents),
        "scores": score_records,
        "gaps": gap_records(gaps, config),
        "position_curve": curve,
        "middle_vs_edges": contrasts,
        "heatmap": heatmap(gaps),
        "no_context": drops,
        "cloze_errors": cloze_error_shares(judgements),
        "judge_agreement": agreement,
        "human_judge_correlation": correlation,
        "human_judge_correlation_reason": corr_reason,
        "prompt_tokens_by_task": prompt_tokens_by_task(calls, predictions),
        "unpaired": records(unpaired, ["task", "language", "rows"]),
        "no_reference": no_reference_records(no_reference),
        "alignment": alignment,
        **dimensions,
        "settings": {
            **_settings(ctx, len(boot.clusters), len(full)),
            "rows_no_reference": int(no_reference["n_no_reference"].sum()),
            "paragraphs_left_out": len(alignment),
        },
        "caveats": [
            *_caveats(ctx, len(boot.clusters), unpaired, agreement, correlation, corr_reason),
            *(c for c in (no_reference_caveat(no_reference), alignment_caveat(alignment)) if c),
            *(c for c in (floor_caveat(score_records, ctx.roles.reference),) if c),
        ],
    }
    # The tables above are pandas records (dict[str, Any]); GranularityResults names their keys.
    return GranularityAnalysis(cast(GranularityResults, results), est.frame())


def _dimensions(
    boot: ClusterBootstrap,
    sfine: FineTable,
    gfine: FineTable | None,
    full: pd.DataFrame,
    paired: pd.DataFrame,
    config: ProjectConfig,
    est: Estimates,
) -> dict[str, Any]:
    """The extra dimensions: length buckets, model ranks and trends, sentence position, roles."""
    return {
        "length": by_length(boot, full, paired, config, est),
        "model_ranks": model_ranks(sfine, est),
        "gap_trends": gap_trends(gfine, config, est),
        "sentence_position": sentence_positions(boot, full, paired, config, est),
        "roles": by_role(boot, full, est),
    }


def _suite_context(config: ProjectConfig, replicates: int | None, seed: int | None) -> SuiteContext:
    """The study's bootstrap settings, with ``replicates`` and ``seed`` overriding them when given."""
    study = config.study
    return SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=int(replicates if replicates is not None else study.bootstrap_replicates),
        seed=int(seed if seed is not None else study.seed),
        confidence=study.confidence,
        min_articles=study.min_articles,
    )


def _settings(ctx: SuiteContext, n_docs: int, n_rows: int) -> dict[str, Any]:
    return {
        "replicates": ctx.replicates,
        "seed": ctx.seed,
        "confidence": ctx.confidence,
        "min_documents": ctx.min_articles,
        "documents": n_docs,
        "reference": ctx.roles.reference,
        "language_groups": {name: list(classes) for name, classes in LANGUAGE_GROUPS},
        "rows": n_rows,
    }


def _caveats(
    ctx: SuiteContext,
    n_docs: int,
    unpaired: pd.DataFrame,
    agreement: dict[str, Any] | None,
    correlation: dict[str, Any] | None,
    corr_reason: str | None,
) -> list[str]:
    """The fixed reading rules, then what this run's data withheld or left out."""
    caveats = [
        "metrics differ across granularities (accuracy, ROUGE-L, BLEU/chrF, judge total): compare trends "
        "and gaps within a metric, never raw levels across granularities (MGAL's caveat)",
        "gap = English minus language, paired within task (same model and metric), micro mean over the "
        "language's rows; language groups pool their languages' rows (Joshi 4-5 high, 2-3 mid, 0-1 low; "
        "unclassified languages in no group); 'targets' pools the targets as H1's micro (baseline excluded)",
        "middle_vs_edges: middle - mean(begin, end) inside each bootstrap replicate; a negative score "
        "contrast means the middle scores lowest, a positive gap contrast that the cross-lingual gap is "
        "largest in the middle; 'low minus high' compares that gap contrast between language groups",
        "parse-failure rule A: a prediction that is not ok scores 0 (a row without a reference in its "
        "language is not a failure: it is left out and counted)",
    ]
    few = too_few_documents(n_docs, ctx.min_articles)
    if few is not None:
        caveats.append(
            f"{few}; every interval is withheld and the estimates are descriptive (not identifiable)"
        )
    if len(unpaired):
        tasks = ", ".join(
            f"{t} ({int(n)} rows)" for t, n in unpaired.groupby("task", observed=True)["rows"].sum().items()
        )
        caveats.append(
            f"rows without an English counterpart of their task are in scores but not in gaps: {tasks}"
        )
    if agreement is None:
        caveats.append("judge agreement: no paragraph-filling judgements with a total")
    else:
        caveats.append(f"ICC not computed: {agreement['icc_reason']}")
    if corr_reason:
        caveats.append(f"human-vs-judge correlation: {corr_reason}")
    elif correlation is not None and correlation["simulated"]:
        caveats.append(
            "human-vs-judge correlation: computed on SIMULATED ratings (the demo's simulated annotator, "
            "validation/demo_annotations), not human judgments"
        )
    return caveats
