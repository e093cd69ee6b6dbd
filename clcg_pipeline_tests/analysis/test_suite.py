from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from clcg_pipeline.analysis import estimate_file, run_suite
from clcg_pipeline.analysis._gaps import Roles, build_panel
from clcg_pipeline.config import StudyConfig
from clcg_pipeline.storage import conform, jsonable
from clcg_pipeline.synthetic import (
    synthetic_articles,
    synthetic_config,
    synthetic_fertility,
    synthetic_scores,
)

N_ART = 24
TARGETS = ["sw", "am", "fon"]


@pytest.fixture(scope="module")
def cfg(project, small_langs):
    return synthetic_config(project, n_models=2).model_copy(
        update={"languages": small_langs, "study": StudyConfig(bootstrap_replicates=200)}
    )


@pytest.fixture(scope="module")
def data(cfg):
    scores = synthetic_scores(
        cfg.languages,
        n_models=2,
        n_articles=N_ART,
        n_stability=6,
        items_per_level=2,
        human_per_article=4,
        probe_articles=5,
        seed=11,
    )
    return scores, synthetic_articles(N_ART, seed=11), synthetic_fertility(cfg.languages)


@pytest.fixture(scope="module")
def suite(cfg, data):
    scores, articles, fert = data
    other = synthetic_scores(cfg.languages, n_models=2, n_articles=10, n_stability=0, seed=12)
    return run_suite(scores, cfg, articles=articles, fertility=fert, replication_scores=other)


def _stable(results: dict) -> str:
    """The document without what legitimately changes between runs (time, checkout commit)."""
    doc = jsonable(results)
    doc["settings"].pop("generated_at")
    doc["settings"].pop("code_version")
    return json.dumps(doc, sort_keys=True)


