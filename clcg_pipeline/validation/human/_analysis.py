"""The human-validation analysis (docs/HUMAN_VALIDATION.md).

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
   no majority vote: the study's unit), pooled and per language and script (``_judge_validity``);
8. the joins: every rating beside its prediction, score and judge labels;
9. how far the judges' errors overlap: per pair of judges (error taxonomy, granularity) the
   correlation of their errors against the human consensus and the effective number of
   independent judges, pooled and per language and script (``_judge_overlap``, issue 36).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from clcg_pipeline.analysis import SuiteContext, roles_of, withheld_reason
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import HumanValidationResults, finite
from clcg_pipeline.validation.human._agreement import cohen_kappa
from clcg_pipeline.validation.human._estimands import (
    SAMPLE_COLUMNS,
    alpha_table,
    attach_sample,
    ceiling_rule,
    class_adequacy,
    class_clcg_spearman,
    max_adequacy_incomplete,
    pair_rows,
    per_response,
    spearman_bootstrap,
)
from clcg_pipeline.validation.human._joins import (
    JOIN_COLUMNS,
    build_joins,
    judge_consensus,
    judge_rows,
    with_rep,
)
from clcg_pipeline.validation.human._judge_overlap import (
    FORMULA,
    ErrorPanel,
    estimate_rows,
    fill_errors,
    judge_error_overlap,
    taxonomy_errors,
)
from clcg_pipeline.validation.human._judge_validity import (
    group_label,
    kappa_by_language_and_script,
    scripts_of,
)
from clcg_pipeline.validation.human._preference import MIXED_METHOD
from clcg_pipeline.validation.human._preference import preference as preference_block
from clcg_pipeline.validation.human._qc import FIELDS, KEPT, QCResult, run_qc

AWAITING = "awaiting annotations"
#: Stands for "the study has ratings" when the rule is asked about the articles they come from.
_RATED = 0.0
METHODS = {
    "alpha": "Krippendorff's alpha (krippendorff package) per rubric field at its level of measurement, "
    "on items with >= 2 valid ratings; percentile interval resampling items",
    "spearman": "scipy spearmanr of Token-F1 with the mean valid rating per rated response; percentile "
    "interval resampling rated responses (item clusters)",
    "preference": "exact binomial (Clopper-Pearson interval, one-sided p vs 0.5); " + MIXED_METHOD + "; "
    "percentile interval resampling annotators",
    "judge_agreement": "percent and Cohen's kappa (statsmodels) on individual annotator x item rows vs each "
    "judge's collapsed label; percentile interval resampling items",
    "judge_agreement_by_group": "the same kappa on the rows of each rated language and of each script "
    "(Language.script of the panel config); below study.min_articles items the interval is withheld",
    "judge_error_overlap": "per pair of judges of one family, on the rated responses, the Pearson "
    "correlation of their errors against the human consensus (error taxonomy: phi of the indicators "
    "'label != majority human label'; granularity: judge total minus mean human total); " + FORMULA + "; "
    "percentile interval resampling articles (analysis.ClusterBootstrap); below study.min_articles "
    "articles the interval is withheld",
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
    results: HumanValidationResults
    qc: pd.DataFrame
    estimates: pd.DataFrame
    joins: pd.DataFrame
    rows: list[dict[str, Any]] = field(default_factory=list)


def _empty_result(status: str, reason: str, simulated: bool = False) -> HumanValidationResult:
    results: HumanValidationResults = {
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
        "judge_kappa_by_language": [],
        "judge_kappa_by_script": [],
        "judge_consensus": None,
        "judge_error_correlation": [],
        "judge_effective_number": [],
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
    task_judgements: pd.DataFrame | None = None,
    fill_ratings: pd.DataFrame | None = None,
    fill_sample: pd.DataFrame | None = None,
) -> HumanValidationResult:
    """Everything of the human-validation analysis from the imported annotations.

    ``task_judgements`` with ``fill_ratings`` and ``fill_sample`` (the paragraph-filling ratings
    and tasks, kind ``fill``) give the granularity judges' error overlap."""
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
    ratings = _rated_sample(qc.ratings, sample)
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
    few_articles = withheld_reason(_RATED, results["articles"], min_n) if results["articles"] else None
    if few_articles is not None:
        # The study's intervals resample items (and annotators), as here; items nested in so few
        # articles are not independent, so those intervals understate the uncertainty. The
        # decision is the suite's rule (``analysis.withheld_reason``); its reason text is not
        # repeated here (nothing is withheld for it), so a report says each reason once.
        caveats.append(
            f"the rated responses come from {results['articles']} article(s) "
            f"(< study.min_articles = {min_n}): item- and annotator-cluster intervals ignore article "
            "clustering and understate uncertainty"
        )
    if kept.empty:
        return _nothing_kept(results, caveats, qc, joins)

    singles = kept[kept["kind"] == "single"]
    _alpha_section(kept, hv.alpha_threshold, min_n, boot, results, rows, caveats)
    _spearman_section(singles, config, estimates, min_n, boot, results, rows, caveats)
    _preference_section(pair_rows(kept), study, min_n, results, rows, caveats)
    reference, scripts = config.languages.reference, scripts_of(config)
    _judge_section(singles, judgements, reference, scripts, min_n, boot, results, rows, caveats)
    panels = [
        taxonomy_errors(
            judge_rows(singles, judgements if judgements is not None else pd.DataFrame(), reference)
        ),
        fill_errors(fill_ratings, fill_sample, task_judgements),
    ]
    _overlap_section(config, panels, results, rows, caveats)
    results["caveats"] = caveats
    estimates_frame = pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)
    # The sections above fill a plain dict; HumanValidationResults names its keys (not checked here).
    return HumanValidationResult(
        cast(HumanValidationResults, results), qc.funnel, estimates_frame, joins, rows
    )


