"""All pairs at once (issue 37): the same numbers as one pair at a time, and the helpers it rests on."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import (
    ClusterBootstrap,
    SuiteContext,
    analysis_rows,
    bootstrap_p,
    cluster_table,
    percentile_ci,
    replicate,
    roles_of,
)
from clcg_pipeline.analysis._bootstrap import dense_unique, sorted_factorize
from clcg_pipeline.analysis._gaps import GapPanel
from clcg_pipeline.analysis._pairwise import AllPairs
from clcg_pipeline.analysis._prepare import as_str
from clcg_pipeline.analysis._suite import _key_order
from clcg_pipeline.analysis.sections import model_contrasts as sec
from clcg_pipeline.analysis.sections import multiplicity
from clcg_pipeline.analysis.sections.h1 import languages_of
from clcg_pipeline_tests.analysis.conftest import make_scores

MODELS = ("m1", "m2", "m3", "m4", "m5")
REPLICATES = 150


@pytest.fixture(scope="module")
def ctx(project, small_langs) -> SuiteContext:
    return SuiteContext(
        config=project.model_copy(update={"languages": small_langs}),
        roles=roles_of(small_langs),
        replicates=REPLICATES,
        seed=3,
        confidence=0.95,
    )


def _band(scores: pd.DataFrame) -> pd.DataFrame:
    rows = analysis_rows(
        scores,
        metric="token_f1",
        rule="A",
        levels=["L3", "L4", "L5"],
        item_source="llm",
        context_scope="full_body",
    )
    for col in ("model", "language", "doc_id", "item_id"):
        rows[col] = rows[col].astype(str)
    return rows.reset_index(drop=True)


def _with_holes(rows: pd.DataFrame) -> pd.DataFrame:
    """m2 skips a fifth of its rows, m4 Swahili in three articles, m5 all of article d0."""
    rng = np.random.default_rng(1)
    skip = (rows["model"] == "m2").to_numpy() & (rng.random(len(rows)) < 0.2)
    skip |= (
        (rows["model"] == "m4") & (rows["language"] == "sw") & rows["doc_id"].isin(["d1", "d2", "d3"])
    ).to_numpy()
    skip |= ((rows["model"] == "m5") & (rows["doc_id"] == "d0")).to_numpy()
    return rows.loc[~skip].reset_index(drop=True)


def _one_pair(ctx: SuiteContext, rows: pd.DataFrame, first: str, second: str) -> dict[str, dict[str, float]]:
    """The pair as the per-pair code computed it: its own cluster table on the common units."""
    units = rows[["language", "doc_id", "item_id"]].astype(str).agg("|".join, axis=1)
    answered = {m: set(units[rows["model"] == m]) for m in (first, second)}
    common = answered[first] & answered[second]
    sub = rows.loc[rows["model"].isin([first, second]).to_numpy() & units.isin(common).to_numpy()]
    boot = ClusterBootstrap(rows["doc_id"], ctx)
    table = cluster_table(sub, ["model", "language"])
    panel = GapPanel(replicate(table, boot.weights_for(table)), ctx.roles, table.counts)
    out: dict[str, dict[str, float]] = {"common": {"units": len(common)}}
    for key in sec.KEYS:
        with np.errstate(invalid="ignore"):
            diff = sec.model_gap(panel, key, first) - sec.model_gap(panel, key, second)
        low, high = percentile_ci(diff[1:], ctx.confidence)
        langs = languages_of(ctx, key)
        out[key] = {
            "estimate": diff[0],
            "low": low,
            "high": high,
            "p": bootstrap_p(diff[1:], "two-sided"),
            "valid": int(np.isfinite(diff[1:]).sum()),
            "n": panel.n(language=langs),
            "n_articles": panel.n_articles(language=langs),
        }
    return out


def _all_pairs(
    ctx: SuiteContext, rows: pd.DataFrame, chunk: int
) -> tuple[AllPairs, dict[tuple[str, str], dict]]:
    langs = [ctx.roles.reference, ctx.roles.baseline, *ctx.roles.targets]
    coded = sec._pair_rows(rows, list(MODELS), langs)
    boot = ClusterBootstrap(rows["doc_id"], ctx)
    pairs = AllPairs(coded, boot.weights, ctx.confidence)
    out = {}
    for block in pairs.blocks(chunk):
        for k, (i, j) in enumerate(zip(block.first, block.second, strict=True)):
            entry: dict = {"common": {"units": int(block.common[k])}}
            for key in sec.KEYS:
                entry[key] = {
                    f: float(getattr(block, f)[key][k])
                    for f in ("estimate", "low", "high", "p", "valid", "n", "n_articles")
                }
            out[(MODELS[i], MODELS[j])] = entry
    return pairs, out


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_every_pair_equals_its_own_per_pair_computation(ctx, chunk):
    rows = _with_holes(_band(make_scores(seed=4, n_docs=14, models=MODELS)))
    _, got = _all_pairs(ctx, rows, chunk)
    assert list(got) == list(combinations(MODELS, 2))
    for first, second in combinations(MODELS, 2):
        want = _one_pair(ctx, rows, first, second)
        assert got[(first, second)]["common"] == want["common"]
        for key in sec.KEYS:
            for field, value in want[key].items():
                assert got[(first, second)][key][field] == pytest.approx(value, abs=1e-12, nan_ok=True), (
                    first,
                    second,
                    key,
                    field,
                )


def test_models_answering_the_same_units_are_replicated_once_not_per_pair(ctx, monkeypatch):
    """Without holes no pair sums its rows again: each model's replicates serve all its pairs."""
    rows = _band(make_scores(seed=4, n_docs=14, models=MODELS))

    def per_pair(*_: object) -> None:
        raise AssertionError("a pair was summed again although both models answered the same units")

    monkeypatch.setattr(AllPairs, "_restricted", per_pair)
    _, got = _all_pairs(ctx, rows, chunk=3)
    assert len(got) == 10 and len({e["common"]["units"] for e in got.values()}) == 1


