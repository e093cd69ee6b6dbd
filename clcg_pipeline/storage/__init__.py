"""Parquet storage (IO manager, atomic writes) and the DuckDB catalog."""

from typing import TYPE_CHECKING

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
from clcg_pipeline.storage._documents import (
    AlphaRow,
    Band,
    Ceiling,
    ClassAdequacy,
    CrosslingualLoss,
    Definition,
    DeltaContribution,
    DeltaTotal,
    DrilldownItem,
    ErrorTaxonomyResults,
    ExcludedJudgements,
    H1Results,
    HumanJudgeAgreement,
    HumanValidationResults,
    JudgeAgreement,
    LabelFrequency,
    LabelTransition,
    LanguageEntry,
    NewModel,
    OrderBias,
    Preference,
    PreferenceBootstrap,
    PreferenceModel,
    QcStep,
    SelfPreference,
    SpearmanRow,
    StudyResultsDocument,
    StudySettings,
    TaxonomyJudge,
    document_keys,
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
from clcg_pipeline.storage._granularity_documents import (
    AlignedParagraph,
    ClozeErrorShare,
    CurvePoint,
    DocumentBucket,
    GranularityGap,
    GranularityResults,
    GranularityScore,
    HeatmapCell,
    HumanJudgeCorrelation,
    MiddleVsEdges,
    NoContextDrop,
    ParagraphJudgeAgreement,
    PromptTokens,
    UnpairedRows,
)
from clcg_pipeline.storage._json import finite, jsonable
from clcg_pipeline.storage._paid import CALL_TABLE_STEPS, SPEND_VIEW, Spend, call_spend, spend
from clcg_pipeline.storage._records import RECORDS, read_records, write_record
from clcg_pipeline.storage._shared_shapes import (
    Estimate,
    Interval,
)
from clcg_pipeline.storage._snapshot import complete_run_holds, complete_run_request, write_complete_run
from clcg_pipeline.storage._tables import PREDICTION_STATUSES, TABLES, ContractError, conform, empty_frame

if TYPE_CHECKING:  # for the type checker only; at run time ``__getattr__`` imports them on demand
    from clcg_pipeline.storage._io_manager import ParquetIOManager, partition_dims


def __getattr__(name: str) -> object:
    # The IO manager needs Dagster (~0.7 s to import); load it only when asked for, so that
    # light users of storage (``clcg estimate``, ``clcg query``) start fast.
    if name in ("ParquetIOManager", "partition_dims"):
        from clcg_pipeline.storage import _io_manager

        return getattr(_io_manager, name)
    raise AttributeError(f"module 'clcg_pipeline.storage' has no attribute {name!r}")


__all__ = [
    "CALL_TABLE_STEPS",
    "CATALOG_FILE",
    "PREDICTION_STATUSES",
    "RECORDS",
    "SPEND_VIEW",
    "TABLES",
    "AlignedParagraph",
    "AlphaRow",
    "Band",
    "CatalogError",
    "Ceiling",
    "ClassAdequacy",
    "ClozeErrorShare",
    "ContractError",
    "CrosslingualLoss",
    "CurvePoint",
    "Definition",
    "DeltaContribution",
    "DeltaTotal",
    "DocumentBucket",
    "DrilldownItem",
    "ErrorTaxonomyResults",
    "Estimate",
    "ExcludedJudgements",
    "GranularityGap",
    "GranularityResults",
    "GranularityScore",
    "H1Results",
    "HeatmapCell",
    "HumanJudgeAgreement",
    "HumanJudgeCorrelation",
    "HumanValidationResults",
    "Interval",
    "JudgeAgreement",
    "LabelFrequency",
    "LabelTransition",
    "LanguageEntry",
    "MiddleVsEdges",
    "NewModel",
    "NoContextDrop",
    "OrderBias",
    "ParagraphJudgeAgreement",
    "ParquetIOManager",
    "Preference",
    "PreferenceBootstrap",
    "PreferenceModel",
    "PromptTokens",
    "QcStep",
    "SelfPreference",
    "SpearmanRow",
    "Spend",
    "StudyResultsDocument",
    "StudySettings",
    "TaxonomyJudge",
    "UnpairedRows",
    "build_catalog",
    "call_spend",
    "complete_run_holds",
    "complete_run_request",
    "conform",
    "connect_duckdb",
    "default_catalog_path",
    "document_keys",
    "duckdb_location",
    "empty_frame",
    "finite",
    "is_local",
    "jsonable",
    "named_queries",
    "partition_dims",
    "partition_dir",
    "query",
    "read_all_partitions",
    "read_frame",
    "read_json",
    "read_records",
    "run_named_query",
    "spend",
    "stored_tables",
    "table_glob",
    "write_bytes_atomic",
    "write_complete_run",
    "write_frame",
    "write_json",
    "write_record",
    "write_table",
]
