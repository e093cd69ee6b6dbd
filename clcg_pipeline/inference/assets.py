"""Dagster wrappers of the inference stage: one run answers every article of a language x model."""

from typing import Literal

import dagster as dg
import pandas as pd

from clcg_pipeline.calls import CallOptions, logged_progress, partition_origin, run_budget
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.inference import predict_partition, sampled_inputs
from clcg_pipeline.partitions import (
    LANGUAGE_DIMENSION,
    MODEL_DIMENSION,
    by_dimension,
    each_partition,
    model_calls_dep,
    response_partitions,
    single_run_policy,
)
from clcg_pipeline.resources import StudyResource

GROUP = "inference"
SLOT_KEY = ["model", "language", "doc_id", "item_id", "rep", "context_scope"]


class InferenceConfig(dg.Config):
    budget_usd: float | None = None
    """Stop issuing calls before this Dagster run's spend would exceed it; partial results are kept.
    Shared by every paid op of the run (``inference._calls.run_budget``): responses, tasks, judges."""
    mode: Literal["online", "batch"] = "online"
    """batch submits through the provider's batch API (cheaper, slower; resumable)."""


def no_predictions(partition: str | None, items: pd.DataFrame) -> str:
    """Why a responses partition has no row, in a sentence naming it."""
    where = partition or "this partition"
    if len(items) == 0:
        return f"{where}: no predictions: the item bank has no item for the sampled articles"
    return f"{where}: no predictions: the primary source has no sampled article in this language"


def one_row_per_slot(
    predictions: pd.DataFrame, items: pd.DataFrame, partition: str | None = None
) -> dg.AssetCheckResult:
    """Every planned slot answered once, every item known; an empty partition warns (not green)."""
    if len(predictions) == 0:
        return dg.AssetCheckResult(
            asset_key="predictions",
            check_name="one_row_per_slot",
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description=no_predictions(partition, items),
            metadata={"rows": 0, "duplicated_slots": 0, "unknown_items": 0},
        )
    duplicated = int(predictions.duplicated(SLOT_KEY).sum())
    unknown = int((~predictions["item_id"].isin(items["item_id"])).sum())
    return dg.AssetCheckResult(
        asset_key="predictions",
        check_name="one_row_per_slot",
        passed=duplicated == 0 and unknown == 0,
        metadata={"rows": len(predictions), "duplicated_slots": duplicated, "unknown_items": unknown},
    )


def parse_failure_rate(
    predictions: pd.DataFrame, limit: float, partition: str | None = None, items: pd.DataFrame | None = None
) -> dg.AssetCheckResult:
    """Warn above the configured failure rate, and on an empty partition (no rate to speak of)."""
    failed = int((predictions["status"] != "ok").sum()) if len(predictions) else 0
    rate = failed / len(predictions) if len(predictions) else 0.0
    empty = len(predictions) == 0
    return dg.AssetCheckResult(
        asset_key="predictions",
        check_name="parse_failure_rate",
        passed=not empty and rate <= limit,
        severity=dg.AssetCheckSeverity.WARN,
        description=no_predictions(partition, items if items is not None else pd.DataFrame())
        if empty
        else None,
        metadata={"rows": len(predictions), "failed": failed, "rate": rate, "limit": limit},
    )


def _counts(series: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in series.value_counts().items()}


def _responses_outs() -> dict[str, dg.AssetOut]:
    return {
        "predictions": dg.AssetOut(
            description="One row per planned item x repetition x condition.",
            kinds={"parquet"},
            owners=["team:clcg"],
        ),
        "calls": dg.AssetOut(
            description="One row per provider request: outcome, tokens, cost, latency.",
            kinds={"parquet"},
            owners=["team:clcg"],
        ),
    }


