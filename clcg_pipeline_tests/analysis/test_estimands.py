"""Issue 9 / issue 8 fixes of the estimator suite and of study_results.json."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import run_suite
from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.analysis._definitions import DEFINITIONS
from clcg_pipeline.analysis._gaps import Roles
from clcg_pipeline.analysis._mixed import cell_means, fit_crossed, fit_crossed_statsmodels
from clcg_pipeline.config import ModelsConfig, ModelSpec, StudyConfig
from clcg_pipeline.storage import conform, jsonable
from clcg_pipeline.synthetic import synthetic_articles, synthetic_config, synthetic_scores

ROOT = Path(__file__).resolve().parents[2]
B = 60


@pytest.fixture(scope="module")
def cfg(project, small_langs):
    return synthetic_config(project, n_models=2).model_copy(
        update={"languages": small_langs, "study": StudyConfig(bootstrap_replicates=B)}
    )


def _scores(cfg, n_articles: int = 14, **kw) -> pd.DataFrame:
    opts = {"n_models": 2, "n_stability": 0, "items_per_level": 2, "human_per_article": 2, "seed": 5}
    return synthetic_scores(cfg.languages, n_articles=n_articles, **{**opts, **kw})


@pytest.fixture(scope="module")
def res(cfg):
    return run_suite(_scores(cfg), cfg, articles=synthetic_articles(14, seed=5))


def _band(scores: pd.DataFrame) -> pd.DataFrame:
    return scores[
        (scores.context_scope == "full_body")
        & (scores.item_source == "llm")
        & scores.level.isin(["L3", "L4", "L5"])
    ]


def test_one_n_per_estimand_counts_rows_entering_the_contrast(res, cfg):
    band = _band(_scores(cfg))
    est = res.estimates.set_index(["estimand", "group"])
    en = band.language == "en"
    for iso in ("sw", "am", "fon"):
        row = est.loc[("clcg_language", iso)]
        assert row.n == int((en | (band.language == iso)).sum())
        assert row.n_articles == band.loc[en | (band.language == iso), "doc_id"].nunique()
        assert res.results["h1"]["by_language"][iso]["n"] == row.n
    for model in ("model-a", "model-b"):
        sub = band[(band.model == model) & band.language.isin(["en", "pt"])]
        assert est.loc[("pt_gap_model", model)].n == len(sub)
    # Identical estimands carry identical counts: class 0 is Fon alone.
    fon, cls0 = est.loc[("clcg_language", "fon")], est.loc[("class_raw_primary", "class=0")]
    for col in ("estimate", "ci_low", "ci_high", "n", "n_articles", "valid_replicates"):
        assert fon[col] == cls0[col]


def test_too_few_articles_is_not_identifiable_and_leaves_the_bh_family(cfg):
    res = run_suite(_scores(cfg, n_articles=3), cfg, articles=synthetic_articles(3, seed=5))
    h1 = res.results["h1"]["h1_micro"]
    assert h1["identifiable"] is False and "too few articles: 3 < study.min_articles = 10" in h1["reason"]
    assert h1["ci_low"] is None and h1["p"] is None and h1["estimate"] is not None
    family = res.results["multiplicity"]
    assert not any(t["reject"] for t in family["tests"])
    assert "h1_micro/all" in family["not_available"]
    row = res.estimates.set_index(["estimand", "group"]).loc[("h1_micro", "all")]
    assert row.identifiable == False and row.status.startswith("not identifiable: too few articles")  # noqa: E712
    assert any("too few articles" in w for w in res.results["warnings"])
    assert res.results["mixed_effects"]["h1"]["status"].startswith("not identifiable: too few articles")


def test_smallest_attainable_p_is_labelled_a_bound(cfg):
    scores = _scores(cfg, gap_scale=0.2, noise=0.05)
    res = run_suite(scores, cfg, replicates=B)
    h1 = res.results["h1"]["h1_micro"]
    assert h1["p"] == pytest.approx(1 / (B + 1))
    assert h1["p_bound"] is True and any("p <=" in f for f in h1["flags"])
    assert res.results["estimands"]["h1_micro/all"]["p_bound"] is True
    assert any("smallest the bootstrap can give" in w for w in res.results["warnings"])


def test_valid_replicates_one_rule_rare_language(cfg):
    scores = _scores(cfg, n_articles=12)
    # Amharic only in article 1: replicates that do not draw it lack a macro component.
    scores = scores[(scores.language != "am") | (scores.doc_id == "1")]
    res = run_suite(scores, cfg, replicates=B)
    macro = res.results["h1"]["macro"]
    drawn = (1 - 1 / 12) ** 12  # share of replicates expected to miss article 1
    assert 0 < macro["valid_replicates"] < B
    assert abs((B - macro["valid_replicates"]) / B - drawn) < 0.25
    assert any("bootstrap replicates valid" in f for f in macro["flags"])
    # the pooled micro has no missing component and keeps every replicate
    assert res.results["h1"]["h1_micro"]["valid_replicates"] == B


def test_model_without_cutoff_listed_in_h2_by_model(cfg):
    models = ModelsConfig(
        models=[
            ModelSpec(
                id="model-a", provider="offline", model="synthetic", knowledge_cutoff=dt.date(2023, 6, 1)
            ),
            ModelSpec(id="model-b", provider="offline", model="synthetic"),
        ]
    )
    c = cfg.model_copy(update={"models": models})
    res = run_suite(_scores(cfg), c, articles=synthetic_articles(14, seed=5), replicates=B)
    entry = res.results["h2"]["by_model"]["model-b"]
    assert entry["identifiable"] is False and "knowledge_cutoff" in entry["reason"]
    assert any("model-b" in w and "knowledge_cutoff" in w for w in res.results["warnings"])


def test_estimate_outside_its_interval_is_flagged():
    ctx = SuiteContext(config=None, roles=Roles("en", "pt", ()), replicates=2000, seed=42, confidence=0.95)  # type: ignore[arg-type]
    out = ctx.qualify({"estimate": 0.655, "ci_low": 0.664, "ci_high": 0.949, "p": 0.01}, sided=None)
    assert any("outside its own percentile interval" in f for f in out["flags"])
    inside = ctx.qualify({"estimate": 0.7, "ci_low": 0.664, "ci_high": 0.949}, sided=None)
    assert inside["flags"] == []


def test_non_converged_mixed_model_stays_flagged(cfg, monkeypatch):
    import clcg_pipeline.analysis._mixed as mixed

    real = mixed.fit_crossed

    def not_converged(*args, **kwargs):
        out = real(*args, **kwargs)
        return {**out, "converged": False, "status": "not converged: no support"}

    monkeypatch.setattr(mixed, "fit_crossed", not_converged)
    res = run_suite(_scores(cfg), cfg, articles=synthetic_articles(14, seed=5), replicates=B)
    row = res.estimates.set_index(["estimand", "group"]).loc[("mixed_h1", "all")]
    assert row.status == "not converged: no support" and "gives no support" in row["flags"]
    assert res.results["estimands"]["mixed_h1/all"]["status"] == "not converged: no support"
    assert "mixed_h2/all" in res.results["multiplicity"]["not_available"]


def test_context_gain_by_class_lists_only_languages_with_data(cfg):
    scores = _scores(cfg)
    res = run_suite(scores[scores.language != "am"], cfg, replicates=B)
    by_class = res.results["context_gain"]["by_class"]
    assert by_class["2"]["languages"] == ["sw"]
    assert by_class["4"]["languages"] == ["pt"]  # Portuguese is class 4
    gain = res.results["context_gain"]["by_language"]
    assert by_class["4"]["gain"] == pytest.approx(gain["pt"]["gain"])


def test_context_gain_class_is_the_mean_of_its_language_gains(cfg):
    """Like every class result (issue 9: class 4 = mean of Basque 0.091 and Portuguese 0.087).

    Amharic keeps the selector items of two articles only, so a mean over the class's pooled
    pairs would weight Swahili more than Amharic.
    """
    scores = _scores(cfg)
    few = (scores.language != "am") | scores.doc_id.isin(["1", "2"])
    res = run_suite(scores[few], cfg, replicates=B)
    gain = res.results["context_gain"]["by_language"]
    assert gain["am"]["n_pairs"] < gain["sw"]["n_pairs"]
    cls2 = res.results["context_gain"]["by_class"]["2"]
    assert cls2["languages"] == ["sw", "am"]
    assert cls2["gain"] == pytest.approx((gain["sw"]["gain"] + gain["am"]["gain"]) / 2, abs=1e-15)
    row = res.estimates.set_index(["estimand", "group"]).loc[("context_gain_class", "class=2")]
    assert row.estimate == cls2["gain"]


def test_h2_by_class_lists_only_languages_with_data(cfg):
    scores = _scores(cfg)
    res = run_suite(
        scores[scores.language != "am"], cfg, articles=synthetic_articles(14, seed=5), replicates=B
    )
    by_class = res.results["h2"]["by_class_sensitivity"]
    assert by_class["2"]["languages"] == ["sw"]
    assert by_class["4"]["languages"] == ["pt"]


def test_metric_sensitivity_side_by_side_and_semsim_not_computed(res, cfg):
    ms = res.results["metric_sensitivity"]["metrics"]
    assert ms["token_f1"]["h1_micro"]["estimate"] == res.results["h1"]["h1_micro"]["estimate"]
    assert ms["rouge_l"]["computed"] is True and ms["rouge_l"]["h1_micro"]["estimate"] is not None
    assert ms["semsim"]["computed"] is False and "study.semsim" in ms["semsim"]["reason"]
    assert "h1_micro_metric/semsim" not in res.results["estimands"]
    scores = _scores(cfg)
    scores["semsim"] = scores["token_f1"] * 0.5
    again = run_suite(scores, cfg, replicates=B)
    sem = again.results["metric_sensitivity"]["metrics"]["semsim"]
    assert sem["h1_micro"]["estimate"] == pytest.approx(0.5 * res.results["h1"]["h1_micro"]["estimate"])


def test_results_explain_themselves(res):
    doc = jsonable(res.results)
    emitted = set(res.estimates["estimand"])
    assert emitted <= set(doc["definitions"]) <= set(DEFINITIONS)
    page = (ROOT / "docs" / "ESTIMANDS.md").read_text()
    documented = set(re.findall(r"^### `([a-z0-9_]+)`", page, flags=re.M))
    assert set(DEFINITIONS) <= documented, sorted(set(DEFINITIONS) - documented)
    sections = dict(re.findall(r"(?ms)^### `([a-z0-9_]+)`\n(.*?)(?=^### |\Z)", page))
    for name, d in DEFINITIONS.items():  # the page says what the JSON says
        for key, label in (("direction", "direction"), ("sided", "p"), ("n", "n")):
            assert f"- {label}: {d[key]}" in sections[name], (name, key)
    for d in doc["definitions"].values():
        assert {"definition", "direction", "sided", "metric"} <= set(d)
    entry = doc["estimands"]["h1_micro/all"]
    for key in ("estimate", "ci_low", "ci_high", "p", "p_adj", "p_bound", "n", "n_articles", "identifiable"):
        assert key in entry
    assert entry["metric"] == "token_f1" and entry["sided"].startswith("one-sided")
    s = doc["settings"]
    assert [m["id"] for m in s["models"]] == ["model-a", "model-b"]
    assert {"id", "provider", "model", "knowledge_cutoff"} <= set(s["models"][0])
    assert s["sources"] and s["sources"][0]["role"] == "primary"
    assert s["languages_with_data"] == ["en", "pt", "sw", "am", "fon"] and s["languages_without_data"] == []
    assert s["code_version"]["package"]
    assert dt.datetime.fromisoformat(s["generated_at"]).tzinfo is not None
    assert doc["languages_without_data"] == [] and doc["excluded_versions"] == []
    conform("estimates", res.estimates)


def test_nothing_scored_says_so(cfg):
    res = run_suite(pd.DataFrame(), cfg, replicates=B)
    doc = jsonable(res.results)
    assert doc["h1"]["identifiable"] is False and "no scored rows at all" in doc["h1"]["reason"]
    assert any("no scored rows" in w for w in doc["warnings"])
    assert [e["iso"] for e in doc["languages_without_data"]] == ["en", "pt", "sw", "am", "fon"]
    assert doc["excluded_versions"] == []
    json.dumps(doc, allow_nan=False)


def _belebele(cfg, n_articles: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    shift = {"en": 0.0, "pt": 0.05, "sw": 0.1, "am": 0.2, "fon": 0.3}
    for d in range(n_articles):
        for lang, s in shift.items():
            for m in ("model-a", "model-b"):
                for q in range(4):
                    acc = float(rng.random() < 0.9 - s)
                    rows.append((m, lang, f"b{d}", f"b{d}-q{q}", 0, "full_body", "MC", "belebele", acc, "ok"))
    cols = ["model", "language", "doc_id", "item_id", "rep", "context_scope", "level", "item_source"]
    frame = pd.DataFrame(rows, columns=[*cols, "accuracy", "status"])
    frame["token_f1"] = np.nan
    frame["exact_match"] = frame["accuracy"]
    return frame


def test_belebele_scores_run_the_replication(res, cfg):
    again = run_suite(_scores(cfg), cfg, replication_scores=_belebele(cfg), replicates=B)
    rep = again.results["replication"]
    assert rep["band"]["item_source"] == "belebele" and rep["band"]["metric"] == "accuracy"
    assert rep["band"]["levels"] == ["MC"] and rep["n_rows"] > 0
    assert rep["spearman"]["n"] == 3 and rep["spearman"]["estimate"] is not None
    assert rep["languages"] == ["sw", "am", "fon"]


def test_replication_without_common_languages_is_not_a_silent_number(cfg):
    other = _belebele(cfg)
    other = other[other.language.isin(["en", "sw"])]
    res = run_suite(_scores(cfg), cfg, replication_scores=other, replicates=B)
    row = res.estimates.set_index(["estimand", "group"]).loc[("replication_spearman", "languages")]
    assert pd.isna(row.estimate) and row.identifiable == False  # noqa: E712
    assert "not identifiable" in res.results["replication"]["status"]


def test_fast_mixed_fit_matches_statsmodels():
    rng = np.random.default_rng(0)
    n_art, models = 40, ["m1", "m2", "m3"]
    art = rng.normal(0, 0.1, n_art)
    mod = rng.normal(0, 0.05, len(models))
    rows = []
    for a in range(n_art):
        for j, m in enumerate(models):
            for eng in (0, 1):
                if (a + j) % 7 == 0 and eng == 0:
                    continue  # unbalanced
                rows.append((f"d{a}", m, eng, 0.5 + 0.08 * eng + art[a] + mod[j] + rng.normal(0, 0.05)))
    cells = cell_means(
        pd.DataFrame(rows, columns=["doc_id", "model", "english", "y"]), ["doc_id", "model", "english"]
    )
    fast = fit_crossed(cells, "y ~ english", "english")
    slow = fit_crossed_statsmodels(cells, "y ~ english", "english")
    assert fast["converged"] and slow["converged"]
    assert fast["estimate"] == pytest.approx(slow["estimate"], rel=1e-6)
    assert fast["se"] == pytest.approx(slow["se"], rel=1e-3)
    for name in ("article", "model"):
        assert fast["variance_components"][name] == pytest.approx(slow["variance_components"][name], rel=1e-2)


def test_an_exact_fit_has_no_interval_and_stays_json() -> None:
    """One model scoring every cell alike (a rule-based reader on a synthetic corpus): the
    fixed effects' covariance is 0, so no standard error exists. The fit says so
    and leaves se, the interval and p out; the NaN it used to give failed study_results.json."""
    cells = pd.DataFrame(
        {
            "doc_id": [f"d{i}" for i in range(12) for _ in (0, 1)],
            "model": "m",
            "english": [1, 0] * 12,
            "y": 1.0,
        }
    )
    fit = fit_crossed(cells, "y ~ english", "english")
    assert fit["estimate"] == pytest.approx(0.0)
    assert fit["se"] is None and fit["ci_low"] is None and fit["ci_high"] is None and fit["p"] is None
    assert not fit["converged"]
    assert any("standard error undefined" in w for w in fit["warnings"])
    json.dumps(jsonable(fit), allow_nan=False)


def test_a_study_with_no_scored_rows_writes_a_valid_document(cfg) -> None:
    # An empty item bank leaves nothing scored: H1 says why once (identifiable, reason,
    # status), and the document must still fit its declared shape (it was refused on write).
    from clcg_pipeline.storage import validate_document

    res = run_suite(_scores(cfg).iloc[:0], cfg, articles=synthetic_articles(14, seed=5))
    h1 = res.results["h1"]
    assert h1["identifiable"] is False and h1["reason"].startswith("no scored rows")
    validate_document(jsonable(res.results), source="study_results.json")
