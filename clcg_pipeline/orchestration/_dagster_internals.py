"""Every name the project takes from Dagster's private API (``dagster._...``), in one place.

Only what Dagster 1.13 has no public way to do is here, each with the reason beside it. An
upgrade of the pinned ``dagster`` that moves or reshapes one fails
``clcg_pipeline_tests/orchestration/test_dagster_internals.py`` with the name, not a run
somewhere down the line. What has a public name (``dagster.DefaultRunLauncher``,
``dagster.QueuedRunCoordinator``, ``dagster.SubmitRunContext``, ...) is imported from ``dagster``.
"""

from __future__ import annotations

# The origin of workspace.yaml's code location, which ``clcg run`` gives the runs it executes in
# process (``_jobs.runs_under_code_location``). No public way exists:
# - the UI's job page asks for the job's runs filtered by repository label, so a run without
#   an origin is missing there and from the Overview timeline (Dagster issue #17707, open;
#   ``test_clcg_runs_are_listed_under_their_job_in_the_ui`` shows it for a plain run);
# - ``JobDefinition.execute_in_process`` and ``dagster.materialize`` take no origin, and
#   ``dagster`` exports none of these classes: a run gets one only when launched through a code
#   server (UI, daemon, ``dagster job launch``), and ``clcg run`` executes its runs in process.
# ``runs_under_code_location`` therefore fills the ``remote_job_origin`` keyword of
# ``DagsterInstance.create_run_for_job``: no underscore, but not in Dagster's documented API
# either (no ``@public``), so the test pins that keyword too.
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin

# The repository name Dagster gives a code location's one ``Definitions`` object: stored in run
# origins and typed in GraphQL selectors, so spelled here like the tags below (no public module
# exports it); ``test_dagster_internals.py`` pins it to Dagster's own constant.
SINGLETON_REPOSITORY_NAME = "__repository__"

# Tags that Dagster stores on runs and materializations: stored data, shown in the UI and set by
# users (``dagster job launch --tags``), so spelled here rather than imported from a private
# module (``dagster`` exports neither); ``test_dagster_internals.py`` pins them to Dagster's own.
CODE_VERSION_TAG = "dagster/code_version"  # a materialization's code version: freshness compares it
PARTITION_NAME_TAG = "dagster/partition"  # runs tagged only per dimension get it (the run coordinator)

__all__ = [
    "CODE_VERSION_TAG",
    "PARTITION_NAME_TAG",
    "SINGLETON_REPOSITORY_NAME",
    "RegisteredCodeLocationOrigin",
    "RemoteJobOrigin",
    "RemoteRepositoryOrigin",
]
