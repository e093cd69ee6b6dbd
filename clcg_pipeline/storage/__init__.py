"""Parquet storage (IO manager, atomic writes) and the DuckDB catalog."""

from clcg_pipeline.storage._catalog import (
    CATALOG_FILE,
    CatalogError,
    build_catalog,
    default_catalog_path,
    named_queries,
    query,
    run_named_query,
    stored_tables,
)
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
from clcg_pipeline.storage._io_manager import ParquetIOManager, partition_dims
from clcg_pipeline.storage._tables import PREDICTION_STATUSES, TABLES, ContractError, conform, empty_frame

__all__ = [
    "CATALOG_FILE",
    "PREDICTION_STATUSES",
    "TABLES",
    "CatalogError",
    "ContractError",
    "ParquetIOManager",
    "build_catalog",
    "conform",
    "default_catalog_path",
    "empty_frame",
    "named_queries",
    "partition_dims",
    "partition_dir",
    "query",
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
