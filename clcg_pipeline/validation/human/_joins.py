"""The human-validation joins: every rating beside its prediction, scores and each judge's label,
and the rows where an annotator and a judge both labelled a response."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.storage import TABLES

KEYS = ["model", "language", "doc_id", "item_id", "rep"]
SCORE_COLUMNS = ["token_f1", "exact_match", "accuracy", "rouge_l", "semsim"]
JOIN_COLUMNS = TABLES["human_validation_joins"].names


def judge_rows(singles: pd.DataFrame, judgements: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each individual rating with a primary error category beside each judge's label of that response.

    The judge label is mapped to the human-facing categories through the taxonomy's collapsed
    mapping (``collapsed_label``); a human answer given as a fine label is collapsed the same way.
    """
    from clcg_pipeline.validation.taxonomy import load_taxonomy

    rated = singles[singles["primary_error_category"].notna()]
    if rated.empty or judgements is None or judgements.empty:
        return pd.DataFrame(columns=["annotation_id", "task_id", "judge", "human", "judge_label"])
    taxonomy = load_taxonomy()
    j = judged_responses(judgements[judgements["status"] == "ok"], reference)
    keyed = rated.assign(
        side=np.where(rated["language"] == reference, "en", "target"), rep=rated["rep"].astype("Int64")
    )
    merged = keyed.merge(
        j[[*KEYS, "side", "judge", "label", "collapsed_label"]], on=[*KEYS, "side"], how="inner"
    ).drop_duplicates(["annotation_id", "judge"])
    merged["human"] = merged["primary_error_category"].map(
        lambda v: taxonomy.collapsed.get(v, v) if isinstance(v, str) else v
    )
    merged["judge_label"] = merged["collapsed_label"]
    return merged


def judged_responses(judgements: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Judge labels keyed by the response they label: an ``en`` side is the reference-language response.

    ``error_judgements.language`` is the pair's target language on both sides; the English
    response of one model x item x rep can sit in several pairs, so its first label (by pair id)
    per judge is kept.
    """
    out = judgements.copy()
    out["language"] = np.where(out["side"] == "en", reference, out["language"])
    out["rep"] = out["rep"].astype("Int64")
    sort = [c for c in ("pair_id", "judge") if c in out.columns]
    return (
        out.sort_values(sort, kind="stable").drop_duplicates([*KEYS, "side", "judge"]).reset_index(drop=True)
    )


def judge_consensus(rows: pd.DataFrame) -> dict[str, Any] | None:
    """Where every judge gives a rating's response the same label: how often the human agrees.

    The study's "when the two automatic judges agreed, the human confirmed their consensus in
    55.3% of cases" (seed 0.5.8); None with fewer than two judges.
    """
    if rows.empty or rows["judge"].nunique() < 2:
        return None
    judges = rows["judge"].nunique()
    per = rows.groupby("annotation_id").agg(
        labels=("judge_label", "nunique"),
        judged=("judge", "nunique"),
        label=("judge_label", "first"),
        human=("human", "first"),
    )
    agreed = per[(per["judged"] == judges) & (per["labels"] == 1)]
    confirmed = int((agreed["human"] == agreed["label"]).sum())
    return {
        "judges": judges,
        "ratings": len(per),
        "judges_agree": len(agreed),
        "human_confirms": confirmed,
        "share": confirmed / len(agreed) if len(agreed) else None,
    }


def with_rep(judgements: pd.DataFrame, diagnostic: pd.DataFrame | None) -> pd.DataFrame:
    """``error_judgements`` with ``rep`` (from the diagnostic sample's pair when the table lacks it)."""
    if judgements is None or judgements.empty or "rep" in judgements.columns:
        return judgements
    if diagnostic is None or diagnostic.empty:
        return judgements.assign(rep=pd.NA)
    return judgements.merge(
        diagnostic[["pair_id", "rep"]].drop_duplicates("pair_id"), on="pair_id", how="left"
    )


def build_joins(
    ratings: pd.DataFrame,
    predictions: pd.DataFrame | None,
    scores: pd.DataFrame | None,
    judgements: pd.DataFrame | None,
    *,
    reference: str,
    context_scope: str,
) -> pd.DataFrame:
    """Every rating (QC verdict included) with its prediction, scores and each judge's label.

    One row per rating x judge (``judge`` null when no judge labelled that response); a pair
    task is joined on its lower-resource side (the sample's ``language``).
    """
    out = ratings.copy()
    out["rep"] = out["rep"].astype("Int64")
    if predictions is not None and len(predictions):
        p = predictions[predictions["context_scope"] == context_scope][[*KEYS, "answer", "status", "call_id"]]
        p = p.rename(columns={"status": "prediction_status"}).assign(rep=lambda f: f["rep"].astype("Int64"))
        out = out.merge(p.drop_duplicates(KEYS), on=KEYS, how="left")
    if scores is not None and len(scores):
        cols = [c for c in SCORE_COLUMNS if c in scores.columns]
        s = scores[scores["context_scope"] == context_scope][[*KEYS, *cols, "status"]]
        s = s.rename(columns={"status": "score_status", **{c: f"score_{c}" for c in cols}})
        s = s.assign(rep=lambda f: f["rep"].astype("Int64"))
        out = out.merge(s.drop_duplicates(KEYS), on=KEYS, how="left")
    if judgements is not None and len(judgements):
        j = judged_responses(judgements, reference)
        j = j[[*KEYS, "side", "judge", "label", "collapsed_label", "semantic_error", "status"]].rename(
            columns={
                "label": "judge_label",
                "collapsed_label": "judge_collapsed_label",
                "semantic_error": "judge_semantic_error",
                "status": "judge_status",
            }
        )
        out["side"] = np.where(out["language"] == reference, "en", "target")
        out = out.merge(j, on=[*KEYS, "side"], how="left")
        out = out.drop(columns=["side"])
    for col in JOIN_COLUMNS:
        if col not in out.columns:
            out[col] = None
    out = out.sort_values(["annotation_id", "judge"], na_position="first", kind="stable")
    return out[JOIN_COLUMNS].reset_index(drop=True)