def _responses_check_specs(responses_partitions: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    # Checked inside the asset: a standalone check on a partitioned asset would load every partition.
    return [
        dg.AssetCheckSpec(
            "one_row_per_slot",
            asset="predictions",
            description="Every planned slot has exactly one prediction row; every item is known.",
            partitions_def=responses_partitions,  # one result per language x model
        ),
        dg.AssetCheckSpec(
            "parse_failure_rate",
            asset="predictions",
            description="Share of predictions that are unparseable or missing.",
            partitions_def=responses_partitions,  # one result per language x model
        ),
    ]


def _call_options(
    context: dg.AssetExecutionContext,
    config: InferenceConfig,
    study: StudyResource,
    cfg: ProjectConfig,
    label: str,
    partition: str,
) -> CallOptions:
    """The partition's cache, budgets, mode, call origin and progress log."""
    return CallOptions(
        cache_dir=study.cache_dir,
        study_budget_usd=cfg.study.budget_usd,
        budget=run_budget(context.run_id, config.budget_usd),
        mode=config.mode,
        origin=partition_origin(context, "calls", partition),
        progress=logged_progress(context.log.info, label),
    )


def _predictions_output(predictions: pd.DataFrame) -> dg.Output:
    return dg.Output(
        predictions,
        output_name="predictions",
        metadata={
            "statuses": dg.MetadataValue.json(_counts(predictions["status"]) if len(predictions) else {})
        },
    )


def _calls_output(calls: pd.DataFrame) -> dg.Output:
    return dg.Output(
        calls,
        output_name="calls",
        metadata={
            "new_cost_usd": float(calls.loc[~calls["cached"].astype(bool), "cost_usd"].sum())
            if len(calls)
            else 0.0,
            "cached": int(calls["cached"].sum()) if len(calls) else 0,
            "outcomes": dg.MetadataValue.json(_counts(calls["outcome"]) if len(calls) else {}),
        },
    )


def _responses_asset(
    responses_partitions: dg.MultiPartitionsDefinition, by_language: dg.PartitionMapping
) -> dg.AssetsDefinition:
    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=responses_partitions,
        # After the model's stream (model_calls), which sends this partition's calls ahead.
        deps=[model_calls_dep()],
        backfill_policy=single_run_policy(),  # one run per new model, not per language (issue 32)
        ins={
            "paragraphs": dg.AssetIn(partition_mapping=by_language),
            "items": dg.AssetIn(),
            "study_sample": dg.AssetIn(),
        },
        outs=_responses_outs(),
        check_specs=_responses_check_specs(responses_partitions),
    )
    def responses(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: InferenceConfig,
        study: StudyResource,
        paragraphs: pd.DataFrame,
        items: pd.DataFrame,
        study_sample: pd.DataFrame,
    ):
        """Ask the partition's model every question of every sampled article in the partition's language."""
        cfg = study.load()
        inputs = (paragraphs, items, study_sample)
        yield from each_partition(context, lambda key: _answer(context, config, study, cfg, key, *inputs))

    def _answer(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: InferenceConfig,
        study: StudyResource,
        cfg: ProjectConfig,
        partition: str,
        paragraphs: pd.DataFrame,
        items: pd.DataFrame,
        study_sample: pd.DataFrame,
    ):
        """One partition's outputs and checks (``predict_partition`` keeps its language's paragraphs)."""
        # `dagster job launch` and some backfills hand the key over as text ("en|gpt-4o").
        key = responses_partitions.get_partition_key_from_str(partition).keys_by_dimension
        language, model_id = key[LANGUAGE_DIMENSION], key[MODEL_DIMENSION]
        model = cfg.models.get(model_id)
        sampled_paragraphs, sampled_items, reps = sampled_inputs(paragraphs, items, study_sample)
        result = predict_partition(
            model=model,
            language=language,
            paragraphs=sampled_paragraphs,
            items=sampled_items,
            reps=reps,
            conditions=cfg.study.conditions,
            options=_call_options(context, config, study, cfg, f"{model_id} / {language}", partition),
        )
        predictions, calls = result.predictions, result.calls
        yield _predictions_output(predictions)
        yield _calls_output(calls)
        where = f"{language} / {model_id}"
        yield one_row_per_slot(predictions, items, where)
        yield parse_failure_rate(predictions, cfg.study.max_parse_failure_rate, where, items)

    return responses


def build_inference_defs(config: ProjectConfig) -> dg.Definitions:
    return dg.Definitions(
        assets=[
            _responses_asset(
                response_partitions(study_coverage(config).covered), by_dimension(LANGUAGE_DIMENSION)
            )
        ]
    )
