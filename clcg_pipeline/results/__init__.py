"""The study's results document: the estimates and every study merged into study_results.json.

Above ``analysis``, ``validation`` and ``granularity`` (it reads all three), below ``report``.
"""

from clcg_pipeline.results._inputs import (
    drop_incomplete_versions,
    explain_missing_languages,
    read_replication_scores,
)
from clcg_pipeline.results._merge import STUDY_SECTIONS, merge_study_sections

__all__ = [
    "STUDY_SECTIONS",
    "drop_incomplete_versions",
    "explain_missing_languages",
    "merge_study_sections",
    "read_replication_scores",
]
