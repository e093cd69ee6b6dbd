"""The human-validation analysis (STUDY.md section 7; study seed 0.4.7-0.4.10 and 0.5.8).

Pure: imported annotations, the annotation sample and the study's tables in; the
``human_validation_results`` document and three tables out (``human_qc``,
``human_validation_estimates``, ``human_validation_joins``). Steps:

1. the QC funnel (``_qc.run_qc``);
2. Krippendorff's alpha per rubric field (``_agreement``), items with >= 2 valid ratings;
3. Spearman of Token-F1 with mean adequacy and mean keypoint recall per rated response, with
   an item-cluster (rated response) bootstrap;
4. adequacy per Joshi class against the automatic CLCG of the class;
5. the paired preference (``_preference``);
6. the ceiling rule;
7. human vs judge agreement on the rows where both exist (individual annotator x item rows,
   no majority vote: the study's unit);
8. the joins: every rating beside its prediction, score and judge labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata, spearmanr

from clcg_pipeline.analysis import percentile_ci
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import TABLES
from clcg_pipeline.validation._agreement import _num, cohen_kappa, krippendorff_alpha, withhold
from clcg_pipeline.validation._preference import MIXED_METHOD
from clcg_pipeline.validation._preference import preference as preference_block
from clcg_pipeline.validation._qc import FIELDS, KEPT, RUBRIC, QCResult, run_qc

KEYS = ["model", "language", "doc_id", "item_id", "rep"]
AWAITING = "awaiting annotations"
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
SCORE_COLUMNS = ["token_f1", "exact_match", "accuracy", "rouge_l", "semsim"]
JOIN_COLUMNS = TABLES["human_validation_joins"].names
METHODS = {
    "alpha": "Krippendorff's alpha (krippendorff package) per rubric field at its level of measurement, "
    "on items with >= 2 valid ratings; percentile interval resampling items",
    "spearman": "scipy spearmanr of Token-F1 with the mean valid rating per rated response; percentile "
    "interval resampling rated responses (item clusters)",
    "preference": "exact binomial (Clopper-Pearson interval, one-sided p vs 0.5); " + MIXED_METHOD + "; "
    "percentile interval resampling annotators",
    "judge_agreement": "percent and Cohen's kappa (statsmodels) on individual annotator x item rows vs each "
    "judge's collapsed label; percentile interval resampling items",
}
ESTIMATE_COLUMNS = [
    "estimand",
    "group",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "n",
    "n_clusters",
    "status",
    "flags",
]


@dataclass
class HumanValidationResult:
    results: dict[str, Any]
    qc: pd.DataFrame
    estimates: pd.DataFrame
    joins: pd.DataFrame
    rows: list[dict[str, Any]] = field(default_factory=list)


def _empty_result(status: str, reason: str, simulated: bool = False) -> HumanValidationResult:
    results = {
        "status": status,
        "reason": reason,
        "simulated": simulated,
        "qc_funnel": [],
        "alpha": [],
        "spearman": [],
        "class_adequacy": [],
        "preference": None,
        "ceiling": None,
        "judge_agreement": [],
        "judge_consensus": None,
        "max_adequacy_incomplete_keypoints": None,
        "methods": METHODS,
        "caveats": [reason],
    }
    return HumanValidationResult(
        results,
        pd.DataFrame(
            columns=[
                "step",
                "rule",
                "excluded_annotators",
                "excluded_ratings",
                "remaining_annotators",
                "remaining_ratings",
                "annotators_with_ratings",
            ]
        ),
        pd.DataFrame(columns=ESTIMATE_COLUMNS),
        pd.DataFrame(columns=JOIN_COLUMNS),
    )


def _is_simulated(annotations: pd.DataFrame) -> bool:
    return bool(
        "simulated" in annotations.columns and annotations["simulated"].fillna(False).astype(bool).any()
    )


# ---------------------------------------------------------------------------------------------
# Spearman with an item-cluster bootstrap


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
    out.update(rho=_num(res.statistic), p=_num(res.pvalue), ci_low=_num(low), ci_high=_num(high), status="ok")
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
            clcg[int(str(group).removeprefix("class="))] = _num(est)
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
        "rho": _num(res.statistic),
        "ci_low": None,
        "ci_high": None,
        "p": _num(res.pvalue),
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
        "high_mean": _num(high) if high is not None else None,
        "low_mean": _num(low) if low is not None else None,
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


def judge_rows(singles: pd.DataFrame, judgements: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each individual rating with a primary error category beside each judge's label of that response.

    The judge label is mapped to the human-facing categories through the taxonomy's collapsed
    mapping (``collapsed_label``); a human answer given as a fine label is collapsed the same way.
    """
    from clcg_pipeline.validation._taxonomy import load_taxonomy

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


