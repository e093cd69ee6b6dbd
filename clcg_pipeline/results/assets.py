"""Dagster wrapper of the study's results: the estimates table and study_results.json."""

from typing import Any

import dagster as dg
import pandas as pd

from clcg_pipeline.analysis import pair_store_path, read_pair_store, write_leaderboard, write_pair_store
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.results._derive import assemble_study_results
from clcg_pipeline.results._merge import STUDY_SECTIONS, write_model_pairs
from clcg_pipeline.results._new_model import analysis_times
from clcg_pipeline.storage import read_all_partitions, read_leaderboard, validate_document

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
        sections = {
            "error_taxonomy": error_taxonomy_results,
            "human_validation": human_validation_results,
            "granularity": granularity_results,
        }
        # Each study's document fits its shape (storage) before any work is done with it.
        for key, document in sections.items():
            validate_document(document, key, source=study.path(f"{STUDY_SECTIONS[key]}.json"))
        # The model pairs of the last analysis: a new model computes only its own pairs (issue 37).
        store_path = pair_store_path(study.data_dir)
        previous, why = read_pair_store(store_path)
        if why is not None:
            context.log.warning(why)
        # The same function re-derives the document from a data folder (derive_study_results).
        assembled = assemble_study_results(
            cfg,
            study.data_dir,
            articles=articles,
            fertility=tokenizer_fertility_by_language,
            sections=sections,
            calls=read_all_partitions(study.data_dir, "calls"),
            analysed_at=analysis_times(context.instance, study.data_dir),
            pair_store=previous,
        )
        result = assembled.study
        # Checked before anything is written: a renamed key or a wrong type fails here, by field.
        validate_document(result.results, source=study.path("study_results.json"))
        context.log.info(
            f"estimated over {assembled.rows} scored rows; {assembled.excluded} incomplete versions left out"
        )
        h1 = result.results.get("h1", {})
        context.add_output_metadata(
            {
                "h1_micro": dg.MetadataValue.json(dict(h1.get("h1_micro") or {})),
                "rows": assembled.rows,
            },
            output_name="study_results",
        )
        # One row per model for a results page, beside study_results.json (CSV and JSON), read
        # back against its shape (storage.LeaderboardDocument): a drifted field fails here, by name.
        read_leaderboard(write_leaderboard(result.results, study.data_dir)["json"])
        # Every model pair beside it (study_results.json keeps those a reader needs and names it).
        write_model_pairs(assembled.pairs, study.data_dir)
        if (store := result.pair_store) is not None:  # for the next analysis to reuse
            write_pair_store(store, store_path)
            context.log.info(f"model pairs: {store.computed} computed, {store.reused} kept from the last run")
        return result.estimates, result.results

    return dg.Definitions(assets=[analysis])
