"""The four jobs a whole study run is made of, in the order they run.

A study is corpus (one run over its languages) -> study inputs (sample, items, fertility) ->
responses (one run per model over its languages) -> analysis (estimates, report, catalog).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg

from clcg_pipeline.calls import PROVIDER_TAG
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.orchestration._dagster_internals import (
    SINGLETON_REPOSITORY_NAME,
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from clcg_pipeline.partitions import (
    MODEL_CALLS,
    MODEL_CALLS_JOB,
    MODEL_DIMENSION,
    RANGE_END_TAG,
    RANGE_START_TAG,
    language_partitions,
    model_of_partition,
    model_partitions,
    response_partitions,
)

CORPUS_ASSETS = ("articles", "paragraphs", "corpus_audit", "item_translations")
STUDY_INPUT_ASSETS = (
    "item_level_audit",
    "level_audit_calls",
    "languages",
    "study_sample",
    "items",
    "item_rejections",
    "item_calls",
    "tokenizer_fertility_by_language",
    "long_documents",
    "long_paragraphs",
    "granularity_tasks",
    "task_rejections",
    "task_writer_calls",
)
RESPONSE_ASSETS = (
    "predictions",
    "calls",
    "scores",
    # granularity tasks (issue 11): answered, scored and judged per language x model
    "task_predictions",
    "task_calls",
    "task_scores",
    "task_judgements",
    "task_judge_calls",
)
ANALYSIS_ASSETS = (
    "estimates",
    "study_results",
    "report",
    "duckdb_catalog",
    # error taxonomy (issue 10): the diagnostic sample, then the judges (paid, cached, budgeted)
    "diagnostic_sample",
    "error_judgements",
    "order_bias_judgements",
    "judge_calls",
    # error-taxonomy analysis (issue 10): after the judges' error_judgements
    "error_taxonomy_estimates",
    "error_taxonomy_results",
    # human validation (issue 10): sample, checklists, exports, then the inbox import
    "annotation_sample",
    "keypoints",
    "keypoint_calls",
    "annotation_exports",
    "human_annotations",
    "annotation_imports",
    # human-validation analysis (issue 10, V4): QC funnel, agreement, preference, joins
    "human_qc",
    "human_validation_joins",
    "human_validation_estimates",
    "human_validation_results",
    # granularity analysis (issue 11, G3): reads every task_scores partition
    "granularity_estimates",
    "granularity_results",
)
# Run by annotation_inbox_sensor when a file lands in the inbox: the import and everything
# downstream of it (the human-validation joins and analysis), whatever is added there later.
HUMAN_VALIDATION_IMPORT_ASSETS = ("human_annotations", "annotation_imports")

# The code location's name in workspace.yaml (what `make dev` and the daemon load).
CODE_LOCATION = "clcg_pipeline"


def build_jobs(config: ProjectConfig) -> list[dg.UnresolvedAssetJobDefinition]:
    covered = study_coverage(config).covered
    return [
        dg.define_asset_job(
            "corpus_job",
            selection=dg.AssetSelection.assets(*CORPUS_ASSETS),
            partitions_def=language_partitions(covered),
            description="Load and audit the corpus (source parsed once a run), one partition per language.",
        ),
        dg.define_asset_job(
            "study_inputs_job",
            selection=dg.AssetSelection.assets(*STUDY_INPUT_ASSETS),
            description="Language panel, article sample, item bank and tokenizer fertility.",
        ),
        dg.define_asset_job(
            MODEL_CALLS_JOB,
            selection=dg.AssetSelection.assets(MODEL_CALLS),
            partitions_def=model_partitions,
            description="Send one model's pending requests in one stream, ahead of its responses runs.",
        ),
        dg.define_asset_job(
            "responses_job",
            selection=dg.AssetSelection.assets(*RESPONSE_ASSETS),
            partitions_def=response_partitions(covered),
            description="Ask one model about every article in one language, then score the answers.",
        ),
        dg.define_asset_job(
            "analysis_job",
            selection=dg.AssetSelection.assets(*ANALYSIS_ASSETS),
            description="Estimators, study_results.json, the HTML report and the DuckDB catalog.",
        ),
        dg.define_asset_job(
            "human_validation_job",
            selection=dg.AssetSelection.assets(*HUMAN_VALIDATION_IMPORT_ASSETS).downstream(),
            description="Import new annotation files from the inbox, then the human-validation joins.",
        ),
    ]


def provider_tags(config: ProjectConfig, run_tags: Mapping[str, str]) -> dict[str, str]:
    """``{clcg/provider: ...}`` for a run of a model partition of ``config``, else ``{}``.

    Reads the model from the run's partition tags, whichever way the run was launched.
    """
    partition = run_tags.get("dagster/partition")
    known = {m.id: m.provider for m in config.models.models}
    model_id = run_tags.get(f"dagster/partition/{MODEL_DIMENSION}") or model_of_partition(partition)
    if model_id is None and partition in known:
        model_id = partition  # a model_calls run: partitioned by model alone
    if model_id is None:
        # A backfill's run over one model's languages (the family's single-run backfill policy).
        first = model_of_partition(run_tags.get(RANGE_START_TAG))
        last = model_of_partition(run_tags.get(RANGE_END_TAG))
        model_id = first if first == last else None
    return {PROVIDER_TAG: known[model_id]} if model_id in known else {}


def study_run_tags(config: ProjectConfig, partition_key: str | None) -> dict[str, str]:
    """Tags ``clcg run`` gives a run it executes in process (the coordinator tags the others)."""
    return provider_tags(config, {"dagster/partition": partition_key} if partition_key else {})


def code_location_job_origin(job_name: str) -> RemoteJobOrigin:
    """The origin of ``job_name`` as loaded from workspace.yaml's code location."""
    location = RegisteredCodeLocationOrigin(CODE_LOCATION)
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME), job_name)


@contextmanager
def runs_under_code_location(instance: dg.DagsterInstance) -> Iterator[dg.DagsterInstance]:
    """While open, runs ``execute_in_process`` creates on ``instance`` belong to the code location.

    The UI lists a job's runs by the repository label of their origin and draws the Overview
    timeline from it; ``execute_in_process`` records none, so ``clcg run``'s runs were
    invisible there. ``execute_in_process`` offers no way to pass one, so the instance's
    ``create_run_for_job`` (which takes ``remote_job_origin``) is wrapped for the duration.
    """

    original = instance.create_run_for_job

    def create_run_for_job(*args: Any, **kwargs: Any) -> dg.DagsterRun:
        job_def = kwargs["job_def"] if "job_def" in kwargs else args[0]
        if kwargs.get("remote_job_origin") is None:
            kwargs["remote_job_origin"] = code_location_job_origin(job_def.name)
        return original(*args, **kwargs)

    instance.create_run_for_job = create_run_for_job  # type: ignore[method-assign]
    try:
        yield instance
    finally:
        del instance.create_run_for_job
