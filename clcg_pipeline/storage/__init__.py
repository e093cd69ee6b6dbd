"""Parquet storage (IO manager, atomic writes) and the DuckDB catalog."""

from clcg_pipeline.storage._tables import PREDICTION_STATUSES, TABLES, ContractError, conform, empty_frame

__all__ = ["PREDICTION_STATUSES", "TABLES", "ContractError", "conform", "empty_frame"]
