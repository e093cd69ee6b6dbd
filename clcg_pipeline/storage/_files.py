"""Where tables live and how they are written: hive-style Parquet, atomically.

Paths are ``UPath``s so the data folder can be a local directory or an fsspec URL
(``s3://bucket/clcg``); only local writes need the temp-file-and-rename dance, since an
object-store PUT is already all-or-nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from clcg_pipeline.storage._tables import TABLES, conform

DATA_FILE = "data.parquet"


# A remote UPath is not os.PathLike (it has no local path), so it is named as well.
def data_root(data_dir: str | os.PathLike[str] | UPath) -> UPath:
    return UPath(data_dir)


def partition_dir(
    data_dir: str | os.PathLike[str] | UPath, table: str, partition: Mapping[str, str] | None
) -> UPath:
    """``<data>/<table>/<dim>=<value>/...`` with dimensions in the given order (hive layout)."""
    path = data_root(data_dir) / table
    for dim, value in (partition or {}).items():
        path = path / f"{dim}={value}"
    return path


def table_glob(data_dir: str | os.PathLike[str] | UPath, table: str) -> str:
    """A glob matching every partition file of ``table`` (for DuckDB and fsspec).

    Local folders give a plain path (DuckDB does not read ``file://`` URLs); remote ones keep
    their URL, read through the filesystem ``connect_duckdb`` registers.
    """
    root = data_root(data_dir)
    base = str(Path(root.path)) if _is_local(root) else str(root).rstrip("/")
    return f"{base}/{relative_table_glob(table)}"


def relative_table_glob(table: str) -> str:
    """``<table>/**/*.parquet``: the glob a portable catalog's view stores (see ``_catalog``)."""
    return f"{table}/**/*.parquet"


def _is_local(path: UPath) -> bool:
    return path.protocol in ("", "file", "local")


def write_bytes_atomic(path: UPath | Path | str, payload: bytes) -> None:
    """Write ``payload`` so a reader sees the old file or the new one, never half of it."""
    target = UPath(path)
    if not _is_local(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload)
        return
    local = Path(target.path)
    local.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=local.parent, prefix=f".{local.name}.", suffix=".tmp")
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(local)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; tables and results are meant to be read by others
        os.replace(tmp, local)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(path: UPath | Path | str, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def write_frame(path: UPath | Path | str, frame: pd.DataFrame, *, contract: str | None = None) -> pa.Table:
    """Write a DataFrame, conformed to ``contract`` (a name in ``TABLES``) when given."""
    if contract is not None and contract in TABLES:
        table = conform(contract, frame)
    else:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    write_table(path, table)
    return table


def read_frame(path: UPath | Path | str) -> pd.DataFrame:
    target = UPath(path)
    with target.open("rb") as handle:
        return pq.read_table(handle).to_pandas()


def write_json(path: UPath | Path | str, document: Any) -> None:
    payload = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    write_bytes_atomic(path, payload.encode("utf-8") + b"\n")


def read_json(path: UPath | Path | str) -> Any:
    return json.loads(UPath(path).read_text(encoding="utf-8"))
