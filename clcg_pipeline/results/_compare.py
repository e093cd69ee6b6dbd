"""Two runs side by side, estimand by estimand (``clcg compare A B``).

For a prompt change or a new version of a model: each estimand of run A, of run B, and B - A.
Where both runs answered the same items of the same articles, the H1 family is recomputed on
those common rows with the same article-cluster draws for both runs (the draws depend only on
the sorted article list and the seed), so the difference's interval is paired. Every other
estimand, and every H1 estimand when nothing is shared, is compared unpaired: its interval is
the normal approximation from the two runs' own intervals, and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from clcg_pipeline.analysis import h1_core, percentile_ci
from clcg_pipeline.config import ProjectConfig

# What identifies one answered item: the rows two runs can be paired on (the model may differ:
# a new version of a model is compared with the old one on the same items).
PAIR_KEY = ["language", "doc_id", "item_id", "level", "context_scope", "item_source", "rep"]
# h1_core's vector names -> the estimates table's (estimand, group), so each estimand is one row.
_FAMILY = {
    "clcg": "clcg_language",
    "h1_micro": "h1_micro_model",
    "pt_gap": "pt_gap_model",
    "macro_net": "macro_net_model",
}
COMPARE_COLUMNS = [
    "estimand",
    "group",
    "a_estimate",
    "a_ci_low",
    "a_ci_high",
    "b_estimate",
    "b_ci_low",
    "b_ci_high",
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "p",
    "pairing",
    "note",
]


@dataclass(frozen=True)
class RunSide:
    """One run as compared: its label, estimates table and (when a data folder) its scores."""

    label: str
    estimates: pd.DataFrame
    scores: pd.DataFrame | None = None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _unpaired(a: pd.Series, b: pd.Series, confidence: float) -> dict[str, Any]:
    """B - A with the interval of two independent estimates, from each run's own interval."""
    est_a, est_b = _number(a["estimate"]), _number(b["estimate"])
    row: dict[str, Any] = {"difference": None if est_a is None or est_b is None else est_b - est_a}
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    widths = [
        (_number(side["ci_high"]) or math.nan) - (_number(side["ci_low"]) or math.nan) for side in (a, b)
    ]
    if row["difference"] is not None and all(math.isfinite(w) for w in widths):
        se = math.hypot(*(w / (2 * z) for w in widths))
        row.update(
            difference_ci_low=row["difference"] - z * se, difference_ci_high=row["difference"] + z * se
        )
        row["p"] = float(2 * stats.norm.sf(abs(row["difference"]) / se)) if se > 0 else None
        row["note"] = "unpaired: normal approximation from the two runs' intervals"
    else:
        row["note"] = "unpaired: no interval (a run withholds one: not identifiable)"
    return {**row, "pairing": "unpaired"}


def _common_rows(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of each run on the items both answered."""
    key = [c for c in PAIR_KEY if c in a.columns and c in b.columns]

    def keys(frame: pd.DataFrame) -> pd.MultiIndex:
        return pd.MultiIndex.from_frame(frame[key].astype(str))

    shared = keys(a).intersection(keys(b))
    return a[keys(a).isin(shared)], b[keys(b).isin(shared)]


def paired_h1(a: pd.DataFrame, b: pd.DataFrame, config: ProjectConfig) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The H1 family of both runs on their common rows, with paired B - A intervals."""
    common_a, common_b = _common_rows(a, b)
    articles = int(common_a["doc_id"].nunique()) if len(common_a) else 0
    info = {"common_rows": len(common_a), "common_articles": articles, "rows_a": len(a), "rows_b": len(b)}
    if articles < 2:
        return pd.DataFrame(columns=COMPARE_COLUMNS), {**info, "paired": False}
    study = config.study
    core_a = h1_core(common_a, config.languages, study)
    core_b = h1_core(common_b, config.languages, study)
    rows = []
    for name in sorted(set(core_a.vectors) & set(core_b.vectors)):
        va, vb = core_a.vectors[name], core_b.vectors[name]
        diff = vb - va
        low, high = percentile_ci(diff[1:], study.confidence)
        lows_a, lows_b = percentile_ci(va[1:], study.confidence), percentile_ci(vb[1:], study.confidence)
        estimand, _, group = name.partition("/")
        estimand = _FAMILY.get(estimand, estimand) if group else estimand
        few = articles < study.min_articles
        valid = diff[1:][np.isfinite(diff[1:])]
        p = float(min(1.0, 2 * min((valid <= 0).mean(), (valid >= 0).mean()))) if len(valid) else None
        rows.append(
            {
                "estimand": estimand,
                "group": group or "all",
                "a_estimate": _number(va[0]),
                "a_ci_low": None if few else _number(lows_a[0]),
                "a_ci_high": None if few else _number(lows_a[1]),
                "b_estimate": _number(vb[0]),
                "b_ci_low": None if few else _number(lows_b[0]),
                "b_ci_high": None if few else _number(lows_b[1]),
                "difference": _number(diff[0]),
                "difference_ci_low": None if few else _number(low),
                "difference_ci_high": None if few else _number(high),
                "p": None if few else p,
                "pairing": "paired",
                "note": f"paired on {len(common_a)} common rows of {articles} articles"
                + (
                    f"; not identifiable: {articles} < study.min_articles = {study.min_articles}"
                    if few
                    else ""
                ),
            }
        )
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS), {**info, "paired": True}


def compare_runs(a: RunSide, b: RunSide, config: ProjectConfig) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Every estimand of either run, A, B and B - A; paired for H1 where the runs share items."""
    paired = pd.DataFrame(columns=COMPARE_COLUMNS)
    info: dict[str, Any] = {"a": a.label, "b": b.label, "paired": False}
    if a.scores is not None and b.scores is not None:
        paired, pairing = paired_h1(a.scores, b.scores, config)
        info.update(pairing)
    done = set(zip(paired["estimand"], paired["group"], strict=True))
    merged = a.estimates.merge(b.estimates, on=["estimand", "group"], how="outer", suffixes=("_a", "_b"))
    rows = []
    for record in merged.to_dict("records"):
        if (record["estimand"], record["group"]) in done:
            continue
        side_a = pd.Series({k: record.get(f"{k}_a") for k in ("estimate", "ci_low", "ci_high")})
        side_b = pd.Series({k: record.get(f"{k}_b") for k in ("estimate", "ci_low", "ci_high")})
        only = (
            "a" if _number(side_b["estimate"]) is None else "b" if _number(side_a["estimate"]) is None else ""
        )
        row = {
            "estimand": record["estimand"],
            "group": record["group"],
            **{f"a_{k}": _number(v) for k, v in side_a.items()},
            **{f"b_{k}": _number(v) for k, v in side_b.items()},
            **_unpaired(side_a, side_b, config.study.confidence),
        }
        if only:
            row["note"] = f"only in run {only.upper()}"
        rows.append(row)
    table = pd.DataFrame([*paired.to_dict("records"), *rows], columns=COMPARE_COLUMNS)
    return table.sort_values(["estimand", "group"], kind="stable").reset_index(drop=True), info
