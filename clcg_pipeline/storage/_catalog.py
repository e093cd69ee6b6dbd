"""The DuckDB catalog: a view per table over its Parquet files, plus the views in ``sql/views``.

DuckDB only reads here. Base views are created through DuckDB's relational API (the glob is
passed as a value, never spliced into SQL text); derived views and named queries are ``.sql``
files run with bound parameters.

Portability: for a local data folder the views store *relative* globs (``scores/**/*.parquet``)
resolved against DuckDB's ``file_search_path`` (or, in a plain DuckDB client, the working
directory), so a copied or moved folder reads its own files, never the original's. The
catalog of a remote folder (``s3://...``) stores full URLs and is uploaded into the folder in
one PUT. Each catalog records, in its table ``catalog_built_for``, the folder it was built for
and whether its globs are relative; opened for another folder whose files those globs would not
reach (a bucket copied to a local folder, or to another bucket), ``query`` and
``refresh_catalog`` rebuild it there first. Only the catalog file is rewritten, never the data.

The file is written in DuckDB's ``v1.0.0`` storage format (``STORAGE_VERSION``), so DuckDB 1.x
clients (the ``duckdb`` command-line tool, older Python or R packages) open it as well as 2.x.

``query`` is the only read path offered to analysts and is read-only by construction: one
``SELECT`` statement, on a connection that may read nothing but the study's table folders and
whose settings are locked (see ``_duck.lock_down``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pandas as pd
from upath import UPath

from clcg_pipeline.config import project_path
from clcg_pipeline.storage._duck import Location, connect_duckdb, is_local, local_path, lock_down
from clcg_pipeline.storage._files import data_root, relative_table_glob, table_glob, write_bytes_atomic
from clcg_pipeline.storage._paid import CALL_RECORDS, catalog_call_records

CATALOG_FILE = "clcg.duckdb"
# The oldest storage format DuckDB 2.x writes: DuckDB 1.0 to 1.5 read it too (2.x's own format,
# version 69, they refuse). Views and a small table need nothing newer.
STORAGE_VERSION = "v1.0.0"
BUILT_FOR_TABLE = "catalog_built_for"
# Column types DuckDB 1.x lacks, as what 1.x itself reads the same Parquet column as: a view
# typed with one makes a 1.x client refuse the whole file ("unrecognized enum value").
_OLD_CLIENT_TYPES = {"TIMESTAMPTZ_NS": duckdb.sqltypes.TIMESTAMP_TZ, "TIME_NS": duckdb.sqltypes.TIME}
SQL_DIR = project_path("sql")
_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT"}
_INTEGER_TYPES |= {"UINTEGER", "UBIGINT", "UHUGEINT"}


class CatalogError(RuntimeError):
    """The catalog is missing or a query failed; the message says which and why."""


def default_catalog_path(data_dir: str | os.PathLike[str]) -> Path | UPath:
    """``<data>/clcg.duckdb``: a local ``Path``, or a ``UPath`` inside a remote data folder."""
    root = data_root(data_dir)
    return local_path(root) / CATALOG_FILE if is_local(root) else root / CATALOG_FILE


def stored_tables(data_dir: Location) -> list[str]:
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


def _has_partitions(data_dir: Location, table: str) -> bool:
    """Whether ``table`` has at least one Parquet file (``stored_tables`` for one table): one glob,
    not one per table of the folder, since an analysis run reads some twenty tables this way."""
    root = data_root(data_dir)
    if not root.exists():
        return False
    fs, _ = fsspec.core.url_to_fs(str(root))
    return bool(fs.glob(table_glob(data_dir, table)))


def build_catalog(data_dir: str | os.PathLike[str], catalog_path: Location | None = None) -> dict[str, int]:
    """(Re)create the catalog's views; returns ``{view: row count}``.

    Built in a temporary file and then renamed (local) or uploaded in one PUT (remote), so
    readers never see a half-built catalog and a failure leaves the previous one intact.
    """
    target = UPath(catalog_path) if catalog_path is not None else UPath(default_catalog_path(data_dir))
    local_data = is_local(data_dir)
    with tempfile.TemporaryDirectory(prefix="clcg-catalog-") as scratch:
        if is_local(target):
            final = local_path(target)
            final.parent.mkdir(parents=True, exist_ok=True)
            # Beside the target, so the rename below is atomic on the same file system; named
            # per build, so two overlapping runs (a job and the daemon's automation) never delete
            # or publish each other's half-built file.
            tmp = final.with_name(f".{final.name}.{os.getpid()}-{Path(scratch).name}.building")
        else:
            tmp = Path(scratch) / CATALOG_FILE
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        search_path = str(local_path(data_dir)) if local_data else None
        con = connect_duckdb(data_dir, str(tmp), search_path=search_path, storage_version=STORAGE_VERSION)
        try:
            counts = _create_views(con, data_dir, relative=local_data)
            _record_built_for(con, data_dir, relative=local_data)
            con.execute("CHECKPOINT")
        except BaseException:
            con.close()
            tmp.unlink(missing_ok=True)
            raise
        con.close()
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        if is_local(target):
            os.replace(tmp, local_path(target))
        else:
            write_bytes_atomic(target, tmp.read_bytes())
    return counts


def _create_views(
    con: duckdb.DuckDBPyConnection, data_dir: str | os.PathLike[str], *, relative: bool
) -> dict[str, int]:
    tables = stored_tables(data_dir)
    for table in tables:
        glob = relative_table_glob(table) if relative else table_glob(data_dir, table)
        relation = con.read_parquet(glob, hive_partitioning=True, union_by_name=True)
        _in_old_client_types(relation).create_view(table, replace=True)
    present = set(tables)
    # The calls tables as one relation, for the spend view (sql/views/call_spend.sql).
    if catalog_call_records(con, data_dir, tables, relative=relative):
        present.add(CALL_RECORDS)
    for view_file in sorted((SQL_DIR / "views").glob("*.sql")):
        needs = _declared_tables(view_file)
        if needs <= present:
            con.execute(view_file.read_text(encoding="utf-8"))
            present.add(view_file.stem)
    return {name: int(con.table(name).aggregate("count(*)").fetchall()[0][0]) for name in sorted(present)}


def _in_old_client_types(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """``relation`` with its columns of a type DuckDB 1.x lacks cast to the 1.x type (see above)."""
    types = [str(kind) for kind in relation.types]
    if not set(types) & _OLD_CLIENT_TYPES.keys():
        return relation
    columns = [
        duckdb.ColumnExpression(name).cast(_OLD_CLIENT_TYPES[kind]).alias(name)
        if kind in _OLD_CLIENT_TYPES
        else duckdb.ColumnExpression(name)
        for name, kind in zip(relation.columns, types, strict=True)
    ]
    return relation.select(*columns)


def _folder_id(data_dir: Location) -> str:
    """How a catalog names its data folder: the absolute local path, or the URL."""
    if is_local(data_dir):
        return os.path.abspath(local_path(data_dir))
    return str(UPath(data_dir)).rstrip("/")


def _record_built_for(con: duckdb.DuckDBPyConnection, data_dir: Location, *, relative: bool) -> None:
    """The folder the catalog is built for, and whether its globs are relative (readable anywhere)."""
    con.execute(f"CREATE OR REPLACE TABLE {BUILT_FOR_TABLE} (data_folder VARCHAR, relative_paths BOOLEAN)")
    con.execute(f"INSERT INTO {BUILT_FOR_TABLE} VALUES (?, ?)", [_folder_id(data_dir), relative])


def _fits(database: str, data: Location) -> bool:
    """Whether the catalog file ``database`` (local) reads the tables of ``data``.

    Relative globs fit any local folder (resolved against it); full URLs only the folder they
    were built for. A catalog that records nothing (built before the record existed) or cannot
    be opened (a newer DuckDB's format, a damaged file) does not fit: it is rebuilt.
    """
    try:
        con = connect_duckdb(Path(database).parent, database, read_only=True)
    except duckdb.Error:
        return False
    try:
        return _records_folder(con, data)
    finally:
        con.close()


def _records_folder(con: duckdb.DuckDBPyConnection, data: Location) -> bool:
    """Whether the open catalog ``con`` records globs that read the tables of ``data`` (``_fits``)."""
    try:
        rows = con.execute(f"SELECT data_folder, relative_paths FROM {BUILT_FOR_TABLE}").fetchall()
    except duckdb.Error:
        return False
    if len(rows) != 1:
        return False
    folder, relative = rows[0]
    return bool(relative) if is_local(data) else (not relative and folder == _folder_id(data))


def _fetch_catalog(location: UPath, scratch: str) -> str:
    """A local path of the catalog: its own for a local one, a fetched copy of a remote one."""
    if is_local(location):
        return str(local_path(location))
    database = str(Path(scratch) / CATALOG_FILE)
    Path(database).write_bytes(location.read_bytes())
    return database


def refresh_catalog(data_dir: str | os.PathLike[str], catalog_path: Location | None = None) -> bool:
    """Rebuild the catalog when it was built for another folder (a copy); whether it was rebuilt.

    For ``clcg run`` with nothing else to do on a copied data folder; nothing is done (False)
    when there is no catalog yet or it already reads this folder.
    """
    location = UPath(catalog_path) if catalog_path is not None else UPath(default_catalog_path(data_dir))
    if not location.exists():
        return False
    with tempfile.TemporaryDirectory(prefix="clcg-refresh-") as scratch:
        if _fits(_fetch_catalog(location, scratch), data_dir):
            return False
    _rebuild_for(data_dir, location)
    return True


def _rebuild_for(data_dir: Location, location: Location) -> None:
    """Rebuild a catalog built for another folder; a failure says which folder and why."""
    try:
        build_catalog(str(data_dir), location)
    except (OSError, duckdb.Error) as exc:
        raise CatalogError(
            f"{location}: the catalog was built for another data folder and could not be rebuilt "
            f"for {data_dir}: {exc}"
        ) from None


def _rebuilt_for_query(data: UPath, location: UPath, scratch: str) -> str:
    """The catalog rebuilt for ``data``: in place, or, where its folder cannot be written (a
    read-only copy), in ``scratch`` for this query alone; the local path to open."""
    try:
        build_catalog(str(data), location)
        return _fetch_catalog(location, scratch)
    except (OSError, duckdb.Error):
        pass  # not writable here: the query still answers, from a catalog of its own (below)
    _rebuild_for(data, Path(scratch) / "rebuilt.duckdb")
    return str(Path(scratch) / "rebuilt.duckdb")


def read_all_partitions(data_dir: str | os.PathLike[str], table: str) -> pd.DataFrame:
    """Every stored partition of a table, read through DuckDB over its Parquet glob.

    For consumers of "whatever has been materialized" (the analysis, fertility): partitions
    never materialized are simply absent, rather than an error as in the IO manager. Works for
    local and remote data folders alike (``connect_duckdb``).
    """
    if not _has_partitions(data_dir, table):
        return pd.DataFrame()
    con = connect_duckdb(data_dir)
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


def check_read_only(sql: str) -> None:
    """Accept exactly one ``SELECT`` (``WITH``, ``FROM``, ``DESCRIBE``, ``SUMMARIZE`` parse as one)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise CatalogError(f"query failed: {exc}") from None
    kinds = [statement.type.name for statement in statements]
    if kinds != ["SELECT"]:
        # DuckDB files INSTALL under its LOAD statement type; name what the user wrote instead.
        found = ", ".join(_statement_word(statement.query) for statement in statements) or "nothing"
        raise CatalogError(
            f"the catalog is read-only: give exactly one SELECT statement (got {found}); nothing was run"
        )


def _statement_word(text: str) -> str:
    """The first keyword of a statement, as written (``INSTALL``, ``COPY``, ``ATTACH``)."""
    words = text.split()
    return words[0].upper() if words else "an empty statement"


def query(
    catalog_path: Location,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run one read-only ``SELECT`` against the catalog (default data folder: the catalog's own).

    ``variables`` are set on the connection (``SET VARIABLE``) for the query's ``getvariable()``.

    The connection can read only the study's table folders: anything else (``COPY``,
    ``ATTACH``, ``INSTALL``, ``SET``, another file or URL) is refused and changes nothing.
    Integer columns stay integers (DuckDB hands ``sum()`` and nullable counts to pandas as
    floats).
    """
    check_read_only(sql)
    location = UPath(catalog_path)
    data = UPath(data_dir) if data_dir is not None else location.parent
    with _open_catalog(location, data) as con:
        try:
            _set_variables(con, variables or {})
            relation = con.sql(sql, params=params) if params else con.sql(sql)
            if relation is None:  # not reachable after check_read_only; kept for the type checker
                raise CatalogError("the query returned no result")
            frame = relation.df()
            types = [str(t) for t in relation.types]
        except duckdb.PermissionException as exc:
            raise CatalogError(
                f"query refused: only the study's tables under {data} can be read ({exc})"
            ) from None
        except duckdb.Error as exc:
            raise CatalogError(f"query failed: {exc}") from None
    for column, kind in zip(list(frame.columns), types, strict=True):
        if kind in _INTEGER_TYPES and frame[column].dtype.kind == "f":
            frame[column] = frame[column].astype("Int64")
    return frame


def _set_variables(con: duckdb.DuckDBPyConnection, variables: Mapping[str, Any]) -> None:
    """Each of ``variables`` as a DuckDB session variable (the names are the caller's, not a user's)."""
    for name, value in variables.items():
        if not name.isidentifier():
            raise CatalogError(f"not a variable name: {name!r}")
        con.execute(f"SET VARIABLE {name} = ?", [value])


@contextlib.contextmanager
def _open_catalog(location: UPath, data: UPath) -> Iterator[duckdb.DuckDBPyConnection]:
    """A locked-down read-only connection to a local catalog, or a fetched copy of a remote one."""
    if not location.exists():
        raise CatalogError(
            f"{location}: no catalog yet - run `clcg run` (or materialize duckdb_catalog) first"
        )
    tables = stored_tables(data)
    with tempfile.TemporaryDirectory(prefix="clcg-query-") as scratch:
        database = _fetch_catalog(location, scratch)
        if is_local(data):
            root = Path(os.path.abspath(local_path(data)))  # absolute: the query runs from inside it
            search_path: str | None = str(root)
            # Views store relative globs; DuckDB checks the path as written, so allow both forms.
            readable = [f"{root}/{table}" for table in tables] + list(tables)
        else:
            search_path = None
            readable = [f"{str(data).rstrip('/')}/{table}" for table in tables]
        con = _connect_catalog(location, data, database, search_path)
        if not _records_folder(con, data):  # a copied folder: its views would read the original's files
            con.close()
            database = _rebuilt_for_query(data, location, scratch)
            con = _connect_catalog(location, data, database, search_path)
        # DuckDB falls back to the working directory for a relative path the data folder lacks, so
        # the allowed relative table folders would let `scores/...` of whatever folder the user is
        # in be read: work from inside the data folder while the query runs.
        try:
            previous = os.getcwd() if search_path is not None else None
        except FileNotFoundError:  # the working directory was deleted; nothing to go back to
            previous = None
        try:
            lock_down(con, readable)
            if search_path is not None:
                os.chdir(search_path)
            yield con
        finally:
            con.close()
            if previous is not None:
                os.chdir(previous)


def _connect_catalog(
    location: UPath, data: UPath, database: str, search_path: str | None
) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the local catalog file ``database`` (of ``location``)."""
    try:
        return connect_duckdb(data, database, read_only=True, search_path=search_path)
    except duckdb.Error as exc:
        raise CatalogError(f"{location}: cannot open the catalog: {exc}") from None


def run_named_query(
    catalog_path: Location,
    name: str,
    params: Mapping[str, Any],
    *,
    data_dir: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Run ``sql/queries/<name>.sql`` with bound parameters (only those the file uses)."""
    queries = named_queries()
    if name not in queries:
        raise CatalogError(f"no named query {name!r}; available: {', '.join(queries) or 'none'}")
    text = queries[name].read_text(encoding="utf-8")
    used = {key: value for key, value in params.items() if f"${key}" in text}
    # A file that reads a setting with getvariable() (so that a plain DuckDB client runs it with
    # its default) gets it as a session variable instead of a bound parameter.
    variables = {key: value for key, value in params.items() if f"getvariable('{key}')" in text}
    return query(catalog_path, text, used, data_dir=data_dir, variables=variables)
