"""Dagster wrapper of the scoring stage."""

import dagster as dg
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.partitions import response_partitions
from clcg_pipeline.scoring import score_predictions

GROUP = "scoring"


def build_scoring_defs(config: ProjectConfig) -> dg.Definitions:
    @dg.asset(
        group_name=GROUP,
        partitions_def=response_partitions(config.languages),
        automation_condition=dg.AutomationCondition.eager(),
    )
    def scores(
        context: dg.AssetExecutionContext, predictions: pd.DataFrame, items: pd.DataFrame
    ) -> pd.DataFrame:
        """Exact match, Token-F1, L0 accuracy and ROUGE-L per prediction; failures score 0 (rule A)."""
        result = score_predictions(predictions, items)
        context.add_output_metadata({"dropped": dg.MetadataValue.json(result.dropped)})
        return result.scores

    return dg.Definitions(assets=[scores])
