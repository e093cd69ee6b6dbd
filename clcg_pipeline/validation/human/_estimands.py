"""The human-validation estimands: alpha per rubric field, Spearman of Token-F1 with the human
ratings (item-cluster bootstrap), adequacy per Joshi class and the ceiling rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata, spearmanr

from clcg_pipeline.analysis import percentile_ci
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import finite
from clcg_pipeline.validation.human._agreement import krippendorff_alpha, withhold
from clcg_pipeline.validation.human._joins import KEYS
from clcg_pipeline.validation.human._qc import FIELDS, RUBRIC

SAMPLE_COLUMNS = [
    *KEYS,
    "category",
    "quality_bin",
    "token_f1",
    "a_side",
    "language_higher",
    "language_lower",
    "ask_error_category",
]


def spearman_bootstrap(
    x: np.ndarray, y: np.ndarray, *, replicates: int, seed: int, confidence: float, min_clusters: int
) -> dict[str, Any]:
    """Spearman rho and p (scipy) with a percentile interval resampling the paired units.

    Each unit is one rated response (its Token-F1 and its mean human rating), so resampling
    units is the item-cluster bootstrap: an item's ratings move together.
    """
    n = len(x)
    out: dict[str, Any] = {"rho": None, "ci_low": None, "ci_high": None, "p": None, "n": n}
    if n < 3 or np.unique(x).size < 2 or np.unique(y).size < 2:
        out["status"] = "undefined: fewer than 3 units or a constant variable"
        return out
    res = spearmanr(x, y)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(replicates, n))
    rx, ry = rankdata(x[idx], axis=1), rankdata(y[idx], axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    low, high = percentile_ci(reps, confidence)
    out.update(
        rho=finite(res.statistic), p=finite(res.pvalue), ci_low=finite(low), ci_high=finite(high), status="ok"
    )
    return withhold(out, n, min_clusters, "rated responses")


# ---------------------------------------------------------------------------------------------
# Pieces


def attach_sample(ratings: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """Ratings with their task's sample columns (model, language, ..., quality bin, Token-F1)."""
    cols = ["task_id", *[c for c in SAMPLE_COLUMNS if c in sample.columns]]
    side = sample[cols].drop_duplicates("task_id")
    clash = [c for c in cols if c != "task_id" and c in ratings.columns]
    return ratings.drop(columns=clash).merge(side, on="task_id", how="left")


def alpha_table(kept: pd.DataFrame, **boot: Any) -> list[dict[str, Any]]:
    """Alpha of every rubric field that has ratings, at its level of measurement."""
    out = []
    for spec in RUBRIC:
        if spec.name not in kept.columns:
            continue
        rows = kept[kept["kind"].isin(spec.kinds)]
        if rows[spec.name].notna().sum() == 0:
            continue
        domain = spec.values if spec.level == "ordinal" else None
        out.append(krippendorff_alpha(rows, value=spec.name, level=spec.level, domain=domain, **boot))
    return out


def per_response(singles: pd.DataFrame) -> pd.DataFrame:
    """One row per rated response: Token-F1 and the mean of its valid ratings."""
    frame = singles.assign(
        adequacy=pd.to_numeric(singles["adequacy"], errors="coerce"),
        keypoint_recall=pd.to_numeric(singles["keypoint_recall"], errors="coerce"),
    )
    return frame.groupby("task_id", sort=True).agg(
        token_f1=("token_f1", "first"),
        adequacy=("adequacy", "mean"),
        keypoint_recall=("keypoint_recall", "mean"),
    )


def class_adequacy(
    singles: pd.DataFrame, config: ProjectConfig, estimates: pd.DataFrame | None
) -> list[dict[str, Any]]:
    """Mean and median adequacy per Joshi class, beside the class's automatic CLCG (raw, primary)."""
    joshi = {lang.iso: lang.joshi_class for lang in config.languages.languages}
    frame = singles.assign(
        joshi_class=singles["language"].map(joshi),
        adequacy=pd.to_numeric(singles["adequacy"], errors="coerce"),
    )
    frame = frame[frame["joshi_class"].notna() & frame["adequacy"].notna()]
    clcg: dict[int, float | None] = {}
    if estimates is not None and len(estimates):
        cls = estimates[estimates["estimand"] == "class_raw_primary"]
        for group, est in zip(cls["group"], cls["estimate"], strict=True):
            clcg[int(str(group).removeprefix("class="))] = finite(est)
    out = []
    for cls_value, g in frame.groupby("joshi_class", sort=True):
        c = int(cls_value)
        out.append(
            {
                "joshi_class": c,
                "adequacy_mean": float(g["adequacy"].mean()),
                "adequacy_median": float(g["adequacy"].median()),
                "clcg": clcg.get(c),
                "n": len(g),
                "responses": int(g["task_id"].nunique()),
                "languages": sorted(g["language"].unique().tolist()),
            }
        )
    return out


