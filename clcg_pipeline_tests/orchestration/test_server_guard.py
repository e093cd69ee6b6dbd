"""The servers that tests and benchmarks start in sessions of their own (``LocalDaemon``'s
``dagster-daemon``, the hundred-model bench's ``dagster-webserver``) stop when the process that
started them is killed (``kill -9``), as ``make dev`` does (``dev.Guard``): before, a killed bench
driver left them running, reparented to init.

A stand-in for each server keeps this fast: a process and its child in one session, started
through the real class (only its ``command`` is replaced), by a driver that the test kills.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clcg_pipeline.orchestration import PROJECT_ROOT
from clcg_pipeline_tests.orchestration.test_worker_orphans import Proc, _alive, _cmdline, _descendants

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="needs /proc")

_READY_WITHIN_S = 60.0  # the driver imports the package (Dagster): seconds on a busy machine
_GONE_WITHIN_S = 10.0

# A server in short: a child in its group, both stopped by Ctrl-C (SIGINT), as Dagster's are.
_SERVER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "time.sleep(600)\n"
)

_DRIVERS = {
    "LocalDaemon": """
import sys, time
from pathlib import Path
from clcg_pipeline.orchestration import LocalDaemon

class Server(LocalDaemon):
    def command(self, workspace: Path) -> list[str]:
        return [sys.executable, "-c", SERVER]

Server(Path(sys.argv[1]), Path(sys.argv[1]) / "config").start()
""",
    "Webserver": """
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[2]) / "bench"))
from hundred_web import Webserver

class Server(Webserver):
    def command(self, workspace: Path) -> list[str]:
        return [sys.executable, "-c", SERVER]

Server(Path(sys.argv[1]), {}, timeout=5.0).__enter__()
""",
}


def _is_guard(proc: Proc) -> bool:
    return b"--guard" in _cmdline(proc[0])


def _server_started(driver: int) -> list[Proc]:
    """What the driver started, once the server's child is up: the server, its child and, since
    a guard watches the server, the guard."""
    deadline = time.monotonic() + _READY_WITHIN_S
    while len([p for p in _descendants(driver) if not _is_guard(p)]) < 2:
        assert time.monotonic() < deadline, f"the driver started {_descendants(driver)} only"
        time.sleep(0.1)
    return _descendants(driver)


@pytest.mark.parametrize("server", sorted(_DRIVERS))
def test_kill_9_of_the_driver_leaves_no_server_behind(server: str, tmp_path: Path) -> None:
    script = f"SERVER = {_SERVER!r}\n{_DRIVERS[server]}\nprint('started', flush=True)\ntime.sleep(600)\n"
    driver = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path), str(PROJECT_ROOT)], stdout=subprocess.PIPE, cwd=tmp_path
    )
    below: list[Proc] = []
    try:
        assert driver.stdout is not None and driver.stdout.readline() == b"started\n"
        below = _server_started(driver.pid)
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + _GONE_WITHIN_S
        while (left := [p for p in below if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"alive {_GONE_WITHIN_S:.0f} s after the driver was killed: {left}"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for proc in below:
            if _alive(proc):
                os.kill(proc[0], signal.SIGKILL)
