"""The judges: cloze error shares, the paragraph judges' agreement, and human vs judge totals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.granularity._analysis._rows import check_frame
from clcg_pipeline.storage import finite

DIMENSIONS = (
    "topic_fidelity",
    "local_coherence",
    "entity_consistency",
    "instruction_following",
    "format_compliance",
)
NO_HUMAN_RATINGS = "no human ratings imported"


def _tags(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.replace(";", ",").split(",") if t.strip()]
    return [str(t) for t in value]


def cloze_error_shares(judgements: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Share of each main label (M1-M3) and secondary tag (S1-S8) among a judge's labelled cloze errors.

    Rows with a ``label`` and status ``ok`` count; a tag's share is over the same errors (a
    case may carry several tags, so tag shares need not sum to one).
    """
    if judgements is None or judgements.empty or "label" not in judgements.columns:
        return []
    check_frame(judgements, "task_judgements", ["judge", "label"])
    rows = judgements.loc[judgements["label"].notna()]
    if "status" in rows.columns:
        rows = rows.loc[rows["status"].astype(str) == "ok"]
    out: list[dict[str, Any]] = []
    for judge, grp in rows.groupby(rows["judge"].astype(str), sort=True):
        total = len(grp)
        for label, n in grp["label"].astype(str).value_counts().sort_index().items():
            out.append({"judge": judge, "kind": "main", "label": label, "n": int(n), "share": n / total})
        if "tags" in grp.columns:
            counts: dict[str, int] = {}
            for tags in grp["tags"]:
                for tag in set(_tags(tags)):
                    counts[tag] = counts.get(tag, 0) + 1
            for tag in sorted(counts):
                out.append(
                    {
                        "judge": judge,
                        "kind": "tag",
                        "label": tag,
                        "n": counts[tag],
                        "share": counts[tag] / total,
                    }
                )
    return out


_UNIT_KEYS = ("model", "language", "doc_id", "task_id", "context", "rep")


def _fill_rows(judgements: pd.DataFrame | None) -> pd.DataFrame:
    """Paragraph-filling judgements with a total (status ok), with the total derived if absent."""
    if judgements is None or judgements.empty:
        return pd.DataFrame()
    frame = judgements
    if "total" not in frame.columns and all(d in frame.columns for d in DIMENSIONS):
        frame = frame.assign(total=frame[list(DIMENSIONS)].sum(axis=1, min_count=len(DIMENSIONS)))
    if "total" not in frame.columns:
        return pd.DataFrame()
    frame = frame.loc[pd.to_numeric(frame["total"], errors="coerce").notna()]
    if "status" in frame.columns:
        frame = frame.loc[frame["status"].astype(str) == "ok"]
    check_frame(frame, "task_judgements", ["judge", "task_id"])
    return frame


def ordinal_alpha(ratings: np.ndarray) -> float | None:
    """Krippendorff's ordinal alpha of a ``units x judges`` matrix (NaN = not rated).

    Hand-written on purpose, with the ``krippendorff`` package as its reference in the tests:
    the package builds a ``units x values x values`` tensor, 2 GB for 27k answers rated 0-100
    at study scale. The coincidence matrix is summed here pair by pair of judges instead; the
    ordinal distance and the expected coincidences are the package's (Krippendorff 2011).
    """
    ratings = np.asarray(ratings, dtype=np.float64)
    present = np.isfinite(ratings)
    m = present.sum(axis=1)
    ratings, present, m = ratings[m >= 2], present[m >= 2], m[m >= 2]
    if len(ratings) == 0:
        return None
    domain = np.unique(ratings[present])
    if len(domain) < 2:
        return None
    idx = np.searchsorted(domain, np.where(present, ratings, domain[0]))
    v = len(domain)
    o = np.zeros((v, v))
    weight = 1.0 / (m - 1)
    for a in range(ratings.shape[1]):
        for b in range(ratings.shape[1]):
            if a == b:
                continue
            both = present[:, a] & present[:, b]
            np.add.at(o, (idx[both, a], idx[both, b]), weight[both])
    n_v = o.sum(axis=0)
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n_v.sum() - 1)
    cum = np.cumsum(n_v)
    lo, hi = np.minimum.outer(np.arange(v), np.arange(v)), np.maximum.outer(np.arange(v), np.arange(v))
    between = cum[hi] - cum[lo] + n_v[lo]
    d = (between - (n_v[lo] + n_v[hi]) / 2.0) ** 2
    return finite(1.0 - (o * d).sum() / (e * d).sum())


