"""The automatic error taxonomy: two LLM judges label English/target pairs.

The label set (``clcg-error-v1.yaml``, package data beside these modules), the diagnostic
sample of pairs, the judges' prompts and their offline stand-in, and the analysis of the labels.
"""

from clcg_pipeline.validation.taxonomy._analysis import analyse_error_taxonomy, run_error_taxonomy_analysis
from clcg_pipeline.validation.taxonomy._from_tables import TAXONOMY_TABLES, error_taxonomy_from_tables
from clcg_pipeline.validation.taxonomy._inputs import ORDER_COLUMNS, ORDERS, AnalysisInputs
from clcg_pipeline.validation.taxonomy._judging import ERROR_EVIDENCE_FIELDS, error_template
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy, load_taxonomy

__all__ = [
    "ERROR_EVIDENCE_FIELDS",
    "ORDERS",
    "ORDER_COLUMNS",
    "TAXONOMY_TABLES",
    "AnalysisInputs",
    "Taxonomy",
    "analyse_error_taxonomy",
    "error_taxonomy_from_tables",
    "error_template",
    "load_taxonomy",
    "run_error_taxonomy_analysis",
]
