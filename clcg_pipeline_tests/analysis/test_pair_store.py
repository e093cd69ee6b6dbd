"""Issue 37, "Incremental": a model added to a study computes only its own pairs, and the result
equals a full recomputation (documents, the estimates table and every pair's statistics)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import (
    PAIR_STORE_FILE,
    estimate_file,
    read_pair_store,
    run_suite,
    write_pair_store,
)
from clcg_pipeline.analysis._pairwise import AllPairs, side_gaps
from clcg_pipeline_tests.analysis.conftest import band_scores, small_config

B = 200
MODELS = ["model-a", "model-b", "model-c", "model-d", "model-e"]


@pytest.fixture(scope="module")
def config(project, small_langs):
    return small_config(project, small_langs, len(MODELS), replicates=B, seed=11)


@pytest.fixture(scope="module")
def scores(small_langs) -> pd.DataFrame:
    """Five models; model-c skipped some Swahili items, so its pairs sum it on common units."""
    frame = band_scores(small_langs, len(MODELS), 14, seed=5)
    skipped = (frame.model == "model-c") & (frame.language == "sw") & frame.item_id.str.endswith("-0")
    return frame.loc[~skipped].reset_index(drop=True)


@pytest.fixture(scope="module")
def full(scores, config):
    """The full recomputation on every model, without a store."""
    return run_suite(scores, config)


def _without(scores: pd.DataFrame, model: str) -> pd.DataFrame:
    return scores.loc[scores.model != model].reset_index(drop=True)


def _document(result) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(_without_time(dict(result.results)), sort_keys=False, default=str)


def _assert_same(got, want) -> None:  # type: ignore[no-untyped-def]
    """Bit for bit: the document, the estimates table and every pair's statistics."""
    assert _document(got) == _document(want)
    pd.testing.assert_frame_equal(got.estimates, want.estimates, check_exact=True)
    pd.testing.assert_frame_equal(got.pair_store.frame, want.pair_store.frame, check_exact=True)


@pytest.fixture
def counted(monkeypatch) -> list[int]:
    """The number of pairs the pair machinery computes, block by block."""
    sizes: list[int] = []
    block = AllPairs._block

    def counting(self, first, second):  # type: ignore[no-untyped-def]
        sizes.append(len(first))
        return block(self, first, second)

    monkeypatch.setattr(AllPairs, "_block", counting)
    return sizes


@pytest.mark.parametrize("new", ["model-e", "model-b", "model-c"])
def test_a_new_model_computes_only_its_pairs_and_equals_a_full_recomputation(
    scores, config, full, counted, new
):
    """Last or in the middle of the configured order, and a model whose pairs sum common units."""
    before = run_suite(_without(scores, new), config)
    counted.clear()
    after = run_suite(scores, config, pair_store=before.pair_store)
    assert sum(counted) == len(MODELS) - 1  # its pairs with every other model, nothing else
    assert (after.pair_store.computed, after.pair_store.reused) == (4, 6)
    _assert_same(after, full)


def test_unchanged_models_compute_no_pair(scores, config, full, counted):
    counted.clear()
    again = run_suite(scores, config, pair_store=full.pair_store)
    assert counted == [] and again.pair_store.reused == 10
    _assert_same(again, full)


def test_a_model_whose_rows_changed_recomputes_its_pairs(scores, config, full, counted):
    changed = scores.copy()
    band = config.study.band
    in_band = (changed.level.isin(band.levels) & (changed.item_source == band.item_source)).to_numpy()
    row = changed.index[
        (changed.model == "model-d").to_numpy() & (changed.status == "ok").to_numpy() & in_band
    ][3]
    changed.loc[row, "token_f1"] = 0.5 + changed.loc[row, "token_f1"] / 4  # another score, still in [0, 1]
    counted.clear()
    after = run_suite(changed, config, pair_store=full.pair_store)
    assert sum(counted) == 4 and after.pair_store.reused == 6
    _assert_same(after, run_suite(changed, config))


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 12},
        {"bootstrap_replicates": B + 1},
        {"confidence": 0.9},
    ],
)
def test_changed_settings_recompute_every_pair(scores, config, full, counted, change):
    other = config.model_copy(update={"study": config.study.model_copy(update=change)})
    counted.clear()
    after = run_suite(scores, other, pair_store=full.pair_store)
    assert sum(counted) == 10 and after.pair_store.reused == 0
    _assert_same(after, run_suite(scores, other))


def test_a_stricter_identifiability_rule_keeps_the_pairs_and_withholds_as_a_full_run(
    scores, config, full, counted
):
    """The rule (study.min_articles) qualifies the kept statistics afresh: nothing is recomputed."""
    other = config.model_copy(update={"study": config.study.model_copy(update={"min_articles": 20})})
    counted.clear()
    after = run_suite(scores, other, pair_store=full.pair_store)
    assert counted == [] and after.pair_store.reused == 10
    pair = after.results["model_contrasts"]["pairs"]["model-a vs model-b"]
    assert pair["h1_micro"]["identifiable"] is False  # 14 articles, below the rule's 20
    _assert_same(after, run_suite(scores, other))


