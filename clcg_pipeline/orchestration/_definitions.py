"""The study's Dagster definitions: each stage's assets, the jobs, automation, code versions.

Kept in the run package because the ``clcg run`` runner materializes these same definitions;
``clcg_pipeline/definitions.py`` only hands them to Dagster.
"""

from __future__ import annotations

import os
import warnings

import dagster as dg

from clcg_pipeline.config import default_config_dir, default_data_dir
from clcg_pipeline.corpus.assets import build_corpus_defs
from clcg_pipeline.granularity.assets import build_granularity_defs
from clcg_pipeline.inference.assets import build_inference_defs
from clcg_pipeline.inference.sensors import inference_automation_defs
from clcg_pipeline.items.assets import build_items_defs
from clcg_pipeline.orchestration._automation import (
    corpus_automation_sensor,
    model_family_automation_sensor,
    study_automation_sensor,
    with_study_automation,
)
from clcg_pipeline.orchestration._jobs import build_jobs
from clcg_pipeline.orchestration._model_calls import build_model_calls_defs
from clcg_pipeline.orchestration._records_sync import folder_records_sensor
from clcg_pipeline.orchestration._versions import with_code_versions
from clcg_pipeline.report.assets import report_defs
from clcg_pipeline.resources import StudyResource, load_study_config
from clcg_pipeline.results.assets import build_analysis_defs
from clcg_pipeline.scoring.assets import build_scoring_defs
from clcg_pipeline.storage import ParquetIOManager
from clcg_pipeline.storage.assets import storage_defs
from clcg_pipeline.validation.assets import build_validation_defs


def build_definitions(
    config_dir: str | os.PathLike[str] | None = None, data_dir: str | os.PathLike[str] | None = None
) -> dg.Definitions:
    """Definitions for one config folder and data folder (defaults: env vars, then ./)."""
    config_path = str(config_dir) if config_dir is not None else str(default_config_dir())
    data_path = str(data_dir) if data_dir is not None else default_data_dir()
    config = load_study_config(config_path)
    with warnings.catch_warnings():
        # Preview, but the one place to set every asset's condition (the table in automation.py).
        warnings.simplefilter("ignore", dg.PreviewWarning)
        assets = dg.Definitions.merge(
            build_corpus_defs(config),
            build_items_defs(config),
            build_inference_defs(config),
            build_model_calls_defs(config),
            build_scoring_defs(config),
            build_analysis_defs(config),
            build_validation_defs(config),
            build_granularity_defs(config),
            report_defs,
            storage_defs,
        ).map_asset_specs(func=with_study_automation)
    # Content-based code versions, recorded on every materialization whoever runs it (study_versions.py).
    assets = with_code_versions(assets, config)
    return dg.Definitions.merge(
        assets,
        inference_automation_defs,
        dg.Definitions(
            jobs=build_jobs(config),
            sensors=[
                study_automation_sensor,
                corpus_automation_sensor,
                model_family_automation_sensor,
                # The data folder's records decide what is up to date: told to an instance that lacks them.
                folder_records_sensor,
            ],
            resources={
                "study": StudyResource(config_dir=config_path, data_dir=data_path),
                "io_manager": ParquetIOManager(base_path=data_path),
            },
            # Every step of a run in the run's own process: the default multiprocess executor
            # starts a process per step, each importing the whole project (most of a
            # daemon-launched run's wall). Steps of one run are sequential in this graph anyway.
            executor=dg.in_process_executor,
        ),
    )
