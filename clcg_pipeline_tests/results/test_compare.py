"""clcg compare: B - A per estimand, paired on the items both runs answered, else unpaired."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import draw_multiplicities, run_suite
from clcg_pipeline.results import (
    RunSide,
    compare_runs,
    comparison_html,
    comparison_lines,
    load_run,
    write_comparison_json,
)
from clcg_pipeline.storage import partition_dir, write_frame
from clcg_pipeline.synthetic import synthetic_scores
from clcg_pipeline_tests.analysis.conftest import small_config

N_ART = 24
SHIFT = 0.05


@pytest.fixture(scope="module")
def cfg(project, small_langs):
    return small_config(project, small_langs, 1, replicates=300)


@pytest.fixture(scope="module")
def runs(cfg) -> tuple[RunSide, RunSide]:
    """Run B answers the same items, each target-language answer SHIFT worse (a prompt change)."""
    scores_a = synthetic_scores(cfg.languages, n_models=1, n_articles=N_ART, n_stability=0, seed=8)
    metric = cfg.study.band.metric
    targets = scores_a["language"].isin(list(cfg.languages.targets))
    shifted = np.clip(scores_a[metric] - np.where(targets, SHIFT, 0.0), 0, 1)
    scores_b = scores_a.assign(**{metric: shifted})
    suite_a, suite_b = run_suite(scores_a, cfg), run_suite(scores_b, cfg)
    return RunSide("A", suite_a.estimates, scores_a), RunSide("B", suite_b.estimates, scores_b)


def _row(table: pd.DataFrame, estimand: str, group: str = "all") -> pd.Series:
    return table[(table["estimand"] == estimand) & (table["group"] == group)].iloc[0]


def _independent_micro_difference(a: pd.DataFrame, b: pd.DataFrame, cfg) -> np.ndarray:
    """B - A micro gap per bootstrap draw, from per-article sums with plain numpy."""
    band = cfg.study.band
    targets = list(cfg.languages.targets)
    draws = None

    def gaps(frame: pd.DataFrame) -> np.ndarray:
        nonlocal draws
        rows = frame[
            frame["level"].isin(band.levels)
            & (frame["item_source"] == band.item_source)
            & (frame["context_scope"] == band.context_scope)
        ]
        y = pd.Series(np.where(rows["status"] == "ok", rows[band.metric], 0.0), index=rows.index)
        articles = sorted(rows["doc_id"].astype(str).unique())
        if draws is None:
            draws = draw_multiplicities(len(articles), cfg.study.bootstrap_replicates, cfg.study.seed)
        weights = np.vstack([np.ones(len(articles)), draws])

        def sums(mask: pd.Series) -> tuple[np.ndarray, np.ndarray]:
            g = y[mask].groupby(rows.loc[mask, "doc_id"].astype(str)).agg(["sum", "count"])
            g = g.reindex(articles, fill_value=0)
            return weights @ g["sum"].to_numpy(float), weights @ g["count"].to_numpy(float)

        (s_en, n_en), (s_t, n_t) = sums(rows["language"] == "en"), sums(rows["language"].isin(targets))
        return s_en / n_en - s_t / n_t

    return gaps(b) - gaps(a)


def test_paired_difference_matches_an_independent_bootstrap(runs, cfg) -> None:
    a, b = runs
    table, info = compare_runs(a, b, cfg)
    assert info["paired"] and info["common_articles"] == N_ART
    micro = _row(table, "h1_micro")
    assert micro["pairing"] == "paired"
    expected = _independent_micro_difference(a.scores, b.scores, cfg)
    assert micro["difference"] == pytest.approx(expected[0], abs=1e-12)
    assert micro["difference"] == pytest.approx(SHIFT, abs=0.01)  # what the shift built in
    low, high = np.percentile(expected[1:], [2.5, 97.5])
    assert (micro["difference_ci_low"], micro["difference_ci_high"]) == pytest.approx((low, high), abs=1e-9)
    # Unpaired, the same difference carries both runs' article noise: a far wider interval.
    unpaired, _ = compare_runs(RunSide("A", a.estimates), RunSide("B", b.estimates), cfg)
    loose = _row(unpaired, "h1_micro")
    assert loose["pairing"] == "unpaired" and loose["difference"] == pytest.approx(micro["difference"])
    width = lambda r: r["difference_ci_high"] - r["difference_ci_low"]  # noqa: E731
    assert width(micro) < 0.5 * width(loose)
    # Estimands outside the H1 family stay unpaired, and say so; one row per estimand.
    assert _row(table, "h3_slope")["pairing"] == "unpaired"
    assert not table.duplicated(["estimand", "group"]).any()


def test_runs_without_common_items_and_estimands_of_one_run(runs, cfg) -> None:
    a, b = runs
    moved = b.scores.assign(doc_id=b.scores["doc_id"].astype(str) + "-other")
    extra = pd.DataFrame([{"estimand": "new_thing", "group": "all", "estimate": 0.1}])
    table, info = compare_runs(
        a, RunSide("B", pd.concat([b.estimates, extra], ignore_index=True), moved), cfg
    )
    assert not info["paired"] and info["common_rows"] == 0
    assert (table["pairing"] == "unpaired").all()
    assert _row(table, "new_thing")["note"] == "only in run B"


def test_load_run_reads_folders_and_documents_and_names_what_is_missing(tmp_path: Path, runs) -> None:
    a, _ = runs
    folder = tmp_path / "run"
    write_frame(partition_dir(folder, "estimates", None) / "data.parquet", a.estimates, contract="estimates")
    loaded = load_run(folder)
    assert loaded.scores is None and len(loaded.estimates) == len(a.estimates)
    document = tmp_path / "study_results.json"
    document.write_text(json.dumps({"estimands": {"h1_micro/all": {"estimate": 0.1, "ci_low": 0.05}}}))
    assert load_run(document).estimates.iloc[0]["estimate"] == 0.1
    with pytest.raises(ValueError, match="not a finished run's data folder"):
        load_run(tmp_path / "empty")


def test_json_and_html_outputs(tmp_path: Path, runs, cfg) -> None:
    table, info = compare_runs(*runs, cfg)
    write_comparison_json(table, info, tmp_path / "compare.json")
    document = json.loads((tmp_path / "compare.json").read_text())
    assert document["paired"] and len(document["rows"]) == len(table)
    page = comparison_html(table.assign(note="<script>x</script>"), info)
    assert "<script>" not in page and "http" not in page and "h1_micro" in page


# -- issue 34: pairing per model, what one run alone has, reasons, p, stale documents ---------


@pytest.fixture(scope="module")
def cfg2(project, small_langs):
    return small_config(project, small_langs, 2, replicates=300)


@pytest.fixture(scope="module")
def skipped(cfg2) -> tuple[pd.DataFrame, pd.DataFrame, str, int]:
    """Run B: the first model SHIFT worse in every target language, and it skipped its hardest
    10% of target-language rows (which the other model still answered in B)."""
    a = synthetic_scores(cfg2.languages, n_models=2, n_articles=N_ART, n_stability=0, seed=9)
    metric = cfg2.study.band.metric
    model = sorted(a["model"].unique())[0]
    mine = (a["model"] == model) & a["language"].isin(list(cfg2.languages.targets))
    b = a.assign(**{metric: np.where(mine, np.clip(a[metric] - SHIFT, 0, 1), a[metric])})
    hard = a.loc[mine, metric].rank(method="first") <= 0.1 * mine.sum()
    return a, b.drop(index=hard[hard].index), model, int(hard.sum())


def test_a_model_that_skipped_items_is_compared_on_the_items_it_answered_in_both(skipped, cfg2) -> None:
    """The old pairing key left out the model: run A kept this model's answers to the items it
    skipped in B (the other model answered them), and its B - A came out near zero or negative."""
    a, b, model, dropped = skipped
    table, info = compare_runs(RunSide("A", pd.DataFrame(), a), RunSide("B", pd.DataFrame(), b), cfg2)
    assert info["common_rows"] == len(b) and info["rows_a"] == len(b) + dropped
    mine = _row(table, "h1_micro_model", model)
    assert mine["pairing"] == "paired"
    # On the same rows, B - A is the shift built in (less where clipping at 0 ate some of it).
    kept = a.loc[b.index]
    exact, _ = compare_runs(RunSide("A", pd.DataFrame(), kept), RunSide("B", pd.DataFrame(), b), cfg2)
    assert mine["difference"] == pytest.approx(_row(exact, "h1_micro_model", model)["difference"], abs=1e-12)
    assert mine["difference"] == pytest.approx(SHIFT, abs=0.01) and mine["difference_ci_low"] > 0
    # The items only run A has are named, by model and language.
    only_a = info["only_in"]["A"]
    assert only_a["models"] == [] and only_a["languages"] == [] and only_a["rows"] == dropped
    assert {c["model"] for c in only_a["items_by_model_language"]} == {model}
    assert only_a["items"] == len(only_a["item_list"]) > 0 and info["only_in"]["B"]["rows"] == 0


def test_p_is_the_suites_bootstrap_p(skipped, cfg2) -> None:
    """(k+1)/(B+1), two-sided: a shift every replicate sees gives 2/(B+1), never 0."""
    a, b, model, _ = skipped
    table, _ = compare_runs(RunSide("A", pd.DataFrame(), a), RunSide("B", pd.DataFrame(), b), cfg2)
    replicates = cfg2.study.bootstrap_replicates
    assert _row(table, "h1_micro_model", model)["p"] == pytest.approx(2 / (replicates + 1))
    assert (table.loc[table["pairing"] == "unpaired", "p"].isna()).all()


def test_a_model_only_one_run_has_is_named_and_its_rows_say_so(skipped, cfg2) -> None:
    a, _, model, _ = skipped
    extra = a[a["model"] == model].assign(model="model-new")
    b = pd.concat([a, extra], ignore_index=True)
    table, info = compare_runs(RunSide("A", pd.DataFrame(), a), RunSide("B", pd.DataFrame(), b), cfg2)
    assert info["only_in"]["B"]["models"] == ["model-new"] and info["only_in"]["A"]["models"] == []
    assert info["common_rows"] == len(a)  # the pooled H1 rows pair the models both runs have
    row = _row(table, "h1_micro_model", "model-new")
    assert row["pairing"] == "unpaired" and row["a_estimate"] is None and row["b_estimate"] is not None
    assert row["source"] == "B: scores"
    assert row["reason"] == "only in run B: model model-new is not in run A"
    assert "only in run B: models model-new" in "\n".join(comparison_lines(info))


def test_every_missing_interval_has_its_reason(cfg) -> None:
    """Six articles (< study.min_articles): every interval is withheld, each with its reason."""
    few = synthetic_scores(cfg.languages, n_models=1, n_articles=6, n_stability=0, seed=3)
    suite = run_suite(few, cfg)
    table, _ = compare_runs(RunSide("A", suite.estimates, few), RunSide("B", suite.estimates, few), cfg)
    missing = table[table["difference_ci_low"].isna()]
    assert len(missing) and missing["reason"].map(bool).all()
    assert "too few articles: 6 < study.min_articles = 10" in _row(table, "h1_micro")["reason"]


def test_a_stale_document_is_never_shown(runs, cfg) -> None:
    """A's scores changed after its estimates were written: its rows outside the recomputed H1
    family are withheld, saying why, and the H1 rows are recomputed from the scores."""
    a, b = runs
    metric = cfg.study.band.metric
    changed = a.scores.assign(**{metric: np.clip(a.scores[metric] - 0.1, 0, 1)})
    table, info = compare_runs(RunSide("A", a.estimates, changed, document="a/estimates"), b, cfg)
    assert "there but" in info["stale"]["A"] and "from its scores" in info["stale"]["A"]
    slope = _row(table, "h3_slope")
    assert slope["a_estimate"] is None and slope["difference"] is None
    assert slope["reason"].startswith("run A: run A's document a/estimates is stale")
    assert _row(table, "h1_micro")["source"] == "scores"


def test_two_scores_files_and_bad_files(tmp_path: Path, runs, cfg) -> None:
    a, b = runs
    paths = []
    for name, side in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.parquet"
        side.scores.to_parquet(path)
        paths.append(path)
    loaded = [load_run(p) for p in paths]
    assert all(s.scores is not None and s.document is None for s in loaded)
    table, info = compare_runs(*loaded, cfg)
    assert info["paired"] and _row(table, "h1_micro")["pairing"] == "paired"
    (tmp_path / "junk.bin").write_bytes(b"\xca\xfe not json")
    with pytest.raises(ValueError, match=r"neither a scores Parquet file nor a readable study_results\.json"):
        load_run(tmp_path / "junk.bin")
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="no 'estimands' object"):
        load_run(tmp_path / "other.json")
    with pytest.raises(ValueError, match="scores lack column"):
        compare_runs(RunSide("A", pd.DataFrame(), a.scores.drop(columns="item_id")), loaded[1], cfg)
