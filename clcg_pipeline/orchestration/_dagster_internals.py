"""Every name the project takes from Dagster's private API (``dagster._...``), in one place.

Dagster 1.13 exports no public equivalent of these; each is used for the reason beside it. An
upgrade of the pinned ``dagster`` that moves or reshapes one fails
``clcg_pipeline_tests/orchestration/test_dagster_internals.py`` with the name, not a run
somewhere down the line. What has a public name (``dagster.QueuedRunCoordinator``,
``dagster.SubmitRunContext``, ``dagster.serialize_value``, ...) is imported from ``dagster``.
"""

from __future__ import annotations

# The UI lists runs by their code location's origin; ``execute_in_process`` records none, so
# ``clcg run`` builds the origin of workspace.yaml's location (``_jobs.runs_under_code_location``).
from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME

# A custom run launcher (dagster.yaml's ``run_launcher``) subclasses the launcher base and is
# built from config like every instance component; Dagster exports neither base class.
from dagster._core.launcher import LaunchRunContext, RunLauncher
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin

# What the launcher hands a forked run worker: the arguments of ``dagster api execute_run``.
from dagster._grpc.types import ExecuteRunArgs

# Instance components (the run launcher) are configurable classes.
from dagster._serdes import ConfigurableClass, ConfigurableClassData

# Tags that Dagster stores on runs and materializations: stored data, shown in the UI and set by
# users (``dagster job launch --tags``), so spelled here rather than imported from a private
# module; ``test_dagster_internals.py`` pins them to Dagster's own constants.
CODE_VERSION_TAG = "dagster/code_version"  # a materialization's code version: freshness compares it
PARTITION_NAME_TAG = "dagster/partition"  # runs tagged only per dimension get it (the run coordinator)

# What a run worker imports besides the project: the run entry point, the instance's SQL
# storage (SQLAlchemy, Alembic) and the code-pointer loading machinery. The launcher's fork
# server imports them once (``clcg_pipeline._run_worker_preload``), by name, so this module stays cheap.
WORKER_PRELOAD_MODULES = (
    "dagster._cli.api",
    "dagster._core.definitions.reconstruct",
    "dagster._core.storage.event_log.sqlite",
    "dagster._core.storage.runs.sqlite",
    "dagster._core.storage.schedules.sqlite",
    "dagster._utils.test",
)


def execute_run(serialized_args: str) -> None:
    """Run a launched run in this process: the entry point of ``dagster api execute_run``.

    Imported when called: the CLI module costs about half a second, which the daemon that only
    loads the launcher does not need (a forked worker has it from the preload).
    """
    from dagster._cli.api import execute_run_command

    execute_run_command.callback(input_json=serialized_args, compressed_input_json=None)  # type: ignore[misc]


__all__ = [
    "CODE_VERSION_TAG",
    "PARTITION_NAME_TAG",
    "SINGLETON_REPOSITORY_NAME",
    "WORKER_PRELOAD_MODULES",
    "ConfigurableClass",
    "ConfigurableClassData",
    "ExecuteRunArgs",
    "LaunchRunContext",
    "RegisteredCodeLocationOrigin",
    "RemoteJobOrigin",
    "RemoteRepositoryOrigin",
    "RunLauncher",
    "execute_run",
]
