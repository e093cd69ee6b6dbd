"""`clcg run` then `clcg query`, as a user would type them, in a fresh data folder."""

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus import load_source, sample_articles

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


def _table(data: Path, name: str) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(path) for path in sorted((data / name).rglob("*.parquet"))])


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


def test_plan_counts_calls_before_anything_runs(demo_config_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    data = tmp_path / "data"
    planned = _clcg("plan", "--config", str(demo_config_dir), "--data", str(data), env=env, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    total = next(line for line in planned.stdout.splitlines() if "TOTAL" in line)
    cells = [cell.strip() for cell in total.split("│") if cell.strip()]
    config = load_config(demo_config_dir)
    english = load_source(config.sources.primary, config.languages).articles.query("language == 'en'")
    sample = sample_articles(
        english, config.study.sampling, reference="en", repetitions=config.study.repetitions
    )
    reps = dict(zip(sample["doc_id"], sample["n_reps"], strict=True))
    # 6 articles, 2 of them run 3 times = 10 calls per language; ht lacks demo-006; two conditions.
    assert sum(reps.values()) == 10
    assert cells[1] == str((7 * 10 - reps["demo-006"]) * 2)
    # Closed-book prompts carry no passage: the same 10 requests in every language, sent once.
    assert cells[3] == str(7 * 10 - reps["demo-006"] - 10)
    assert not data.exists()  # planning writes nothing and calls nothing


def test_budget_stops_cleanly_with_partial_results(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    # Give the offline reader a price so the budget binds: every call then costs about $0.2.
    edit_yaml(
        demo_config_dir / "models.yaml",
        lambda doc: doc["models"][0].update(price_input_per_mtok=100.0, price_output_per_mtok=100.0),
    )
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "COLUMNS": "160"}
    data = tmp_path / "data"
    ran = _clcg(
        "run", "--config", str(demo_config_dir), "--data", str(data), "--budget", "2.5", env=env, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "budget reached" in ran.stdout
    calls = _table(data, "calls")
    spent = calls.loc[~calls["cached"], "cost_usd"].sum()
    assert 0 < spent <= 2.5
    assert (calls["outcome"] == "skipped_budget").any()
    predictions = _table(data, "predictions")
    assert {"ok", "missing"} <= set(predictions["status"])
    assert (data / "study_results.json").exists()  # the analysis still ran on what was paid for

    # The report can be rendered again from the results alone.
    report = _clcg(
        "report", "--data", str(data), "--out", str(tmp_path / "again.html"), env=env, cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr
    assert "H1" in (tmp_path / "again.html").read_text(encoding="utf-8")
