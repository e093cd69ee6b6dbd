"""The study on a PostgreSQL instance (dagster.postgres.yaml), against a throwaway server.

Needs the ``postgres`` server binaries (Debian: postgresql) and the ``postgres`` extra; skipped
without them unless CLCG_REQUIRE_POSTGRES is set (CI), when their absence fails the test.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, PROJECT_ROOT

pytestmark = pytest.mark.slow
LANGUAGES = ("en", "pt", "is")  # the reference, the baseline and one target: enough for the analysis


def _require_or_skip(reason: str) -> None:
    if os.environ.get("CLCG_REQUIRE_POSTGRES"):
        pytest.fail(f"CLCG_REQUIRE_POSTGRES is set but {reason}")
    pytest.skip(reason)


def _bin_dir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "postgres").exists():
            return Path(candidate)
    found = shutil.which("postgres")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict[str, str]]:
    """A PostgreSQL server on 127.0.0.1 with trust auth and its data in a temporary folder."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        _require_or_skip("no PostgreSQL server binary (apt-get install postgresql)")
    try:
        import dagster_postgres  # noqa: F401
        import psycopg2
    except ImportError as exc:
        _require_or_skip(f"the postgres extra is not installed ({exc})")
    assert bin_dir is not None
    # The server refuses to run as root: then it runs as `nobody`, in a folder nobody owns.
    as_root = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="clcg-pg-"))
    data = root / "data"
    if as_root:
        shutil.chown(root, user="nobody")

    def run(*args: str) -> None:
        cmd = [str(bin_dir / args[0]), *args[1:]]
        if as_root:
            cmd = ["runuser", "-u", "nobody", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    port = _free_port()
    started = False
    try:
        run("initdb", "-D", str(data), "-U", "clcg", "--auth=trust", "-E", "UTF8", "--no-sync")
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(root / "server.log"), "-w", "start")
        started = True
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="clcg", dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE clcg_dagster")
        conn.close()
        yield {"CLCG_PG_HOST": "127.0.0.1", "CLCG_PG_PORT": str(port), "CLCG_PG_DB": "clcg_dagster"}
    finally:
        if started:
            run("pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


def _clcg(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clcg = Path(sys.executable).parent / "clcg"
    return subprocess.run([str(clcg), *args], env=env, capture_output=True, text=True, timeout=900)


def test_postgres_yaml_launches_runs_as_dagster_yaml_does() -> None:
    """The two instance files differ in storage only; the run launcher and coordinator match."""
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
        assert runs >= len(LANGUAGES) + 3 and succeeded == runs
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
