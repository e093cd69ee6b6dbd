"""Dagster wrapper of the study's results: the estimates table and study_results.json."""

from typing import Any

import dagster as dg
import pandas as pd

from clcg_pipeline.analysis import StudyResults, drilldown, run_suite, write_leaderboard
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.results._inputs import current_scores, explain_missing_languages, read_replication_scores
from clcg_pipeline.results._merge import STUDY_SECTIONS, merge_study_sections
from clcg_pipeline.results._new_model import new_model_block, newest_model
from clcg_pipeline.storage import read_all_partitions

# The asset keeps its group (and name) from when it lived in the analysis package.
GROUP = "analysis"


def build_analysis_defs(config: ProjectConfig) -> dg.Definitions:
    """The ``analysis`` multi-asset: ``estimates`` and ``study_results`` (the studies merged in)."""
    reference = config.languages.reference

    @dg.multi_asset(
        group_name=GROUP,
        deps=[dg.AssetDep("scores"), dg.AssetDep("corpus_audit")],
        ins={
            "articles": dg.AssetIn(partition_mapping=dg.SpecificPartitionsPartitionMapping([reference])),
            "tokenizer_fertility_by_language": dg.AssetIn(),
            # The validation studies and the granularity family, merged in so that
            # study_results.json stays the one document the report and the CLI read.
            **{name: dg.AssetIn() for name in STUDY_SECTIONS.values()},
        },
        outs={
            "estimates": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every estimand: estimate, interval, p, adjusted p, n.",
            ),
            "study_results": dg.AssetOut(
                kinds={"json"},
                owners=["team:clcg"],
                description="study_results.json: the single source of truth for reports.",
            ),
        },
    )
    def analysis(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        study: StudyResource,
        articles: pd.DataFrame,
        tokenizer_fertility_by_language: pd.DataFrame,
        error_taxonomy_results: dict[str, Any],
        human_validation_results: dict[str, Any],
        granularity_results: dict[str, Any],
    ):
        """Run the estimators (docs/ESTIMANDS.md) over every scored partition of the current panel."""
        cfg = study.load()
        scores, audit, excluded = current_scores(study.data_dir, cfg)
        context.log.info(
            f"estimating over {len(scores)} scored rows; {len(excluded)} incomplete versions left out"
        )
        result = _estimate(scores, cfg, articles=articles, fertility=tokenizer_fertility_by_language)
        _describe_panel(result.results, cfg, study.data_dir, scores, audit, excluded, reference=reference)
        merge_study_sections(
            result.results,
            result.estimates,
            {
                "error_taxonomy": error_taxonomy_results,
                "human_validation": human_validation_results,
                "granularity": granularity_results,
            },
        )
        if len(excluded):
            result.results.setdefault("warnings", []).append(
                f"{len(excluded)} article x language version(s) below the completeness threshold "
                "were excluded from every estimate (see excluded_versions)"
            )
        h1 = result.results.get("h1", {})
        context.add_output_metadata(
            {
                "h1_micro": dg.MetadataValue.json(h1.get("h1_micro")),
                "rows": len(scores),
            },
            output_name="study_results",
        )
        newest = newest_model(
            read_all_partitions(study.data_dir, "calls"), [m.id for m in cfg.models.evaluated]
        )
        if newest is not None:  # said where it matters: first in the report and the terminal
            result.results["new_model"] = new_model_block(result.results, newest)
        # One row per model for a results page, beside study_results.json (CSV and JSON).
        write_leaderboard(result.results, study.data_dir)
        return result.estimates, result.results

    return dg.Definitions(assets=[analysis])


def _estimate(
    scores: pd.DataFrame, cfg: ProjectConfig, *, articles: pd.DataFrame, fertility: pd.DataFrame
) -> StudyResults:
    """The estimator suite (docs/ESTIMANDS.md) over the kept scores (and the replication run's, if set)."""
    return run_suite(
        scores,
        cfg,
        articles=articles[["doc_id", "published"]],
        fertility=fertility,
        replication_scores=(
            read_replication_scores(cfg.study.replication_scores) if cfg.study.replication_scores else None
        ),
    )


def _describe_panel(
    results: dict[str, Any],
    cfg: ProjectConfig,
    data_dir: str,
    scores: pd.DataFrame,
    audit: pd.DataFrame,
    excluded: pd.DataFrame,
    *,
    reference: str,
) -> None:
    """The panel's languages, the versions left out and why, and the item-level drilldown."""
    # The report and the CLI label languages from here, so the results document stands alone.
    results.setdefault(
        "languages",
        [
            {"iso": lang.iso, "name": lang.name, "joshi_class": lang.joshi_class, "role": lang.role}
            for lang in cfg.languages.languages
        ],
    )
    results["excluded_versions"] = excluded.to_dict(orient="records")
    items = read_all_partitions(data_dir, "items")
    explain_missing_languages(results, audit, excluded, items)
    # Item-level evidence for the report: where English and each language disagree most.
    results["drilldown"] = drilldown(
        scores,
        read_all_partitions(data_dir, "predictions"),
        items,
        reference=reference,
        metric=cfg.study.band.metric,
        levels=cfg.study.band.levels,
        item_source=cfg.study.band.item_source,
        context_scope=cfg.study.band.context_scope,
        languages=cfg.languages.isos,
    )