def test_another_article_set_recomputes_every_pair(scores, config, full, counted):
    """The draws are over the articles: one article less changes every pair's replicates."""
    fewer = scores.loc[scores.doc_id != scores.doc_id.iloc[0]].reset_index(drop=True)
    counted.clear()
    after = run_suite(fewer, config, pair_store=full.pair_store)
    assert sum(counted) == 10 and after.pair_store.reused == 0
    _assert_same(after, run_suite(fewer, config))


def test_the_store_round_trips_through_its_file(scores, config, full, tmp_path):
    path = str(tmp_path / PAIR_STORE_FILE)
    before = run_suite(_without(scores, "model-e"), config)
    write_pair_store(before.pair_store, path)
    stored, why = read_pair_store(path)
    assert why is None and stored is not None and stored.settings == before.pair_store.settings
    pd.testing.assert_frame_equal(stored.frame, before.pair_store.frame, check_exact=True)
    after = run_suite(scores, config, pair_store=stored)
    assert after.pair_store.reused == 6
    _assert_same(after, full)


def test_a_missing_or_damaged_store_means_every_pair_is_computed(scores, full, tmp_path):
    path = tmp_path / PAIR_STORE_FILE
    assert read_pair_store(str(path)) == (None, None)  # a first analysis: nothing to say
    path.write_bytes(b"not parquet")
    store, why = read_pair_store(str(path))
    assert store is None and "unreadable" in str(why) and str(path) in str(why)
    write_pair_store(full.pair_store, str(path))
    table = pd.read_parquet(path).drop(columns=["macro.p"])
    table.to_parquet(path)
    store, why = read_pair_store(str(path))
    assert store is None and "damaged" in str(why) and "macro.p" in str(why)
    doubled = pd.concat([full.pair_store.table()] * 2)
    doubled.to_parquet(path)
    assert "more than once" in str(read_pair_store(str(path))[1])


def test_estimate_file_reuses_its_store_and_warns_on_a_damaged_one(scores, config, full, tmp_path):
    scores_path, out, store = tmp_path / "scores.parquet", tmp_path / "out.json", tmp_path / PAIR_STORE_FILE
    _without(scores, "model-a").to_parquet(scores_path)
    estimate_file(str(scores_path), str(out), config, full=True, pair_store_path=str(store))
    first, _ = read_pair_store(str(store))
    assert first is not None and len(first.frame) == 6
    scores.to_parquet(scores_path)
    want = estimate_file(str(scores_path), str(out), config, full=True)
    got = estimate_file(str(scores_path), str(out), config, full=True, pair_store_path=str(store))
    assert _without_time(got) == _without_time(want)
    stored, _ = read_pair_store(str(store))
    assert stored is not None and len(stored.frame) == 10
    store.write_bytes(b"damaged")
    with pytest.warns(UserWarning, match="unreadable"):
        again = estimate_file(str(scores_path), str(out), config, full=True, pair_store_path=str(store))
    assert _without_time(again) == _without_time(want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the store it wrote is read without a word
        estimate_file(str(scores_path), str(out), config, full=True, pair_store_path=str(store))


def _without_time(document: dict) -> dict:
    settings = {k: v for k, v in document["settings"].items() if k not in ("generated_at", "code_version")}
    return {**document, "settings": settings}


def test_a_sides_replicates_do_not_depend_on_the_sides_computed_with_it():
    """BLAS sums a column of a product in an order that depends on the product's width: one side's
    replicates must be the same bits alone or among any others, else a kept pair would differ."""
    rng = np.random.default_rng(1)
    weights = rng.integers(0, 4, size=(200, 30)).astype(np.float64)
    sums = rng.random((30, 41, 5))
    counts = rng.integers(1, 4, size=sums.shape).astype(np.float64)
    together = side_gaps(sums, counts, weights).vectors
    for k in range(41):
        for part in (slice(k, k + 1), slice(0, k + 1)):
            alone = side_gaps(sums[:, part], counts[:, part], weights).vectors
            for key, values in together.items():
                assert np.array_equal(alone[key][:, -1], values[:, k], equal_nan=True), (k, part, key)


def test_estimate_file_gives_the_suites_seconds_per_part(scores, config, full, tmp_path):
    """A benchmark reads the suite's own timer through ``timings`` (no private module patched)."""
    scores_path, out = tmp_path / "scores.parquet", tmp_path / "out.json"
    scores.to_parquet(scores_path)
    timings: dict[str, float] = {}
    estimate_file(str(scores_path), str(out), config, full=True, timings=timings)
    assert "prepare" in timings and all(seconds >= 0 for seconds in timings.values())
