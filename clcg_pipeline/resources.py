"""The one resource every stage shares: where the config and the data live."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig, load_config


def load_study_config(config_dir: str | os.PathLike[str]) -> ProjectConfig:
    """``load_config(config_dir)``, parsed once per process while the folder's YAML is unchanged.

    Keyed on the files' bytes, not their times, so an edit of ``models.yaml`` is seen by the
    next load however soon it comes; the settings are frozen, so one parse can be shared.
    """
    digest = hashlib.sha256()
    for path in sorted(Path(config_dir).glob("*.yaml")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return _parsed(str(config_dir), digest.hexdigest())


@lru_cache(maxsize=16)
def _parsed(config_dir: str, _contents: str) -> ProjectConfig:
    return load_config(config_dir)  # an invalid folder raises, and nothing is cached


class StudyResource(dg.ConfigurableResource):
    """The config folder and data folder of a study.

    Every use loads the config as it is now, so a run sees the ``models.yaml`` the sensor saw
    (a new model needs no code-location reload); an unchanged folder is parsed once per process.
    """

    config_dir: str
    data_dir: str

    def load(self) -> ProjectConfig:
        return load_study_config(self.config_dir)

    def path(self, *parts: str) -> str:
        return str(UPath(self.data_dir).joinpath(*parts))

    @property
    def cache_dir(self) -> str:
        return self.path("cache", "calls")
