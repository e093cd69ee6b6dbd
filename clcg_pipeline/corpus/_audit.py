"""Alignment and completeness audit, per article x language version."""

from __future__ import annotations

import numpy as np
import pandas as pd

from clcg_pipeline.corpus._io import is_valid_utf8

AUDIT_COLUMNS = [
    "doc_id",
    "language",
    "n_paragraphs",
    "coverage",
    "n_empty",
    "n_duplicated",
    "n_invalid_utf8",
    "usable_coverage",
    "complete",
]


def audit_corpus(
    articles: pd.DataFrame, paragraphs: pd.DataFrame, *, reference: str, threshold: float
) -> pd.DataFrame:
    """One row per article version (from ``articles``), against the reference (English) version.

    - ``coverage``: share of the reference version's pids present in this version;
    - ``n_empty``: blank paragraphs; ``n_duplicated``: paragraphs repeating an earlier pid or
      an earlier non-blank text of the same version; ``n_invalid_utf8``: paragraphs whose
      source bytes were not valid UTF-8 (the ``utf8_valid`` column the loaders add, else a
      check of the text);
    - ``usable_coverage``: share of reference pids present with non-blank, valid, first-seen text;
    - ``complete``: ``usable_coverage >= threshold``. A version without a reference version
      cannot be compared and is not complete.
    """
    keys = articles[["doc_id", "language"]].drop_duplicates().reset_index(drop=True)
    if keys.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in AUDIT_COLUMNS})
    paras = paragraphs[
        paragraphs.set_index(["doc_id", "language"]).index.isin(keys.set_index(["doc_id", "language"]).index)
    ]
    paras = paras.sort_values(["doc_id", "language", "ordinal"], kind="stable").copy()
    text = paras["text"].fillna("").astype(str)
    paras["_empty"] = text.str.strip() == ""
    if "utf8_valid" in paras.columns:
        paras["_invalid"] = ~paras["utf8_valid"].fillna(True).astype(bool)
    else:
        paras["_invalid"] = ~text.map(is_valid_utf8)
    group = ["doc_id", "language"]
    dup_pid = paras.duplicated(subset=[*group, "pid"], keep="first")
    dup_text = (
        paras.assign(_t=text.str.strip()).duplicated(subset=[*group, "_t"], keep="first") & ~paras["_empty"]
    )
    paras["_dup"] = dup_pid | dup_text
    paras["_usable"] = ~(paras["_empty"] | paras["_invalid"] | paras["_dup"])

    ref = paras[paras["language"] == reference].drop_duplicates(["doc_id", "pid"])[["doc_id", "pid"]]
    n_ref = ref.groupby("doc_id").size().rename("_n_ref")
    present = paras.drop_duplicates([*group, "pid"]).merge(ref, on=["doc_id", "pid"])
    stats = paras.groupby(group).agg(
        n_paragraphs=("pid", "size"),
        n_empty=("_empty", "sum"),
        n_duplicated=("_dup", "sum"),
        n_invalid_utf8=("_invalid", "sum"),
    )
    covered = present.groupby(group).agg(_present=("pid", "size"), _usable=("_usable", "sum"))
    out = keys.merge(stats.reset_index(), on=group, how="left").merge(
        covered.reset_index(), on=group, how="left"
    )
    out = out.merge(n_ref.reset_index(), on="doc_id", how="left")
    for column in ("n_paragraphs", "n_empty", "n_duplicated", "n_invalid_utf8", "_present", "_usable"):
        out[column] = out[column].fillna(0).astype("int64")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["coverage"] = np.where(out["_n_ref"] > 0, out["_present"] / out["_n_ref"], np.nan)
        out["usable_coverage"] = np.where(out["_n_ref"] > 0, out["_usable"] / out["_n_ref"], np.nan)
    out["complete"] = (out["usable_coverage"] >= threshold).fillna(False).astype(bool)
    return out[AUDIT_COLUMNS].sort_values(group, kind="stable").reset_index(drop=True)


def incomplete_versions(audit: pd.DataFrame) -> pd.DataFrame:
    """The versions excluded from confirmatory estimates (``complete`` false), for the report."""
    return audit.loc[~audit["complete"], AUDIT_COLUMNS].reset_index(drop=True)
