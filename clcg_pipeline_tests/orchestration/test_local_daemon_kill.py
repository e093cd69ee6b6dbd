"""``kill -9`` of the daemon's process group leaves no run behind (the issue's rule: nothing left
behind, even after SIGKILL).

``make dev`` and ``LocalDaemon`` start the daemon in one process group; Dagster's
``DefaultRunLauncher`` has the code server start each run worker, and all of them stay in that
group, so a SIGKILL of the group (what a terminal's kill of ``make dev`` or ``LocalDaemon.stop``
sends) reaches the run too. A run worker that left the group would outlive it, still writing.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.orchestration import LocalDaemon
from clcg_pipeline_tests.conftest import quick_backfill_daemon
from clcg_pipeline_tests.orchestration.test_worker_orphans import Proc, _alive, _descendants

# The daemon's first run (the corpus of every language, one backfill run) starts within a minute on a
# small machine.
_RUN_WITHIN_S = 240.0
_GONE_WITHIN_S = 10.0


def _a_run_started(home: Path) -> bool:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return bool(instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]), limit=1))


@pytest.mark.slow
def test_a_killed_daemon_leaves_no_run_worker_behind(
    demo_config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first run is the corpus backfill's: without this it waits up to 30 s for the backfill loop.
    quick_backfill_daemon(tmp_path / "site", monkeypatch)
    daemon = LocalDaemon(tmp_path / "run", demo_config_dir).start()
    below: list[Proc] = []
    try:
        daemon.wait_for("a run started by the daemon", lambda: _a_run_started(daemon.home), _RUN_WITHIN_S)
        # The code server, the run worker and whatever they started, as kill -9 finds them.
        below = _descendants(daemon.pid)
        assert len(below) >= 2, below
        os.killpg(daemon.pid, signal.SIGKILL)
        deadline = time.monotonic() + _GONE_WITHIN_S
        while (left := [p for p in below if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"alive {_GONE_WITHIN_S:.0f} s after the daemon was killed: {left}"
    finally:
        for proc in below:
            if _alive(proc):
                os.kill(proc[0], signal.SIGKILL)
        daemon.stop()
