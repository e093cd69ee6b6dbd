"""Which coordination backend a cache gets (calls._coord.coord_backend): no database needed."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from clcg_pipeline.calls._coord import COORD_ENV, COORD_URL_ENV, coord_backend
from clcg_pipeline_tests.conftest import PROJECT_ROOT

PG_ENV = {
    "CLCG_PG_HOST": "db.internal",
    "CLCG_PG_PORT": "6543",
    "CLCG_PG_DB": "study",
    "CLCG_PG_USER": "runner",
    "CLCG_PG_PASSWORD": "s3cret-pw",
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (COORD_ENV, COORD_URL_ENV, "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _postgres_instance(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.mkdir(exist_ok=True)
    shutil.copyfile(PROJECT_ROOT / "dagster.postgres.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))


def test_a_postgres_dagster_instance_is_the_default_database(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _postgres_instance(tmp_path / "home", clean_env)
    for name, value in PG_ENV.items():
        clean_env.setenv(name, value)
    backend = coord_backend("s3://bucket/cache/")
    assert backend.pg is not None and backend.root is None
    assert (backend.pg.host, backend.pg.port, backend.pg.dbname, backend.pg.user) == (
        "db.internal",
        6543,
        "study",
        "runner",
    )
    assert backend.pg.password == "s3cret-pw"
    assert backend.scope == "s3://bucket/cache"
    text = backend.describe() + repr(backend)
    assert "postgresql://runner@db.internal:6543/study" in text and "s3cret-pw" not in text


def test_a_missing_setting_of_the_instance_names_file_and_variable(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _postgres_instance(tmp_path / "home", clean_env)
    for name, value in PG_ENV.items():
        clean_env.setenv(name, value)
    clean_env.delenv("CLCG_PG_HOST")
    with pytest.raises(
        ValueError, match=r"dagster\.yaml: storage\.postgres\.postgres_db\.hostname.*CLCG_PG_HOST"
    ):
        coord_backend(str(tmp_path / "cache"))


def test_explicit_settings_win_over_the_instance(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _postgres_instance(tmp_path / "home", clean_env)  # its variables unset: never read below
    clean_env.setenv(COORD_URL_ENV, "postgresql+psycopg2://u:pw@h:1234/d")
    pg = coord_backend("/data/cache").pg
    assert pg is not None and (pg.host, pg.port, pg.dbname, pg.user, pg.password) == (
        "h",
        1234,
        "d",
        "u",
        "pw",
    )
    clean_env.setenv(COORD_URL_ENV, "files")
    assert coord_backend(str(tmp_path / "c")).root == tmp_path / "c" / "_coord"
    clean_env.delenv(COORD_URL_ENV)
    clean_env.setenv(COORD_ENV, str(tmp_path / "shared"))
    backend = coord_backend("s3://bucket/cache")
    assert backend.pg is None and backend.root == tmp_path / "shared"


def test_a_url_that_is_not_postgresql_is_refused(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(COORD_URL_ENV, "mysql://u@h/d")
    with pytest.raises(ValueError, match="CLCG_COORD_URL: expected a postgresql://"):
        coord_backend("/data/cache")


def test_a_sqlite_instance_keeps_the_file_locks(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copyfile(PROJECT_ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    clean_env.setenv("DAGSTER_HOME", str(tmp_path))
    backend = coord_backend(str(tmp_path / "cache"))
    assert backend.pg is None and backend.root == tmp_path / "cache" / "_coord"


def test_an_unreachable_database_names_host_port_and_variable(clean_env: pytest.MonkeyPatch) -> None:
    pytest.importorskip("psycopg2")
    from clcg_pipeline.calls._coord import Coordinator

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    clean_env.setenv(COORD_URL_ENV, f"postgresql://runner:pw-not-shown@127.0.0.1:{port}/study")
    with pytest.raises(RuntimeError) as caught:
        Coordinator("/data/cache", model_key="m", concurrency=2)
    message = str(caught.value)
    assert f"cannot connect to postgresql://runner@127.0.0.1:{port}/study (from {COORD_URL_ENV})" in message
    assert "pw-not-shown" not in message
