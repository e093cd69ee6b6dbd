"""Dagster wrappers of the inference stage: one run answers every article of a language x model."""


from typing import Literal

import dagster as dg
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.inference import check_credentials, predict_partition
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, MODEL_DIMENSION, response_partitions
from clcg_pipeline.resources import StudyResource

GROUP = "inference"


class InferenceConfig(dg.Config):
    budget_usd: float | None = None
    """Stop issuing calls before this partition's spend would exceed it; partial results are kept."""
    mode: Literal["online", "batch"] = "online"
    """``batch`` submits through the provider's batch API (cheaper, slower; resumable)."""


def build_inference_defs(config: ProjectConfig) -> dg.Definitions:
    responses = response_partitions(config.languages)

    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=responses,
        ins={
            "paragraphs": dg.AssetIn(
                partition_mapping=dg.MultiToSingleDimensionPartitionMapping(
                    partition_dimension_name=LANGUAGE_DIMENSION
                )
            ),
            "items": dg.AssetIn(),
            "study_sample": dg.AssetIn(),
        },
        outs={
            "predictions": dg.AssetOut(description="One row per planned item x repetition x condition."),
            "calls": dg.AssetOut(description="One row per provider request: outcome, tokens, cost, latency."),
        },
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
        key = context.partition_key.keys_by_dimension  # type: ignore[attr-defined]
        language, model_id = key[LANGUAGE_DIMENSION], key[MODEL_DIMENSION]
        model = cfg.models.get(model_id)
        check_credentials(model)
        reps = dict(zip(study_sample["doc_id"], study_sample["n_reps"].astype(int), strict=True))
        total_seen = {"last": -1}

        def progress(done: int, total: int) -> None:
            # Log about every 10% so long partitions show life without flooding the event log.
            step = max(1, total // 10)
            if done == total or done // step != total_seen["last"]:
                total_seen["last"] = done // step
                context.log.info(f"{model_id} / {language}: {done}/{total} calls")

        result = predict_partition(
            model=model,
            language=language,
            paragraphs=paragraphs[paragraphs["doc_id"].isin(reps)],
            items=items[items["doc_id"].isin(reps)],
            reps=reps,
            conditions=cfg.study.conditions,
            cache_dir=study.cache_dir,
            budget_usd=config.budget_usd,
            progress=progress,
            mode=config.mode,
        )
        calls = result.calls
        status_counts = (
            result.predictions["status"].value_counts().to_dict() if len(result.predictions) else {}
        )
        context.add_output_metadata(
            {"statuses": dg.MetadataValue.json({str(k): int(v) for k, v in status_counts.items()})},
            output_name="predictions",
        )
        context.add_output_metadata(
            {
                "cost_usd": float(calls["cost_usd"].sum()) if len(calls) else 0.0,
                "cached": int(calls["cached"].sum()) if len(calls) else 0,
                "outcomes": dg.MetadataValue.json(
                    {str(k): int(v) for k, v in calls["outcome"].value_counts().items()} if len(calls) else {}
                ),
            },
            output_name="calls",
        )
        return result.predictions, calls

    @dg.asset_check(asset="predictions", description="Every planned slot has exactly one prediction row.")
    def one_row_per_slot(
        context: dg.AssetCheckExecutionContext, predictions: pd.DataFrame, items: pd.DataFrame
    ) -> dg.AssetCheckResult:
        keys = ["model", "language", "doc_id", "item_id", "rep", "context_scope"]
        duplicated = int(predictions.duplicated(keys).sum()) if len(predictions) else 0
        unknown = int((~predictions["item_id"].isin(items["item_id"])).sum()) if len(predictions) else 0
        return dg.AssetCheckResult(
            passed=duplicated == 0 and unknown == 0,
            metadata={"rows": len(predictions), "duplicated_slots": duplicated, "unknown_items": unknown},
        )

    @dg.asset_check(asset="predictions", description="Share of predictions that are unparseable or missing.")
    def parse_failure_rate(
        context: dg.AssetCheckExecutionContext, study: StudyResource, predictions: pd.DataFrame
    ) -> dg.AssetCheckResult:
        limit = study.load().study.max_parse_failure_rate
        failed = int((predictions["status"] != "ok").sum()) if len(predictions) else 0
        rate = failed / len(predictions) if len(predictions) else 0.0
        return dg.AssetCheckResult(
            passed=rate <= limit,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"rows": len(predictions), "failed": failed, "rate": rate, "limit": limit},
        )

    return dg.Definitions(assets=[responses], asset_checks=[one_row_per_slot, parse_failure_rate])
