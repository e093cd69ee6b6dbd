"""The study's results document: the estimates and every study merged into study_results.json.

Above ``analysis``, ``validation`` and ``granularity`` (it reads all three), below ``report``.
"""

from clcg_pipeline.results._compare import COMPARE_COLUMNS, RunSide, compare_runs
from clcg_pipeline.results._compare_io import (
    comparison_html,
    load_run,
    write_comparison_html,
    write_comparison_json,
)
from clcg_pipeline.results._inputs import (
    drop_incomplete_versions,
    explain_missing_languages,
    read_replication_scores,
)
from clcg_pipeline.results._merge import STUDY_SECTIONS, merge_study_sections
from clcg_pipeline.results._new_model import new_model_block, newest_model

__all__ = [
    "COMPARE_COLUMNS",
    "STUDY_SECTIONS",
    "RunSide",
    "compare_runs",
    "comparison_html",
    "drop_incomplete_versions",
    "explain_missing_languages",
    "load_run",
    "merge_study_sections",
    "new_model_block",
    "newest_model",
    "read_replication_scores",
    "write_comparison_html",
    "write_comparison_json",
]
