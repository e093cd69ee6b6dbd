"""Estimators and tests of STUDY.md section 6, returning tables and a results document."""

from clcg_pipeline.analysis._bootstrap import (
    ClusterTable,
    Replicates,
    bootstrap_p,
    cluster_table,
    draw_multiplicities,
    percentile_ci,
    replicate,
)
from clcg_pipeline.analysis._context import SuiteContext, num
from clcg_pipeline.analysis._h1 import estimate_h1, h1_core, roles_of
from clcg_pipeline.analysis._io import estimate_file, read_scores, write_json
from clcg_pipeline.analysis._mixed import mixed_h1
from clcg_pipeline.analysis._prepare import Rule, analysis_rows
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
    "Replicates",
    "Rule",
    "StudyResults",
    "SuiteContext",
    "analysis_rows",
    "bootstrap_p",
    "cluster_table",
    "draw_multiplicities",
    "estimate_file",
    "estimate_h1",
    "h1_core",
    "mixed_h1",
    "num",
    "percentile_ci",
    "read_scores",
    "replicate",
    "roles_of",
    "run_suite",
    "synthetic_articles",
    "synthetic_config",
    "synthetic_fertility",
    "synthetic_models",
    "synthetic_scores",
    "write_json",
]
