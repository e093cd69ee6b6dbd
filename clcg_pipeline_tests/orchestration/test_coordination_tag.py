"""A run the daemon, a backfill or the UI submits carries how its calls coordinate."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.run_coordinator import SubmitRunContext

from clcg_pipeline.calls import COORD_URL_ENV, COORDINATION_TAG
from clcg_pipeline.orchestration._jobs import code_location_job_origin


@dg.op
def _noop() -> int:
    return 1


@dg.job
def _job() -> None:
    _noop()


def test_the_run_coordinator_tags_every_submitted_run_with_its_coordination(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(COORD_URL_ENV, raising=False)
    overrides = {
        "run_coordinator": {"module": "clcg_pipeline.orchestration", "class": "ProviderTaggingRunCoordinator"}
    }
    with dg.instance_for_test(overrides=overrides, temp_dir=str(tmp_path)) as instance:
        monkeypatch.setenv("DAGSTER_HOME", instance.root_directory)  # a SQLite instance: file locks
        run = instance.create_run_for_job(
            job_def=_job, run_config={}, remote_job_origin=code_location_job_origin(_job.name)
        )
        submitted = instance.run_coordinator.submit_run(SubmitRunContext(run, workspace=None))  # type: ignore[union-attr]
        stored = instance.get_run_by_id(run.run_id)
    assert submitted.tags[COORDINATION_TAG] == "files"
    assert stored is not None and stored.tags[COORDINATION_TAG] == "files"
