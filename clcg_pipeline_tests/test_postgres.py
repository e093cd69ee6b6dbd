"""The study on a PostgreSQL instance (dagster.postgres.yaml), against a throwaway server.

Needs the ``postgres`` server binaries (Debian: postgresql) and the ``postgres`` extra; skipped
without them unless CLCG_REQUIRE_POSTGRES is set (CI), when their absence fails the test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, PROJECT_ROOT
from clcg_pipeline_tests.pg_server import require_or_skip, running_postgres, skip_without_postgres

pytestmark = pytest.mark.slow
LANGUAGES = ("en", "pt", "is")  # the reference, the baseline and one target: enough for the analysis


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict[str, str]]:
    """A PostgreSQL server on 127.0.0.1 with trust auth and its data in a temporary folder."""
    binaries = skip_without_postgres()
    try:
        import dagster_postgres  # noqa: F401
    except ImportError as exc:
        require_or_skip(f"the postgres extra is not installed ({exc})")
    with running_postgres("clcg_dagster", binaries) as server:
        yield {"CLCG_PG_HOST": server.host, "CLCG_PG_PORT": str(server.port), "CLCG_PG_DB": server.dbname}


def _clcg(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clcg = Path(sys.executable).parent / "clcg"
    return subprocess.run([str(clcg), *args], env=env, capture_output=True, text=True, timeout=900)


def test_postgres_yaml_launches_runs_as_dagster_yaml_does(tmp_path: Path) -> None:
    """The two instance files differ in storage only; the run launcher and coordinator match,
    and the launcher is Dagster's own (no ``run_launcher`` section: ``DefaultRunLauncher``)."""
    shutil.copyfile(PROJECT_ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert type(instance.run_launcher) is dg.DefaultRunLauncher, type(instance.run_launcher)
    local = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    pg = yaml.safe_load((PROJECT_ROOT / "dagster.postgres.yaml").read_text())
    for section in ("run_launcher", "run_coordinator"):
        assert pg.get(section) == local.get(section), section
    assert pg["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    assert "compute_logs" in pg


def test_study_runs_on_postgres(postgres: dict[str, str], tmp_path: Path) -> None:
    import psycopg2

    config_dir = tmp_path / "config"
    shutil.copytree(DEFAULT_CONFIG, config_dir)
    langs = yaml.safe_load((config_dir / "languages.yaml").read_text())
    langs["languages"] = [lang for lang in langs["languages"] if lang["iso"] in LANGUAGES]
    (config_dir / "languages.yaml").write_text(yaml.safe_dump(langs, allow_unicode=True))
    study = yaml.safe_load((config_dir / "study.yaml").read_text())
    study["bootstrap_replicates"] = 100
    (config_dir / "study.yaml").write_text(yaml.safe_dump(study))
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster.postgres.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        **postgres,
        "CLCG_PG_USER": "clcg",
        "CLCG_PG_PASSWORD": "",
        "CLCG_COMPUTE_LOG_DIR": str(tmp_path / "compute_logs"),
        "DAGSTER_HOME": str(home),
    }
    args = ["run", "--config", str(config_dir), "--data", str(tmp_path / "data")]
    started = time.monotonic()
    first = _clcg(args, env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    first_s = time.monotonic() - started
    # Nothing of the instance went to local SQLite files: it is all in PostgreSQL.
    assert not list(home.rglob("*.db")), sorted(map(str, home.rglob("*.db")))

    conn = psycopg2.connect(
        host=postgres["CLCG_PG_HOST"], port=int(postgres["CLCG_PG_PORT"]), user="clcg", dbname="clcg_dagster"
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*), count(*) FILTER (WHERE status = 'SUCCESS') FROM runs")
            runs, succeeded = cur.fetchone()
            cur.execute(
                "SELECT count(DISTINCT partition) FROM event_logs "
                "WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND asset_key = %s",
                ('["predictions"]',),
            )
            (prediction_partitions,) = cur.fetchone()
        # corpus (one run over the panel), inputs, responses (one run), analysis
        assert runs >= 4 and succeeded == runs
        assert prediction_partitions == len(LANGUAGES)  # one model x the panel

        second = _clcg(args, env)
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs")
            (runs_after,) = cur.fetchone()
            cur.execute(
                "SELECT count(*) FROM event_logs "
                "WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND asset_key = %s",
                ('["predictions"]',),
            )
            (prediction_events,) = cur.fetchone()
    finally:
        conn.close()
    # The second run skipped every up-to-date partition: at most the analysis ran again.
    assert runs_after - runs <= 1, (runs, runs_after, second.stdout[-2000:])
    assert prediction_events == len(LANGUAGES)
    print(f"first clcg run on PostgreSQL: {first_s:.1f}s, {runs} runs")
