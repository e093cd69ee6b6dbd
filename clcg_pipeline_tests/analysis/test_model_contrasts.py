"""Issue 21: paired model contrasts, BH across the pairs, ranks with intervals, the named query.

The reference computations below resample articles with their own draws (numpy only, no suite
code), so the suite's numbers are checked against an independent implementation.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from clcg_pipeline.analysis import run_suite
from clcg_pipeline.storage import build_catalog, jsonable, partition_dir, run_named_query, write_frame
from clcg_pipeline_tests.analysis.conftest import band_scores, small_config

B = 200
SEED = 42
TARGETS = ["sw", "am", "fon"]
PANEL = ["en", "pt", *TARGETS]
GAPS = {"h1_micro": "micro", "macro": "macro", "macro_net": "net"}


def _cfg(project, small_langs, n_models: int):
    return small_config(project, small_langs, n_models, replicates=B, seed=SEED)


def _scores(small_langs, n_models: int, n_articles: int = 16, seed: int = 7) -> pd.DataFrame:
    return band_scores(small_langs, n_models, n_articles, seed)


@pytest.fixture(scope="module")
def three(project, small_langs):
    """Three models; model-c skipped half its Swahili and Fon items, so pairs differ in coverage."""
    scores = _scores(small_langs, 3)
    skipped = (
        (scores.model == "model-c")
        & scores.language.isin(["sw", "fon"])
        & scores.item_id.str.endswith(("-0", "-2", "-4"))
    )
    scores = scores.loc[~skipped].reset_index(drop=True)
    return scores, run_suite(scores, _cfg(project, small_langs, 3))


# ----------------------------------------------------------------------------------------------
# The independent reference


def _band(scores: pd.DataFrame) -> pd.DataFrame:
    """Primary band under parse rule A (failures score 0), written out from the study protocol."""
    band = scores[
        (scores.context_scope == "full_body")
        & (scores.item_source == "llm")
        & scores.level.isin(["L3", "L4", "L5"])
        & scores.language.isin(PANEL)
    ].copy()
    band["y"] = np.where(band.status != "ok", 0.0, band.token_f1.astype(float))
    return band[np.isfinite(band.y)]


def _weights(n_articles: int, seed: int) -> np.ndarray:
    """Point (all ones) then B rows of article multiplicities: B draws of n articles with replacement."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_articles, size=(B, n_articles))
    counts = np.stack([np.bincount(row, minlength=n_articles) for row in draws]).astype(float)
    return np.vstack([np.ones(n_articles), counts])


def _gap(rows: pd.DataFrame, articles: list[str], weights: np.ndarray, key: str) -> np.ndarray:
    """One model's gap on every row of ``weights`` from per-article sums (articles in sorted order)."""

    def mean(langs: list[str]) -> np.ndarray:
        sub = rows[rows.language.isin(langs)]
        sums = sub.groupby("doc_id").y.sum().reindex(articles, fill_value=0.0).to_numpy()
        counts = sub.groupby("doc_id").y.size().reindex(articles, fill_value=0).to_numpy()
        return (weights @ sums) / (weights @ counts)

    en = mean(["en"])
    if key == "h1_micro":
        return en - mean(TARGETS)
    present = [t for t in TARGETS if (rows.language == t).any()]
    macro = np.mean([en - mean([t]) for t in present], axis=0)
    return macro if key == "macro" else macro - (en - mean(["pt"]))


