"""Parquet storage (IO manager, atomic writes) and the DuckDB catalog."""

from clcg_pipeline.storage._catalog import (
    CATALOG_FILE,
    CatalogError,
    build_catalog,
    default_catalog_path,
    named_queries,
    query,
    read_all_partitions,
    run_named_query,
    stored_tables,
)
from clcg_pipeline.storage._duck import connect_duckdb, duckdb_location, is_local
from clcg_pipeline.storage._files import (
    partition_dir,
    read_frame,
    read_json,
    table_glob,
    write_bytes_atomic,
    write_frame,
    write_json,
    write_table,
)
from clcg_pipeline.storage._tables import PREDICTION_STATUSES, TABLES, ContractError, conform, empty_frame


def __getattr__(name: str) -> object:
    # The IO manager needs Dagster (~0.7 s to import); load it only when asked for, so that
    # light users of storage (``clcg estimate``, ``clcg query``) start fast.
    if name in ("ParquetIOManager", "partition_dims"):
        from clcg_pipeline.storage import _io_manager

        return getattr(_io_manager, name)
    raise AttributeError(f"module 'clcg_pipeline.storage' has no attribute {name!r}")


__all__ = [
    "CATALOG_FILE",
    "PREDICTION_STATUSES",
    "TABLES",
    "CatalogError",
    "ContractError",
    "ParquetIOManager",
    "build_catalog",
    "conform",
    "connect_duckdb",
    "default_catalog_path",
    "duckdb_location",
    "empty_frame",
    "is_local",
    "named_queries",
    "partition_dims",
    "partition_dir",
    "query",
    "read_all_partitions",
    "read_frame",
    "read_json",
    "run_named_query",
    "stored_tables",
    "table_glob",
    "write_bytes_atomic",
    "write_frame",
    "write_json",
    "write_table",
]