def test_a_model_that_lost_units_to_its_pair_is_summed_on_the_common_units(ctx):
    rows = _with_holes(_band(make_scores(seed=4, n_docs=14, models=MODELS)))
    pairs, got = _all_pairs(ctx, rows, chunk=100)
    # m1 keeps all its rows against m3 (same units) but not against m2 (which skipped some).
    assert got[("m1", "m3")]["h1_micro"]["n"] == pairs.own.n["h1_micro"][0] + pairs.own.n["h1_micro"][2]
    assert got[("m1", "m2")]["h1_micro"]["n"] < pairs.own.n["h1_micro"][0] + pairs.own.n["h1_micro"][1]


def test_as_str_reads_like_astype_str():
    values = ["b", "a", None, "b", "10"]
    for series in (
        pd.Series(pd.Categorical(["x", "y", "x"], categories=["y", "x", "unused"])),
        pd.Series(values, dtype=object),
        pd.Series(pd.Categorical(values)),
        pd.Series([3, 1, 3, 2]),
        pd.Series([1.5, np.nan, 2.0]),
    ):
        pd.testing.assert_series_equal(as_str(series), series.astype(str))


def test_sorted_factorize_of_a_categorical_equals_that_of_its_values():
    rng = np.random.default_rng(2)
    labels = np.array(["b", "a", "10", "2", None, "c"], dtype=object)
    for _ in range(50):
        values = labels[rng.integers(0, len(labels), size=int(rng.integers(1, 25)))]
        values[0] = "a"  # the hashing path needs one value (it fails on only missing values)
        categories = list(rng.permutation(["b", "a", "10", "2", "c", "unused"]))
        categorical = pd.Series(pd.Categorical(values, categories=categories))
        codes, uniques = sorted_factorize(categorical)
        want_codes, want_uniques = sorted_factorize(pd.Series(values, dtype=object))
        assert codes.tolist() == want_codes.tolist() and uniques.tolist() == want_uniques.tolist()


def test_dense_unique_and_key_order_equal_numpy():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 50, size=400)
    used, inverse = dense_unique(codes, 50)
    want_used, want_inverse = np.unique(codes, return_inverse=True)
    assert used.tolist() == want_used.tolist() and inverse.tolist() == want_inverse.ravel().tolist()
    values = rng.random(400)
    for keys in (rng.permutation(400), codes):  # unique keys, then keys shared by several rows
        assert _key_order(keys, values).tolist() == np.lexsort((values, keys)).tolist()


def test_p_adj_fills_every_matching_row_once():
    estimates = pd.DataFrame(
        {
            "estimand": ["h1_micro", "h1_micro_model", "mixed_h2", "model_contrast_micro", "h1_micro_model"],
            "group": ["all", "org/model-a", "all", "m1 vs m2", "model-b"],
            "p": [0.01, 0.02, None, 0.5, 0.3],
            "p_adj": [None] * 5,
        }
    )
    family = {
        "tests": [
            {"test": "h1_micro/all", "p": 0.01, "p_adj": 0.03},
            {"test": "h1_micro_model/org/model-a", "p": 0.02, "p_adj": 0.04},
            {"test": "mixed_h2/all", "p": 0.2, "p_adj": 0.25},
            {"test": "h3_slope/all", "p": 0.1, "p_adj": 0.15},
        ]
    }
    multiplicity.fill_p_adj(estimates, family)
    sec.fill_p_adj(estimates, {"pairs": {"m1 vs m2": {k: {"p_adj": 0.6} for k in sec.KEYS}}})
    assert estimates["p_adj"].tolist() == [0.03, 0.04, 0.25, 0.6, None]
    assert estimates["p"].tolist()[2] == 0.2  # the mixed model's p comes from the family
