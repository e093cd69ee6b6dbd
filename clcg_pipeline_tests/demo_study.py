"""The demo study, run once per test worker and read by the modules that need a finished study.

``clcg run`` on the demo (the default config cut to its languages, 200 replicates) in a fresh
data folder and Dagster home, then again with nothing changed. The modules that read it
(``DEMO_STUDY_MODULES``) are one xdist scope (``conftest.pytest_xdist_make_scheduler``), so
a single worker builds it once for all of them instead of once per module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, cut_to_demo, run_clcg

# Test modules (or folders of them) that read the shared demo study; they only read it, or
# move it away and back within one test.
DEMO_STUDY_MODULES = (
    "clcg_pipeline_tests/test_study_run.py",
    "clcg_pipeline_tests/orchestration/test_records_sync.py",
    "clcg_pipeline_tests/release/",
    "clcg_pipeline_tests/report/test_browser_demo.py",
    "clcg_pipeline_tests/report/test_report_identifiability.py",
    "clcg_pipeline_tests/storage/test_document_validation_demo.py",
)


@dataclass(frozen=True)
class DemoStudy:
    """The demo study's folders, the two runs' output and what the second run changed."""

    config_dir: Path
    data_dir: Path
    home: Path
    env: dict[str, str]
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    runs_after_first: int
    runs_after_second: int
    rewritten_by_second: list[str]  # files the second run wrote or touched


def run_demo_study(root: Path) -> DemoStudy:
    """``clcg run`` twice on the demo in ``root`` (config, home and data made there)."""
    config_dir = root / "config"
    shutil.copytree(DEFAULT_CONFIG, config_dir)
    cut_to_demo(config_dir)
    home, data = root / "home", root / "data"
    env = {**os.environ, "DAGSTER_HOME": str(home), "COLUMNS": "160"}
    command = ("run", "--config", str(config_dir), "--data", str(data))
    first = run_clcg(*command, env=env, cwd=root)
    assert first.returncode == 0, first.stderr[-3000:]
    runs_after_first = _runs_on(home)
    files = _files(data)
    second = run_clcg(*command, env=env, cwd=root)
    assert second.returncode == 0, second.stderr[-3000:]
    rewritten = sorted(str(path) for path, stamp in _files(data).items() if files.get(path) != stamp)
    return DemoStudy(config_dir, data, home, env, first, second, runs_after_first, _runs_on(home), rewritten)


def _runs_on(home: Path) -> int:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return len(instance.get_runs())


def _files(folder: Path) -> dict[Path, int]:
    """Every file under ``folder`` and when it was last written."""
    return {path: path.stat().st_mtime_ns for path in folder.rglob("*") if path.is_file()}
