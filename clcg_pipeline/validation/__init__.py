"""Validation studies around the estimator, one subpackage each.

``taxonomy``: the automatic error taxonomy (two LLM judges label English/target response pairs
with ``clcg-error-v1``). ``human``: the human-validation round trip (annotation sample, export
for annotators, import, quality control, agreement): the "human-validation joins" of the graph.
"""

from clcg_pipeline.validation.human import (
    CLASS_CLCG_CAVEAT,
    RUBRIC,
    alpha_table,
    attach_sample,
    class_clcg_spearman,
    per_response,
    run_human_validation,
    run_qc,
    value_counts,
)
from clcg_pipeline.validation.taxonomy import (
    ERROR_EVIDENCE_FIELDS,
    AnalysisInputs,
    Taxonomy,
    analyse_error_taxonomy,
    error_template,
    load_taxonomy,
)

__all__ = [
    "CLASS_CLCG_CAVEAT",
    "ERROR_EVIDENCE_FIELDS",
    "RUBRIC",
    "AnalysisInputs",
    "Taxonomy",
    "alpha_table",
    "analyse_error_taxonomy",
    "attach_sample",
    "class_clcg_spearman",
    "error_template",
    "load_taxonomy",
    "per_response",
    "run_human_validation",
    "run_qc",
    "value_counts",
]
