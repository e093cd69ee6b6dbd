"""A run says how it coordinates, and one whose cache is shared while it would coordinate
through local file locks is refused before any call, unless the user opts in."""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline.calls._coord import (
    ALLOW_LOCAL_ENV,
    COORD_ENV,
    COORD_URL_ENV,
    COORDINATION_TAG,
    MARKER,
    CoordinationRefused,
    Coordinator,
    check_coordination,
    coordination_tags,
)
from clcg_pipeline.cli import main
from clcg_pipeline_tests.calls.test_coord_backend import PG_ENV, _postgres_instance


@pytest.fixture
def files_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """This host coordinates through file locks (a SQLite Dagster home), without the opt-in."""
    for name in (COORD_ENV, COORD_URL_ENV, ALLOW_LOCAL_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "sqlite-home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return monkeypatch


def test_a_remote_cache_with_file_locks_is_refused_unless_opted_in(files_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(CoordinationRefused) as refused:
        check_coordination("s3://bucket/study/cache/calls")
    message = str(refused.value)
    assert "\n" not in message and "s3://bucket/study/cache/calls is shared" in message
    assert COORD_URL_ENV in message and f"{ALLOW_LOCAL_ENV}=1" in message and "docs/DEPLOY.md" in message
    # The call session's coordinator refuses it too (the daemon's and the UI's runs), before any call.
    with pytest.raises(CoordinationRefused):
        Coordinator("s3://bucket/study/cache/calls", model_key="m", concurrency=1)
    # A folder of its own on this host is not shared; so says the run and its tag.
    assert coordination_tags() == {COORDINATION_TAG: "files"}
    files_env.setenv(ALLOW_LOCAL_ENV, "1")
    assert check_coordination("s3://bucket/study/cache/calls").kind == "files"


def test_a_cache_written_under_postgresql_refuses_a_host_with_file_locks(
    files_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = tmp_path / "data" / "cache" / "calls"
    assert check_coordination(str(cache)).kind == "files"  # nobody else has written here
    # A host whose instance is the shared PostgreSQL one marks the cache when it coordinates.
    _postgres_instance(tmp_path / "pg-home", files_env)
    for name, value in PG_ENV.items():
        files_env.setenv(name, value)
    backend = check_coordination(str(cache))
    assert backend.kind == "postgresql" and (cache / MARKER).exists()
    assert coordination_tags() == {COORDINATION_TAG: "postgresql"}
    assert backend.line().startswith("coordination: the PostgreSQL instance postgresql://runner@db.internal")
    # A second host on the same folder without that instance is refused, naming the database.
    files_env.setenv("DAGSTER_HOME", str(tmp_path / "sqlite-home"))
    with pytest.raises(CoordinationRefused, match=r"coordinated through postgresql://runner@db\.internal"):
        check_coordination(str(cache))
    files_env.setenv(COORD_ENV, str(tmp_path / "locks"))  # CLCG_COORD_DIR alone does not make it safe
    with pytest.raises(CoordinationRefused):
        check_coordination(str(cache))


def test_clcg_run_refuses_a_shared_bucket_with_file_locks_in_one_line(
    demo_config_dir: Path,
    tmp_path: Path,
    bucket: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    import s3fs

    for name in (COORD_ENV, COORD_URL_ENV, ALLOW_LOCAL_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster-home"))
    code = main(["run", "--config", str(demo_config_dir), "--data", f"s3://{bucket}/study"])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and ALLOW_LOCAL_ENV in lines[0], err
    assert s3fs.S3FileSystem().ls(bucket) == []  # refused before anything ran or was written


def test_a_host_opted_in_on_a_shared_cache_says_its_budget_and_claims_are_its_own(
    files_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """bench/two_hosts.py --misconfigured --study-budget: a host opted in after two PostgreSQL
    hosts had spent the study budget paid 1.9x it, saying only "one host only"."""
    files_env.setenv(ALLOW_LOCAL_ENV, "1")
    line = check_coordination("s3://bucket/study/cache/calls").line()
    assert line.startswith("coordination: local file locks in ") and "(default; one host only)" in line
    assert f"{ALLOW_LOCAL_ENV}=1 although the call cache s3://bucket/study/cache/calls is shared" in line
    assert "the study budget count this host's calls only" in line and "\n" not in line
    # A folder of this host that nobody else wrote to: nothing to say beyond "one host only".
    alone = check_coordination(str(tmp_path / "data" / "cache" / "calls")).line()
    assert alone.endswith("(default; one host only)")
