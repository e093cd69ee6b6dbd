"""The error-taxonomy analysis from a data folder's tables: what the ``error_taxonomy_analysis``
asset runs, and what a re-derivation of ``study_results.json`` (``results.derive_study_results``)
runs on the same tables, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.validation.taxonomy._analysis import TaxonomyAnalysis, run_error_taxonomy_analysis

#: The stored tables the analysis reads (every stored partition of each).
TAXONOMY_TABLES = ("diagnostic_sample", "error_judgements", "order_bias_judgements")


def error_taxonomy_from_tables(config: ProjectConfig, stored: Mapping[str, pd.DataFrame]) -> TaxonomyAnalysis:
    """Label frequencies, transitions, agreement and contributions from ``stored``
    (``TAXONOMY_TABLES`` -> every stored partition of that table)."""
    missing = [table for table in TAXONOMY_TABLES if table not in stored]
    if missing:
        raise KeyError(f"error taxonomy: stored table(s) not handed in: {', '.join(missing)}")
    return run_error_taxonomy_analysis(
        config, stored["diagnostic_sample"], stored["error_judgements"], stored["order_bias_judgements"]
    )