def _nothing_kept(
    results: dict[str, Any], caveats: list[str], qc: QCResult, joins: pd.DataFrame
) -> HumanValidationResult:
    """The results when the QC funnel removed every rating: status ``empty``, every section empty."""
    results.update(status="empty", reason="every rating was removed by the QC funnel (see qc_funnel)")
    caveats.append(results["reason"])
    results.update(
        alpha=[],
        spearman=[],
        class_adequacy=[],
        preference=None,
        ceiling=None,
        judge_agreement=[],
        judge_kappa_by_language=[],
        judge_kappa_by_script=[],
        judge_consensus=None,
        judge_error_correlation=[],
        judge_effective_number=[],
        max_adequacy_incomplete_keypoints=None,
    )
    results["caveats"] = caveats
    done = cast(HumanValidationResults, results)  # a plain dict filled section by section
    return HumanValidationResult(done, qc.funnel, pd.DataFrame(columns=ESTIMATE_COLUMNS), joins)


def _rated_sample(ratings: pd.DataFrame, sample: pd.DataFrame | None) -> pd.DataFrame:
    """The QC'd ratings with their task's sample columns (null where the sample lacks one)."""
    ratings = attach_sample(ratings, sample) if sample is not None and len(sample) else ratings
    for col in SAMPLE_COLUMNS:
        if col not in ratings.columns:
            ratings[col] = None
    return ratings


def _alpha_section(
    kept: pd.DataFrame,
    threshold: float,
    min_n: int,
    boot: dict[str, Any],
    results: dict[str, Any],
    rows: list[dict[str, Any]],
    caveats: list[str],
) -> None:
    """Krippendorff's alpha per rubric field, with a caveat for each below the threshold."""
    alphas = alpha_table(kept, min_units=min_n, **boot)
    results["alpha"] = alphas
    for a in alphas:
        rows.append(_est("alpha", a["dimension"], a["alpha"], a, n=a["items"], clusters=a["items"]))
        if a["alpha"] is not None and a["alpha"] < threshold:
            caveats.append(
                f"low agreement: Krippendorff's alpha of {a['dimension']} is {a['alpha']:.3f} "
                f"(< {threshold:g}); individual labels are not a stable human reference"
            )


