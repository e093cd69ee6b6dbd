"""The granularity analysis's extra dimensions on crafted scores with known effects: length
buckets, model ranks and trends, sentence position within the paragraph, key-sentence roles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis import analyse_granularity
from clcg_pipeline.synthetic import ExtraEffects, synthetic_task_scores
from clcg_pipeline_tests.granularity.analysis_world import granularity_config, one

LANGS = ("en", "pt", "sw", "fon")
GAPS = {"pt": 0.02, "sw": 0.1, "fon": 0.2}
REPS = 60
EFFECTS = ExtraEffects(
    buckets=("8K", "32K"), bucket_gap={"32K": 0.1}, sentence_middle=0.05, role_penalty={"summary": 0.2}
)


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return granularity_config()


def _scores(n_documents: int = 24, effects: ExtraEffects | None = EFFECTS) -> pd.DataFrame:
    return synthetic_task_scores(
        LANGS, models=("m1", "m2"), n_documents=n_documents, gaps=GAPS, effects=effects
    )


@pytest.fixture(scope="module")
def results(config: ProjectConfig) -> dict[str, Any]:
    return analyse_granularity(_scores(), config, replicates=REPS).results


def test_gaps_per_length_bucket(results: dict[str, Any]) -> None:
    length = results["length"]
    for bucket, extra in (("8K", 0.0), ("32K", 0.1)):
        for iso, gap in (("sw", 0.1), ("fon", 0.2)):
            row = one(length["gaps"], bucket=bucket, granularity="word", metric="accuracy", language=iso)
            assert row["gap"] == pytest.approx(gap + extra) and row["identifiable"]
        pooled = one(length["gaps"], bucket=bucket, granularity="word", metric="accuracy", language="targets")
        assert pooled["gap"] == pytest.approx(0.15 + extra) and pooled["n_documents"] == 12
    assert [b["bucket"] for b in length["buckets"]] == ["8K", "32K"]
    assert length["note"] is None
    # No middle penalty: every bucket's middle-minus-edges contrast is 0.
    entry = one(length["middle_vs_edges"], bucket="32K", granularity="word", metric="accuracy", axis="region")
    assert entry["score_contrast"]["estimate"] == pytest.approx(0.0)


def test_a_bucket_below_min_documents_is_named_once(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(
        LANGS, n_documents=15, gaps=GAPS, effects=ExtraEffects(buckets=("8K", "8K", "128K"))
    )
    length = analyse_granularity(scores, config, replicates=REPS).results["length"]
    small = one(length["buckets"], bucket="128K")
    assert small == {"bucket": "128K", "n_documents": 5, "identifiable": False, "min_documents": 10}
    assert one(length["buckets"], bucket="8K")["identifiable"]
    # Issue 34: the rule decides (too_few_documents); the note names each bucket with its documents.
    rule = "too few documents: 5 < study.min_articles = 10"
    assert length["note"] == (
        "not identifiable (estimates descriptive, intervals withheld): length buckets below "
        "study.min_articles = 10 documents: 128K (5 documents)"
    )
    row = one(length["gaps"], bucket="128K", granularity="word", metric="accuracy", language="sw")
    assert not row["identifiable"] and row["ci_low"] is None and row["reason"] == rule


def test_sentence_position_curve_and_middle_contrast(results: dict[str, Any]) -> None:
    sent = results["sentence_position"]
    assert sent["note"] is None
    begin = one(sent["curve"], task="cloze", sentence_position="begin")
    middle = one(sent["curve"], task="cloze", sentence_position="middle")
    assert begin["score"] - middle["score"] == pytest.approx(0.05)
    entry = one(sent["middle_vs_edges"], task="cloze")
    assert entry["score_contrast"]["estimate"] == pytest.approx(-0.05)
    assert entry["score_contrast"]["identifiable"]
    # The middle penalty hits every language alike: no gap contrast.
    assert entry["gap_contrast"]["estimate"] == pytest.approx(0.0, abs=1e-12)


def test_score_by_role(results: dict[str, Any]) -> None:
    roles = results["roles"]
    assert roles["note"] is None
    core = one(roles["scores"], task="cloze", role="core", language="all")
    summary = one(roles["scores"], task="cloze", role="summary", language="all")
    assert core["score"] - summary["score"] == pytest.approx(0.2)
    fon = one(roles["scores"], task="paragraph_fill", role="summary", language="fon")
    assert fon["score"] == pytest.approx(0.7 - 0.2 - 0.2 - 0.05)  # gap, role, and half the docs in 32K


def test_dimensions_the_rows_lack_are_skipped_with_a_note(config: ProjectConfig) -> None:
    res = analyse_granularity(_scores(effects=None), config, replicates=REPS).results
    assert "'role'" in res["roles"]["note"] and res["roles"]["scores"] == []
    assert "'bucket'" in res["length"]["note"] and res["length"]["gaps"] == []
    assert "'sentence_position'" in res["sentence_position"]["note"]


def test_new_columns_leave_the_existing_estimates_unchanged(config: ProjectConfig) -> None:
    plain = analyse_granularity(_scores(effects=None), config, replicates=REPS).results
    extra = analyse_granularity(_scores(effects=ExtraEffects()), config, replicates=REPS).results
    for key in ("scores", "gaps", "position_curve", "middle_vs_edges", "no_context"):
        assert extra[key] == plain[key], key


def _shifted(frame: pd.DataFrame, by_model: dict[str, float], gap_slope: float) -> pd.DataFrame:
    """Model offsets on every row, and a non-English gap growing by ``gap_slope`` per granularity."""
    order = frame["granularity"].map({"word": 0, "sentence": 1, "paragraph": 2, "document": 3})
    other = (frame["language"] != "en").to_numpy()
    loss = frame["model"].map(by_model).to_numpy(float) + np.where(other, gap_slope * order, 0.0)
    return frame.assign(score=frame["score"] - loss)


def test_model_ranks_and_gap_trend(config: ProjectConfig) -> None:
    scores = _shifted(_scores(effects=None), {"m1": 0.0, "m2": 0.1}, 0.04)
    res = analyse_granularity(scores, config, replicates=REPS).results
    first = one(res["model_ranks"], granularity="word", metric="accuracy", model="m1")
    second = one(res["model_ranks"], granularity="word", metric="accuracy", model="m2")
    assert (first["rank"], first["rank_low"], first["rank_high"]) == (1, 1, 1)
    assert (second["rank"], second["rank_low"], second["rank_high"]) == (2, 2, 2)
    assert first["score"] - second["score"] == pytest.approx(0.1) and first["n_models"] == 2
    for model in ("m1", "m2", "all"):
        trend = one(res["gap_trends"], model=model)
        assert trend["granularities"] == ["word", "sentence", "paragraph", "document"]
        assert trend["estimate"] == pytest.approx(0.04) and trend["identifiable"]


def test_rank_interval_withheld_below_min_documents(config: ProjectConfig) -> None:
    scores = _shifted(_scores(n_documents=6, effects=None), {"m1": 0.0, "m2": 0.1}, 0.0)
    res = analyse_granularity(scores, config, replicates=REPS).results
    row = one(res["model_ranks"], granularity="word", metric="accuracy", model="m2")
    assert row["rank"] == 2 and row["rank_low"] is None and not row["identifiable"]


def test_a_level_at_zero_outside_english_is_explained_once(config: ProjectConfig) -> None:
    scores = _scores(n_documents=12, effects=None)
    word = (scores["granularity"] == "word").to_numpy() & (scores["language"] != "en").to_numpy()
    res = analyse_granularity(
        scores.assign(score=np.where(word, 0.0, scores["score"])), config, replicates=REPS
    )
    notes = [c for c in res.results["caveats"] if "every answer outside 'en' scored 0" in c]
    assert len(notes) == 1 and notes[0].startswith("word level:")
    plain = analyse_granularity(scores, config, replicates=REPS).results["caveats"]
    assert not [c for c in plain if "scored 0" in c and "outside" in c]


def test_the_asset_logs_each_dimension_note_once(config: ProjectConfig) -> None:
    from clcg_pipeline.granularity._analysis_assets import exclusion_warnings

    res = analyse_granularity(_scores(n_documents=12, effects=None), config, replicates=REPS).results
    lines = [w for w in exclusion_warnings(res) if "skipped" in w]
    assert sorted(w.split(":")[0] for w in lines) == ["length", "roles", "sentence position"]
