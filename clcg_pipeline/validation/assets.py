"""Dagster wrappers of the validation studies: error taxonomy and human validation."""

import dagster as dg

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.validation.human.assets import build_human_defs
from clcg_pipeline.validation.taxonomy.assets import build_taxonomy_defs


def build_validation_defs(config: ProjectConfig) -> dg.Definitions:
    """Every validation asset: each study's builder, merged."""
    return dg.Definitions.merge(build_taxonomy_defs(config), build_human_defs(config))
