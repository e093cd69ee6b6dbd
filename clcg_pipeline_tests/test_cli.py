"""`clcg run` then `clcg query`, as a user would type them, in a fresh data folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _clcg(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clcg_pipeline.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_run_then_query(demo_config_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "COLUMNS": "160"}
    data = tmp_path / "data"
    ran = _clcg("run", "--config", str(demo_config_dir), "--data", str(data), env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "H1 micro" in ran.stdout and "Georgian" in ran.stdout
    assert str(data / "report.html") in ran.stdout.replace("\n", "")

    counted = _clcg(
        "query",
        "--data",
        str(data),
        "--format",
        "json",
        "SELECT model, count(*) AS n FROM predictions GROUP BY model",
        env=env,
        cwd=tmp_path,
    )
    assert counted.returncode == 0, counted.stderr
    rows = json.loads(counted.stdout)
    assert rows[0]["model"] == "lexical-reader" and rows[0]["n"] > 0

    named = _clcg(
        "query",
        "--config",
        str(demo_config_dir),
        "--data",
        str(data),
        "--format",
        "csv",
        "--named",
        "clcg_by_language",
        env=env,
        cwd=tmp_path,
    )
    assert named.returncode == 0, named.stderr
    assert named.stdout.splitlines()[0].startswith("language,name,role")

    again = _clcg("run", "--config", str(demo_config_dir), "--data", str(data), env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 new model calls" in again.stdout


def test_bad_config_is_one_clear_line(config_dir: Path, tmp_path: Path) -> None:
    (config_dir / "study.yaml").write_text("seed: forty-two\n", encoding="utf-8")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    ran = _clcg("run", "--config", str(config_dir), "--data", str(tmp_path / "d"), env=env, cwd=tmp_path)
    assert ran.returncode == 1
    assert "study.yaml" in ran.stderr and "seed" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_query_without_catalog_explains(tmp_path: Path) -> None:
    ran = _clcg("query", "--data", str(tmp_path / "empty"), "SELECT 1", env=dict(os.environ), cwd=tmp_path)
    assert ran.returncode == 1
    assert "no catalog yet" in ran.stderr
