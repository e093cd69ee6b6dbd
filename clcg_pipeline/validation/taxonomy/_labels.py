"""The estimands of the labels: frequencies per side, EN -> target transitions, the pair
condition ``crosslingual_loss``, and each target label's contribution to the score delta."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, ratio
from clcg_pipeline.validation.taxonomy._inputs import CORRECT, SIDES, AnalysisInputs
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy
from clcg_pipeline.validation.taxonomy._rows import add_estimate, result_entry


def label_frequencies(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    judges: Sequence[str],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Share of each label among one judge's usable labels of one side; every label listed, zeros too."""
    frame = sides[["doc_id", "judge", "side", "label"]].assign(one=1.0)
    cells = boot.cells(frame, ["judge", "side", "label"], "one")
    out = []
    for judge in judges:
        for side in SIDES:
            group = cells.where(judge=judge, side=side)
            if len(group) == 0:
                continue
            total = cells.count_over(group)
            n_articles = cells.n_clusters(group)
            for label in taxonomy.labels:
                count = cells.count_over(cells.where(judge=judge, side=side, label=label))
                s = boot.summary(ratio(count, total), n=int(total[0]), n_clusters=n_articles)
                add_estimate(est, "label_share", judge, f"side={side}|label={label}", s)
                out.append(
                    {
                        "judge": judge,
                        "side": side,
                        "label": label,
                        "n": int(count[0]),
                        "total": int(total[0]),
                        "share": s["estimate"],
                        "ci_low": s["ci_low"],
                        "ci_high": s["ci_high"],
                    }
                )
    return out


def transition_rows(wide: pd.DataFrame) -> list[dict[str, Any]]:
    """EN label -> target label counts per judge, over the pairs it labelled on both sides."""
    if wide.empty:
        return []
    counts = wide.groupby(["judge", "en_label", "target_label"], as_index=False).size()
    totals = counts.groupby("judge")["size"].transform("sum")
    counts = counts.assign(share=counts["size"] / totals).rename(columns={"size": "n"})
    counts = counts.sort_values(
        ["judge", "n", "en_label", "target_label"], ascending=[True, False, True, True]
    )
    return [
        {
            "judge": r.judge,
            "en_label": r.en_label,
            "target_label": r.target_label,
            "n": int(r.n),
            "share": r.share,
        }
        for r in counts.itertuples(index=False)
    ]


def loss_flag(wide: pd.DataFrame, taxonomy: Taxonomy) -> pd.Series:
    """The pair condition: EN side ``correct`` and target side a semantic error (not a label)."""
    return (wide["en_label"] == CORRECT) & wide["target_label"].isin(taxonomy.semantic_errors)


def crosslingual_loss_rows(
    wide: pd.DataFrame,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Share of a judge's doubly labelled pairs meeting the pair condition: overall, per Joshi class,
    language and model (the denominator includes pairs whose EN side is not correct)."""
    if wide.empty:
        return []
    base = wide[["doc_id", "judge", "language", "model"]].assign(y=loss_flag(wide, taxonomy).astype(float))
    joshi = base["language"].map(lambda iso: inputs.joshi.get(str(iso)))
    parts = [
        base.assign(group="all"),
        base.assign(
            group=["joshi_class=" + ("unclassified" if c is None or c != c else str(int(c))) for c in joshi]
        ),
        base.assign(group="language=" + base["language"].astype(str)),
        base.assign(group="model=" + base["model"].astype(str)),
    ]
    long = pd.concat(parts, ignore_index=True)
    cells = boot.cells(long, ["judge", "group"], "y")
    groups = list(dict.fromkeys(g for part in parts for g in sorted(part["group"].unique())))
    out = []
    for judge in inputs.judges:
        for group in groups:
            idx = cells.where(judge=judge, group=group)
            if len(idx) == 0:
                continue
            s = boot.summary(
                ratio(cells.sum_over(idx), cells.count_over(idx)),
                n=int(cells.count_over(idx)[0]),
                n_clusters=cells.n_clusters(idx),
            )
            add_estimate(est, "crosslingual_loss", judge, group, s)
            out.append(result_entry(s, judge=judge, group=group))
    return out


def delta_contribution(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    judges: Sequence[str],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    caveats: list[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each target label's frequency x mean loss; the contributions sum to the judge's delta."""
    target = sides[sides["side"] == "target"]
    missing = target["score_delta"].isna()
    if missing.any():
        caveats.append(
            f"{int(missing.sum())} labelled target side(s) without a score delta left out of the delta"
        )
    target = target[~missing]
    if target.empty:
        return [], []
    cells = boot.cells(target[["doc_id", "judge", "label", "score_delta"]], ["judge", "label"], "score_delta")
    deltas, contributions = [], []
    for judge in judges:
        every = cells.where(judge=judge)
        if len(every) == 0:
            continue
        total_n, total_s = cells.count_over(every), cells.sum_over(every)
        n_art = cells.n_clusters(every)
        s = add_estimate(
            est,
            "score_delta",
            judge,
            "all",
            boot.summary(ratio(total_s, total_n), n=int(total_n[0]), n_clusters=n_art),
        )
        deltas.append(result_entry(s, judge=judge))
        for label in taxonomy.labels:
            idx = cells.where(judge=judge, label=label)
            n_l, s_l = cells.count_over(idx), cells.sum_over(idx)
            freq = boot.summary(ratio(n_l, total_n), n=int(total_n[0]), n_clusters=n_art)
            mean = boot.summary(ratio(s_l, n_l), n=int(n_l[0]), n_clusters=cells.n_clusters(idx))
            contrib = boot.summary(ratio(s_l, total_n), n=int(total_n[0]), n_clusters=n_art)
            add_estimate(est, "label_frequency_target", judge, f"label={label}", freq)
            add_estimate(est, "label_mean_loss", judge, f"label={label}", mean)
            add_estimate(est, "label_contribution", judge, f"label={label}", contrib)
            contributions.append(
                {
                    "judge": judge,
                    "label": label,
                    "n": int(n_l[0]),
                    "frequency": freq["estimate"],
                    "mean_loss": mean["estimate"],
                    "mean_loss_ci_low": mean["ci_low"],
                    "mean_loss_ci_high": mean["ci_high"],
                    "contribution": contrib["estimate"],
                    "ci_low": contrib["ci_low"],
                    "ci_high": contrib["ci_high"],
                }
            )
    return deltas, contributions
