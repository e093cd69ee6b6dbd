"""A real ``dagster-daemon run`` on a throwaway instance (for the daemon test and benchmark).

Started as ``make dev`` does (the project's ``dagster.yaml``, a workspace naming the
``clcg_pipeline`` code location), against its own ``DAGSTER_HOME``, config and data folders,
after the data folder's records are reported to its instance (``sync_records``), in its own
process group (``stop_process_group``), watched by a guard (``dev.Guard``) that stops
that group when the process that started it dies, ``kill -9`` included: a killed test or benchmark
leaves no daemon, code server or run behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from clcg_pipeline.orchestration._jobs import CODE_LOCATION
from clcg_pipeline.orchestration._records_sync import sync_folder_records
from clcg_pipeline.orchestration.dev import Guard
from clcg_pipeline.storage import RECORDS

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def stop_process_group(process: subprocess.Popen[Any]) -> None:
    """Stop the process group ``process`` leads (``start_new_session``), its code server and run
    workers with it: SIGTERM, then SIGKILL after 15 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


class DaemonTimeout(AssertionError):
    """A wait on the daemon ran out; the message says what was awaited and the log's tail."""


class LocalDaemon:
    def __init__(self, root: Path, config_dir: Path) -> None:
        self.root = root
        self.home = root / "dagster_home"
        self.config_dir = config_dir
        self.data_dir = root / "data"
        self.log_path = root / "daemon.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._guard: Guard | None = None

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DAGSTER_HOME": str(self.home),
            "CLCG_CONFIG_DIR": str(self.config_dir),
            "CLCG_DATA_DIR": str(self.data_dir),
        }

    def start(self) -> LocalDaemon:
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROJECT_ROOT / "dagster.yaml", self.home / "dagster.yaml")
        self.sync_records()
        workspace = self.root / "workspace.yaml"
        location = {
            "module_name": "clcg_pipeline.definitions",
            "location_name": CODE_LOCATION,
            "working_directory": str(PROJECT_ROOT),
        }
        workspace.write_text(yaml.safe_dump({"load_from": [{"python_module": location}]}), encoding="utf-8")
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                self.command(workspace),
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() reaches every child
            )
        self._guard = Guard(self._process.pid)
        return self

    def sync_records(self) -> list[str]:
        """Report the data folder's current partitions that the instance never materialized
        (a copied or prebuilt folder, a fresh home), as ``make dev`` does before the daemon starts:
        its first tick would otherwise rebuild them. A folder without records has nothing to tell."""
        if not (self.data_dir / RECORDS).is_dir():
            return []
        return sync_folder_records(str(self.config_dir), str(self.data_dir), dagster_home=str(self.home))

    def command(self, workspace: Path) -> list[str]:
        """``dagster-daemon run`` over ``workspace`` (a test's stand-in overrides it)."""
        return [str(Path(sys.executable).with_name("dagster-daemon")), "run", "-w", str(workspace)]

    @property
    def pid(self) -> int:
        """The daemon's process id, which is also its process group's (it leads its session)."""
        if self._process is None:
            raise RuntimeError("the daemon is not running; start() it first")
        return self._process.pid

    def stop(self) -> None:
        if self._process is None:
            return
        try:
            stop_process_group(self._process)
        finally:
            self._process = None
            if self._guard is not None:
                self._guard.wait()  # the group is gone: the guard is done at once
                self._guard = None

    def __enter__(self) -> LocalDaemon:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no daemon log)"
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def wait_for(self, what: str, ready: Callable[[], bool], timeout_s: float, poll_s: float = 1.0) -> float:
        """Wait until ``ready()``; return the seconds waited, or raise naming ``what``."""
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if self._process is not None and self._process.poll() is not None:
                raise DaemonTimeout(f"the daemon exited while waiting for {what}:\n{self.log_tail()}")
            try:
                if ready():
                    return time.monotonic() - start
            except (OSError, ValueError):
                pass  # a file being replaced, or half-written JSON: look again
            time.sleep(poll_s)
        raise DaemonTimeout(f"no {what} after {timeout_s:.0f} s; daemon log:\n{self.log_tail()}")

    def study_results(self) -> dict[str, Any]:
        return json.loads((self.data_dir / "study_results.json").read_text(encoding="utf-8"))

    def models_in_results(self) -> set[str]:
        return set(self.study_results().get("h1", {}).get("by_model", {}))
