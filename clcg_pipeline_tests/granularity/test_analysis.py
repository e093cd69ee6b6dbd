"""The granularity analysis on crafted task scores with known effects (granularity/_analysis/)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis import (
    NO_HUMAN_RATINGS,
    analyse_granularity,
    cloze_error_shares,
    human_judge_correlation,
    judge_agreement,
    ordinal_alpha,
    prompt_tokens_by_task,
)
from clcg_pipeline.synthetic import synthetic_task_scores
from clcg_pipeline_tests.granularity.analysis_world import granularity_config, one

LANGS = ("en", "pt", "sw", "fon")
REPS = 100


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return granularity_config()


GAPS = {"pt": 0.02, "sw": 0.1, "fon": 0.2}
MIDDLE = {"en": 0.02, "pt": 0.02, "sw": 0.05, "fon": 0.2}


@pytest.fixture(scope="module")
def noisy() -> pd.DataFrame:
    """15 documents, noisy scores, the middle region penalised most in Fon (low resource)."""
    return synthetic_task_scores(LANGS, n_documents=15, gaps=GAPS, middle_penalty=MIDDLE, noise=0.1, seed=2)


@pytest.fixture(scope="module")
def noisy_results(noisy: pd.DataFrame, config: ProjectConfig) -> dict[str, Any]:
    return analyse_granularity(noisy, config, replicates=REPS).results


def test_known_gaps_scores_and_no_context_drop(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(LANGS, models=("m1", "m2"), n_documents=12, gaps=GAPS)
    out = analyse_granularity(scores, config, replicates=REPS)
    res = out.results
    assert res["status"] == "ok"
    word = one(res["scores"], task="cloze", region="all", position="all", language="en", model="m1")
    assert word["estimate"] == pytest.approx(0.7) and word["n_documents"] == 12
    for iso, gap in GAPS.items():
        for gran in ("word", "sentence", "paragraph", "document"):
            row = one(res["gaps"], granularity=gran, region="all", position="all", language=iso, model="all")
            assert row["gap"] == pytest.approx(gap), (iso, gran)
            assert row["identifiable"] and row["ci_low"] == pytest.approx(gap)
    # Groups pool their languages' rows; "targets" is H1's micro (the baseline left out).
    assert one(res["gaps"], granularity="word", region="all", position="all", language="low", model="all")[
        "gap"
    ] == pytest.approx(0.2)
    targets = one(
        res["gaps"], granularity="word", region="all", position="all", language="targets", model="all"
    )
    assert targets["gap"] == pytest.approx(0.15) and targets["joshi_class"] is None
    assert (
        one(res["gaps"], granularity="word", region="all", position="all", language="sw", model="m2")[
            "joshi_class"
        ]
        == 2
    )
    # Translation has no English row: scored, never in a gap, and said so.
    assert any(r["task"] == "translation" for r in res["scores"])
    assert not any("translation" in r["tasks"] for r in res["gaps"])
    assert any("translation" in c for c in res["caveats"])
    drop = one(res["no_context"], task="cloze", language="sw", model="m1")
    assert drop["drop"] == pytest.approx(0.3) and drop["with_context"] == pytest.approx(0.6)
    assert any("not directly comparable" in c or "never raw levels" in c for c in res["caveats"])
    est = out.estimates
    assert set(est["estimand"]) >= {"score", "gap", "no_context_drop", "middle_minus_edges_gap"}


def _direct_gap(frame: pd.DataFrame, lang: str, gran: str) -> float:
    sub = frame[(frame["context"] == "full") & (frame["granularity"] == gran)]
    return float(sub[sub["language"] == "en"]["score"].mean() - sub[sub["language"] == lang]["score"].mean())


def test_paired_gap_equals_difference_of_means_on_a_balanced_design(
    noisy: pd.DataFrame, noisy_results: dict[str, Any]
) -> None:
    for iso in ("pt", "sw", "fon"):
        for gran in ("word", "sentence", "paragraph"):
            row = one(
                noisy_results["gaps"],
                granularity=gran,
                region="all",
                position="all",
                language=iso,
                model="all",
            )
            assert row["gap"] == pytest.approx(_direct_gap(noisy, iso, gran), abs=1e-12)


def test_unbalanced_design_pairs_within_task(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(LANGS, n_documents=10, gaps=GAPS, noise=0.2, seed=4)
    # Swahili misses half the cloze tasks: the paired gap compares only the tasks it answered.
    cloze = scores[(scores["task"] == "cloze") & (scores["context"] == "full")]
    dropped = cloze[(cloze["language"] == "sw")].iloc[::2].index
    scores = scores.drop(index=dropped)
    res = analyse_granularity(scores, config, replicates=5).results  # point estimates only
    sub = scores[(scores["task"] == "cloze") & (scores["context"] == "full")]
    en = sub[sub["language"] == "en"].set_index("task_id")["score"]
    sw = sub[sub["language"] == "sw"].set_index("task_id")["score"]
    expected = float((en.loc[sw.index] - sw).mean())
    row = one(res["gaps"], granularity="sentence", region="all", position="all", language="sw", model="all")
    assert row["gap"] == pytest.approx(expected, abs=1e-12)
    assert row["gap"] != pytest.approx(_direct_gap(scores, "sw", "sentence"), abs=1e-6)


def test_intervals_withheld_below_min_articles_and_present_above(
    noisy: pd.DataFrame, noisy_results: dict[str, Any], config: ProjectConfig
) -> None:
    few = noisy[noisy["doc_id"].isin([f"doc{d:03d}" for d in range(6)])]
    res = analyse_granularity(few, config, replicates=REPS).results
    row = one(res["gaps"], granularity="word", region="all", position="all", language="sw", model="all")
    assert row["gap"] is not None and row["ci_low"] is None and row["ci_high"] is None
    assert not row["identifiable"] and "too few documents: 6 < study.min_articles = 10" in row["reason"]
    # Issue 34: the panel's caveat gives the rule's reason, the rows' words, once.
    rule = withheld_reason(0.0, 6, 10).replace("articles", "documents", 1)
    assert (
        row["reason"] == rule
        and sum(c.startswith(f"{rule}; every interval is withheld") for c in res["caveats"]) == 1
    )
    row = one(
        noisy_results["gaps"], granularity="word", region="all", position="all", language="sw", model="all"
    )
    assert row["identifiable"] and row["n_documents"] == 15 and row["ci_low"] < row["gap"] < row["ci_high"]


def test_middle_loses_most_and_more_in_low_resource_languages(noisy_results: dict[str, Any]) -> None:
    res = noisy_results
    rows = res["middle_vs_edges"]
    low = one(rows, granularity="word", axis="region", language_group="low")
    assert low["score_contrast"]["estimate"] == pytest.approx(-0.22, abs=0.03)  # the middle scores lowest
    assert low["gap_contrast"]["estimate"] == pytest.approx(0.18, abs=0.03)  # and loses most to English
    assert low["gap_contrast"]["ci_low"] > 0
    diff = one(rows, granularity="word", axis="region", language_group="low minus high")
    assert (
        diff["gap_contrast"]["estimate"] == pytest.approx(0.18, abs=0.03)
        and diff["gap_contrast"]["ci_low"] > 0
    )
    # Along paragraph position (pooled over regions) nothing was planted.
    flat = one(rows, granularity="word", axis="position", language_group="low")
    assert flat["gap_contrast"]["ci_low"] < 0 < flat["gap_contrast"]["ci_high"]
    curve = one(
        res["position_curve"], granularity="word", region="middle", position="middle", language_group="low"
    )
    assert curve["gap"] == pytest.approx(0.38, abs=0.05)
    heat = one(res["heatmap"], granularity="word", region="middle", language_group="low")
    assert heat["gap"] == pytest.approx(0.38, abs=0.05)


def test_middle_contrast_not_identifiable_without_every_position(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(LANGS, n_documents=3, gaps=GAPS, noise=0.1)
    scores = scores[scores["region"] != "middle"]
    rows = analyse_granularity(scores, config, replicates=5).results["middle_vs_edges"]
    low = one(rows, granularity="word", axis="region", language_group="low")
    assert low["gap_contrast"]["estimate"] is None and not low["gap_contrast"]["identifiable"]
    assert "not all present" in low["gap_contrast"]["reason"]


def test_skipped_when_disabled_and_empty_when_nothing_scored(config: ProjectConfig) -> None:
    off = config.model_copy(
        update={
            "study": config.study.model_copy(
                update={"granularity": config.study.granularity.model_copy(update={"enabled": False})}
            )
        }
    )
    scores = synthetic_task_scores(LANGS, n_documents=2)
    skipped = analyse_granularity(scores, off)
    assert skipped.results["status"] == "skipped" and "enabled is false" in skipped.results["reason"]
    assert skipped.estimates.empty and skipped.results["gaps"] == []
    empty = analyse_granularity(pd.DataFrame(), config)
    assert empty.results["status"] == "empty" and "nothing scored" in empty.results["reason"]
    assert empty.results["caveats"] == [empty.results["reason"]]


def test_a_missing_column_is_named(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(LANGS, n_documents=2).drop(columns=["region"])
    with pytest.raises(ValueError, match=r"task_scores: missing column\(s\) \['region'\]"):
        analyse_granularity(scores, config, replicates=5)


def test_failed_predictions_score_zero(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(LANGS, n_documents=2)
    scores.loc[(scores["language"] == "sw") & (scores["task"] == "cloze"), "status"] = "unparseable"
    res = analyse_granularity(scores, config, replicates=5).results
    row = one(res["scores"], task="cloze", region="all", position="all", language="sw", model="m1")
    assert row["estimate"] == 0.0


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", p. 8: four observers, twelve
# units, ordinal alpha 0.815 (the krippendorff package reproduces it in its docstring).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]


def _judgements(matrix: list[list[float]]) -> pd.DataFrame:
    rows = []
    for j, ratings in enumerate(matrix):
        for u, value in enumerate(ratings):
            if np.isfinite(value):
                rows.append(
                    {
                        "model": "m1",
                        "language": "sw",
                        "doc_id": "d1",
                        "task_id": f"t{u}",
                        "context": "full",
                        "rep": 0,
                        "kind": "fill",
                        "judge": f"j{j}",
                        "total": value,
                        "status": "ok",
                    }
                )
    return pd.DataFrame(rows)


def test_judge_alpha_matches_the_published_value_and_the_krippendorff_package() -> None:
    import krippendorff

    agreement = judge_agreement(_judgements(KRIPPENDORFF_2011))
    assert agreement is not None
    assert agreement["alpha_ordinal"] == pytest.approx(0.815, abs=5e-4)
    assert agreement["judges"] == ["j0", "j1", "j2", "j3"] and agreement["n"] == 11
    assert agreement["icc"] is None and "pingouin" in agreement["icc_reason"]
    # Unit 7 (1, 2, 3, 4) spreads 3; the other 10 multi-rated units: 0,1,0,0,0,3,0,1,0,0,0.
    assert agreement["spread_mean"] == pytest.approx((1 + 3 + 1) / 11)
    rng = np.random.default_rng(5)
    data = rng.integers(0, 21, size=(3, 40)).astype(float)
    data[0, ::2] = data[1, ::2]  # some agreement
    data[2, ::7] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert ordinal_alpha(data.T) == pytest.approx(expected, abs=1e-12)


def test_cloze_error_shares_and_human_correlation() -> None:
    judgements = pd.DataFrame(
        {
            "judge": ["a", "a", "a", "a", "b", "b"],
            "kind": ["cloze_error"] * 6,
            "label": ["M1", "M1", "M2", None, "M3", "M3"],
            "tags": [["S1", "S3"], ["S3"], [], None, ["S7"], None],
            "status": ["ok", "ok", "ok", "ok", "ok", "unparseable"],
        }
    )
    shares = cloze_error_shares(judgements)
    assert one(shares, judge="a", label="M1")["share"] == pytest.approx(2 / 3)
    assert one(shares, judge="a", label="S3")["n"] == 2 and one(shares, judge="b", label="M3")["n"] == 1
    corr, reason = human_judge_correlation(_judgements(KRIPPENDORFF_2011), None)
    assert corr is None and reason == NO_HUMAN_RATINGS
    human = pd.DataFrame({"task_id": [f"t{u}" for u in range(12)], "total": np.arange(12.0)})
    human = human.assign(model="m1", language="sw", doc_id="d1", context="full", rep=0)
    corr, reason = human_judge_correlation(_judgements(KRIPPENDORFF_2011), human)
    assert reason is None and corr is not None and corr["n"] == 12 and -1 <= corr["pearson_r"] <= 1


def test_prompt_tokens_by_task() -> None:
    calls = pd.DataFrame(
        {
            "call_id": ["c1", "c2", "c3", "c3"],
            "prompt_version": ["gran-cloze-v1", "gran-cloze-v1", "fill-judge-v1", "fill-judge-v1"],
            "task": ["cloze", "cloze", None, None],
            "input_tokens": [1000, 3000, 500, 500],
            "output_tokens": [5, 5, 40, 40],
        }
    )
    table = prompt_tokens_by_task(calls, None)
    cloze = one(table, task="cloze")
    assert (
        cloze["calls"] == 2 and cloze["prompt_tokens_total"] == 4000 and cloze["prompt_tokens_mean"] == 2000
    )
    assert one(table, task="fill-judge")["calls"] == 1


def test_the_asset_check_warns_when_skipped_empty_or_too_few_documents(config: ProjectConfig) -> None:
    import dagster as dg

    from clcg_pipeline.granularity.assets import granularity_results_check

    off = config.model_copy(
        update={
            "study": config.study.model_copy(
                update={"granularity": config.study.granularity.model_copy(update={"enabled": False})}
            )
        }
    )
    for doc in (
        analyse_granularity(pd.DataFrame(), off).results,
        analyse_granularity(pd.DataFrame(), config).results,
        analyse_granularity(synthetic_task_scores(LANGS, n_documents=2), config, replicates=5).results,
    ):
        check = granularity_results_check(doc)
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN, doc["status"]
    assert (
        "skipped" in granularity_results_check(analyse_granularity(pd.DataFrame(), off).results).description
    )
