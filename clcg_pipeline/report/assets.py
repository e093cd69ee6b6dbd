"""Dagster wrapper of the HTML report."""

import dagster as dg
import pandas as pd

from clcg_pipeline.report import render_report, write_report
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import validate_document, write_record

GROUP = "report"
REPORT_FILE = "report.html"


@dg.asset(
    group_name=GROUP,
    kinds={"html"},
    owners=["team:clcg"],
)
def report(
    context: dg.AssetExecutionContext, study: StudyResource, study_results: dict, estimates: pd.DataFrame
) -> dg.MaterializeResult:
    """The HTML report, rendered from study_results.json and the estimates table only."""
    path = study.path(REPORT_FILE)
    # The document fits its shape before any work: a bad one fails here, naming file and field.
    validate_document(study_results, source=study.path("study_results.json"))
    write_report(render_report(study_results, estimates), path)
    # Written here, not by the IO manager: the folder's record of it is made here too.
    version = context.assets_def.code_versions_by_key.get(context.asset_key)
    write_record(
        study.data_dir, "report", None, code_version=version, run_id=context.run_id, path=path, metadata={}
    )
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(path)})


report_defs = dg.Definitions(assets=[report])
