"""The human validation (docs/HUMAN_VALIDATION.md): the annotation round trip and its analysis.

The annotation sample, keypoint checklists, export for annotators and import of their files
(with the inbox sensor), quality control, agreement, paired preference and the analysis.
"""

from clcg_pipeline.validation.human._agreement import value_counts
from clcg_pipeline.validation.human._analysis import run_human_validation
from clcg_pipeline.validation.human._estimands import (
    CLASS_CLCG_CAVEAT,
    alpha_table,
    attach_sample,
    class_clcg_spearman,
    per_response,
)
from clcg_pipeline.validation.human._exchange_format import REFUSED_STATUSES
from clcg_pipeline.validation.human._from_tables import HUMAN_VALIDATION_TABLES, human_validation_from_tables
from clcg_pipeline.validation.human._import import import_lines
from clcg_pipeline.validation.human._judge_overlap import (
    ErrorPanel,
    fill_errors,
    judge_error_overlap,
    taxonomy_errors,
)
from clcg_pipeline.validation.human._label_studio import (
    TOKEN_ENV,
    URL_ENV,
    LabelStudioError,
    pull_annotation_exports,
    push_annotation_projects,
)
from clcg_pipeline.validation.human._qc import RUBRIC, run_qc
from clcg_pipeline.validation.human.sensors import INBOX_METADATA, inbox_fingerprint

__all__ = [
    "CLASS_CLCG_CAVEAT",
    "HUMAN_VALIDATION_TABLES",
    "INBOX_METADATA",
    "REFUSED_STATUSES",
    "RUBRIC",
    "TOKEN_ENV",
    "URL_ENV",
    "ErrorPanel",
    "LabelStudioError",
    "alpha_table",
    "attach_sample",
    "class_clcg_spearman",
    "fill_errors",
    "human_validation_from_tables",
    "import_lines",
    "inbox_fingerprint",
    "judge_error_overlap",
    "per_response",
    "pull_annotation_exports",
    "push_annotation_projects",
    "run_human_validation",
    "run_qc",
    "taxonomy_errors",
    "value_counts",
]
