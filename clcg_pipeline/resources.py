"""The one resource every stage shares: where the config and the data live."""

from __future__ import annotations

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig, load_config


class StudyResource(dg.ConfigurableResource):
    """The config folder and data folder of a study.

    The config is re-read on each use so that a run always sees the ``models.yaml`` the
    sensor saw (a new model needs no code-location reload).
    """

    config_dir: str
    data_dir: str

    def load(self) -> ProjectConfig:
        return load_config(self.config_dir)

    def path(self, *parts: str) -> str:
        return str(UPath(self.data_dir).joinpath(*parts))

    @property
    def cache_dir(self) -> str:
        return self.path("cache", "calls")