# ---------------------------------------------------------------------------------------------
# The whole analysis


def run_human_validation(
    config: ProjectConfig,
    annotations: pd.DataFrame,
    sample: pd.DataFrame,
    *,
    predictions: pd.DataFrame | None = None,
    scores: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    diagnostic: pd.DataFrame | None = None,
    estimates: pd.DataFrame | None = None,
) -> HumanValidationResult:
    """Everything of the human-validation analysis from the imported annotations."""
    hv = config.study.human_validation
    study = config.study
    if hv.responses == 0 and hv.pairs == 0:
        return _empty_result(
            "skipped", "skipped: human_validation.responses and .pairs are 0 (the study is off)"
        )
    if annotations is None or annotations.empty:
        return _empty_result(
            AWAITING,
            f"no annotations imported yet: drop the annotators' exports into <data>/{hv.inbox}",
        )
    simulated = _is_simulated(annotations)
    boot = {"replicates": study.bootstrap_replicates, "seed": study.seed, "confidence": study.confidence}
    min_n = study.min_articles
    sample_ids = set(sample["task_id"].astype(str)) if sample is not None and len(sample) else None
    qc: QCResult = run_qc(annotations, hv, task_ids=sample_ids)
    caveats = list(qc.caveats)
    if simulated:
        caveats.insert(0, "SIMULATED annotations (the demo's shipped set): no human rated these responses")
    ratings = attach_sample(qc.ratings, sample) if sample is not None and len(sample) else qc.ratings
    for col in SAMPLE_COLUMNS:
        if col not in ratings.columns:
            ratings[col] = None
    kept = ratings[ratings["qc_step"] == KEPT].reset_index(drop=True)
    judgements = with_rep(judgements, diagnostic) if judgements is not None else None
    joins = build_joins(
        ratings,
        predictions,
        scores,
        judgements,
        reference=config.languages.reference,
        context_scope=study.band.context_scope,
    )
    joins["simulated"] = simulated
    results: dict[str, Any] = {
        "status": "ok",
        "methods": METHODS,
        "reason": None,
        "simulated": simulated,
        "qc_funnel": qc.funnel.to_dict("records"),
        "annotators": int(kept["annotator_id"].nunique()),
        "ratings": len(kept),
        "items": int(kept["task_id"].nunique()),
        "articles": int(kept["doc_id"].nunique()),
    }
    rows: list[dict[str, Any]] = []
    if 0 < results["articles"] < min_n:
        # The study's intervals resample items (and annotators), as here; items nested in so few
        # articles are not independent, so those intervals understate the uncertainty.
        caveats.append(
            f"the rated responses come from {results['articles']} article(s) "
            f"(< study.min_articles = {min_n}): item- and annotator-cluster intervals ignore article "
            "clustering and understate uncertainty"
        )
    if kept.empty:
        results.update(status="empty", reason="every rating was removed by the QC funnel (see qc_funnel)")
        caveats.append(results["reason"])
        results.update(
            alpha=[],
            spearman=[],
            class_adequacy=[],
            preference=None,
            ceiling=None,
            judge_agreement=[],
            judge_consensus=None,
            max_adequacy_incomplete_keypoints=None,
        )
        results["caveats"] = caveats
        return HumanValidationResult(results, qc.funnel, pd.DataFrame(columns=ESTIMATE_COLUMNS), joins)

    # Alpha per rubric field.
    alphas = alpha_table(kept, min_units=min_n, **boot)
    results["alpha"] = alphas
    for a in alphas:
        rows.append(_est("alpha", a["dimension"], a["alpha"], a, n=a["items"], clusters=a["items"]))
        if a["alpha"] is not None and a["alpha"] < hv.alpha_threshold:
            caveats.append(
                f"low agreement: Krippendorff's alpha of {a['dimension']} is {a['alpha']:.3f} "
                f"(< {hv.alpha_threshold:g}); individual labels are not a stable human reference"
            )

    # Spearman of Token-F1 with adequacy and keypoint recall, per rated response.
    singles = kept[kept["kind"] == "single"]
    per = (
        per_response(singles)
        if len(singles)
        else pd.DataFrame(columns=["token_f1", "adequacy", "keypoint_recall"])
    )
    spearman = []
    for human in ("adequacy", "keypoint_recall"):
        both = per[["token_f1", human]].apply(pd.to_numeric, errors="coerce").dropna()
        s = spearman_bootstrap(
            both["token_f1"].to_numpy(float), both[human].to_numpy(float), min_clusters=min_n, **boot
        )
        spearman.append({"metric": "token_f1", "human": human, **s})
        rows.append(_est("spearman", f"token_f1~{human}", s["rho"], s, n=s["n"], clusters=s["n"], p=s["p"]))
    classes = class_adequacy(singles, config, estimates)
    row, caveat = class_clcg_spearman(classes)
    if row is not None:
        spearman.append(row)
    if caveat is not None:
        caveats.append(caveat)
    results["spearman"] = spearman
    results["class_adequacy"] = classes
    results["max_adequacy_incomplete_keypoints"] = max_adequacy_incomplete(singles)
    for c in classes:
        rows.append(
            _est("class_adequacy_mean", f"class={c['joshi_class']}", c["adequacy_mean"], {}, n=c["n"])
        )
    ceiling = ceiling_rule(singles, classes, hv.ceiling_median, hv.ceiling_difference)
    results["ceiling"] = ceiling
    if ceiling["triggered"]:
        caveats.append(
            "ceiling rule triggered: adequacy is saturated; keypoint recall and the paired preference carry "
            "more interpretive weight"
        )
    elif ceiling["triggered"] is None:
        caveats.append(f"ceiling rule {ceiling['reason']}")

    # Paired preference.
    pairs = pair_rows(kept)
    if len(pairs):
        pref = preference_block(
            pairs,
            replicates=study.bootstrap_replicates,
            seed=study.seed,
            confidence=study.confidence,
            min_clusters=min_n,
        )
        results["preference"] = pref
        rows.append(
            _est(
                "preference_raw",
                "higher_preferred",
                pref["proportion"],
                {"ci_low": pref["exact_ci_low"], "ci_high": pref["exact_ci_high"]},
                n=pref["decisive"],
                p=pref["p_one_sided"],
            )
        )
        m = pref["mixed"]
        rows.append(
            _est(
                "preference_mixed",
                "higher_preferred",
                m["probability"],
                m,
                n=pref["decisive"],
                p=m["p_one_sided"],
            )
        )
        b = pref["bootstrap"]
        rows.append(
            _est(
                "preference_bootstrap",
                "higher_preferred",
                b["estimate"],
                b,
                n=pref["decisive"],
                clusters=b["annotators"],
            )
        )
        if pref["decisive"] == 0:
            caveats.append("paired preference: no decisive (A/B) judgment")
    else:
        results["preference"] = None
        caveats.append("paired preference: no pair ratings survived QC")

    # Human vs judge agreement on the overlap rows.
    agreement = []
    jr = judge_rows(
        singles, judgements if judgements is not None else pd.DataFrame(), config.languages.reference
    )
    for judge, g in jr.groupby("judge", sort=True):
        k = cohen_kappa(g["human"], g["judge_label"], clusters=g["task_id"], min_clusters=min_n, **boot)
        agreement.append({"judge": judge, **k})
        rows.append(_est("judge_kappa", str(judge), k["kappa"], k, n=k["n"], clusters=k.get("clusters")))
        rows.append(_est("judge_percent", str(judge), k["percent"], {}, n=k["n"]))
    if not agreement:
        caveats.append(
            "human vs judge agreement: no overlap rows (no rating with a primary error category on a "
            "response both a judge and an annotator labelled)"
        )
    results["judge_agreement"] = agreement
    results["judge_consensus"] = judge_consensus(jr)
    results["caveats"] = caveats
    estimates_frame = pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)
    return HumanValidationResult(results, qc.funnel, estimates_frame, joins, rows)


def _est(
    estimand: str,
    group: str,
    estimate: Any,
    s: dict[str, Any],
    *,
    n: int | None = None,
    clusters: int | None = None,
    p: Any = None,
    status: str | None = None,
) -> dict[str, Any]:
    own = s.get("status")
    if status is None and own not in (None, "ok"):
        status = str(own)
    if status in (None, "ok"):
        status = "estimated" if s.get("identifiable", True) else f"not identifiable: {s.get('reason')}"
    return {
        "estimand": estimand,
        "group": group,
        "estimate": _num(estimate),
        "ci_low": _num(s.get("ci_low")),
        "ci_high": _num(s.get("ci_high")),
        "p": _num(p),
        "n": n,
        "n_clusters": clusters,
        "status": status,
        "flags": s.get("reason"),
    }


__all__ = ["AWAITING", "FIELDS", "HumanValidationResult", "run_human_validation"]
