"""How the study is run: the Dagster definitions, jobs, automation conditions, the run
coordinator, the ``clcg run`` runner, each model's stream of calls, the plan, code
versions and the local daemon used by tests and benchmarks."""

from clcg_pipeline.orchestration._coordinator import ProviderTaggingRunCoordinator
from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.orchestration._local_daemon import (
    PROJECT_ROOT,
    DaemonTimeout,
    LocalDaemon,
    stop_process_group,
)
from clcg_pipeline.orchestration._partition_run import StudyRunError
from clcg_pipeline.orchestration._plan import plan_granularity, plan_power, plan_spent, plan_study
from clcg_pipeline.orchestration._records_sync import report_folder_records, sync_folder_records
from clcg_pipeline.orchestration._study_run import DEFAULT_PARALLEL, covered_languages, run_study
from clcg_pipeline.orchestration._summary import RunSummary

__all__ = [
    "DEFAULT_PARALLEL",
    "PROJECT_ROOT",
    "DaemonTimeout",
    "LocalDaemon",
    "ProviderTaggingRunCoordinator",
    "RunSummary",
    "StudyRunError",
    "build_definitions",
    "covered_languages",
    "plan_granularity",
    "plan_power",
    "plan_spent",
    "plan_study",
    "report_folder_records",
    "run_study",
    "stop_process_group",
    "sync_folder_records",
]
