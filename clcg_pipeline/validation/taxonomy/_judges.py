"""The estimands of the judges: agreement between them (Cohen's kappa at four levels), order
bias (pairs shown both ways round) and self-preference (a judge's own family's responses)."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa

from clcg_pipeline.analysis import ClusterBootstrap, ClusterCells, ratio
from clcg_pipeline.storage import finite
from clcg_pipeline.validation.taxonomy._inputs import (
    CORRECT,
    ORDERS,
    SIDES,
    AnalysisInputs,
    fail_record,
    family_of_name,
)
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy
from clcg_pipeline.validation.taxonomy._labels import loss_flag
from clcg_pipeline.validation.taxonomy._rows import add_estimate


def kappa_rows(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Percent agreement and Cohen's kappa of every ``K x K`` table in ``tables`` (replicates x K x K).

    Vectorised over the bootstrap replicates (statsmodels takes one table per call and computes
    variances we do not use); the full-sample kappa is taken from statsmodels by the caller and
    the two agree (tested). Kappa is NaN where chance agreement is 1 (one category only).
    """
    n = tables.sum(axis=(1, 2))
    safe = np.where(n > 0, n, 1.0)
    po = np.trace(tables, axis1=1, axis2=2) / safe
    pe = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / safe**2
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where((n > 0) & (pe < 1 - 1e-12), (po - pe) / (1 - pe), np.nan)
    return np.where(n > 0, po, np.nan), kappa


def agreement_rows(
    sides: pd.DataFrame,
    wide: pd.DataFrame,
    taxonomy: Taxonomy,
    judges: Sequence[str],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    caveats: list[str],
) -> list[dict[str, Any]]:
    """Percent agreement and Cohen's kappa of every two judges, per level, with bootstrap intervals."""
    if len(judges) < 2:
        caveats.append("judge agreement needs two judges; one is configured")
        return []
    loss = wide.assign(loss=loss_flag(wide, taxonomy))
    out: list[dict[str, Any]] = []
    for a, b in combinations(judges, 2):
        both = sides[sides["judge"] == a].merge(
            sides[sides["judge"] == b], on=["pair_id", "side", "doc_id"], suffixes=("_a", "_b")
        )
        pairs = loss[loss["judge"] == a].merge(
            loss[loss["judge"] == b], on=["pair_id", "doc_id"], suffixes=("_a", "_b")
        )
        levels: dict[str, tuple[pd.DataFrame, str, tuple[Any, ...]]] = {
            "fine": (both, "label", taxonomy.labels),
            "collapsed": (both, "collapsed", taxonomy.collapsed_labels),
            "binary": (both, "semantic", (False, True)),
            "crosslingual_loss": (pairs, "loss", (False, True)),
        }
        for level, (frame, column, categories) in levels.items():
            entry = _agreement_one(frame, column, categories, boot)
            if entry is None:
                continue
            pct, kap, n, n_art = entry
            judge = f"{a}|{b}"
            sp = add_estimate(
                est, "agreement_percent", judge, level, boot.summary(pct, n=n, n_clusters=n_art)
            )
            sk = add_estimate(est, "agreement_kappa", judge, level, boot.summary(kap, n=n, n_clusters=n_art))
            if sk["estimate"] is None:
                caveats.append(f"kappa of {judge} at level {level} is undefined: one category only")
            out.append(
                {
                    "level": level,
                    "judge_a": a,
                    "judge_b": b,
                    "unit": "pair" if level == "crosslingual_loss" else "response side",
                    "percent": sp["estimate"],
                    "percent_ci_low": sp["ci_low"],
                    "percent_ci_high": sp["ci_high"],
                    "kappa": sk["estimate"],
                    "ci_low": sk["ci_low"],
                    "ci_high": sk["ci_high"],
                    "n": n,
                    "n_articles": n_art,
                    "identifiable": sk["identifiable"],
                    "reason": sk["reason"],
                }
            )
    return out


def _agreement_one(
    frame: pd.DataFrame, column: str, categories: tuple[Any, ...], boot: ClusterBootstrap
) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    if frame.empty:
        return None
    k = len(categories)
    code = {c: i for i, c in enumerate(categories)}
    ca = frame[f"{column}_a"].map(code).to_numpy(dtype=np.int64)
    cb = frame[f"{column}_b"].map(code).to_numpy(dtype=np.int64)
    cells = boot.cells(frame[["doc_id"]].assign(cell=ca * k + cb, one=1.0), ["cell"], "one")
    flat = np.zeros((cells.counts.shape[0], k * k))
    flat[:, cells.cells["cell"].to_numpy(dtype=np.int64)] = cells.counts
    tables = flat.reshape(-1, k, k)
    pct, kap = kappa_rows(tables)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        point = float(cohens_kappa(tables[0], return_results=False))
    kap[0] = point if np.isfinite(point) else np.nan
    return pct, kap, int(tables[0].sum()), cells.n_clusters(np.arange(len(cells.cells)))


