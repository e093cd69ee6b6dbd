"""The frozen diagnostic sample of the error taxonomy: English/target response pairs.

A pair is the English response and one target-language response of the same evaluated model
to the same item, repetition and context scope. The sample oversamples *candidate losses*,
a score heuristic (not a label, and never used as one):

    candidate_loss  <=>  en_score >= min_en_score  and  en_score - target_score >= margin

on the band metric (Token-F1 by default). ``pairs x candidate_loss_share`` candidate losses
are sought, the rest drawn from the other pairs; when there are too few losses, other pairs
fill the sample, so the *realised* share (reported) can differ from the target. No article
gives more than ``max_per_article`` pairs. Within each stratum the draw cycles over the
(language, model) cells in a seeded random order, so no single language or model crowds
out the others. Deterministic for a seed, whatever the input row order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

KEY = ("model", "doc_id", "item_id", "rep", "context_scope")
COLUMNS = (
    "pair_id",
    "model",
    "doc_id",
    "item_id",
    "rep",
    "context_scope",
    "language",
    "level",
    "item_source",
    "en_score",
    "target_score",
    "score_delta",
    "candidate_loss",
    "metric",
    "en_answer",
    "target_answer",
    "en_status",
    "target_status",
)


@dataclass(frozen=True)
class DiagnosticSample:
    """The sample and its accounting (what was sought, what was available, what was realised)."""

    pairs: pd.DataFrame
    summary: dict[str, Any]


def pair_id(model: str, doc_id: str, item_id: str, rep: int, context_scope: str, language: str) -> str:
    """A stable id for a pair (the same pair keeps its id across runs and samples)."""
    blob = "\x1f".join(map(str, (model, doc_id, item_id, int(rep), context_scope, language)))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _require(frame: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"diagnostic_sample: {name} is missing column(s) {missing}")


def candidate_pairs(
    predictions: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    reference: str,
    targets: Sequence[str],
    metric: str = "token_f1",
    context_scopes: Sequence[str] = ("full_body",),
    models: Sequence[str] | None = None,
    min_en_score: float = 0.5,
    margin: float = 0.25,
) -> pd.DataFrame:
    """Every English/target pair with both scores and both responses (a missing reply has none).

    Nothing stored yet (an empty frame without columns) gives no candidates.
    """
    if predictions.empty or scores.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    _require(scores, [*KEY, "language", "level", "item_source", metric], "scores")
    _require(predictions, [*KEY, "language", "answer", "status"], "predictions")
    if reference in targets:
        raise ValueError(f"diagnostic_sample: the reference language {reference!r} cannot be a target")
    key = [*KEY, "language"]
    pred = predictions[[*key, "answer", "status"]].drop_duplicates(key)
    rows = (
        scores[[*key, "level", "item_source", metric]].drop_duplicates(key).merge(pred, on=key, how="inner")
    )
    rows = rows[rows["context_scope"].isin(list(context_scopes)) & rows[metric].notna()]
    # A missing prediction is no response (budget stop, provider error): nothing to judge.
    rows = rows[rows["status"] != "missing"]
    if models is not None:
        rows = rows[rows["model"].isin(list(models))]
    en = rows[rows["language"] == reference]
    tg = rows[rows["language"].isin(list(targets))]
    merged = tg.merge(
        en[[*KEY, metric, "answer", "status"]].rename(
            columns={metric: "en_score", "answer": "en_answer", "status": "en_status"}
        ),
        on=list(KEY),
        how="inner",
    ).rename(columns={metric: "target_score", "answer": "target_answer", "status": "target_status"})
    merged["rep"] = merged["rep"].astype("int64")
    merged["en_score"] = merged["en_score"].astype(float)
    merged["target_score"] = merged["target_score"].astype(float)
    merged["score_delta"] = merged["en_score"] - merged["target_score"]
    # Float noise must not decide the heuristic: compare with a small tolerance.
    merged["candidate_loss"] = (merged["en_score"] >= min_en_score - 1e-9) & (
        merged["score_delta"] >= margin - 1e-9
    )
    merged["metric"] = metric
    merged["pair_id"] = [
        pair_id(*vals)
        for vals in zip(
            merged["model"],
            merged["doc_id"],
            merged["item_id"],
            merged["rep"],
            merged["context_scope"],
            merged["language"],
            strict=True,
        )
    ]
    ordered = merged.sort_values("pair_id", kind="mergesort").reset_index(drop=True)
    return ordered[list(COLUMNS)]


def _draw(
    pool: pd.DataFrame, want: int, per_article: dict[str, int], cap: int, rng: np.random.Generator
) -> list[int]:
    """Indices of ``pool`` (at most ``want``), cycling over (language, model) cells in random order."""
    if want <= 0 or pool.empty:
        return []
    frame = pool[["doc_id", "language", "model"]].copy()
    cells = sorted(set(zip(frame["language"], frame["model"], strict=True)))
    cell_rank = dict(zip(cells, rng.permutation(len(cells)).tolist(), strict=True))
    frame["_cell"] = [cell_rank[c] for c in zip(frame["language"], frame["model"], strict=True)]
    frame["_priority"] = rng.permutation(len(frame))
    # Round r takes the r-th draw of every cell before any cell's (r+1)-th.
    frame["_round"] = frame.groupby("_cell")["_priority"].rank(method="first")
    chosen: list[int] = []
    for idx, doc in frame.sort_values(["_round", "_cell"], kind="mergesort")["doc_id"].items():
        if per_article.get(doc, 0) >= cap:
            continue
        per_article[doc] = per_article.get(doc, 0) + 1
        chosen.append(int(idx))
        if len(chosen) == want:
            break
    return chosen


def diagnostic_sample(
    candidates: pd.DataFrame,
    *,
    pairs: int,
    seed: int,
    max_per_article: int,
    candidate_loss_share: float,
    min_en_score: float = 0.5,
    margin: float = 0.25,
) -> DiagnosticSample:
    """Draw the sample from :func:`candidate_pairs` (pure, deterministic for ``seed``)."""
    if pairs < 1 or max_per_article < 1 or not 0 <= candidate_loss_share <= 1:
        raise ValueError(
            "diagnostic_sample: need pairs >= 1, max_per_article >= 1 and 0 <= candidate_loss_share <= 1"
        )
    rng = np.random.default_rng(seed)
    pool = candidates.sort_values("pair_id", kind="mergesort").reset_index(drop=True)
    losses = pool[pool["candidate_loss"].astype(bool)]
    others = pool[~pool["candidate_loss"].astype(bool)]
    want_losses = round(pairs * candidate_loss_share)
    per_article: dict[str, int] = {}
    chosen = _draw(losses, want_losses, per_article, max_per_article, rng)
    chosen += _draw(others, pairs - len(chosen), per_article, max_per_article, rng)
    if len(chosen) < pairs:
        # Too few non-losses: top up with further candidate losses (the realised share says so).
        rest = losses.drop(index=[i for i in chosen if i in losses.index])
        chosen += _draw(rest, pairs - len(chosen), per_article, max_per_article, rng)
    sample = pool.loc[sorted(chosen)].sort_values("pair_id", kind="mergesort").reset_index(drop=True)
    realised = float(sample["candidate_loss"].mean()) if len(sample) else None
    if pool.empty:
        status, reason = "empty", "no English/target pair has both responses scored"
    elif len(sample) < pairs:
        status, reason = (
            "short",
            (f"{len(sample)} of {pairs} pairs: the candidates (or max_pairs_per_article) allow no more"),
        )
    else:
        status, reason = "ok", None
    summary = {
        "status": status,
        "reason": reason,
        "pairs_requested": pairs,
        "pairs": len(sample),
        "candidates": len(pool),
        "candidate_losses_available": len(losses),
        "candidate_loss_share_target": candidate_loss_share,
        "candidate_loss_share_realised": realised,
        "candidate_loss_rule": (
            f"en_score >= {min_en_score} and en_score - target_score >= {margin} (a heuristic, not a label)"
        ),
        "articles": int(sample["doc_id"].nunique()) if len(sample) else 0,
        "max_pairs_per_article": max_per_article,
        "seed": seed,
        "languages": sorted(sample["language"].unique().tolist()) if len(sample) else [],
    }
    return DiagnosticSample(pairs=sample, summary=summary)
