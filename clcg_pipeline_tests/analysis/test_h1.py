from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import draw_multiplicities, estimate_file, estimate_h1, withheld_reason
from clcg_pipeline.analysis._gaps import Roles, build_panel
from clcg_pipeline.analysis._h1 import band_rows, h1_core
from clcg_pipeline_tests.analysis.conftest import make_scores

TARGETS = ["sw", "am", "fon"]


def _band_a(frame: pd.DataFrame) -> pd.DataFrame:
    band = frame[
        (frame.context_scope == "full_body")
        & (frame.item_source == "llm")
        & frame.level.isin(["L3", "L4", "L5"])
    ].copy()
    band["y"] = np.where(band.status == "ok", band.token_f1, 0.0)
    return band


def test_point_estimates_match_direct_formulas(small_langs, study):
    frame = make_scores()
    res = estimate_h1(frame, small_langs, study)
    band = _band_a(frame)
    mean = band.groupby("language")["y"].mean()
    micro = mean["en"] - band[band.language.isin(TARGETS)]["y"].mean()
    macro = np.mean([mean["en"] - mean[t] for t in TARGETS])
    pt = mean["en"] - mean["pt"]
    assert res["h1_micro"]["estimate"] == pytest.approx(micro, abs=1e-12)
    assert res["macro"]["estimate"] == pytest.approx(macro, abs=1e-12)
    assert res["pt_gap"]["estimate"] == pytest.approx(pt, abs=1e-12)
    assert res["macro_net"]["estimate"] == pytest.approx(macro - pt, abs=1e-12)
    assert res["micro_net"]["estimate"] == pytest.approx(micro - pt, abs=1e-12)
    for t in TARGETS:
        assert res["by_language"][t]["estimate"] == pytest.approx(mean["en"] - mean[t], abs=1e-12)
        # n counts the rows entering CLCG_l: English plus the language (one n per estimand).
        assert res["by_language"][t]["n"] == int(band.language.isin(["en", t]).sum())
        assert (
            res["by_language"][t]["n_articles"] == band.loc[band.language.isin(["en", t]), "doc_id"].nunique()
        )
    for m, sub in band.groupby("model"):
        mm = sub.groupby("language")["y"].mean()
        exp = mm["en"] - sub[sub.language.isin(TARGETS)]["y"].mean()
        assert res["by_model"][m]["h1_micro"]["estimate"] == pytest.approx(exp, abs=1e-12)
        exp_net = np.mean([mm["en"] - mm[t] for t in TARGETS]) - (mm["en"] - mm["pt"])
        assert res["by_model"][m]["macro_net"]["estimate"] == pytest.approx(exp_net, abs=1e-12)
    assert res["n"] == {
        "english": int((band.language == "en").sum()),
        "target": int(band.language.isin(TARGETS).sum()),
        "baseline": int((band.language == "pt").sum()),
        "articles": 12,
    }
    assert res["settings"]["rule"] == "A" and res["settings"]["replicates"] == 300


def test_micro_is_weighted_sum_of_language_gaps(small_langs, study):
    res = estimate_h1(make_scores(1), small_langs, study)
    n = {t: res["by_language"][t]["n"] - res["n"]["english"] for t in TARGETS}  # target rows
    total = sum(n.values())
    weighted = sum(n[t] / total * res["by_language"][t]["estimate"] for t in TARGETS)
    assert res["h1_micro"]["estimate"] == pytest.approx(weighted, abs=1e-12)


def test_identities_hold_replicate_by_replicate(small_langs, study):
    core = h1_core(make_scores(2), small_langs, study)
    v = core.vectors
    np.testing.assert_allclose(v["macro_net"], v["macro"] - v["pt_gap"], atol=1e-12)
    np.testing.assert_allclose(v["micro_net"], v["h1_micro"] - v["pt_gap"], atol=1e-12)
    for m in ("m1", "m2"):
        raw = v[f"macro_net/{m}"] + v[f"pt_gap/{m}"]
        # raw = PT gap + net for every model, in every replicate
        macro_m = core.panel.macro(model=m)
        np.testing.assert_allclose(raw, macro_m, atol=1e-12)
    # net interval comes from replicate differences, not from subtracting endpoints
    r = core.result
    assert r["macro_net"]["ci_low"] != pytest.approx(r["macro"]["ci_low"] - r["pt_gap"]["ci_low"], abs=1e-9)


