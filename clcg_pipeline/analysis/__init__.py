"""Estimators and tests of STUDY.md section 6, returning tables and a results document."""

from clcg_pipeline.analysis._bootstrap import (
    ClusterTable,
    bootstrap_p,
    cluster_table,
    draw_multiplicities,
    percentile_ci,
)
from clcg_pipeline.analysis._h1 import estimate_h1
from clcg_pipeline.analysis._io import estimate_file, read_scores, write_json
from clcg_pipeline.analysis._prepare import Rule
from clcg_pipeline.analysis._suite import ESTIMATE_COLUMNS, StudyResults, run_suite
from clcg_pipeline.analysis._synthetic import (
    synthetic_articles,
    synthetic_config,
    synthetic_fertility,
    synthetic_models,
    synthetic_scores,
)

__all__ = [
    "ESTIMATE_COLUMNS",
    "ClusterTable",
    "Rule",
    "StudyResults",
    "bootstrap_p",
    "cluster_table",
    "draw_multiplicities",
    "estimate_file",
    "estimate_h1",
    "percentile_ci",
    "read_scores",
    "run_suite",
    "synthetic_articles",
    "synthetic_config",
    "synthetic_fertility",
    "synthetic_models",
    "synthetic_scores",
    "write_json",
]
