"""G3 Dagster wrapper: the granularity analysis over every stored task_scores partition (issue 11)."""

from collections.abc import Mapping
from typing import Any

import dagster as dg
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus.assets import checked_outputs
from clcg_pipeline.granularity._analysis import too_few_documents
from clcg_pipeline.granularity._analysis_inputs import GRANULARITY_TABLES, granularity_from_tables
from clcg_pipeline.granularity._asset_parts import GROUP
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import read_all_partitions, validate_document


def granularity_results_check(doc: Mapping[str, Any]) -> dg.AssetCheckResult:
    """WARN when the analysis is skipped or empty, or no interval could be given (too few documents)."""
    status = doc["status"]
    settings = doc.get("settings", {})
    # The decision and its words are the suite's rule, as on every estimate of the document.
    few = too_few_documents(settings.get("documents", 0), settings.get("min_documents", 0))
    few = few if status == "ok" else None
    if status != "ok":
        description = f"{status}: {doc['reason']}"
    else:
        description = f"{settings.get('rows', 0)} scored rows over {settings.get('documents', 0)} documents"
        if settings.get("rows_no_reference"):
            description += (
                f"; {settings['rows_no_reference']} row(s) without a reference left out of the means"
            )
        if settings.get("paragraphs_left_out"):
            description += (
                f"; {settings['paragraphs_left_out']} paragraph(s) missing in some language left out of "
                "every language version"
            )
        if few is not None:
            description += f"; {few}: every interval is withheld (estimates are descriptive)"
    return dg.AssetCheckResult(
        asset_key="granularity_results",
        check_name="granularity_analysed",
        passed=status == "ok" and few is None,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "status": status,
            "caveats": dg.MetadataValue.md("\n".join(f"- {c}" for c in doc.get("caveats", []))),
        },
    )


#: Results keys of the extra dimensions that carry a ``note`` (docs/GRANULARITY.md).
DIMENSION_KEYS = ("length", "sentence_position", "roles")


def exclusion_warnings(doc: Mapping[str, Any]) -> list[str]:
    """One line per document and language that lost paragraphs to the alignment, and one per
    task x language x model whose rows had no reference (left out of the means, not zeros)."""
    lost: dict[tuple[str, str], list[str]] = {}
    for entry in doc.get("alignment", []):
        for language in entry["missing_in"]:
            lost.setdefault((entry["doc_id"], language), []).append(entry["pid"])
    out = [
        f"document {d}: paragraph(s) {', '.join(pids)} missing in {lang!r}, left out of every language "
        "version (English included)"
        for (d, lang), pids in lost.items()
    ]
    # The extra dimensions' notes: a skipped dimension or a bucket below the identifiability rule.
    out += [
        f"{key.replace('_', ' ')}: {doc[key]['note']}"
        for key in DIMENSION_KEYS
        if doc.get("status") == "ok" and isinstance(doc.get(key), dict) and doc[key].get("note")
    ]
    out += [
        f"{r['n_no_reference']} {r['task']} row(s) in {r['language']} ({r['model']}, context {r['context']}) "
        "have no reference: left out of the means, not scored 0"
        for r in doc.get("no_reference", [])
    ]
    return out


def build_granularity_analysis_defs(config: ProjectConfig) -> dg.Definitions:
    """G3: scores, gaps, position curve, no-context drop and judge agreement of the task family."""
    return dg.Definitions(assets=[_granularity_analysis_asset()])


def _granularity_analysis_asset() -> dg.AssetsDefinition:
    @dg.multi_asset(
        group_name=GROUP,
        ins={"long_documents": dg.AssetIn()},
        # Read from storage: every stored partition (language x model) at once.
        deps=[
            dg.AssetDep("task_scores"),
            dg.AssetDep("task_judgements"),
            dg.AssetDep("task_calls"),
            dg.AssetDep("task_judge_calls"),
            # issue 11: imported human paragraph-filling ratings (and the sample they cite), for
            # human_judge_correlation; both are upstream-free of this asset (no cycle).
            dg.AssetDep("human_annotations"),
            dg.AssetDep("annotation_sample"),
        ],
        outs={
            "granularity_estimates": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every granularity estimand: score, paired gap, position contrasts, "
                "no-context drop.",
            ),
            "granularity_results": dg.AssetOut(
                kinds={"json"},
                owners=["team:clcg"],
                description="granularity_results.json (study_results key granularity).",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "granularity_analysed",
                asset="granularity_results",
                description="Warns when the family is disabled, nothing is scored, or intervals are "
                "withheld.",
            )
        ],
    )
    def granularity_analysis(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext, study: StudyResource, long_documents: pd.DataFrame
    ):
        """Accuracy/score by task x granularity x region x position x language x model, the paired
        cross-lingual gap, the position curve and the judges' agreement (docs/GRANULARITY.md)."""
        # The same function re-derives the section from a data folder (results.derive_study_results).
        result = granularity_from_tables(
            study.load(),
            long_documents,
            {table: read_all_partitions(study.data_dir, table) for table in GRANULARITY_TABLES},
        )
        doc = result.results
        # Refused before it is written when it does not fit its shape (storage), naming the field.
        validate_document(doc, "granularity", source=study.path("granularity_results.json"))
        if doc["status"] != "ok":
            context.log.warning(f"granularity analysis {doc['status']}: {doc['reason']}")
        for warning in exclusion_warnings(doc):
            context.log.warning(f"granularity analysis: {warning}")
        context.log.info(f"granularity analysis: {doc['status']}; {len(result.estimates)} estimands")
        tables = checked_outputs(None, {"granularity_estimates": result.estimates})
        yield dg.Output(tables["granularity_estimates"], output_name="granularity_estimates")
        yield dg.Output(
            doc,
            output_name="granularity_results",
            metadata={"status": doc["status"], "reason": doc["reason"] or ""},
        )
        yield granularity_results_check(doc)

    return granularity_analysis
