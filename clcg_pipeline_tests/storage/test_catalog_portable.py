"""The catalog on a plain DuckDB client and on a copied data folder.

A DuckDB 1.x client (the ``duckdb`` command-line tool on PyPI is 1.5.x) refuses DuckDB 2.x's own
storage format, and a catalog built for ``s3://`` keeps the bucket's URLs in its views; a copy of
the folder must still be queried, reading the copy's files.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from upath import UPath

from clcg_pipeline.storage import build_catalog, query, refresh_catalog
from clcg_pipeline_tests.conftest import run_clcg


def _events(n: int) -> bytes:
    """A small table with a nanosecond time-zone timestamp, a type DuckDB 1.x does not have."""
    frame = pd.DataFrame(
        {
            "event": [f"e{i}" for i in range(n)],
            "at": pd.to_datetime(["2026-01-02T03:04:05.123456789Z"] * n, utc=True),
        }
    )
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _write_events(data: str, name: str, n: int) -> None:
    path = UPath(f"{data}/events/{name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_events(n))


def _catalog_facts(catalog: Path) -> tuple[str, set[str]]:
    """The storage version and the column types, as a fresh connection reports them."""
    con = duckdb.connect(str(catalog), read_only=True)
    try:
        this = "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        (tags,) = con.execute(this).fetchall()[0]
        types = {str(row[0]) for row in con.execute("SELECT data_type FROM duckdb_columns()").fetchall()}
    finally:
        con.close()
    return tags["storage_version"], types


def _built_for(catalog: Path) -> list[tuple[str, bool]]:
    """The data folder the catalog records it was built for, and whether its globs are relative."""
    con = duckdb.connect(str(catalog), read_only=True)
    try:
        return con.execute("SELECT data_folder, relative_paths FROM catalog_built_for").fetchall()
    finally:
        con.close()


def test_catalog_opens_in_duckdb_1x(tmp_path: Path) -> None:
    """Written in the v1.0.0 storage format, with no column of a type 1.x lacks (checked by hand
    with ``duckdb-cli==1.5.6``: every view reads)."""
    data = tmp_path / "data"
    _write_events(str(data), "data.parquet", 2)
    assert build_catalog(data) == {"events": 2}
    version, types = _catalog_facts(data / "clcg.duckdb")
    assert version.startswith("v1.0.0"), version  # DuckDB 2.x's own format reads "v2.0.0+"
    assert "TIMESTAMP WITH TIME ZONE" in types and not types & {"TIMESTAMPTZ_NS", "TIME_NS"}
    assert _built_for(data / "clcg.duckdb") == [(str(data), True)]


def test_copied_s3_folder_is_queried_on_its_own_files(
    bucket: str, s3_env: dict[str, str], tmp_path: Path
) -> None:
    import s3fs

    data = f"s3://{bucket}/clcg"
    _write_events(data, "data.parquet", 2)
    build_catalog(data)
    copy = tmp_path / "copy"
    s3fs.S3FileSystem().get(f"{bucket}/clcg", str(copy), recursive=True)
    assert (copy / "clcg.duckdb").is_file()
    # Only the copy has this file: a catalog still reading the bucket would count 2.
    _write_events(str(copy), "more.parquet", 3)

    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, **s3_env, "DAGSTER_HOME": str(tmp_path / "dagster")}
    sql = "SELECT count(*) AS n FROM events"
    counted = run_clcg("query", "--data", str(copy), "--format", "json", sql, env=env, cwd=work)
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == [{"n": 5}]
    assert _built_for(copy / "clcg.duckdb") == [(str(copy), True)]
    # The bucket's own catalog is untouched and still reads the bucket.
    assert query(f"{data}/clcg.duckdb", "SELECT count(*) AS n FROM events")["n"].tolist() == [2]


def _copy_of_remote_folder(tmp_path: Path) -> Path:
    """A catalog built for a remote folder (fsspec's in-memory one), copied beside other files."""
    data = f"memory://{tmp_path.name}/clcg"
    _write_events(data, "data.parquet", 2)
    build_catalog(data)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "clcg.duckdb").write_bytes(UPath(f"{data}/clcg.duckdb").read_bytes())
    (copy / "events").mkdir()
    (copy / "events" / "data.parquet").write_bytes(_events(4))
    return copy


def test_refresh_catalog_rebuilds_only_a_copy(tmp_path: Path) -> None:
    """What a ``clcg run`` with nothing else to do calls: a moved local folder's catalog (relative
    globs) is kept; one built for a folder elsewhere that used full URLs is rebuilt, once."""
    copy = _copy_of_remote_folder(tmp_path)

    assert refresh_catalog(copy) is True
    assert refresh_catalog(copy) is False
    moved = tmp_path / "moved"
    shutil.move(copy, moved)
    assert refresh_catalog(moved) is False
    assert refresh_catalog(tmp_path / "nothing") is False  # no catalog yet: nothing to refresh
    assert query(moved / "clcg.duckdb", "SELECT count(*) AS n FROM events")["n"].tolist() == [4]


def test_a_read_only_copy_is_queried_through_a_catalog_built_for_the_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _copy_of_remote_folder(tmp_path)
    catalog = copy / "clcg.duckdb"
    before = catalog.read_bytes()
    replace = os.replace

    def read_only_folder(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == catalog:
            raise PermissionError(13, "Permission denied", str(dst))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", read_only_folder)
    assert query(catalog, "SELECT count(*) AS n FROM events")["n"].tolist() == [4]
    assert catalog.read_bytes() == before  # the copy is left as it was
