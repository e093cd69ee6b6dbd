"""Dagster wrappers of the granularity task family: documents, tasks, responses, scores."""

from __future__ import annotations

import dagster as dg

from clcg_pipeline.config import ProjectConfig

GROUP = "granularity"


def build_granularity_defs(config: ProjectConfig) -> dg.Definitions:
    """Every granularity asset (each part adds its own builder below and merges it here)."""
    return dg.Definitions.merge()