def test_bootstrap_equals_naive_row_resampling(small_langs, study):
    """Replicates from sufficient statistics equal a naive replicate that copies rows."""
    frame = make_scores(3)
    rows = band_rows(frame, study, "A")
    roles = Roles("en", "pt", tuple(TARGETS))
    panel, articles = build_panel(rows, roles, cell_cols=["model", "language"], replicates=20, seed=7)
    micro = panel.micro()
    weights = draw_multiplicities(len(articles), 20, 7)
    for r in range(20):
        parts = [
            rows[rows.doc_id == a] for a, k in zip(articles, weights[r], strict=True) for _ in range(int(k))
        ]
        boot = pd.concat(parts)
        exp = boot[boot.language == "en"].y.mean() - boot[boot.language.isin(TARGETS)].y.mean()
        assert micro[r + 1] == pytest.approx(exp, abs=1e-12)


def test_multiplicities_are_seeded_draws_with_replacement():
    w = draw_multiplicities(7, 50, 11)
    assert w.shape == (50, 7) and (w.sum(axis=1) == 7).all()
    draws = np.random.default_rng(11).integers(0, 7, size=(50, 7))
    np.testing.assert_array_equal(w[3], np.bincount(draws[3], minlength=7))
    assert not np.array_equal(w, draw_multiplicities(7, 50, 12))


def test_rule_b_drops_failures_and_rule_a_scores_zero(small_langs, study):
    frame = make_scores(4)
    a = estimate_h1(frame, small_langs, study, rule="A")
    b = estimate_h1(frame, small_langs, study, rule="B")
    band = _band_a(frame)
    ok = band[band.status == "ok"]
    exp_b = ok[ok.language == "en"].token_f1.mean() - ok[ok.language.isin(TARGETS)].token_f1.mean()
    assert b["h1_micro"]["estimate"] == pytest.approx(exp_b, abs=1e-12)
    assert b["n"]["english"] == int((ok.language == "en").sum()) < a["n"]["english"]
    assert b["settings"]["rule"] == "B"


def test_deterministic_and_row_order_independent(small_langs, study):
    frame = make_scores(5)
    one = estimate_h1(frame, small_langs, study, seed=3)
    two = estimate_h1(frame.sample(frac=1.0, random_state=9), small_langs, study, seed=3)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    other = estimate_h1(frame, small_langs, study, seed=4)
    assert other["h1_micro"]["ci_low"] != one["h1_micro"]["ci_low"]
    assert other["h1_micro"]["estimate"] == one["h1_micro"]["estimate"]


def test_missing_groups_are_omitted_or_null(small_langs, study):
    frame = make_scores(6)
    no_fon = frame[frame.language != "fon"]
    res = estimate_h1(no_fon, small_langs, study)
    assert "fon" not in res["by_language"] and set(res["by_language"]) == {"sw", "am"}
    no_pt = frame[frame.language != "pt"]
    res = estimate_h1(no_pt, small_langs, study)
    assert res["pt_gap"]["estimate"] is None and res["macro_net"]["estimate"] is None
    assert res["h1_micro"]["estimate"] is not None
    empty = estimate_h1(frame.iloc[:0], small_langs, study)
    assert empty["h1_micro"] == {"estimate": None, "ci_low": None, "ci_high": None}
    assert empty["by_model"] == {} and empty["n"]["articles"] == 0


def test_interval_contains_estimate_and_narrows_with_data(small_langs, study):
    small = estimate_h1(make_scores(7, n_docs=10), small_langs, study)
    big = estimate_h1(make_scores(7, n_docs=80), small_langs, study)
    for res in (small, big):
        e = res["h1_micro"]
        assert e["ci_low"] < e["estimate"] < e["ci_high"]
    width = lambda r: r["h1_micro"]["ci_high"] - r["h1_micro"]["ci_low"]  # noqa: E731
    assert width(big) < width(small)


