"""The DuckDB catalog: a view per table over its Parquet files, plus the views in ``sql/views``.

DuckDB only reads here. Base views are created through DuckDB's relational API (the glob is
passed as a value, never spliced into SQL text); derived views and named queries are ``.sql``
files run with bound parameters.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pandas as pd

from clcg_pipeline.storage._files import data_root, table_glob

CATALOG_FILE = "clcg.duckdb"
SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


class CatalogError(RuntimeError):
    """The catalog is missing or a query failed; the message says which and why."""


def default_catalog_path(data_dir: str | os.PathLike[str]) -> Path:
    """``<data>/clcg.duckdb`` for a local data folder; ``./clcg.duckdb`` when data is remote."""
    root = data_root(data_dir)
    return Path(root.path) / CATALOG_FILE if root.protocol in ("", "file", "local") else Path(CATALOG_FILE)


def stored_tables(data_dir: str | os.PathLike[str]) -> list[str]:
    """Names of the tables that have at least one Parquet file under the data folder."""
    root = data_root(data_dir)
    if not root.exists():
        return []
    fs, _ = fsspec.core.url_to_fs(str(root))
    names = []
    for child in sorted(root.iterdir()):
        if child.is_dir() and fs.glob(table_glob(data_dir, child.name)):
            names.append(child.name)
    return names


def build_catalog(
    data_dir: str | os.PathLike[str], catalog_path: str | os.PathLike[str] | None = None
) -> dict[str, int]:
    """(Re)create the catalog's views; returns ``{view: row count}``.

    Built in a temporary file and renamed into place, so readers never see a half-built
    catalog and a failure leaves the previous one intact.
    """
    target = Path(catalog_path) if catalog_path is not None else default_catalog_path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.building")
    tmp.unlink(missing_ok=True)
    counts: dict[str, int] = {}
    con = duckdb.connect(str(tmp))
    try:
        if data_root(data_dir).protocol not in ("", "file", "local"):
            con.execute("INSTALL httpfs; LOAD httpfs;")  # remote Parquet (s3://, gs://, https://)
        for table in stored_tables(data_dir):
            relation = con.read_parquet(
                table_glob(data_dir, table), hive_partitioning=True, union_by_name=True
            )
            relation.create_view(table, replace=True)
        present = set(stored_tables(data_dir))
        for view_file in sorted((SQL_DIR / "views").glob("*.sql")):
            needs = _declared_tables(view_file)
            if needs <= present:
                con.execute(view_file.read_text(encoding="utf-8"))
                present.add(view_file.stem)
        for name in sorted(present):
            counts[name] = int(con.table(name).aggregate("count(*)").fetchall()[0][0])
    finally:
        con.close()
    os.replace(tmp, target)
    Path(f"{tmp}.wal").unlink(missing_ok=True)
    return counts


def read_all_partitions(data_dir: str | os.PathLike[str], table: str) -> pd.DataFrame:
    """Every stored partition of a table, read through DuckDB over its Parquet glob.

    For consumers of "whatever has been materialized" (the analysis, fertility): partitions
    never materialized are simply absent, rather than an error as in the IO manager.
    """
    if table not in stored_tables(data_dir):
        return pd.DataFrame()
    con = duckdb.connect()
    try:
        return con.read_parquet(table_glob(data_dir, table), union_by_name=True).df()
    finally:
        con.close()


def _declared_tables(view_file: Path) -> set[str]:
    """Tables a view file needs, from its ``-- needs: a, b`` header line."""
    for line in view_file.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- needs:"):
            return {name.strip() for name in line.removeprefix("-- needs:").split(",") if name.strip()}
    return set()


def named_queries() -> dict[str, Path]:
    return {path.stem: path for path in sorted((SQL_DIR / "queries").glob("*.sql"))}


def query(
    catalog_path: str | os.PathLike[str],
    sql: str,
    params: Sequence[Any] | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run one read-only query against the catalog."""
    path = Path(catalog_path)
    if not path.exists():
        raise CatalogError(f"{path}: no catalog yet - run `clcg run` (or materialize duckdb_catalog) first")
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, params).df() if params else con.sql(sql).df()
    except duckdb.Error as exc:
        raise CatalogError(f"query failed: {exc}") from None
    finally:
        con.close()


def run_named_query(
    catalog_path: str | os.PathLike[str], name: str, params: Mapping[str, Any]
) -> pd.DataFrame:
    """Run ``sql/queries/<name>.sql`` with bound parameters (only those the file uses)."""
    queries = named_queries()
    if name not in queries:
        raise CatalogError(f"no named query {name!r}; available: {', '.join(queries) or 'none'}")
    text = queries[name].read_text(encoding="utf-8")
    used = {key: value for key, value in params.items() if f"${key}" in text}
    return query(catalog_path, text, used)