CLASS_CLCG_CAVEAT = "class-level adequacy vs CLCG"


def class_clcg_spearman(classes: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:
    """Spearman of class mean adequacy with the class CLCG: (the row, or None with the caveat why).

    Called again by study_results once the run's class CLCGs are known (they are estimated after
    this study, which feeds study_results).
    """
    with_clcg = [c for c in classes if c.get("clcg") is not None]
    if len(with_clcg) < 3:
        return None, (
            f"{CLASS_CLCG_CAVEAT}: {len(with_clcg)} class(es) with both a human mean and an "
            "automatic class CLCG (need 3 for a rank correlation)"
        )
    res = spearmanr([c["adequacy_mean"] for c in with_clcg], [c["clcg"] for c in with_clcg])
    return {
        "metric": "clcg_class",
        "human": "adequacy_mean",
        "rho": finite(res.statistic),
        "ci_low": None,
        "ci_high": None,
        "p": finite(res.pvalue),
        "n": len(with_clcg),
        "status": "ok (no interval: one value per class)",
    }, None


def max_adequacy_incomplete(singles: pd.DataFrame) -> dict[str, Any]:
    """Ratings giving maximum adequacy with incomplete keypoint coverage (seed 0.5.8: 224 of 1,543).

    Kept in every analysis (global adequacy and exhaustive coverage are different constructs);
    counted so a reader can judge how much of the upper end they make up.
    """
    both = singles.assign(
        adequacy=pd.to_numeric(singles["adequacy"], errors="coerce"),
        keypoint_recall=pd.to_numeric(singles["keypoint_recall"], errors="coerce"),
    ).dropna(subset=["adequacy", "keypoint_recall"])
    hit = both[(both["adequacy"] == max(FIELDS["adequacy"].values or (5,))) & (both["keypoint_recall"] < 1)]
    return {
        "ratings": len(hit),
        "eligible_ratings": len(both),
        "share": len(hit) / len(both) if len(both) else None,
        "items": int(hit["task_id"].nunique()),
        "eligible_items": int(both["task_id"].nunique()),
    }


def ceiling_rule(
    singles: pd.DataFrame, classes: list[dict[str, Any]], median_at: float, diff_below: float
) -> dict:
    """The executed complete-saturation flag (seed 0.4.10): both conditions must hold."""
    adequacy = pd.to_numeric(singles["adequacy"], errors="coerce")
    by_bin = adequacy.groupby(singles["quality_bin"]).mean()
    high, low = by_bin.get("HIGH"), by_bin.get("LOW")
    min_median = min((c["adequacy_median"] for c in classes), default=None)
    diff = None if high is None or low is None or pd.isna(high) or pd.isna(low) else float(high - low)
    out: dict[str, Any] = {
        "triggered": None,
        "min_class_adequacy_median": min_median,
        "high_low_difference": diff,
        "high_mean": finite(high) if high is not None else None,
        "low_mean": finite(low) if low is not None else None,
        "rule": f"min class adequacy median >= {median_at:g} and "
        f"HIGH-LOW mean adequacy difference < {diff_below:g}",
    }
    if min_median is None or diff is None:
        out["reason"] = "not evaluable: " + (
            "no class with adequacy ratings" if min_median is None else "no LOW or no HIGH score-bin ratings"
        )
        return out
    out["triggered"] = bool(min_median >= median_at and diff < diff_below)
    out["reason"] = None
    return out


def pair_rows(kept: pd.DataFrame) -> pd.DataFrame:
    pairs = kept[kept["kind"] == "pair"].copy()
    pairs["higher_side"] = pairs["a_side"].map({"higher": "A", "lower": "B"})
    return pairs
