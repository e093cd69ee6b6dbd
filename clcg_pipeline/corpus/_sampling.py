"""Seeded, stratified article sample and its stability subsample."""

from __future__ import annotations

import numpy as np
import pandas as pd

from clcg_pipeline.config import Repetitions, Sampling
from clcg_pipeline.corpus._errors import CorpusError

SAMPLE_COLUMNS = ["doc_id", "stratum", "in_stability", "n_reps"]


def _allocate(sizes: pd.Series, total: int) -> pd.Series:
    """Proportional allocation by largest remainder (ties: larger stratum, then stratum name)."""
    exact = sizes / sizes.sum() * total
    base = np.floor(exact).astype(int).clip(upper=sizes)
    left = total - int(base.sum())
    remainder = (exact - base).where(base < sizes, -1.0)
    order = sorted(sizes.index, key=lambda s: (-remainder[s], -sizes[s], s))
    for stratum in order[:left]:
        base[stratum] += 1
    return base


def _draw(frame: pd.DataFrame, total: int, rng: np.random.Generator) -> list[str]:
    """Stratified draw of ``total`` doc ids from ``frame`` (doc_id, stratum), sorted input."""
    sizes = frame.groupby("stratum").size()
    quota = _allocate(sizes, total)
    chosen: list[str] = []
    for stratum in sorted(sizes.index):
        ids = sorted(frame.loc[frame["stratum"] == stratum, "doc_id"])
        picks = rng.choice(len(ids), size=int(quota[stratum]), replace=False)
        chosen.extend(ids[i] for i in sorted(picks))
    return chosen


def sample_articles(
    articles: pd.DataFrame,
    sampling: Sampling,
    *,
    reference: str,
    repetitions: Repetitions | None = None,
) -> pd.DataFrame:
    """Draw the study's article sample (from articles with a reference version) and mark the stability part.

    Strata are ``sampling.strata`` columns of the reference rows (their values joined by
    ``"|"``; one stratum "all" when none). Allocation is proportional (largest remainder).
    The draw depends only on the seed and the set of doc ids, never on row order. Stability
    articles get ``repetitions.stability`` runs, the others ``repetitions.default``.
    """
    repetitions = repetitions or Repetitions()
    ref = articles[articles["language"] == reference].drop_duplicates("doc_id")
    missing = [s for s in sampling.strata if s not in ref.columns]
    if missing:
        raise CorpusError(f"study.yaml sampling.strata: column(s) {missing} are not in the articles table")
    ref = ref.sort_values("doc_id", kind="stable").reset_index(drop=True)
    if sampling.strata:
        stratum = ref[sampling.strata].astype(str).agg("|".join, axis=1)
    else:
        stratum = pd.Series("all", index=ref.index)
    frame = pd.DataFrame({"doc_id": ref["doc_id"].astype(str), "stratum": stratum})
    if frame.empty:
        return pd.DataFrame(
            {c: pd.Series(dtype=t) for c, t in zip(SAMPLE_COLUMNS, (str, str, bool, "int64"), strict=True)}
        )
    rng = np.random.default_rng(sampling.seed)
    size = len(frame) if sampling.size is None else sampling.size
    if size > len(frame):
        raise CorpusError(
            f"study.yaml sampling.size: {size} articles requested, the source has {len(frame)} with a "
            f"{reference!r} version"
        )
    sample = frame[frame["doc_id"].isin(set(_draw(frame, size, rng)))]
    stability = (
        set(_draw(sample, min(sampling.stability_size, len(sample)), rng))
        if sampling.stability_size
        else set()
    )
    out = sample.assign(in_stability=sample["doc_id"].isin(stability))
    out["n_reps"] = np.where(out["in_stability"], repetitions.stability, repetitions.default).astype("int64")
    return out[SAMPLE_COLUMNS].reset_index(drop=True)
