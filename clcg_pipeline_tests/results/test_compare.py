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
