"""Launching runs without paying Python's start-up for each one.

Dagster's ``DefaultRunLauncher`` asks the code server to *spawn* a fresh interpreter per run,
which then imports Dagster, pandas, SciPy, statsmodels, DuckDB and the project before the first
step: about 5-20 s per run on a small machine, against 1-5 s of work for most partitions (a new
model is 18 such runs, plus its analysis). No launcher shipped with Dagster avoids that, so this
one, hand-written, forks each run worker from a ``multiprocessing`` fork server that has the
third-party libraries already imported. The project's own modules are dropped from the server
after the preload (see :mod:`clcg_pipeline._run_worker_preload`), so every run imports the
code as it is on disk now, exactly like a spawned worker would.

Each worker runs the same entry point as ``dagster api execute_run`` (what Dagster's Docker and
Kubernetes launchers start), so the run's events, logs and status are Dagster's own.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping
from typing import Any

from dagster import serialize_value

from clcg_pipeline.orchestration._dagster_internals import (
    ConfigurableClass,
    ConfigurableClassData,
    ExecuteRunArgs,
    LaunchRunContext,
    RunLauncher,
    execute_run,
)

WORKER_PID_TAG = "clcg/run_worker_pid"
_PRELOAD_MODULE = "clcg_pipeline._run_worker_preload"


def _run_worker(serialized_args: str) -> None:
    # The entry point of `dagster api execute_run`, without the interpreter start-up.
    execute_run(serialized_args)


class PreloadedRunLauncher(RunLauncher, ConfigurableClass):
    """Runs each run in a process forked from a fork server with the heavy imports done."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        self._inst_data = inst_data
        self._lock = threading.Lock()
        self._context: Any = None
        self._workers: dict[str, multiprocessing.process.BaseProcess] = {}
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> PreloadedRunLauncher:
        return cls(inst_data=inst_data)

    def _mp_context(self) -> Any:
        with self._lock:
            if self._context is None:
                context = multiprocessing.get_context("forkserver")
                # Started lazily by the first run, from the launching process (the daemon).
                context.set_forkserver_preload([_PRELOAD_MODULE])
                self._context = context
            return self._context

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        if run.job_code_origin is None:
            raise ValueError(f"run {run.run_id} has no code origin; it cannot be launched")
        args = ExecuteRunArgs(
            job_origin=run.job_code_origin,
            run_id=run.run_id,
            instance_ref=self._instance.get_ref(),
            set_exit_code_on_failure=True,
        )
        worker = self._mp_context().Process(
            target=_run_worker, args=(serialize_value(args),), name=f"dagster-run-{run.run_id}"
        )
        worker.start()
        with self._lock:
            # Finished workers are reaped here so the table does not grow with the runs.
            self._workers = {rid: p for rid, p in self._workers.items() if p.is_alive()}
            self._workers[run.run_id] = worker
        self._instance.add_run_tags(run.run_id, {WORKER_PID_TAG: str(worker.pid)})
        self._instance.report_engine_event(
            f"Run worker forked from the preloaded fork server (pid {worker.pid}).", run, cls=self.__class__
        )

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            return False
        pid = run.tags.get(WORKER_PID_TAG)
        if pid is None:
            return False
        self._instance.report_run_canceling(run)
        try:
            # SIGINT: the worker's interrupt handler stops the steps and records the run canceled.
            os.kill(int(pid), signal.SIGINT)
        except ProcessLookupError:
            return False
        return True

    def join(self, timeout: int = 30) -> None:
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.join(timeout)

    def dispose(self) -> None:
        self.join(0)
