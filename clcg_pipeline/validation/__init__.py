"""Validation studies around the estimator (STUDY.md section 7).

The automatic error taxonomy (two LLM judges label English/target response pairs with
``clcg-error-v1``) and the human-validation round trip (annotation sample, export for
annotators, import, quality control, agreement): the "human-validation joins" of the graph.
"""

from clcg_pipeline.validation._agreement import value_counts
from clcg_pipeline.validation._error_judging import ERROR_EVIDENCE_FIELDS, error_template
from clcg_pipeline.validation._human_analysis import (
    CLASS_CLCG_CAVEAT,
    alpha_table,
    attach_sample,
    class_clcg_spearman,
    per_response,
    run_human_validation,
)
from clcg_pipeline.validation._human_synthetic import synthetic_human_study
from clcg_pipeline.validation._qc import RUBRIC, run_qc
from clcg_pipeline.validation._taxonomy import load_taxonomy
from clcg_pipeline.validation._taxonomy_analysis import (
    AnalysisInputs,
    analyse_error_taxonomy,
    synthetic_frames,
)

__all__ = [
    "CLASS_CLCG_CAVEAT",
    "ERROR_EVIDENCE_FIELDS",
    "RUBRIC",
    "AnalysisInputs",
    "alpha_table",
    "analyse_error_taxonomy",
    "attach_sample",
    "class_clcg_spearman",
    "error_template",
    "load_taxonomy",
    "per_response",
    "run_human_validation",
    "run_qc",
    "synthetic_frames",
    "synthetic_human_study",
    "value_counts",
]
