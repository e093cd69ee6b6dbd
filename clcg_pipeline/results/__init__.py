"""The study's results document: the estimates and every study merged into study_results.json.

Above ``analysis``, ``validation`` and ``granularity`` (it reads all three), below ``report``.
"""

from clcg_pipeline.results._compare import COMPARE_COLUMNS, RunSide, compare_runs
from clcg_pipeline.results._compare_document import (
    ComparisonDocument,
    ComparisonInfo,
    ComparisonRow,
    read_comparison,
)
from clcg_pipeline.results._compare_io import (
    comparison_document,
    comparison_html,
    comparison_lines,
    load_run,
    write_comparison_html,
    write_comparison_json,
)
from clcg_pipeline.results._derive import (
    RUN_METADATA,
    AssembledResults,
    as_written,
    assemble_study_results,
    derive_sections,
    derive_study_results,
    leaf_differences,
    sections_from_documents,
)
from clcg_pipeline.results._identifiability import withheld_reasons, withhold_unidentifiable
from clcg_pipeline.results._inputs import (
    drop_incomplete_versions,
    explain_missing_languages,
    read_replication_scores,
)
from clcg_pipeline.results._merge import (
    PAIRS_TABLE,
    SIGNIFICANT_KEPT,
    STUDY_SECTIONS,
    index_without_models,
    kept_pairs,
    merge_study_sections,
    pairs_frame,
    rank_order,
    read_model_pairs,
    significant_pairs,
    split_model_pairs,
    write_model_pairs,
)
from clcg_pipeline.results._new_model import analysis_times, new_model_block, newest_model

__all__ = [
    "COMPARE_COLUMNS",
    "PAIRS_TABLE",
    "RUN_METADATA",
    "SIGNIFICANT_KEPT",
    "STUDY_SECTIONS",
    "AssembledResults",
    "ComparisonDocument",
    "ComparisonInfo",
    "ComparisonRow",
    "RunSide",
    "analysis_times",
    "as_written",
    "assemble_study_results",
    "compare_runs",
    "comparison_document",
    "comparison_html",
    "comparison_lines",
    "derive_sections",
    "derive_study_results",
    "drop_incomplete_versions",
    "explain_missing_languages",
    "index_without_models",
    "kept_pairs",
    "leaf_differences",
    "load_run",
    "merge_study_sections",
    "new_model_block",
    "newest_model",
    "pairs_frame",
    "rank_order",
    "read_comparison",
    "read_model_pairs",
    "read_replication_scores",
    "sections_from_documents",
    "significant_pairs",
    "split_model_pairs",
    "withheld_reasons",
    "withhold_unidentifiable",
    "write_comparison_html",
    "write_comparison_json",
    "write_model_pairs",
]
