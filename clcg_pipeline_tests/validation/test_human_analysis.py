"""The human-validation analysis: results document, Spearman, ceiling rule, judge agreement, joins."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.config import ProjectConfig, default_config_dir, load_config
from clcg_pipeline.storage import conform
from clcg_pipeline.synthetic import synthetic_human_study
from clcg_pipeline.validation.human import run_human_validation
from clcg_pipeline.validation.human._analysis import AWAITING
from clcg_pipeline.validation.human._estimands import ceiling_rule, class_adequacy, spearman_bootstrap
from clcg_pipeline.validation.human._joins import build_joins, judge_consensus, judge_rows

KEYS = ["model", "language", "doc_id", "item_id", "rep"]


def config(**human: Any) -> ProjectConfig:
    cfg = load_config(default_config_dir())
    study = cfg.study.model_copy(
        update={
            "bootstrap_replicates": 200,
            "human_validation": cfg.study.human_validation.model_copy(update=human),
        }
    )
    return cfg.model_copy(update={"study": study})


@pytest.fixture(scope="module")
def analysed() -> Any:
    annotations, sample, planted = synthetic_human_study(
        singles=150, pairs=24, annotators=50, attention_failures=5, contradictory=1, invalid=4, fast=3, seed=3
    )
    estimates = pd.DataFrame(
        {
            "estimand": ["class_raw_primary"] * 4,
            "group": ["class=1", "class=2", "class=4", "class=5"],
            "estimate": [0.20, 0.12, 0.05, None],
        }
    )
    return run_human_validation(config(), annotations, sample, estimates=estimates), planted


def test_results_document_has_the_contract_keys(analysed: Any) -> None:
    result, planted = analysed
    doc = result.results
    for key in (
        "status",
        "reason",
        "simulated",
        "qc_funnel",
        "alpha",
        "spearman",
        "class_adequacy",
        "preference",
        "ceiling",
        "judge_agreement",
        "caveats",
    ):
        assert key in doc, key
    assert doc["status"] == "ok" and doc["simulated"] is True
    assert doc["caveats"][0].startswith("SIMULATED")
    steps = [r["step"] for r in doc["qc_funnel"]]
    assert steps == [
        "imported",
        "attention_check",
        "contradiction_rule",
        "item_controls",
        "speed_outliers",
        "analysed",
    ]
    assert doc["qc_funnel"][1]["excluded_annotators"] == len(planted.attention_failures)
    for r in doc["qc_funnel"]:
        assert set(r) >= {
            "step",
            "excluded_annotators",
            "excluded_ratings",
            "remaining_annotators",
            "remaining_ratings",
        }
    alpha = {a["dimension"]: a for a in doc["alpha"]}
    assert alpha["adequacy"]["level"] == "ordinal" and alpha["keypoint_recall"]["level"] == "interval"
    assert alpha["preference"]["level"] == "nominal" and alpha["adequacy"]["items"] > 0
    assert alpha["adequacy"]["ci_low"] <= alpha["adequacy"]["alpha"] <= alpha["adequacy"]["ci_high"]
    pref = doc["preference"]
    assert set(pref) >= {
        "decisive",
        "higher_preferred",
        "proportion",
        "exact_ci_low",
        "exact_ci_high",
        "p_one_sided",
        "mixed",
        "bootstrap",
    }
    assert set(pref["mixed"]) >= {
        "probability",
        "ci_low",
        "ci_high",
        "odds_ratio",
        "or_ci_low",
        "or_ci_high",
        "p_one_sided",
        "method",
    }
    assert set(doc["ceiling"]) >= {"triggered", "min_class_adequacy_median", "high_low_difference"}
    # The estimates and QC tables satisfy their data contracts.
    conform("human_validation_estimates", result.estimates)
    conform("human_qc", result.qc)
    conform("human_validation_joins", result.joins)


def test_spearman_and_class_adequacy(analysed: Any) -> None:
    doc = analysed[0].results
    sp = {(s["metric"], s["human"]): s for s in doc["spearman"]}
    # Token-F1 drives adequacy and keypoint recall in the synthetic set: strong positive association.
    assert sp[("token_f1", "adequacy")]["rho"] > 0.5 and sp[("token_f1", "keypoint_recall")]["rho"] > 0.5
    assert (
        sp[("token_f1", "adequacy")]["n"]
        == analysed[0].joins.query("kind == 'single' and qc_step == 'kept'")["task_id"].nunique()
    )
    classes = {c["joshi_class"]: c for c in doc["class_adequacy"]}
    assert classes[1]["clcg"] == 0.20 and classes[5]["clcg"] is None
    assert classes[1]["languages"] == ["ay", "gn", "ne"]
    assert ("clcg_class", "adequacy_mean") in sp and sp[("clcg_class", "adequacy_mean")]["n"] == 3


def test_max_adequacy_with_incomplete_keypoints_is_counted() -> None:
    from clcg_pipeline.validation.human._estimands import max_adequacy_incomplete

    singles = pd.DataFrame(
        {
            "task_id": ["t1", "t1", "t2", "t3", "t4"],
            "adequacy": [5, 5, 5, 4, None],
            "keypoint_recall": [0.5, 1.0, 0.75, 0.5, 0.5],
        }
    )
    out = max_adequacy_incomplete(singles)
    assert out == {"ratings": 2, "eligible_ratings": 4, "share": 0.5, "items": 2, "eligible_items": 3}


def test_spearman_bootstrap_matches_scipy_and_withholds_below_min() -> None:
    rng = np.random.default_rng(0)
    x = rng.random(80)
    y = x + rng.normal(0, 0.3, 80)
    out = spearman_bootstrap(x, y, replicates=300, seed=1, confidence=0.95, min_clusters=10)
    assert (
        out["rho"] == pytest.approx(spearmanr(x, y).statistic) and out["ci_low"] < out["rho"] < out["ci_high"]
    )
    few = spearman_bootstrap(x[:6], y[:6], replicates=50, seed=1, confidence=0.95, min_clusters=10)
    assert few["ci_low"] is None and "6 < study.min_articles" in few["reason"]


def test_awaiting_annotations_is_not_ok() -> None:
    result = run_human_validation(config(), pd.DataFrame(), pd.DataFrame())
    assert result.results["status"] == AWAITING and result.results["status"] != "ok"
    assert "annotations/inbox" in result.results["reason"] and result.results["simulated"] is False
    off = run_human_validation(config(responses=0, pairs=0), pd.DataFrame(), pd.DataFrame())
    assert off.results["status"] == "skipped"


def _singles(adequacy_by_class: dict[str, list[int]], bins: list[str]) -> pd.DataFrame:
    rows = []
    for lang, values in adequacy_by_class.items():
        for i, v in enumerate(values):
            rows.append(
                {"task_id": f"{lang}{i}", "language": lang, "adequacy": v, "quality_bin": bins[i % len(bins)]}
            )
    return pd.DataFrame(rows)


def test_ceiling_rule_both_ways() -> None:
    cfg = config()
    saturated = _singles({"en": [5, 5, 5, 4], "sw": [5, 5, 5, 5], "ay": [5, 5, 4, 5]}, ["LOW", "HIGH"])
    classes = class_adequacy(saturated, cfg, None)
    out = ceiling_rule(saturated, classes, 4.5, 0.5)
    assert out["triggered"] is True and out["min_class_adequacy_median"] == 5.0
    assert abs(out["high_low_difference"]) < 0.5
    # Study-like: medians of 4 (below 4.5) -> not triggered even though HIGH-LOW < 0.5.
    study_like = _singles({"en": [4, 4, 5, 4], "sw": [4, 4, 4, 5], "ay": [4, 3, 4, 4]}, ["LOW", "HIGH"])
    out = ceiling_rule(study_like, class_adequacy(study_like, cfg, None), 4.5, 0.5)
    assert out["triggered"] is False and out["min_class_adequacy_median"] == 4.0
    # Saturated medians but a clear HIGH-LOW separation -> not triggered either.
    separated = _singles({"en": [4, 5, 4, 5, 4, 5], "sw": [4, 5, 4, 5, 5, 5]}, ["LOW", "HIGH"])
    out = ceiling_rule(separated, class_adequacy(separated, cfg, None), 4.5, 0.5)
    assert out["min_class_adequacy_median"] >= 4.5 and out["high_low_difference"] >= 0.5
    assert out["triggered"] is False
    no_low = _singles({"en": [5, 5]}, ["HIGH"])
    out = ceiling_rule(no_low, class_adequacy(no_low, cfg, None), 4.5, 0.5)
    assert out["triggered"] is None and "no LOW or no HIGH" in out["reason"]


def _join_fixture() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    ratings = pd.DataFrame(
        [
            {
                "annotation_id": "r1",
                "task_id": "s1",
                "annotator_id": "a",
                "kind": "single",
                "model": "m",
                "language": "sw",
                "doc_id": "d1",
                "item_id": "i1",
                "rep": 1,
                "qc_step": "kept",
                "adequacy": 2,
                "primary_error_category": "contradiction",
            },
            {
                "annotation_id": "r2",
                "task_id": "s2",
                "annotator_id": "a",
                "kind": "single",
                "model": "m",
                "language": "en",
                "doc_id": "d1",
                "item_id": "i1",
                "rep": 1,
                "qc_step": "kept",
                "adequacy": 5,
                "primary_error_category": "correct",
            },
            {
                "annotation_id": "r3",
                "task_id": "s1",
                "annotator_id": "b",
                "kind": "single",
                "model": "m",
                "language": "sw",
                "doc_id": "d1",
                "item_id": "i1",
                "rep": 1,
                "qc_step": "kept",
                "adequacy": 3,
                "primary_error_category": "partial_or_omission",
            },
        ]
    )
    predictions = pd.DataFrame(
        {
            "model": "m",
            "language": ["sw", "sw", "en"],
            "doc_id": "d1",
            "item_id": "i1",
            "rep": [0, 1, 1],
            "context_scope": "full_body",
            "answer": ["rep0 answer", "rep1 answer", "english answer"],
            "status": "ok",
            "call_id": ["c0", "c1", "c2"],
        }
    )
    scores = predictions[["model", "language", "doc_id", "item_id", "rep", "context_scope"]].assign(
        token_f1=[0.1, 0.4, 0.9], status="ok"
    )
    diagnostic = pd.DataFrame({"pair_id": ["P1"], "rep": [1]})
    judgements = pd.DataFrame(
        {
            "pair_id": "P1",
            "side": ["en", "target", "en", "target"],
            "judge": ["j1", "j1", "j2", "j2"],
            "label": ["correct", "contradiction", "correct", "partial_or_omission"],
            "collapsed_label": ["correct", "wrong_answer", "correct", "partial_or_omission"],
            "semantic_error": [False, True, False, True],
            "status": "ok",
            "model": "m",
            "language": "sw",
            "doc_id": "d1",
            "item_id": "i1",
        }
    )
    return ratings, predictions, scores, judgements, diagnostic


def test_joins_match_on_every_key() -> None:
    from clcg_pipeline.validation.human._joins import with_rep

    ratings, predictions, scores, judgements, diagnostic = _join_fixture()
    joined = build_joins(
        ratings,
        predictions,
        scores,
        with_rep(judgements, diagnostic),
        reference="en",
        context_scope="full_body",
    )
    conform("human_validation_joins", joined)
    # One row per rating x judge; rep 1 (not rep 0) is joined; the English rating gets the en side.
    assert len(joined) == 6
    r1 = joined[joined["annotation_id"] == "r1"].set_index("judge")
    assert r1.loc["j1", "answer"] == "rep1 answer" and r1.loc["j1", "score_token_f1"] == 0.4
    assert (
        r1.loc["j1", "judge_label"] == "contradiction"
        and r1.loc["j2", "judge_label"] == "partial_or_omission"
    )
    r2 = joined[joined["annotation_id"] == "r2"].set_index("judge")
    assert r2.loc["j1", "answer"] == "english answer" and r2.loc["j1", "judge_label"] == "correct"
    # A rating whose response no judge labelled keeps its row, with no judge.
    lonely = ratings.assign(rep=[2, 2, 2])
    joined = build_joins(
        lonely,
        predictions,
        scores,
        with_rep(judgements, diagnostic),
        reference="en",
        context_scope="full_body",
    )
    assert len(joined) == 3 and joined["judge"].isna().all() and joined["answer"].isna().all()


def test_judge_agreement_rows_use_the_collapsed_human_facing_categories() -> None:
    from clcg_pipeline.validation.human._joins import with_rep

    ratings, _, _, judgements, diagnostic = _join_fixture()
    rows = judge_rows(ratings, with_rep(judgements, diagnostic), "en")
    got = {(r.annotation_id, r.judge): (r.human, r.judge_label) for r in rows.itertuples()}
    # The human's fine "contradiction" collapses to wrong_answer, as the judge's label does.
    assert got[("r1", "j1")] == ("wrong_answer", "wrong_answer")
    assert got[("r3", "j2")] == ("partial_or_omission", "partial_or_omission")
    assert got[("r2", "j1")] == ("correct", "correct") and len(rows) == 6
    # Judges agree on r2 (correct/correct) only; the human confirms it.
    consensus = judge_consensus(rows)
    assert consensus == {"judges": 2, "ratings": 3, "judges_agree": 1, "human_confirms": 1, "share": 1.0}


def test_joins_are_a_catalog_view_with_a_named_query(tmp_path: Any) -> None:
    from clcg_pipeline.storage import build_catalog, partition_dir, run_named_query, write_frame
    from clcg_pipeline.validation.human._joins import with_rep

    ratings, predictions, scores, judgements, diagnostic = _join_fixture()
    joined = build_joins(
        ratings,
        predictions,
        scores,
        with_rep(judgements, diagnostic),
        reference="en",
        context_scope="full_body",
    )
    joined["simulated"] = False
    data = tmp_path / "data"
    write_frame(
        partition_dir(data, "human_validation_joins", None) / "data.parquet",
        joined,
        contract="human_validation_joins",
    )
    counts = build_catalog(data)
    assert counts["human_validation_joins"] == 6
    out = run_named_query(data / "clcg.duckdb", "human_vs_judge", {}, data_dir=data).set_index("judge")
    # j1: r1 sw contradiction~wrong_answer (human "contradiction": no), r3 partial vs wrong_answer (no),
    # r2 en correct~correct (yes) -> 1 of 3; j2: r1 no, r3 partial~partial yes, r2 yes -> 2 of 3.
    assert out.loc["j1", "agree"] == 1 and out.loc["j2", "agree"] == 2 and out.loc["j1", "ratings"] == 3


def test_asset_check_warns_while_awaiting_and_on_simulated_ratings() -> None:
    from clcg_pipeline.validation.human.assets import human_validation_check

    awaiting = run_human_validation(config(), pd.DataFrame(), pd.DataFrame()).results
    check = human_validation_check(awaiting)
    assert not check.passed and check.description.startswith(AWAITING)
    doc = {"status": "ok", "reason": None, "simulated": True, "ratings": 10, "annotators": 3, "items": 4}
    check = human_validation_check(doc)
    assert not check.passed and "SIMULATED" in check.description
    assert human_validation_check({**doc, "simulated": False}).passed


def test_few_articles_is_a_caveat(analysed: Any) -> None:
    doc = analysed[0].results
    assert doc["articles"] == 40 and not any("article clustering" in c for c in doc["caveats"])
    annotations, sample, _ = synthetic_human_study(
        singles=30, pairs=0, annotators=12, attention_failures=1, contradictory=0, invalid=0, fast=0, seed=4
    )
    sample["doc_id"] = "d00"
    doc = run_human_validation(config(), annotations, sample).results
    assert doc["articles"] == 1 and any(
        "1 article(s) (< study.min_articles = 10)" in c for c in doc["caveats"]
    )


def test_few_articles_is_decided_by_the_suites_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: the caveat asks ``analysis.withheld_reason`` (no comparison of its own)."""
    from clcg_pipeline.validation.human import _analysis

    asked: list[tuple[object, ...]] = []

    def rule(*args: object) -> str | None:
        asked.append(args)
        return None

    monkeypatch.setattr(_analysis, "withheld_reason", rule)
    annotations, sample, _ = synthetic_human_study(
        singles=30, pairs=0, annotators=12, attention_failures=1, contradictory=0, invalid=0, fast=0, seed=4
    )
    sample["doc_id"] = "d00"
    doc = run_human_validation(config(), annotations, sample).results
    assert asked[0][1:] == (1, 10) and not any("article clustering" in c for c in doc["caveats"])
    assert withheld_reason(0.0, 1, 10) is not None  # the real rule would have said it


def test_everything_excluded_is_empty_not_ok() -> None:
    annotations, sample, _ = synthetic_human_study(
        singles=12, pairs=0, annotators=4, attention_failures=4, contradictory=0, invalid=0, fast=0, seed=2
    )
    result = run_human_validation(config(), annotations, sample)
    doc = result.results
    assert doc["status"] == "empty" and "removed by the QC funnel" in doc["reason"]
    assert doc["qc_funnel"][-1]["remaining_ratings"] == 0 and doc["alpha"] == [] and doc["preference"] is None
    assert len(result.joins) == 36 and set(result.joins["qc_step"]) == {"attention_check"}
