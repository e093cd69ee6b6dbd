"""The four jobs a whole study run is made of, in the order they run.

A study is corpus (one run per language) -> study inputs (sample, items, fertility) ->
responses (one run per language x model) -> analysis (estimates, report, catalog).
"""

from __future__ import annotations

import dagster as dg

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.partitions import language_partitions, response_partitions

CORPUS_ASSETS = ("articles", "paragraphs", "corpus_audit", "item_translations")
STUDY_INPUT_ASSETS = (
    "item_level_audit",
    "languages",
    "study_sample",
    "items",
    "item_rejections",
    "tokenizer_fertility_by_language",
)
RESPONSE_ASSETS = ("predictions", "calls", "scores")
ANALYSIS_ASSETS = ("estimates", "study_results", "report", "duckdb_catalog")

PROVIDER_TAG = "clcg/provider"


def build_jobs(config: ProjectConfig) -> list[dg.UnresolvedAssetJobDefinition]:
    return [
        dg.define_asset_job(
            "corpus_job",
            selection=dg.AssetSelection.assets(*CORPUS_ASSETS),
            partitions_def=language_partitions(config.languages),
            description="Load the corpus and audit it, one language per run.",
        ),
        dg.define_asset_job(
            "study_inputs_job",
            selection=dg.AssetSelection.assets(*STUDY_INPUT_ASSETS),
            description="Language panel, article sample, item bank and tokenizer fertility.",
        ),
        dg.define_asset_job(
            "responses_job",
            selection=dg.AssetSelection.assets(*RESPONSE_ASSETS),
            partitions_def=response_partitions(config.languages),
            description="Ask one model about every article in one language, then score the answers.",
        ),
        dg.define_asset_job(
            "analysis_job",
            selection=dg.AssetSelection.assets(*ANALYSIS_ASSETS),
            description="Estimators, study_results.json, the HTML report and the DuckDB catalog.",
        ),
    ]
