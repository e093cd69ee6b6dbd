"""Dagster wrappers of the analysis stage: the estimates table and study_results.json."""

from typing import Any

import dagster as dg
import duckdb
import pandas as pd

from clcg_pipeline.analysis import run_suite
from clcg_pipeline.analysis._drilldown import drilldown
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import read_all_partitions
from clcg_pipeline.validation import CLASS_CLCG_CAVEAT, class_clcg_spearman

GROUP = "analysis"


def read_replication_scores(location: str) -> pd.DataFrame:
    """A replication run's scores: one Parquet file, or every partition under a data folder."""
    if location.endswith(".parquet"):
        con = duckdb.connect()
        try:
            return con.read_parquet(location).df()
        finally:
            con.close()
    scores = read_all_partitions(location, "scores")
    if scores.empty:
        raise FileNotFoundError(f"replication_scores {location!r}: no scores partitions found there")
    return scores


def drop_incomplete_versions(scores: pd.DataFrame, audit: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leave out the article x language versions the audit marks incomplete (STUDY.md section 2).

    Returns the kept scores and the excluded versions (doc_id, language, coverage, plus the
    audit's counts and a ``reason`` saying why), which are listed in study_results.json rather
    than silently used.
    """
    columns = ["doc_id", "language", "coverage"]
    details = [c for c in ("usable_coverage", "n_invalid_utf8", "n_empty", "n_duplicated") if c in audit]
    if audit.empty or scores.empty:
        return scores, pd.DataFrame(columns=[*columns, *details, "reason"])
    incomplete = audit.loc[~audit["complete"].astype(bool), columns + details].drop_duplicates(
        ["doc_id", "language"]
    )
    incomplete = incomplete.assign(reason=[_exclusion_reason(row) for row in incomplete.to_dict("records")])
    if incomplete.empty:
        return scores, incomplete.reset_index(drop=True)
    keys = pd.MultiIndex.from_frame(scores[["doc_id", "language"]])
    drop = keys.isin(pd.MultiIndex.from_frame(incomplete[["doc_id", "language"]]))
    return scores[~drop].reset_index(drop=True), incomplete.sort_values(columns[:2]).reset_index(drop=True)


def _exclusion_reason(row: dict[str, Any]) -> str:
    """Why the audit judged a version incomplete, in words (a coverage of 1.0 alone hides it)."""
    usable = row.get("usable_coverage", row["coverage"])
    parts = [f"usable coverage {float(usable):.2f} below study.completeness_threshold"]
    if float(row["coverage"]) < 1.0:
        parts.append(f"only {float(row['coverage']):.0%} of the English paragraphs present")
    for column, what in (
        ("n_invalid_utf8", "with invalid UTF-8"),
        ("n_empty", "empty"),
        ("n_duplicated", "duplicated"),
    ):
        count = row.get(column)
        if count is not None and count == count and int(count) > 0:
            parts.append(f"{int(count)} paragraph(s) {what}")
    return "; ".join(parts)


def explain_missing_languages(
    results: dict[str, Any], audit: pd.DataFrame, excluded: pd.DataFrame, items: pd.DataFrame | None = None
) -> None:
    """Say why each panel language without scored rows has none: no corpus version, every version
    excluded as incomplete, an empty item bank, or nothing scored yet (in both lists of
    ``study_results.json``)."""
    has_version = set(audit["language"].astype(str)) if len(audit) else set()
    all_excluded = set()
    if len(audit):
        complete = audit.groupby(audit["language"].astype(str))["complete"].apply(
            lambda s: s.astype(bool).any()
        )
        all_excluded = set(complete.index[~complete.to_numpy()])
    entries = results.get("languages_without_data", [])
    for entry in entries:
        iso = entry["iso"]
        if iso not in has_version:
            entry["reason"] = "no corpus version (the source has no text in this language)"
        elif iso in all_excluded:
            entry["reason"] = "every version below the completeness threshold (see excluded_versions)"
        elif items is not None and items.empty:
            entry["reason"] = (
                "no items: the item bank is empty (the source has no frozen bank and "
                "study.item_generator is null, or generation produced none)"
            )
        else:
            entry["reason"] = "no scored rows (nothing scored yet for this language)"
    results.setdefault("settings", {})["languages_without_data"] = entries


#: study_results.json key -> the asset whose document is merged under it
STUDY_SECTIONS = {
    "error_taxonomy": "error_taxonomy_results",
    "human_validation": "human_validation_results",
    "granularity": "granularity_results",
}


def merge_study_sections(
    results: dict[str, Any], estimates: pd.DataFrame, sections: dict[str, dict[str, Any]]
) -> None:
    """Put each study's document under its key; a study that is not ``ok`` is listed in warnings.

    The human validation's class-level adequacy is set beside this run's class CLCG
    (``class_raw_primary``), which only exists once the estimates are computed.
    """
    for key, document in sections.items():
        results[key] = document
        status = document.get("status")
        if status != "ok":
            results.setdefault("warnings", []).append(
                f"{key}: {status or 'no status'}: {document.get('reason') or 'no reason given'}"
            )
    classes = estimates[estimates["estimand"] == "class_raw_primary"] if len(estimates) else estimates
    clcg = {
        str(group).removeprefix("class="): None if pd.isna(value) else float(value)
        for group, value in zip(classes.get("group", []), classes.get("estimate", []), strict=True)
    }
    human = sections.get("human_validation", {})
    classes = human.get("class_adequacy") or []
    if not classes:
        return
    for row in classes:
        row["clcg"] = clcg.get(str(row.get("joshi_class")))
    # The class-level rank correlation needs those CLCGs: computed here, where they exist.
    row, caveat = class_clcg_spearman(classes)
    human["spearman"] = [r for r in human.get("spearman", []) if r.get("metric") != "clcg_class"]
    if row is not None:
        human["spearman"].append(row)
    human["caveats"] = [c for c in human.get("caveats", []) if not c.startswith(CLASS_CLCG_CAVEAT)]
    if caveat is not None:
        human["caveats"].append(caveat)


def build_analysis_defs(config: ProjectConfig) -> dg.Definitions:
    reference = config.languages.reference

    @dg.multi_asset(
        group_name=GROUP,
        deps=[dg.AssetDep("scores"), dg.AssetDep("corpus_audit")],
        ins={
            "articles": dg.AssetIn(partition_mapping=dg.SpecificPartitionsPartitionMapping([reference])),
            "tokenizer_fertility_by_language": dg.AssetIn(),
            # The validation studies and the granularity family, merged in so that
            # study_results.json stays the one document the report and the CLI read.
            **{name: dg.AssetIn() for name in STUDY_SECTIONS.values()},
        },
        outs={
            "estimates": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every estimand: estimate, interval, p, adjusted p, n.",
            ),
            "study_results": dg.AssetOut(
                kinds={"json"},
                owners=["team:clcg"],
                description="study_results.json: the single source of truth for reports.",
            ),
        },
    )
    def analysis(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        study: StudyResource,
        articles: pd.DataFrame,
        tokenizer_fertility_by_language: pd.DataFrame,
        error_taxonomy_results: dict[str, Any],
        human_validation_results: dict[str, Any],
        granularity_results: dict[str, Any],
    ):
        """Run the estimators of STUDY.md section 6 over every scored partition of the current panel."""
        cfg = study.load()
        scores = read_all_partitions(study.data_dir, "scores")
        if len(scores):
            # Partitions of models or languages removed from the config stay on disk; leave them out.
            scores = scores[
                scores["model"].isin([m.id for m in cfg.models.evaluated])
                & scores["language"].isin(cfg.languages.isos)
            ].reset_index(drop=True)
        audit = read_all_partitions(study.data_dir, "corpus_audit")
        scores, excluded = drop_incomplete_versions(scores, audit)
        context.log.info(
            f"estimating over {len(scores)} scored rows; {len(excluded)} incomplete versions left out"
        )
        result = run_suite(
            scores,
            cfg,
            articles=articles[["doc_id", "published"]],
            fertility=tokenizer_fertility_by_language,
            replication_scores=(
                read_replication_scores(cfg.study.replication_scores)
                if cfg.study.replication_scores
                else None
            ),
        )
        # The report and the CLI label languages from here, so the results document stands alone.
        result.results.setdefault(
            "languages",
            [
                {"iso": lang.iso, "name": lang.name, "joshi_class": lang.joshi_class, "role": lang.role}
                for lang in cfg.languages.languages
            ],
        )
        result.results["excluded_versions"] = excluded.to_dict(orient="records")
        items = read_all_partitions(study.data_dir, "items")
        explain_missing_languages(result.results, audit, excluded, items)
        # Item-level evidence for the report: where English and each language disagree most.
        result.results["drilldown"] = drilldown(
            scores,
            read_all_partitions(study.data_dir, "predictions"),
            items,
            reference=reference,
            metric=cfg.study.band.metric,
            levels=cfg.study.band.levels,
            item_source=cfg.study.band.item_source,
            context_scope=cfg.study.band.context_scope,
            languages=cfg.languages.isos,
        )
        merge_study_sections(
            result.results,
            result.estimates,
            {
                "error_taxonomy": error_taxonomy_results,
                "human_validation": human_validation_results,
                "granularity": granularity_results,
            },
        )
        if len(excluded):
            result.results.setdefault("warnings", []).append(
                f"{len(excluded)} article x language version(s) below the completeness threshold "
                "were excluded from every estimate (see excluded_versions)"
            )
        h1 = result.results.get("h1", {})
        context.add_output_metadata(
            {
                "h1_micro": dg.MetadataValue.json(h1.get("h1_micro")),
                "rows": len(scores),
            },
            output_name="study_results",
        )
        return result.estimates, result.results

    return dg.Definitions(assets=[analysis])