def _common(band: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    units = ["language", "doc_id", "item_id"]
    both = set(map(tuple, band.loc[band.model == a, units].drop_duplicates().to_numpy())) & set(
        map(tuple, band.loc[band.model == b, units].drop_duplicates().to_numpy())
    )
    keep = [tuple(u) in both for u in band[units].to_numpy()]
    return band.loc[keep & band.model.isin([a, b]).to_numpy()]


def _reference(scores: pd.DataFrame, a: str, b: str, key: str, seed_b: int = SEED) -> np.ndarray:
    """Point-then-replicates difference ``gap_a - gap_b``; ``seed_b != SEED``: unpaired draws for b."""
    band = _band(scores)
    articles = sorted(band.doc_id.astype(str).unique())
    rows = _common(band, a, b).assign(doc_id=lambda f: f.doc_id.astype(str))
    gap_a = _gap(rows[rows.model == a], articles, _weights(len(articles), SEED), key)
    gap_b = _gap(rows[rows.model == b], articles, _weights(len(articles), seed_b), key)
    return gap_a - gap_b


def _ci(vec: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(vec[1:], [2.5, 97.5])
    return float(low), float(high)


# ----------------------------------------------------------------------------------------------
# Pairs


def test_pairs_match_an_independent_paired_bootstrap_on_common_items(three):
    scores, res = three
    block = res.results["model_contrasts"]
    assert block["status"] == "estimated" and block["models"] == ["model-a", "model-b", "model-c"]
    assert list(block["pairs"]) == ["model-a vs model-b", "model-a vs model-c", "model-b vs model-c"]
    for a, b in combinations(block["models"], 2):
        entry = block["pairs"][f"{a} vs {b}"]
        for key in GAPS:
            ref = _reference(scores, a, b, key)
            got = entry[key]
            assert got["estimate"] == pytest.approx(ref[0], abs=1e-12), (a, b, key)
            assert (got["ci_low"], got["ci_high"]) == pytest.approx(_ci(ref), abs=1e-12), (a, b, key)
            assert got["identifiable"] is True and got["valid_replicates"] == B


def test_common_items_only_where_coverage_differs(three):
    scores, res = three
    band = _band(scores)
    pairs = res.results["model_contrasts"]["pairs"]
    full = band[band.model == "model-a"][["language", "doc_id", "item_id"]].drop_duplicates()
    assert pairs["model-a vs model-b"]["n_common_items"] == len(full)
    assert pairs["model-a vs model-c"]["n_common_items"] < len(full)
    # Fully covered pairs give the H1 by-model difference; the pair with model-c does not.
    by_model = res.results["h1"]["by_model"]
    diff_ab = by_model["model-a"]["h1_micro"]["estimate"] - by_model["model-b"]["h1_micro"]["estimate"]
    assert pairs["model-a vs model-b"]["h1_micro"]["estimate"] == pytest.approx(diff_ab, abs=1e-12)
    diff_ac = by_model["model-a"]["h1_micro"]["estimate"] - by_model["model-c"]["h1_micro"]["estimate"]
    assert pairs["model-a vs model-c"]["h1_micro"]["estimate"] != pytest.approx(diff_ac, abs=1e-6)


def test_paired_interval_is_much_narrower_when_models_move_together(project, small_langs):
    """Article-specific gaps shared by both models: an unpaired interval would be far too wide."""
    base = _scores(small_langs, 1, n_articles=24, seed=3)
    hard = np.random.default_rng(0).uniform(0.0, 0.4, size=24)
    is_target = base.language.isin(TARGETS).to_numpy()
    base["token_f1"] = base.token_f1 - np.where(is_target, hard[base.doc_id.astype(int) - 1], 0.0)
    other = base.assign(model="model-b", token_f1=base.token_f1 - np.where(is_target, 0.03, 0.0))
    scores = pd.concat([base, other], ignore_index=True)
    res = run_suite(scores, _cfg(project, small_langs, 2))
    got = res.results["model_contrasts"]["pairs"]["model-a vs model-b"]["h1_micro"]
    paired = _reference(scores, "model-a", "model-b", "h1_micro")
    unpaired = _reference(scores, "model-a", "model-b", "h1_micro", seed_b=SEED + 1)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(_ci(paired), abs=1e-12)
    width = got["ci_high"] - got["ci_low"]
    unpaired_low, unpaired_high = _ci(unpaired)
    assert width < 0.2 * (unpaired_high - unpaired_low)
    assert got["ci_high"] < 0  # model-b loses 0.03 more: a paired contrast sees it
    assert unpaired_low < 0 < unpaired_high  # an unpaired one would not


def test_bh_across_pairs_equals_statsmodels(three):
    _, res = three
    block = res.results["model_contrasts"]
    names = list(block["pairs"])
    for key in GAPS:
        raw = [block["pairs"][n][key]["p"] for n in names]
        expected = multipletests(raw, method="fdr_bh")[1]
        got = [block["pairs"][n][key]["p_adj"] for n in names]
        assert got == pytest.approx(list(expected), abs=1e-15), key
        assert [t["test"] for t in block["multiplicity"][key]["tests"]] == names
        rows = res.estimates[res.estimates.estimand == f"model_contrast_{GAPS[key]}"]
        assert list(rows.group) == names
        assert list(rows.p_adj) == pytest.approx(list(expected), abs=1e-15)
        assert list(rows.p) == pytest.approx(raw, abs=1e-15)


# ----------------------------------------------------------------------------------------------
# Ranks


def test_ranks_order_the_by_model_gaps_and_contain_their_point(three):
    scores, res = three
    block, by_model = res.results["model_contrasts"], res.results["h1"]["by_model"]
    models = block["models"]
    for key in ("h1_micro", "macro_net"):
        points = {m: by_model[m][key]["estimate"] for m in models}
        for m in models:
            rank = block["ranks"][m][key]
            assert rank["estimate"] == 1 + sum(points[o] < points[m] for o in models)
            assert rank["ci_low"] <= rank["estimate"] <= rank["ci_high"]
            assert rank["identifiable"] is True
    # The rank interval from an independent bootstrap of each model's full-data micro CLCG.
    band = _band(scores).assign(doc_id=lambda f: f.doc_id.astype(str))
    articles = sorted(band.doc_id.unique())
    weights = _weights(len(articles), SEED)
    gaps = np.column_stack([_gap(band[band.model == m], articles, weights, "h1_micro") for m in models])
    ranks = 1 + (gaps[:, None, :] < gaps[:, :, None]).sum(axis=2)  # rank of column j in each row
    for j, m in enumerate(models):
        low = np.percentile(ranks[1:, j], 2.5, method="lower")
        high = np.percentile(ranks[1:, j], 97.5, method="higher")
        got = block["ranks"][m]["h1_micro"]
        assert (got["estimate"], got["ci_low"], got["ci_high"]) == (ranks[0, j], low, high)
    est = res.estimates.set_index(["estimand", "group"])
    assert (
        est.loc[("model_rank_micro", "model-c"), "estimate"]
        == block["ranks"]["model-c"]["h1_micro"]["estimate"]
    )


def test_english_score_is_each_models_english_mean(three):
    scores, res = three
    band = _band(scores)
    for m, entry in res.results["model_contrasts"]["english_score"].items():
        rows = band[(band.model == m) & (band.language == "en")]
        assert entry["estimate"] == pytest.approx(rows.y.mean(), abs=1e-12)
        assert entry["n"] == len(rows)


# ----------------------------------------------------------------------------------------------
# Edge cases and wiring


def test_one_model_says_there_is_no_pair(project, small_langs):
    scores = _scores(small_langs, 1)
    res = run_suite(scores, _cfg(project, small_langs, 1))
    block = res.results["model_contrasts"]
    assert block["status"] == "one model: no pair to compare"
    assert block["pairs"] == {} and block["models"] == ["model-a"]
    assert block["ranks"]["model-a"]["h1_micro"]["estimate"] == 1
    assert not res.estimates.estimand.str.startswith("model_contrast_").any()
    assert (res.estimates.estimand == "model_rank_micro").sum() == 1


def test_too_few_articles_withholds_intervals_and_p(project, small_langs):
    scores = _scores(small_langs, 2, n_articles=4)
    res = run_suite(scores, _cfg(project, small_langs, 2))
    block = res.results["model_contrasts"]
    entry = block["pairs"]["model-a vs model-b"]["h1_micro"]
    assert entry["identifiable"] is False and "too few articles: 4 < study.min_articles" in entry["reason"]
    assert entry["ci_low"] is None and entry["p"] is None and entry["p_adj"] is None
    assert entry["estimate"] is not None
    assert block["multiplicity"]["h1_micro"]["not_available"] == ["model-a vs model-b"]
    rank = block["ranks"]["model-a"]["h1_micro"]
    assert rank["identifiable"] is False and rank["ci_low"] is None


def test_results_document_and_estimates_agree(three):
    _, res = three
    doc = jsonable(res.results)
    for family in ("model_contrast_micro", "model_contrast_net", "model_rank_micro", "english_score_model"):
        assert family in doc["definitions"]
    entry = doc["estimands"]["model_contrast_micro/model-a vs model-b"]
    pair = doc["model_contrasts"]["pairs"]["model-a vs model-b"]["h1_micro"]
    assert entry["estimate"] == pair["estimate"] and entry["p_adj"] == pair["p_adj"]
    assert entry["sided"].startswith("two-sided: paired")
    assert "model_contrasts" in res.timings


def test_named_query_lists_contrasts_and_ranks(three, tmp_path: Path):
    _, res = three
    write_frame(
        partition_dir(tmp_path, "estimates", None) / "data.parquet", res.estimates, contract="estimates"
    )
    catalog = tmp_path / "clcg.duckdb"
    build_catalog(tmp_path, catalog)
    out = run_named_query(catalog, "model_contrasts", {}, data_dir=tmp_path)
    contrasts = out[out.kind == "contrast"]
    assert len(contrasts) == 9 and len(out[out.kind == "rank"]) == 9
    row = contrasts.set_index(["estimand", "group"]).loc[("model_contrast_micro", "model-a vs model-c")]
    pair = res.results["model_contrasts"]["pairs"]["model-a vs model-c"]["h1_micro"]
    assert row.estimate == pytest.approx(pair["estimate"], abs=1e-4)
    assert row.p_adj == pytest.approx(pair["p_adj"], abs=1e-4)
    ranks = out[(out.kind == "rank") & (out.estimand == "model_rank_micro")]
    assert list(ranks.estimate) == sorted(ranks.estimate)


def test_report_has_a_model_contrasts_section(three):
    import re

    from clcg_pipeline.report import render_report

    _, res = three
    html = render_report(jsonable(res.results), res.estimates)
    start = html.index("Model contrasts and ranks")
    section = re.sub(
        r"\s+", " ", re.sub(r"<[^>]+>", " ", html[start : html.index("H2: memorability", start)])
    )
    assert "Paired contrasts (first model minus second)" in section
    assert "Rank per model (1 = smallest gap)" in section and "English score per model" in section
    pair = res.results["model_contrasts"]["pairs"]["model-a vs model-c"]["h1_micro"]
    assert f"{pair['estimate']:.3f}" in section
