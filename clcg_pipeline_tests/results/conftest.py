# The synthetic project of the analysis tests, shared rather than built a second way.
from clcg_pipeline_tests.analysis.conftest import project, small_langs

__all__ = ["project", "small_langs"]