# ``preferred`` may name the response (en / target) or the position it was shown in; both are read
# as the response so that a flip means the judge changed its mind, not merely its position.
_POSITION = {"a": 0, "first": 0, "1": 0, "b": 1, "second": 1, "2": 1}


_NO_PREFERENCE = {"tie", "none", "neither", "equal", "both"}


def _preferred_response(order: str, preferred: object) -> str:
    value = str(preferred).strip().lower()
    if value in SIDES:
        return value
    if value in _NO_PREFERENCE:
        return "tie"
    if value in _POSITION:
        shown = ("en", "target") if order == "en_first" else ("target", "en")
        return shown[_POSITION[value]]
    raise ValueError(value)


@dataclass(frozen=True)
class OrderFlips:
    """The order-bias judgements, read once for the pooled flip rate and its breakdowns.

    ``singles``: every usable judgement with the ``response`` it preferred and its pair's
    ``doc_id`` and ``language``; ``pairs``: one row per (pair, judge) judged both ways round with
    both judgements usable, with ``flip`` (1.0 when the preferred response changed).
    """

    singles: pd.DataFrame
    pairs: pd.DataFrame


_PAIR_FACTS = ["pair_id", "doc_id", "language"]


def order_flips(order_bias: pd.DataFrame, sample: pd.DataFrame, caveats: list[str]) -> OrderFlips | None:
    """The usable order-bias judgements and their flips; None (with a caveat) when there are none."""
    if order_bias.empty:
        caveats.append("no order-bias judgements: the flip rate is not measured")
        return None
    ok = order_bias[order_bias["status"] == "ok"].reset_index(drop=True)
    left_out = len(order_bias) - len(ok)
    if left_out:
        caveats.append(f"{left_out} order-bias judgement(s) unparseable, refused or missing were left out")
    responses = []
    for position, row in enumerate(ok[["order", "preferred"]].itertuples(index=False)):
        try:
            responses.append(_preferred_response(str(row.order), row.preferred))
        except ValueError:
            fail_record(
                "order_bias_judgements", ok, position, "preferred", f"unknown value {row.preferred!r}"
            )
    ok = ok.assign(response=responses, pair_id=ok["pair_id"].astype(str))
    # The sample is the authority for a pair's article and language (as for the error judgements).
    facts = sample[_PAIR_FACTS].assign(pair_id=sample["pair_id"].astype(str))
    singles = ok.drop(columns=[c for c in _PAIR_FACTS[1:] if c in ok.columns]).merge(facts, on="pair_id")
    wide = ok.pivot_table(index=["pair_id", "judge"], columns="order", values="response", aggfunc="first")
    if not set(ORDERS) <= set(wide.columns):
        return OrderFlips(
            singles, pd.DataFrame(columns=["pair_id", "judge", *ORDERS, *_PAIR_FACTS[1:], "flip"])
        )
    wide = wide.dropna(subset=list(ORDERS)).reset_index().merge(facts, on="pair_id")
    pairs = wide.assign(flip=(wide["en_first"] != wide["target_first"]).astype(float))
    return OrderFlips(singles, pairs)


