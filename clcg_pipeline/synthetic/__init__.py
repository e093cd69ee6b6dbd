"""Synthetic study data with known answers, for the tests and the benchmarks (never the product).

One module per study: the responses' scores (``_analysis``), the granularity tasks
(``_granularity``), the error taxonomy (``_taxonomy``) and the human validation (``_human``).
"""

from clcg_pipeline.synthetic._analysis import (
    synthetic_articles,
    synthetic_config,
    synthetic_fertility,
    synthetic_models,
    synthetic_scores,
)
from clcg_pipeline.synthetic._granularity import ExtraEffects, synthetic_task_scores, with_extra_effects
from clcg_pipeline.synthetic._human import synthetic_human_study
from clcg_pipeline.synthetic._taxonomy import synthetic_frames

__all__ = [
    "ExtraEffects",
    "synthetic_articles",
    "synthetic_config",
    "synthetic_fertility",
    "synthetic_frames",
    "synthetic_human_study",
    "synthetic_models",
    "synthetic_scores",
    "synthetic_task_scores",
    "with_extra_effects",
]
