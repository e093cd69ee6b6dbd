"""Issue 37: tie groups (models whose ranks cannot be separated) on panels where they are known."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import leaderboard, run_suite, write_leaderboard
from clcg_pipeline.analysis.sections.model_contrasts import tie_groups
from clcg_pipeline.config import LanguagesConfig, ProjectConfig, load_config
from clcg_pipeline.storage import jsonable
from clcg_pipeline_tests.analysis.conftest import band_scores, small_config
from clcg_pipeline_tests.analysis.test_suite_golden import _languages

TARGETS = ["sw", "am", "fon"]
MODELS = [f"model-{c}" for c in "abcdef"]


@cache
def _panel() -> tuple[ProjectConfig, LanguagesConfig]:
    """The synthetic project on the five-language panel (en, pt, sw, am, fon), as the analysis tests use."""
    from clcg_pipeline.synthetic import synthetic_config

    return synthetic_config(load_config("assets_config")), _languages()


def planted_scores(shifts: list[float], n_articles: int = 40) -> pd.DataFrame:
    """One model's band scores copied per model, each target score lowered by its shift.

    The first three models also get a zero-mean per-article wobble (+-0.03, two different
    patterns), so they differ article by article but not on average: their ranks cannot be
    separated, while a shift of 0.1 on every target unit separates a model from them.
    """
    base = band_scores(_panel()[1], 1, n_articles, seed=3)
    doc = base.doc_id.astype(int).to_numpy()
    target = base.language.isin(TARGETS).to_numpy()
    wobble = [np.zeros(len(base)), np.where(doc % 2 == 0, 0.03, -0.03), np.where(doc % 4 < 2, 0.03, -0.03)]
    frames = []
    for k, shift in enumerate(shifts):
        noise = wobble[k] if k < len(wobble) else 0.0
        lowered = base.token_f1 - np.where(target, shift + noise, 0.0)
        frames.append(base.assign(model=MODELS[k], token_f1=lowered))
    return pd.concat(frames, ignore_index=True)


def planted_study(shifts: list[float], n_articles: int = 40) -> tuple[dict[str, Any], pd.DataFrame]:
    """The suite's results document (as JSON values) and estimates table on the planted panel."""
    project, languages = _panel()
    cfg = small_config(project, languages, len(shifts), replicates=200, seed=11)
    result = run_suite(planted_scores(shifts, n_articles), cfg)
    return jsonable(result.results), result.estimates


def run_planted(shifts: list[float], n_articles: int = 40) -> dict[str, Any]:
    return planted_study(shifts, n_articles)[0]


@pytest.fixture(scope="module")
def five():
    """Gaps 0.10, 0.10, 0.10, 0.20, 0.30 above a common base: groups {a, b, c}, {d}, {e}."""
    return run_planted([0.0, 0.0, 0.0, 0.1, 0.2])


def test_planted_gaps_give_the_known_tie_groups(five):
    ties = five["model_contrasts"]["tie_groups"]
    assert ties["reason"] is None and ties["level"] == pytest.approx(0.05)
    assert [sorted(group) for group in ties["groups"]] == [
        ["model-a", "model-b", "model-c"],
        ["model-d"],
        ["model-e"],
    ]
    assert ties["by_model"] == {
        "model-a": 1,
        "model-b": 1,
        "model-c": 1,
        "model-d": 2,
        "model-e": 3,
    }


def test_leaderboard_rows_carry_the_tie_group(five, tmp_path: Path):
    frame = leaderboard(five)
    assert list(frame.model[-2:]) == ["model-d", "model-e"]
    assert list(frame.tie_group) == [1, 1, 1, 2, 3]
    write_leaderboard(five, tmp_path)
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert list(csv.tie_group) == [1, 1, 1, 2, 3]
    document = json.loads((tmp_path / "leaderboard.json").read_text())
    assert [r["tie_group"] for r in document["models"]] == [1, 1, 1, 2, 3]
    assert document["tie_groups"]["reason"] is None and len(document["tie_groups"]["groups"]) == 3


def test_too_few_articles_gives_no_tie_groups_and_says_why_once(tmp_path: Path):
    doc = run_planted([0.0, 0.0, 0.1], n_articles=4)
    ties = doc["model_contrasts"]["tie_groups"]
    assert ties["groups"] == [] and ties["by_model"] == {}
    assert ties["reason"].startswith("too few articles")
    frame = leaderboard(doc)
    assert frame.tie_group.isna().all()
    write_leaderboard(doc, tmp_path)
    document = json.loads((tmp_path / "leaderboard.json").read_text())
    assert document["tie_groups"]["reason"].startswith("too few articles")


def _block(ranks: dict[str, float], p_adj: dict[str, float | None]) -> dict:
    pairs = {}
    for name, p in p_adj.items():
        first, second = name.split(" vs ")
        pairs[name] = {"model_a": first, "model_b": second, "h1_micro": {"p_adj": p, "reason": None}}
    return {
        "status": "estimated",
        "models": list(ranks),
        "ranks": {m: {"h1_micro": {"estimate": r, "identifiable": True}} for m, r in ranks.items()},
        "pairs": pairs,
    }


def test_groups_follow_rank_order_and_chain_through_adjacent_pairs():
    """Adjacent in rank order, whichever way a pair is named; A~B and B~C join A and C even
    when A and C differ (the rule is a run of adjacent pairs, documented in ESTIMANDS.md)."""
    block = _block(
        {"x": 3.0, "y": 1.0, "z": 2.0, "w": 4.0},
        {"x vs y": 0.001, "x vs z": 0.2, "y vs z": 0.5, "w vs x": 0.01, "w vs y": 0.0, "w vs z": 0.0},
    )
    out = tie_groups(block, 0.05)
    assert out["groups"] == [["y", "z", "x"], ["w"]]
    assert out["by_model"] == {"y": 1, "z": 1, "x": 1, "w": 2}


def test_an_adjacent_pair_without_p_withholds_the_groups():
    block = _block({"x": 1.0, "y": 2.0}, {"x vs y": None})
    block["pairs"]["x vs y"]["h1_micro"]["reason"] = "no item answered by both models"
    out = tie_groups(block, 0.05)
    assert out["groups"] == [] and out["reason"] == "x vs y: no item answered by both models"


def test_one_model_has_no_tie_groups():
    doc = run_planted([0.0], n_articles=12)
    ties = doc["model_contrasts"]["tie_groups"]
    assert ties["groups"] == [] and ties["reason"] == doc["model_contrasts"]["status"]
