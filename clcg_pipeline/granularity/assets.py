"""Dagster wrappers of the granularity task family: documents, tasks, responses, scores, analysis.

One module per asset group: G1 long documents and the task bank (``_bank_assets``), G2 task
answers, scores and judges (``_answer_assets``), G3 the analysis (``_analysis_assets``).
"""

import dagster as dg

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis_assets import (
    build_granularity_analysis_defs,
    granularity_results_check,
)
from clcg_pipeline.granularity._answer_assets import (
    TaskInferenceConfig,
    build_task_scoring_defs,
    task_predictions_check,
    task_scores_check,
)
from clcg_pipeline.granularity._asset_parts import DISABLED
from clcg_pipeline.granularity._bank_assets import (
    TaskBankConfig,
    bucket_check,
    build_task_bank_defs,
    task_check,
)

__all__ = [
    "DISABLED",
    "TaskBankConfig",
    "TaskInferenceConfig",
    "bucket_check",
    "build_granularity_analysis_defs",
    "build_granularity_defs",
    "build_task_bank_defs",
    "build_task_scoring_defs",
    "granularity_results_check",
    "task_check",
    "task_predictions_check",
    "task_scores_check",
]


def build_granularity_defs(config: ProjectConfig) -> dg.Definitions:
    """Every granularity asset: the three groups' definitions merged."""
    return dg.Definitions.merge(
        build_task_bank_defs(config), build_task_scoring_defs(config), build_granularity_analysis_defs(config)
    )