def test_too_few_articles_withholds_every_interval_as_the_full_suite_does(small_langs, study):
    # `clcg estimate` without --full used to print an interval the run itself withheld.
    res = estimate_h1(make_scores(7, n_docs=6), small_langs, study)
    micro = res["h1_micro"]
    assert micro["estimate"] is not None and micro["ci_low"] is None and micro["ci_high"] is None
    assert micro["identifiable"] is False
    assert micro["reason"] == "too few articles: 6 < study.min_articles = 10"
    for entry in res["by_language"].values():
        assert entry["ci_low"] is None and entry["identifiable"] is False
    enough = estimate_h1(make_scores(7, n_docs=10), small_langs, study)["h1_micro"]
    assert enough["ci_low"] is not None and "identifiable" not in enough


def test_each_estimand_is_withheld_on_its_own_articles_as_in_the_suite(small_langs, study):
    # Twelve articles in all, but six of them carry only Portuguese rows: the contrasts of English
    # with the targets rest on six articles, so the suite's rule withholds their intervals. The
    # old rule counted every article of the panel and showed those intervals.
    frame = make_scores(7, n_docs=12)
    pt_only = frame["doc_id"].isin([f"d{d}" for d in range(6, 12)]) & (frame["language"] != "pt")
    res = estimate_h1(frame.loc[~pt_only], small_langs, study)
    assert res["n"]["articles"] == 12
    micro = res["h1_micro"]
    assert micro["estimate"] is not None and micro["ci_low"] is None and micro["ci_high"] is None
    assert micro["identifiable"] is False
    assert micro["reason"] == withheld_reason(micro["estimate"], 6, 10)
    assert micro["reason"] == "too few articles: 6 < study.min_articles = 10"
    for iso in TARGETS:
        assert res["by_language"][iso]["ci_low"] is None and res["by_language"][iso]["identifiable"] is False
    for model in ("m1", "m2"):
        assert res["by_model"][model]["h1_micro"]["identifiable"] is False
        assert res["by_model"][model]["pt_gap"]["ci_low"] is not None
    # The PT gap contrasts English with Portuguese, on all twelve articles: shown, unmarked.
    assert res["pt_gap"]["ci_low"] is not None and "identifiable" not in res["pt_gap"]


def test_estimate_file_roundtrip_and_errors(tmp_path: Path, small_langs, study, project):
    config = project.model_copy(update={"languages": small_langs, "study": study})
    frame = make_scores(8)
    path = tmp_path / "scores.parquet"
    frame.to_parquet(path, index=False)
    out = tmp_path / "out" / "h1.json"
    result = estimate_file(str(path), str(out), config, replicates=100, seed=5)
    on_disk = json.loads(out.read_text())
    assert on_disk == result
    assert result["settings"]["replicates"] == 100 and result["settings"]["config_hash"] == config.config_hash
    direct = estimate_h1(frame, small_langs, study, replicates=100, seed=5)
    assert result["h1_micro"] == direct["h1_micro"]
    assert [p.name for p in out.parent.iterdir()] == ["h1.json"]  # no temp file left behind
    bad = tmp_path / "bad.parquet"
    frame.drop(columns=["status"]).to_parquet(bad, index=False)
    with pytest.raises(ValueError, match=r"bad\.parquet.*status"):
        estimate_file(str(bad), str(tmp_path / "x.json"), config)


def test_missing_key_names_column_and_record(tmp_path: Path, small_langs, study, project):
    frame = make_scores(9)
    frame.loc[frame.index[0], "doc_id"] = None  # a band row
    with pytest.raises(ValueError, match=r"'doc_id' is missing in 1 row.*row 0"):
        estimate_h1(frame, small_langs, study)
    path = tmp_path / "holes.parquet"
    frame.to_parquet(path, index=False)
    config = project.model_copy(update={"languages": small_langs, "study": study})
    with pytest.raises(ValueError, match=r"holes\.parquet.*doc_id"):
        estimate_file(str(path), str(tmp_path / "o.json"), config)
