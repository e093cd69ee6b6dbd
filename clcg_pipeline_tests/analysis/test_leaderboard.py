"""Issue 21: the leaderboard, one row per model, as a frame and as leaderboard.csv/.json."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.analysis import LEADERBOARD_COLUMNS, leaderboard, run_suite, write_leaderboard
from clcg_pipeline.storage import jsonable
from clcg_pipeline_tests.analysis.conftest import band_scores, small_config


def _run(project, small_langs, n_models: int, n_articles: int = 14):
    cfg = small_config(project, small_langs, n_models, replicates=100)
    scores = band_scores(small_langs, n_models, n_articles, seed=9)
    return jsonable(run_suite(scores, cfg).results)


@pytest.fixture(scope="module")
def doc(project, small_langs):
    return _run(project, small_langs, 3)


def test_one_row_per_model_from_the_results(doc):
    frame = leaderboard(doc)
    assert list(frame.columns) == LEADERBOARD_COLUMNS
    assert sorted(frame.model) == ["model-a", "model-b", "model-c"]
    assert list(frame["rank"]) == sorted(frame["rank"])  # best (smallest gap) first
    by_model, block = doc["h1"]["by_model"], doc["model_contrasts"]
    for row in frame.to_dict(orient="records"):
        m = row["model"]
        micro, net = by_model[m]["h1_micro"], by_model[m]["macro_net"]
        assert (row["h1_micro"], row["h1_micro_ci_low"], row["h1_micro_ci_high"]) == (
            micro["estimate"],
            micro["ci_low"],
            micro["ci_high"],
        )
        assert (row["macro_net"], row["macro_net_ci_high"]) == (net["estimate"], net["ci_high"])
        rank = block["ranks"][m]["h1_micro"]
        assert (row["rank"], row["rank_ci_low"], row["rank_ci_high"]) == (
            rank["estimate"],
            rank["ci_low"],
            rank["ci_high"],
        )
        assert row["rank_net"] == block["ranks"][m]["macro_net"]["estimate"]
        assert row["english_score"] == block["english_score"][m]["estimate"]
        assert row["identifiable"] is True and row["reason"] is None and row["n_models"] == 3


def test_written_beside_the_results_atomically(doc, tmp_path: Path):
    paths = write_leaderboard(doc, tmp_path)
    assert Path(paths["csv"]) == tmp_path / "leaderboard.csv"
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    frame = leaderboard(doc)
    assert list(csv.columns) == LEADERBOARD_COLUMNS and list(csv.model) == list(frame.model)
    assert list(csv.h1_micro) == pytest.approx(list(frame.h1_micro), rel=1e-12)
    document = json.loads((tmp_path / "leaderboard.json").read_text())
    assert document["columns"] == LEADERBOARD_COLUMNS and document["status"] == "estimated"
    assert [r["model"] for r in document["models"]] == list(frame.model)
    assert document["models"][0]["rank"] == 1
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind


def test_too_few_articles_marks_rows_not_identifiable(project, small_langs, tmp_path: Path):
    doc = _run(project, small_langs, 2, n_articles=4)
    frame = leaderboard(doc)
    assert not frame.identifiable.any()
    assert frame.reason.str.contains("too few articles").all()
    assert frame.h1_micro_ci_low.isna().all() and frame.h1_micro.notna().all()
    write_leaderboard(doc, tmp_path)
    rows = json.loads((tmp_path / "leaderboard.json").read_text())["models"]
    assert rows[0]["h1_micro_ci_low"] is None and rows[0]["identifiable"] is False


def test_one_model_and_an_empty_document(project, small_langs):
    doc = _run(project, small_langs, 1)
    frame = leaderboard(doc)
    assert list(frame.model) == ["model-a"] and frame["rank"].tolist() == [1]
    empty = leaderboard({})
    assert list(empty.columns) == LEADERBOARD_COLUMNS and len(empty) == 0
