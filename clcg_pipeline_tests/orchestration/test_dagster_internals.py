"""Pins what the project takes from Dagster's private API (``orchestration/_dagster_internals.py``).

Each name exists with the shape the project relies on; an upgrade of the pinned Dagster that
moves or reshapes one fails here, with the name and what changed, rather than in a run.
"""

from __future__ import annotations

import inspect
import re
import tomllib
import uuid

import dagster as dg

from clcg_pipeline.orchestration import _dagster_internals as internals
from clcg_pipeline_tests.conftest import PROJECT_ROOT

PINNED = "1.13.27"


def _parameters(callable_: object) -> set[str]:
    return set(inspect.signature(callable_).parameters)  # type: ignore[arg-type]


def test_the_installed_dagster_is_the_pinned_one() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert f"dagster=={PINNED}" in project["project"]["dependencies"], "pyproject.toml pins another Dagster"
    lock = (PROJECT_ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
    assert f"dagster=={PINNED}" in lock, "requirements.lock pins another Dagster"
    assert dg.__version__ == PINNED, (
        f"Dagster {dg.__version__} is installed, {PINNED} is pinned: check _dagster_internals.py's names"
    )


def test_only_the_internals_module_imports_dagster_private_modules() -> None:
    private = re.compile(r"^\s*(from|import)\s+dagster\._", re.MULTILINE)
    offenders = [
        str(path.relative_to(PROJECT_ROOT))
        for folder in ("clcg_pipeline", "bench")
        for path in (PROJECT_ROOT / folder).rglob("*.py")
        if path.name != "_dagster_internals.py" and private.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        f"import Dagster's private names from orchestration/_dagster_internals.py: {offenders}"
    )


def test_every_exported_name_exists() -> None:
    missing = [name for name in internals.__all__ if not hasattr(internals, name)]
    assert not missing, missing


def test_only_the_code_location_origin_and_the_tags_are_left() -> None:
    """What has a public way (the run launcher: ``dagster.DefaultRunLauncher``) stays out; a name
    added here must come with its reason in the module and a pin in this file."""
    assert set(internals.__all__) == {
        "CODE_VERSION_TAG",
        "PARTITION_NAME_TAG",
        "SINGLETON_REPOSITORY_NAME",
        "RegisteredCodeLocationOrigin",
        "RemoteJobOrigin",
        "RemoteRepositoryOrigin",
    }


def test_tags_and_run_ids() -> None:
    """The tags the project spells out are Dagster's own, and a run id it mints (a UUID4 string,
    ``clcg run`` watches a run's steps by it) is what Dagster mints."""
    from dagster._core.definitions.data_version import CODE_VERSION_TAG
    from dagster._core.storage.tags import PARTITION_NAME_TAG
    from dagster._core.utils import make_new_run_id

    assert internals.CODE_VERSION_TAG == CODE_VERSION_TAG == "dagster/code_version"
    assert internals.PARTITION_NAME_TAG == PARTITION_NAME_TAG == "dagster/partition"
    run_id = make_new_run_id()
    assert str(uuid.UUID(run_id, version=4)) == run_id


def test_the_code_location_origin_of_clcg_runs() -> None:
    from dagster._core.definitions.repository_definition.valid_definitions import (
        SINGLETON_REPOSITORY_NAME,
    )

    assert internals.SINGLETON_REPOSITORY_NAME == SINGLETON_REPOSITORY_NAME == "__repository__"
    location = internals.RegisteredCodeLocationOrigin("clcg_pipeline")
    origin = internals.RemoteJobOrigin(
        internals.RemoteRepositoryOrigin(location, internals.SINGLETON_REPOSITORY_NAME), "responses_job"
    )
    assert origin.job_name == "responses_job"
    assert origin.repository_origin.repository_name == "__repository__"
    assert origin.repository_origin.code_location_origin.location_name == "clcg_pipeline"
    # ``runs_under_code_location`` wraps this method (undocumented: no ``@public``) and fills in
    # its origin keyword.
    assert {"job_def", "remote_job_origin"} <= _parameters(dg.DagsterInstance.create_run_for_job)


def test_the_run_coordinator_hooks_are_public() -> None:
    # The coordinator subclasses the public names and replaces the context's run.
    assert "dagster_run" in dg.SubmitRunContext._fields
    assert callable(dg.QueuedRunCoordinator.submit_run)
