"""Dagster wrapper of the DuckDB catalog (views over every table's Parquet files)."""

import dagster as dg

from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage._catalog import build_catalog, default_catalog_path
from clcg_pipeline.storage._records import write_record

GROUP = "storage"


@dg.asset(
    group_name=GROUP,
    kinds={"duckdb"},
    owners=["team:clcg"],
    deps=[
        *("languages", "articles", "paragraphs", "items", "predictions", "calls", "scores", "estimates"),
        # study_results reads every study's results, so the catalog is built after every table
        # upstream of them (validation sample, judgements, annotations, joins, granularity tasks)
        "study_results",
    ],
)
def duckdb_catalog(context: dg.AssetExecutionContext, study: StudyResource) -> dg.MaterializeResult:
    """clcg.duckdb: a read-only view per table over its Parquet glob, plus the views in sql/views."""
    path = default_catalog_path(study.data_dir)
    counts = build_catalog(study.data_dir, path)
    context.log.info(f"catalog {path}: {len(counts)} views")
    # Written here, not by the IO manager: the folder's record of it is made here too.
    version = context.assets_def.code_versions_by_key.get(context.asset_key)
    write_record(
        study.data_dir,
        "duckdb_catalog",
        None,
        code_version=version,
        run_id=context.run_id,
        path=str(path),
        metadata={},
    )
    return dg.MaterializeResult(
        metadata={"path": dg.MetadataValue.path(str(path)), "views": dg.MetadataValue.json(counts)}
    )


storage_defs = dg.Definitions(assets=[duckdb_catalog])
