# The synthetic project of the analysis tests, shared rather than built a second way.
from clcg_pipeline_tests.analysis.conftest import project

__all__ = ["project"]
