"""Dagster wrappers of the validation studies: error taxonomy and human validation."""

from __future__ import annotations

import dagster as dg

from clcg_pipeline.config import ProjectConfig

GROUP = "validation"


def build_validation_defs(config: ProjectConfig) -> dg.Definitions:
    """Every validation asset (each study adds its own builder below and merges it here)."""
    return dg.Definitions.merge()
