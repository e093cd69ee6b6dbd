"""What of the data folder enters the estimates: replication scores, complete versions only.

Also the reasons written into ``study_results.json`` for the panel languages without data.
"""

from typing import Any

import duckdb
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import read_all_partitions


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
    """Leave out the article x language versions the audit marks incomplete.

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


def current_scores(data_dir: str, cfg: ProjectConfig) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The scores of the current panel's complete versions, the corpus audit, the versions left out."""
    scores = read_all_partitions(data_dir, "scores")
    if len(scores):
        # Partitions of models or languages removed from the config stay on disk; leave them out.
        scores = scores[
            scores["model"].isin([m.id for m in cfg.models.evaluated])
            & scores["language"].isin(cfg.languages.isos)
        ].reset_index(drop=True)
    audit = read_all_partitions(data_dir, "corpus_audit")
    scores, excluded = drop_incomplete_versions(scores, audit)
    return scores, audit, excluded