def _rule_a(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    val = np.where(out.level == "L0", out.accuracy, out.token_f1)
    out["y"] = np.where(out.status == "ok", val, 0.0)
    out["language"] = out.language.astype(str)
    out["model"] = out.model.astype(str)
    return out


def _micro(frame: pd.DataFrame) -> float:
    return frame[frame.language == "en"].y.mean() - frame[frame.language.isin(TARGETS)].y.mean()


def _band(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[
        (frame.context_scope == "full_body")
        & (frame.item_source == "llm")
        & frame.level.isin(["L3", "L4", "L5"])
    ]


def test_h3_matches_direct_standardization_and_slope(suite, data):
    rows = _rule_a(data[0])
    rows = rows[(rows.context_scope == "full_body") & (rows.item_source == "llm")].copy()
    rows["z"] = rows.groupby("level").y.transform(lambda v: (v - v.mean()) / v.std(ddof=1))
    h3 = suite.results["h3"]
    per_level = []
    for lvl in ["L0", "L1", "L2", "L3", "L4", "L5"]:
        sub = rows[rows.level == lvl]
        exp = sub[sub.language == "en"].z.mean() - sub[sub.language.isin(TARGETS)].z.mean()
        assert h3["standardized"][lvl]["estimate"] == pytest.approx(exp, abs=1e-10)
        assert h3["raw_descriptive"][lvl]["estimate"] == pytest.approx(_micro(sub), abs=1e-10)
        per_level.append(exp)
    slope = np.polyfit(np.arange(6.0), per_level, 1)[0]
    assert h3["slope"]["estimate"] == pytest.approx(slope, abs=1e-10)
    assert 0 < h3["slope"]["p"] <= 1 and h3["slope"]["alternative"].startswith("greater")


def test_h2_memorability_contrast_and_identifiability(suite, data, cfg):
    scores, articles, _ = data
    rows = _band(_rule_a(scores)).merge(articles.assign(doc_id=articles.doc_id.astype(str)), on="doc_id")
    cut = {m.id: pd.Timestamp(m.knowledge_cutoff) for m in cfg.models.models}
    rows["memo"] = np.where(pd.to_datetime(rows.published) < rows.model.map(cut), "m", "n")
    h2 = suite.results["h2"]
    exp = _micro(rows[rows.memo == "m"]) - _micro(rows[rows.memo == "n"])
    assert h2["pooled"]["difference"]["estimate"] == pytest.approx(exp, abs=1e-10)
    for model, sub in rows.groupby("model"):
        got = h2["by_model"][model]
        if sub.memo.nunique() == 2:
            exp_m = _micro(sub[sub.memo == "m"]) - _micro(sub[sub.memo == "n"])
            assert got["difference"]["estimate"] == pytest.approx(exp_m, abs=1e-10)
        else:
            assert got["status"] == "not identifiable"


def test_h2_not_identifiable_without_dates(cfg, data):
    res = run_suite(data[0], cfg, replicates=50)
    assert res.results["h2"]["status"].startswith("not identifiable")
    assert res.results["mixed_effects"]["h2"]["converged"] is False
    family = res.results["multiplicity"]
    assert "h2_difference/all" in family["not_available"] and family["m"] == family["planned"] - 2


def test_h4_and_class_means(suite, data):
    rows = _rule_a(data[0])
    human = rows[(rows.item_source == "human") & (rows.context_scope == "full_body")]
    h4 = suite.results["h4"]["difference"]["estimate"]
    assert h4 == pytest.approx(_micro(human) - _micro(_band(rows)), abs=1e-10)
    h1 = suite.results["h1"]
    classes = suite.results["joshi_class"]["primary"]
    # Portuguese enters class 4 with its CLCG (the PT gap), as in the study's class analysis.
    assert set(classes) == {"0", "2", "4"}
    assert classes["4"]["languages"] == ["pt"]
    assert classes["4"]["raw"]["estimate"] == pytest.approx(h1["pt_gap"]["estimate"], abs=1e-12)
    assert classes["4"]["net"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    exp = np.mean([h1["by_language"][i]["estimate"] for i in ("sw", "am")])
    assert classes["2"]["raw"]["estimate"] == pytest.approx(exp, abs=1e-12)
    assert classes["2"]["net"]["estimate"] == pytest.approx(exp - h1["pt_gap"]["estimate"], abs=1e-12)
    for iso, net in suite.results["language_net"].items():
        raw = h1["by_language"][iso]["estimate"]
        assert net["estimate"] == pytest.approx(raw - h1["pt_gap"]["estimate"], abs=1e-12)


def test_context_gain_selector_and_values(suite, data):
    gain = suite.results["context_gain"]
    sel = gain["selector"]
    assert sel["doc_ids"] == ["1", "2", "3", "4", "5", "6"]  # numeric, not lexicographic ("10" < "2")
    assert sel["items"] == 36
    rows = data[0].copy()
    ok = rows[rows.status == "ok"].assign(model=rows.model.astype(str), language=rows.language.astype(str))
    items = sorted(set(ok[ok.context_scope == "closed_book"].item_id))
    fb = ok[(ok.context_scope == "full_body") & ok.item_id.isin(items)]
    fb = fb.groupby(["model", "item_id", "language"]).token_f1.mean().rename("o").reset_index()
    cb = ok[ok.context_scope == "closed_book"].groupby(["model", "item_id"]).token_f1.mean().rename("c")
    joined = fb.merge(cb.reset_index(), on=["model", "item_id"])
    for iso, sub in joined.groupby("language"):
        assert gain["by_language"][iso]["gain"] == pytest.approx((sub.o - sub.c).mean(), abs=1e-12)
        assert gain["by_language"][iso]["n_pairs"] == len(sub)


def test_repetitions_context_scope_and_replication(suite, data):
    rows = _band(_rule_a(data[0]))
    stable = rows[rows.doc_id.astype(int) <= 6]
    reps = suite.results["repetitions"]
    assert reps["articles"] == 6 and set(reps["per_repetition"]) == {"0", "1", "2"}
    for r, sub in stable.groupby("rep"):
        assert reps["per_repetition"][str(r)]["estimate"] == pytest.approx(_micro(sub), abs=1e-10)
    assert reps["kendalls_w"] is not None and 0 <= reps["kendalls_w"] <= 1
    full = _rule_a(data[0])
    probe = full[
        full.item_source.eq("llm") & full.level.isin(["L3", "L4", "L5"]) & (full.doc_id.astype(int) <= 5)
    ]
    cs = suite.results["context_scope"]
    exp = _micro(probe[probe.context_scope == "full_body"]) - _micro(
        probe[probe.context_scope == "item_grounded"]
    )
    assert cs["difference"]["estimate"] == pytest.approx(exp, abs=1e-10) and cs["articles"] == 5
    rep = suite.results["replication"]
    a = [suite.results["h1"]["by_language"][i]["estimate"] for i in rep["languages"]]
    b = [rep["h1"]["by_language"][i]["estimate"] for i in rep["languages"]]
    assert rep["spearman"]["rho"] == pytest.approx(stats.spearmanr(a, b).statistic)


def test_nomological_and_multiplicity(suite):
    nom = suite.results["nomological"]
    assert nom["languages"] == ["pt", "sw", "am", "fon"]
    assert nom["spearman"]["joshi_class"]["n"] == 4 and nom["spearman"]["fertility"]["rho"] is not None
    fam = suite.results["multiplicity"]
    assert fam["planned"] == 1 + 2 + 4  # H1, one per model, H2 bootstrap + mixed, H3, H4
    est = suite.estimates
    row = est[(est.estimand == "h1_micro") & (est.group == "all")].iloc[0]
    match = next(t for t in fam["tests"] if t["test"] == "h1_micro/all")
    assert row.p_adj == pytest.approx(match["p_adj"]) and row.p == pytest.approx(match["p"])


def test_nomological_follows_the_min_articles_rule(cfg, data, suite):
    # The language CLCGs rest on 24 articles: identifiable at the default minimum of 10 ...
    nom = suite.results["nomological"]
    assert nom["spearman"]["fertility"]["identifiable"] and nom["spearman"]["fertility"]["p"] is not None
    assert (
        nom["standardized_ols"]["identifiable"]
        and nom["partial_spearman_on_joshi"]["fertility"]["p"] is not None
    )
    # ... and at a minimum of 30 nothing language-level keeps an interval, a p or a fit.
    scores, articles, fert = data
    strict = cfg.model_copy(update={"study": cfg.study.model_copy(update={"min_articles": 30})})
    few = run_suite(scores, strict, articles=articles, fertility=fert).results["nomological"]
    reason = "too few articles: 24 < study.min_articles = 30"
    defined = [b for b in [*few["spearman"].values(), few["spearman_joshi_sensitivity"]] if b["estimate"]]
    assert len(defined) >= 3  # the point values stay, as descriptions
    for block in defined:
        assert block["reason"] == reason and block["ci_low"] is None and block["p"] is None
    for block in few["partial_spearman_on_joshi"].values():
        assert block["reason"] == reason and block["p"] is None and block["rho"] is not None
    assert few["standardized_ols"]["r2"] is None and few["standardized_ols"]["identifiable"] is False


def test_mixed_model_recovers_gap(suite):
    mixed = suite.results["mixed_effects"]["h1"]
    assert mixed["converged"] is True and mixed["status"] == "converged"
    assert mixed["aggregation"].startswith("cell means")
    h1 = suite.results["h1"]["h1_micro"]["estimate"]
    assert mixed["estimate"] == pytest.approx(h1, abs=0.02)


def test_suite_is_deterministic_and_conforms(cfg, data, suite):
    scores, articles, fert = data
    again = run_suite(
        scores.sample(frac=1.0, random_state=1),
        cfg,
        articles=articles,
        fertility=fert,
        replication_scores=synthetic_scores(cfg.languages, n_models=2, n_articles=10, n_stability=0, seed=12),
    )
    assert _stable(again.results) == _stable(suite.results)
    table = conform("estimates", suite.estimates)
    assert table.num_rows == len(suite.estimates) > 50
    s = suite.results["settings"]
    assert s["seed"] == 42 and s["replicates"] == 200 and s["config_hash"] == cfg.config_hash


def test_empty_and_bad_input(cfg):
    res = run_suite(pd.DataFrame(), cfg)
    assert res.results["h1"]["h1_micro"]["estimate"] is None
    with pytest.raises(ValueError, match="status"):
        run_suite(pd.DataFrame({"model": ["m"], "token_f1": [1.0]}), cfg)


def test_estimate_file_full(tmp_path: Path, cfg, data):
    scores, articles, _ = data
    sp, ap = tmp_path / "scores.parquet", tmp_path / "articles.parquet"
    scores.to_parquet(sp, index=False)
    articles.to_parquet(ap, index=False)
    out = estimate_file(str(sp), str(tmp_path / "study_results.json"), cfg, full=True, articles_path=str(ap))
    assert out["h2"]["status"] == "estimated" and "multiplicity" in out
    assert json.loads((tmp_path / "study_results.json").read_text()) == out


def test_bootstrap_coverage_on_simulated_clusters():
    """The 95% interval covers a known gap in roughly 95% of simulations."""
    truth = 0.05
    roles = Roles("en", "pt", ("xx",))
    rng = np.random.default_rng(2024)
    covered = 0
    sims = 200
    for sim in range(sims):
        n_art = 30
        art = rng.normal(0, 0.1, n_art)
        sizes = rng.integers(3, 9, n_art)
        doc = np.repeat(np.arange(n_art), sizes)
        frames = []
        for lang, shift in (("en", 0.0), ("xx", truth)):
            y = 0.6 + art[doc] - shift + rng.normal(0, 0.15, len(doc))
            frames.append(pd.DataFrame({"doc_id": doc, "model": "m", "language": lang, "y": y}))
        rows = pd.concat(frames, ignore_index=True)
        panel, _ = build_panel(rows, roles, cell_cols=["model", "language"], replicates=200, seed=sim)
        vec = panel.micro()
        low, high = np.percentile(vec[1:], [2.5, 97.5])
        covered += low <= truth <= high
    assert 0.90 <= covered / sims <= 0.99


def test_estimate_columns_match_contract_and_import_is_light():
    from clcg_pipeline.analysis import ESTIMATE_COLUMNS
    from clcg_pipeline.storage import TABLES

    assert TABLES["estimates"].names == ESTIMATE_COLUMNS
    code = (
        "import sys, clcg_pipeline.analysis;"
        "print(sorted(m for m in ('dagster', 'scipy', 'statsmodels') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("n_models", "n_articles", "n_stability", "drop"),
    [(1, 3, 1, []), (2, 2, 0, ["pt"]), (1, 1, 0, ["sw", "am", "fon"]), (2, 4, 4, ["en"])],
)
def test_suite_survives_tiny_and_partial_panels(cfg, n_models, n_articles, n_stability, drop):
    scores = synthetic_scores(
        cfg.languages,
        n_models=n_models,
        n_articles=n_articles,
        n_stability=n_stability,
        items_per_level=1,
        human_per_article=1,
        probe_articles=1,
        seed=3,
    )
    scores = scores[~scores.language.isin(drop)]
    res = run_suite(
        scores,
        cfg,
        articles=synthetic_articles(n_articles),
        fertility=synthetic_fertility(cfg.languages),
        replicates=30,
    )
    json.dumps(jsonable(res.results), allow_nan=False)  # strict JSON, no NaN
    conform("estimates", res.estimates)
    h1 = res.results["h1"]
    if "en" in drop:
        assert h1["h1_micro"]["estimate"] is None
        assert all(v["estimate"] is None and v["n"] > 0 for v in h1["by_language"].values())
    if "pt" in drop:
        assert h1["pt_gap"]["estimate"] is None and h1["h1_micro"]["estimate"] is not None