def judge_agreement(judgements: pd.DataFrame | None) -> dict[str, Any] | None:
    """Ordinal Krippendorff alpha of the paragraph judges on the 0-100 totals (and per dimension).

    Units are the judged answers (model x language x task x rep); ``spread_mean`` is the mean
    over units of the judges' max - min total. ICC is left null: no maintained ICC
    implementation is installed (pingouin is not a dependency) and it is not hand-written.
    """
    fill = _fill_rows(judgements)
    if fill.empty:
        return None
    keys = [k for k in _UNIT_KEYS if k in fill.columns]
    judges = sorted(set(fill["judge"].astype(str)))
    fill = fill.assign(judge=fill["judge"].astype(str), unit=fill[keys].astype(str).agg("|".join, axis=1))

    def wide(col: str) -> pd.DataFrame:
        return fill.pivot_table(index="unit", columns="judge", values=col, aggfunc="mean")

    totals = wide("total")
    multi = totals.loc[totals.notna().sum(axis=1) >= 2]
    spread = (multi.max(axis=1) - multi.min(axis=1)).mean() if len(multi) else None
    return {
        "alpha_ordinal": ordinal_alpha(totals.to_numpy()),
        "alpha_ordinal_by_dimension": {
            d: ordinal_alpha(wide(d).to_numpy())
            for d in DIMENSIONS
            if d in fill.columns and fill[d].notna().any()
        },
        "icc": None,
        "icc_reason": "no maintained ICC implementation installed (pingouin is not a dependency)",
        "n": len(multi),
        "judges": judges,
        "spread_mean": finite(spread) if spread is not None else None,
        "spread_rule": "mean over answers rated by two or more judges of the max - min judge total (0-100)",
    }


def human_fill_totals(annotations: pd.DataFrame | None, sample: pd.DataFrame | None) -> pd.DataFrame | None:
    """Human paragraph-filling ratings (``human_annotations`` kind ``fill``) as the unit keys of
    the rated answer (from ``annotation_sample``) + ``total`` (0-100) + ``simulated``.

    None when there are no imported fill ratings (the correlation then says so).
    """
    if annotations is None or annotations.empty or "fill_total" not in annotations.columns:
        return None
    rated = annotations[(annotations["kind"].astype(str) == "fill") & annotations["fill_total"].notna()]
    if rated.empty:
        return None
    if sample is None or sample.empty or "gran_task_id" not in sample.columns:
        raise ValueError(
            "human_annotations holds paragraph-filling ratings but annotation_sample has no fill tasks "
            "(column gran_task_id): the sample they were rated against is missing"
        )
    units = sample.loc[
        sample["kind"].astype(str) == "fill", ["task_id", "model", "language", "doc_id"]
    ].assign(unit_task_id=sample["gran_task_id"], context=sample["context"], rep=sample["rep"])
    frame = rated[["task_id", "annotator_id", "fill_total", "simulated"]].merge(
        units, on="task_id", how="inner"
    )
    if len(frame) < len(rated):
        raise ValueError(
            f"human_annotations: {len(rated) - len(frame)} fill rating(s) cite task ids not among the "
            "annotation_sample's fill tasks"
        )
    out = frame.drop(columns=["task_id"]).rename(columns={"unit_task_id": "task_id", "fill_total": "total"})
    for col in ("model", "language", "doc_id", "task_id", "context"):
        out[col] = out[col].astype(str)
    out["rep"] = out["rep"].astype("int64")
    out["total"] = out["total"].astype(float)
    out["simulated"] = out["simulated"].fillna(False).astype(bool)
    return out.reset_index(drop=True)


def human_judge_correlation(
    judgements: pd.DataFrame | None, human: pd.DataFrame | None
) -> tuple[dict[str, Any] | None, str | None]:
    """Pearson and Spearman correlation of the human and the mean judge total per answer.

    ``human`` has the unit keys and ``total`` (0-100, the judges' scale). Returns (None, reason)
    when no human ratings of paragraph filling exist.
    """
    if human is None or human.empty:
        return None, NO_HUMAN_RATINGS
    from scipy import stats  # imported here: slow to import, and only needed with human ratings

    check_frame(human, "human ratings of paragraph filling", ["task_id", "total"])
    fill = _fill_rows(judgements)
    if fill.empty:
        return None, "no paragraph-filling judgements to compare with"
    keys = [k for k in _UNIT_KEYS if k in human.columns and k in fill.columns]
    # Same key dtypes on both sides (stored ids are strings, rep an integer) so the join matches.
    fill = fill.assign(**{k: fill[k].astype("int64") if k == "rep" else fill[k].astype(str) for k in keys})
    human = human.assign(
        **{k: human[k].astype("int64") if k == "rep" else human[k].astype(str) for k in keys}
    )
    judged = fill.groupby(keys)["total"].mean().rename("judge_total")
    rated = human.groupby(keys)["total"].mean().rename("human_total")
    both = pd.concat([judged, rated], axis=1, join="inner").dropna()
    if len(both) < 3:
        return None, f"only {len(both)} answer(s) rated by both humans and judges (need 3)"
    pr = stats.pearsonr(both["human_total"], both["judge_total"])
    sr = stats.spearmanr(both["human_total"], both["judge_total"])
    return {
        "pearson_r": finite(pr.statistic),
        "pearson_p": finite(pr.pvalue),
        "spearman_rho": finite(sr.statistic),
        "spearman_p": finite(sr.pvalue),
        "n": len(both),
        "n_ratings": int(human.set_index(keys).index.isin(both.index).sum()),
        "unit": "per answer: mean human total (0-100) vs mean judge total over judges",
        "simulated": bool(human["simulated"].any()) if "simulated" in human.columns else False,
    }, None
