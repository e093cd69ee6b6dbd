"""The one place DuckDB connections are opened: local or object-storage data, never a download.

DuckDB reads ``s3://`` (or ``gs://``, ...) through its ``httpfs`` extension, which it would
download at run time; an offline or locked-down worker cannot. Instead the data folder's own
fsspec filesystem (s3fs for ``s3://``, configured by the standard AWS variables such as
``AWS_ENDPOINT_URL`` and ``AWS_ACCESS_KEY_ID``) is registered with the connection, so DuckDB
reads through the same client the IO manager writes with, and extension auto-install and
auto-load are switched off so nothing is ever fetched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import duckdb
from upath import UPath

_LOCAL_PROTOCOLS = ("", "file", "local")
# A local path or a URL; a UPath of a remote folder is not os.PathLike (it has no local path).
Location = str | os.PathLike[str] | UPath
# No extension is installed or loaded behind our back (see the module docstring).
_NO_DOWNLOADS: dict[str, str | bool] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def is_local(location: Location) -> bool:
    """Whether a data folder (or a file in it) is on the local disk (a path or ``file://`` URL)."""
    return UPath(location).protocol in _LOCAL_PROTOCOLS


def local_path(location: Location) -> Path:
    """The plain local path of a local location (``file:///a/b`` -> ``/a/b``)."""
    return Path(UPath(location).path)


def duckdb_location(location: Location) -> str:
    """How DuckDB must be given a path: plain for local files, the full URL for remote ones."""
    return str(local_path(location)) if is_local(location) else str(UPath(location))


def connect_duckdb(
    data_dir: Location,
    database: str = ":memory:",
    *,
    read_only: bool = False,
    search_path: str | None = None,
    storage_version: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection able to read ``data_dir`` (local or remote) without downloading anything.

    ``search_path`` sets DuckDB's ``file_search_path``, against which relative paths (those of a
    portable catalog's views) resolve. ``storage_version`` (``"v1.0.0"``) writes a new database
    file in that older storage format, so older DuckDB clients can open it.
    """
    # Typed as duckdb.connect's parameter (a dict is invariant in its values).
    config: dict[str, str | bool | int | float | list[str]] = dict(_NO_DOWNLOADS)
    if search_path is not None:
        config["file_search_path"] = search_path
    if storage_version is not None:
        config["storage_compatibility_version"] = storage_version
    con = duckdb.connect(database, read_only=read_only, config=config)
    root = UPath(data_dir)
    if root.protocol not in _LOCAL_PROTOCOLS:
        try:
            filesystem = root.fs
            # fsspec caches listings per process; another process may have written since.
            filesystem.invalidate_cache()
            con.register_filesystem(filesystem)
        except BaseException:
            con.close()
            raise
    return con


def lock_down(con: duckdb.DuckDBPyConnection, readable: Iterable[str]) -> None:
    """Restrict ``con`` to reading files under ``readable`` folders, and freeze its settings.

    DuckDB then refuses any other file, URL, ``ATTACH``, ``INSTALL`` or ``LOAD``, and ``SET`` /
    ``PRAGMA`` cannot undo it (``lock_configuration``).
    """
    folders = sorted({folder if folder.endswith("/") else f"{folder}/" for folder in readable})
    listed = ", ".join("'" + folder.replace("'", "''") + "'" for folder in folders)
    # SET takes no bound parameters; the folders are quoted as SQL string literals above.
    con.execute(f"SET allowed_directories = [{listed}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
