"""Dagster wrapper of the scoring stage."""

from collections.abc import Iterator

import dagster as dg
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.partitions import each_partition, own_rows, response_partitions, single_run_policy
from clcg_pipeline.scoring import SemSim, SemSimUnavailable, score_predictions, semsim_for

GROUP = "scoring"


def has_scores(
    scores: pd.DataFrame, partition: str | None = None, items: pd.DataFrame | None = None
) -> dg.AssetCheckResult:
    """Warn on an empty partition: 0 rows means the language had nothing to answer, not a pass."""
    where = partition or "this partition"
    # An empty item bank (a FLORES primary without item_generator) empties every language, English too.
    why = (
        "the item bank has no item for the sampled articles"
        if items is not None and len(items) == 0
        else "the primary source has no sampled article in this language"
    )
    return dg.AssetCheckResult(
        asset_key="scores",
        check_name="has_scores",
        passed=len(scores) > 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=None if len(scores) else f"{where}: no scores: {why}",
        metadata={"rows": len(scores)},
    )


def _score(
    predictions: pd.DataFrame, items: pd.DataFrame, semsim: SemSim | None, setting: str | None, partition: str
) -> Iterator[dg.Output[pd.DataFrame] | dg.AssetCheckResult]:
    """One partition's scores and check."""
    result = score_predictions(predictions, items, semsim=semsim)
    metadata: dict[str, dg.RawMetadataValue] = {
        "dropped": dg.MetadataValue.json(result.dropped),
        "semsim": setting or "off",
        "semsim_rows": int(result.scores["semsim"].notna().sum()),
    }
    where = partition.replace("|", " / ")
    # Yielded, not a MaterializeResult: Dagster's type check compares its value with `!=`,
    # which a DataFrame cannot answer.
    yield dg.Output(result.scores, metadata=metadata)
    yield has_scores(result.scores, where, items)


def build_scoring_defs(config: ProjectConfig) -> dg.Definitions:
    by_response = response_partitions(study_coverage(config).covered)

    @dg.asset(
        group_name=GROUP,
        kinds={"parquet"},
        owners=["team:clcg"],
        partitions_def=by_response,
        backfill_policy=single_run_policy(),  # one run per new model, not per language (issue 32)
        # Checked inside the asset, one result per language x model (an empty one warns).
        check_specs=[
            dg.AssetCheckSpec(
                "has_scores",
                asset="scores",
                description="Warns when the partition has no scored row (language not in the source).",
                partitions_def=by_response,
            )
        ],
    )
    def scores(
        context: dg.AssetExecutionContext, predictions: pd.DataFrame, items: pd.DataFrame
    ) -> Iterator[dg.Output | dg.AssetCheckResult | dg.AssetCheckEvaluation]:
        """Exact match, Token-F1, L0 accuracy and ROUGE-L per prediction; failures score 0 (rule A)."""
        # study.yaml `semsim`: on fills the semsim column for every row; on without the extra
        # fails here, naming the setting and the install command; off leaves it null.
        setting = config.study.semsim_model
        try:
            semsim = semsim_for(setting)
        except SemSimUnavailable as exc:
            raise dg.Failure(description=str(exc)) from exc
        yield from each_partition(
            context, lambda key: _score(own_rows(context, predictions, key), items, semsim, setting, key)
        )

    return dg.Definitions(assets=[scores])
