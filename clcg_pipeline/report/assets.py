"""Dagster wrapper of the HTML report."""

import dagster as dg
import pandas as pd

from clcg_pipeline.report import render_report, write_report
from clcg_pipeline.resources import StudyResource

GROUP = "report"
REPORT_FILE = "report.html"


@dg.asset(
    group_name=GROUP,
    kinds={"html"},
    owners=["team:clcg"],
)
def report(study: StudyResource, study_results: dict, estimates: pd.DataFrame) -> dg.MaterializeResult:
    """The HTML report, rendered from study_results.json and the estimates table only."""
    path = study.path(REPORT_FILE)
    write_report(render_report(study_results, estimates), path)
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(path)})


report_defs = dg.Definitions(assets=[report])