def order_bias_rows(
    flips: OrderFlips | None,
    judges: Sequence[str],
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Flip rate per judge: the share of pairs shown both ways round whose preferred response changes."""
    if flips is None:
        return []
    return [flip_rate_entry(flips, judge, boot, est) for judge in judges]


def flip_rate_entry(
    flips: OrderFlips,
    judge: str,
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    *,
    group: str = "all",
    languages: Collection[str] | None = None,
) -> dict[str, Any]:
    """One judge's flip rate over the pairs of ``languages`` (all pairs when None), in ``est`` too."""
    pairs = flips.pairs[flips.pairs["judge"] == judge]
    one = flips.singles[flips.singles["judge"] == judge]
    if languages is not None:
        pairs = pairs[pairs["language"].astype(str).isin(languages)]
        one = one[one["language"].astype(str).isin(languages)]
    if pairs.empty:
        return {
            "judge": judge,
            "pairs": 0,
            "flip_rate": None,
            "ci_low": None,
            "ci_high": None,
            "identifiable": False,
            "reason": "no pair judged both ways round with both judgements usable",
        }
    # Position bias: the response shown first preferred, over all usable single judgements.
    first = np.mean(
        [
            r == ("en" if o == "en_first" else "target")
            for o, r in zip(one["order"], one["response"], strict=True)
        ]
    )
    cells = boot.cells(pairs[["doc_id"]].assign(judge=judge, y=pairs["flip"].to_numpy()), ["judge"], "y")
    idx = np.arange(len(cells.cells))
    s = add_estimate(
        est,
        "order_bias_flip_rate",
        judge,
        group,
        boot.summary(
            ratio(cells.sum_over(idx), cells.count_over(idx)), n=len(pairs), n_clusters=cells.n_clusters(idx)
        ),
    )
    return {
        "judge": judge,
        "pairs": len(pairs),
        "flips": int(pairs["flip"].sum()),
        "flip_rate": s["estimate"],
        "ci_low": s["ci_low"],
        "ci_high": s["ci_high"],
        "n_articles": s["n_articles"],
        "first_shown_preferred": finite(first),
        "identifiable": s["identifiable"],
        "reason": s["reason"],
    }


def self_preference_rows(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    caveats: list[str],
    *,
    group: str | None = None,
) -> list[dict[str, Any]]:
    """Rate of ``correct`` a judge gives its own family's responses minus the rate it gives others'.

    Own-family models may simply answer better, so ``excess`` subtracts the same contrast as
    rated by the other judges on their own labels of those responses (a difference in differences).
    ``group`` names the estimates-table group of a breakdown (``language=sw``) in place of the
    pooled ``difference`` / ``difference_in_differences``.
    """
    family_of = sides["model"].astype(str).map(lambda m: inputs.families.get(m, family_of_name(m)))
    base = sides[["doc_id", "judge"]].assign(y=(sides["label"] == CORRECT).astype(float))
    out = []
    for judge in inputs.judges:
        fam = inputs.families.get(judge, family_of_name(judge))
        own = (family_of == fam).to_numpy()
        mine = (base["judge"] == judge).to_numpy()
        entry: dict[str, Any] = {"judge": judge, "judge_family": fam}
        if not mine.any():
            continue
        if not own[mine].any() or own[mine].all():
            out.append(_self_preference_unidentified(entry, judge, fam, own, mine, est, group))
            continue
        frame = base.assign(own=np.where(own, "own", "other"))
        cells = boot.cells(frame, ["judge", "own"], "y")
        _self_preference_estimated(entry, judge, cells, inputs, boot, est, group)
        out.append(entry)
    if out and not any(e.get("identifiable") for e in out):
        caveats.append("self-preference not identifiable: no evaluated model shares a judge's family")
    return out


def _self_preference_unidentified(
    entry: dict[str, Any],
    judge: str,
    fam: str,
    own: np.ndarray,
    mine: np.ndarray,
    est: list[dict[str, Any]],
    group: str | None = None,
) -> dict[str, Any]:
    """The entry of a judge whose family evaluated no model, or every one (nothing to contrast)."""
    why = (
        f"no evaluated model of the judge's family {fam!r}"
        if not own[mine].any()
        else f"every evaluated model is of the judge's family {fam!r}"
    )
    add_estimate(
        est,
        "self_preference",
        judge,
        group or "difference",
        {"estimate": None, "identifiable": False, "reason": why, "n": int(mine.sum())},
    )
    return {
        **entry,
        "own_rate": None,
        "other_rate": None,
        "difference": None,
        "ci_low": None,
        "ci_high": None,
        "n": int(mine.sum()),
        "identifiable": False,
        # The reason alone, as the rule gives it: the state is ``identifiable`` (the report
        # prefixes "not identifiable: " once; the estimates table's status does the same).
        "reason": why,
    }


def _self_preference_estimated(
    entry: dict[str, Any],
    judge: str,
    cells: ClusterCells,
    inputs: AnalysisInputs,
    boot: ClusterBootstrap,
    est: list[dict[str, Any]],
    group: str | None = None,
) -> None:
    """Fill ``entry`` with the judge's own-minus-other rate and, given other judges, the excess."""

    def rate(j: str, side: str) -> np.ndarray:
        idx = cells.where(judge=j, own=side)
        return ratio(cells.sum_over(idx), cells.count_over(idx))

    diff = rate(judge, "own") - rate(judge, "other")
    mine_idx = cells.where(judge=judge)
    n, n_art = int(cells.count_over(mine_idx)[0]), cells.n_clusters(mine_idx)
    s_own = boot.summary(rate(judge, "own"), n=n, n_clusters=n_art)
    s_other = boot.summary(rate(judge, "other"), n=n, n_clusters=n_art)
    s = add_estimate(
        est, "self_preference", judge, group or "difference", boot.summary(diff, n=n, n_clusters=n_art)
    )
    entry.update(
        n_own=int(cells.count_over(cells.where(judge=judge, own="own"))[0]),
        n_other=int(cells.count_over(cells.where(judge=judge, own="other"))[0]),
        own_rate=s_own["estimate"],
        other_rate=s_other["estimate"],
        difference=s["estimate"],
        ci_low=s["ci_low"],
        ci_high=s["ci_high"],
        n=n,
        n_articles=n_art,
        identifiable=s["identifiable"],
        reason=s["reason"],
    )
    others = [j for j in inputs.judges if j != judge and len(cells.where(judge=j))]
    if others:
        other_diff = (
            np.nanmean(np.column_stack([rate(j, "own") - rate(j, "other") for j in others]), axis=1)
            if len(others) > 1
            else rate(others[0], "own") - rate(others[0], "other")
        )
        sx = add_estimate(
            est,
            "self_preference_excess",
            judge,
            group or "difference_in_differences",
            boot.summary(diff - other_diff, n=n, n_clusters=n_art),
        )
        entry.update(excess=sx["estimate"], excess_ci_low=sx["ci_low"], excess_ci_high=sx["ci_high"])
