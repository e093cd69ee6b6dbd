"""The data folder on object storage: a local S3-compatible server (moto) the test starts itself.

Endpoint and credentials reach every reader only through the standard AWS variables, and no
DuckDB extension may be downloaded (``HOME`` points at an empty folder, so none is cached).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from upath import UPath

from clcg_pipeline.cli import main
from clcg_pipeline.storage import (
    CatalogError,
    build_catalog,
    default_catalog_path,
    partition_dir,
    query,
    read_all_partitions,
    write_frame,
)
from clcg_pipeline_tests.conftest import run_clcg
from clcg_pipeline_tests.storage.conftest import score_rows


def test_catalog_and_reads_on_s3(bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = f"s3://{bucket}/clcg"
    for language, n in (("en", 3), ("ka", 2)):
        write_frame(
            partition_dir(data, "scores", {"language": language, "model": "m"}) / "data.parquet",
            score_rows(language, [0.5] * n, levels=["L3"] * n, statuses=["ok"] * n),
            contract="scores",
        )
    monkeypatch.chdir(tmp_path)
    assert len(read_all_partitions(data, "scores")) == 5
    assert build_catalog(data) == {"scores": 5}
    catalog = default_catalog_path(data)
    assert str(catalog) == f"{data}/clcg.duckdb" and UPath(catalog).exists()
    assert not list(tmp_path.glob("*.duckdb"))  # not in the current directory
    frame = query(catalog, "SELECT language, count(*) AS n FROM scores GROUP BY ALL ORDER BY language")
    assert frame.to_dict(orient="list") == {"language": ["en", "ka"], "n": [3, 2]}
    with pytest.raises(CatalogError, match="only the study's tables"):
        query(catalog, "SELECT * FROM read_csv('/etc/passwd')")
    with pytest.raises(CatalogError, match="read-only"):
        query(catalog, f"COPY (SELECT 1) TO '{data}/scores/language=en/model=m/data.parquet'")
    assert len(read_all_partitions(data, "scores")) == 5


@pytest.mark.slow
def test_every_command_on_s3(
    bucket: str,
    s3_env: dict[str, str],
    config_dir: Path,
    edit_yaml: Callable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(
            languages=[lang for lang in doc["languages"] if lang["iso"] in ("en", "pt", "ka")]
        ),
    )
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(bootstrap_replicates=200))
    env = {**os.environ, **s3_env, "DAGSTER_HOME": str(tmp_path / "dagster"), "COLUMNS": "160"}
    data = f"s3://{bucket}/clcg"
    work = tmp_path / "work"
    work.mkdir()

    ran = run_clcg("run", "--config", str(config_dir), "--data", data, env=env, cwd=work)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "H1 micro" in ran.stdout
    for name in ("study_results.json", "report.html", "clcg.duckdb"):
        assert UPath(f"{data}/{name}").exists(), name
    assert not list(work.iterdir())  # nothing landed in the current directory

    # The reading commands in this process (``main``, what the ``clcg`` script calls), with the
    # same variables and working folder: the run above is the fresh interpreter a user starts,
    # and an interpreter per command only added its start (a few seconds each).
    monkeypatch.chdir(work)
    for name in ("DAGSTER_HOME", "COLUMNS"):
        monkeypatch.setenv(name, env[name])

    def clcg(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = clcg(
        "query", "--data", data, "--format", "json",
        "SELECT language, count(*) AS n FROM scores GROUP BY ALL ORDER BY language",
    )  # fmt: skip
    assert code == 0, err
    assert [row["language"] for row in json.loads(out)] == ["en", "ka", "pt"]

    code, out, err = clcg(
        "query", "--config", str(config_dir), "--data", data, "--format", "csv", "--named", "clcg_by_language"
    )
    assert code == 0, err
    assert len(out.splitlines()) == 4

    UPath(f"{data}/report.html").unlink()
    code, _, err = clcg("report", "--data", data)
    assert code == 0, err
    assert "H1" in UPath(f"{data}/report.html").read_text(encoding="utf-8")

    estimate = tmp_path / "estimate.json"
    code, _, err = clcg("estimate", "--config", str(config_dir), "--scores", data, "--out", str(estimate))
    assert code == 0, err
    results = json.loads(UPath(f"{data}/study_results.json").read_text(encoding="utf-8"))
    again = json.loads(estimate.read_text(encoding="utf-8"))
    # The same scores and seed as the run's analysis give the same H1 micro estimate.
    assert again["h1_micro"]["estimate"] == pytest.approx(results["h1"]["h1_micro"]["estimate"], abs=1e-12)