def _spearman_section(
    singles: pd.DataFrame,
    config: ProjectConfig,
    estimates: pd.DataFrame | None,
    min_n: int,
    boot: dict[str, Any],
    results: dict[str, Any],
    rows: list[dict[str, Any]],
    caveats: list[str],
) -> None:
    """Spearman of Token-F1 with adequacy and keypoint recall per rated response, adequacy per
    Joshi class (beside its CLCG when the estimates are given) and the ceiling rule."""
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
    hv = config.study.human_validation
    ceiling = ceiling_rule(singles, classes, hv.ceiling_median, hv.ceiling_difference)
    results["ceiling"] = ceiling
    if ceiling["triggered"]:
        caveats.append(
            "ceiling rule triggered: adequacy is saturated; keypoint recall and the paired preference carry "
            "more interpretive weight"
        )
    elif ceiling["triggered"] is None:
        caveats.append(f"ceiling rule {ceiling['reason']}")


def _preference_section(
    pairs: pd.DataFrame,
    study: Any,
    min_n: int,
    results: dict[str, Any],
    rows: list[dict[str, Any]],
    caveats: list[str],
) -> None:
    """The paired preference: exact, mixed-model and annotator-bootstrap estimates."""
    if not len(pairs):
        results["preference"] = None
        caveats.append("paired preference: no pair ratings survived QC")
        return
    pref = preference_block(
        pairs,
        replicates=study.bootstrap_replicates,
        seed=study.seed,
        confidence=study.confidence,
        min_clusters=min_n,
    )
    results["preference"] = pref
    exact = {"ci_low": pref["exact_ci_low"], "ci_high": pref["exact_ci_high"]}
    m, b = pref["mixed"], pref["bootstrap"]
    rows.append(
        _est("preference_raw", "higher_preferred", pref["proportion"], exact, n=pref["decisive"],
             p=pref["p_one_sided"])
    )  # fmt: skip
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
    rows.append(
        _est("preference_bootstrap", "higher_preferred", b["estimate"], b, n=pref["decisive"],
             clusters=b["annotators"])
    )  # fmt: skip
    if pref["decisive"] == 0:
        caveats.append("paired preference: no decisive (A/B) judgment")


def _judge_section(
    singles: pd.DataFrame,
    judgements: pd.DataFrame | None,
    reference: str,
    scripts: dict[str, str],
    min_n: int,
    boot: dict[str, Any],
    results: dict[str, Any],
    rows: list[dict[str, Any]],
    caveats: list[str],
) -> None:
    """Human vs judge agreement (percent, Cohen's kappa) on the rows both labelled, pooled and per
    language and script."""
    agreement = []
    jr = judge_rows(singles, judgements if judgements is not None else pd.DataFrame(), reference)
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
    by_language, by_script, notes = kappa_by_language_and_script(jr, scripts, min_n, boot)
    results["judge_kappa_by_language"] = by_language
    results["judge_kappa_by_script"] = by_script
    caveats.extend(notes)
    for k in (*by_language, *by_script):
        group = group_label(k)
        rows.append(_est("judge_kappa", group, k["kappa"], k, n=k["n"], clusters=k.get("clusters")))
        rows.append(_est("judge_percent", group, k["percent"], {}, n=k["n"]))


def _overlap_section(
    config: ProjectConfig,
    panels: list[ErrorPanel],
    results: dict[str, Any],
    rows: list[dict[str, Any]],
    caveats: list[str],
) -> None:
    """How far the judges' errors overlap: pair correlations and the effective number of judges."""
    study = config.study
    ctx = SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=study.bootstrap_replicates,
        seed=study.seed,
        confidence=study.confidence,
        min_articles=study.min_articles,
    )
    rule_based = sorted(m.id for m in config.models.models if m.provider == "offline")
    overlap = judge_error_overlap(panels, ctx, scripts_of(config), rule_based)
    results["judge_error_correlation"] = overlap.correlations
    results["judge_effective_number"] = overlap.effective
    rows.extend(estimate_rows(overlap))
    caveats.extend(overlap.caveats)
    if not overlap.correlations:
        caveats.append(
            "judge error overlap: no response was rated by humans and labelled by two or more judges of "
            "one family"
        )


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
        "estimate": finite(estimate),
        "ci_low": finite(s.get("ci_low")),
        "ci_high": finite(s.get("ci_high")),
        "p": finite(p),
        "n": n,
        "n_clusters": clusters,
        "status": status,
        "flags": s.get("reason"),
    }


__all__ = ["AWAITING", "FIELDS", "HumanValidationResult", "run_human_validation"]
