"""drilldown(): the items where English and a target language disagree most."""

from __future__ import annotations

import json
import tracemalloc

import pandas as pd
import pytest

from clcg_pipeline.analysis._drilldown import drilldown


def _score(language: str, item: str, rep: int, f1: float, *, level: str = "L3", model: str = "m1") -> dict:
    return {
        "model": model,
        "language": language,
        "doc_id": item.split("-")[0],
        "item_id": item,
        "rep": rep,
        "context_scope": "full_body",
        "level": level,
        "item_source": "llm",
        "token_f1": f1,
        "status": "ok",
    }


def _pred(language: str, item: str, rep: int, answer: str, *, model: str = "m1") -> dict:
    return {
        "model": model,
        "language": language,
        "doc_id": item.split("-")[0],
        "item_id": item,
        "rep": rep,
        "context_scope": "full_body",
        "answer": answer,
        "status": "ok",
    }


def _frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    scores = pd.DataFrame(
        [
            # d1-a: EN 1.0 in both reps, sw 0.2 and 0.4 -> difference 0.7
            _score("en", "d1-a", 0, 1.0),
            _score("en", "d1-a", 1, 1.0),
            _score("sw", "d1-a", 0, 0.2),
            _score("sw", "d1-a", 1, 0.4),
            # d1-b: EN 0.9, sw 0.0 -> 0.9 (the largest)
            _score("en", "d1-b", 0, 0.9),
            _score("sw", "d1-b", 0, 0.0),
            # d2-c: sw better than EN -> not a disagreement in the gap's direction
            _score("en", "d2-c", 0, 0.1),
            _score("sw", "d2-c", 0, 0.8),
            # d2-d: outside the band (L1) -> left out when the band is given
            _score("en", "d2-d", 0, 1.0, level="L1"),
            _score("sw", "d2-d", 0, 0.0, level="L1"),
            # d3-e: only in English -> not paired
            _score("en", "d3-e", 0, 1.0),
            # ka: one item, difference 0.5
            _score("en", "d1-a", 0, 1.0, model="m2"),
            _score("ka", "d1-a", 0, 0.5, model="m2"),
        ]
    )
    predictions = pd.DataFrame(
        [
            _pred("en", "d1-a", 0, "the pipes burst"),
            _pred("en", "d1-a", 1, "the pipes burst"),
            _pred("sw", "d1-a", 0, "mabomba"),
            _pred("sw", "d1-a", 1, "Not stated"),
            _pred("sw", "d1-a", 2, "Not stated"),  # majority answer over repetitions
            _pred("en", "d1-b", 0, "in summer"),
            _pred("sw", "d1-b", 0, "Not stated"),
        ]
    )
    items = pd.DataFrame(
        {
            "item_id": ["d1-a", "d1-b", "d2-c"],
            "doc_id": ["d1", "d1", "d2"],
            "question": ["Why replace the pipes?", "When was the work?", "Who counted?"],
            "gold_answer": ["They burst often", "In summer", "Volunteers"],
            "options": [None, None, None],
        }
    )
    return scores, predictions, items


def test_top_disagreements_per_language_with_answers_and_gold() -> None:
    scores, predictions, items = _frames()
    out = drilldown(scores, predictions, items, levels=["L3", "L4", "L5"], languages=["en", "sw", "ka", "eu"])
    assert set(out) == {"sw", "ka", "eu"}  # the reference is never a target; eu listed, empty
    assert out["eu"] == []
    sw = out["sw"]
    assert [e["item_id"] for e in sw] == ["d1-b", "d1-a"]  # largest first; d2-c (sw better), d2-d (L1) out
    first, second = sw
    assert first["difference"] == pytest.approx(0.9)
    assert second["en_score"] == pytest.approx(1.0) and second["target_score"] == pytest.approx(0.3)
    assert second["difference"] == pytest.approx(0.7) and second["reps"] == 2
    assert first["question"] == "When was the work?" and first["gold"] == "In summer"
    assert first["en_answer"] == "in summer" and first["target_answer"] == "Not stated"
    assert second["target_answer"] == "Not stated"  # 2 of 3 repetitions
    assert (second["model"], second["doc_id"], second["level"]) == ("m1", "d1", "L3")
    assert [e["model"] for e in out["ka"]] == ["m2"]
    assert out["ka"][0]["en_answer"] is None  # no prediction stored for it: missing, not invented
    json.dumps(out)  # JSON-able as it is


def test_k_limits_and_band_filters() -> None:
    scores, predictions, items = _frames()
    assert [e["item_id"] for e in drilldown(scores, predictions, items, k=1)["sw"]] == ["d2-d"]
    in_band = drilldown(scores, predictions, items, k=1, levels=["L3"])["sw"]
    assert [e["item_id"] for e in in_band] == ["d1-b"]
    assert drilldown(scores, predictions, items, context_scope="closed_book") == {}
    with pytest.raises(ValueError, match="k must be at least 1"):
        drilldown(scores, predictions, items, k=0)


def test_missing_inputs_give_empty_lists_or_a_clear_error() -> None:
    scores, predictions, items = _frames()
    assert drilldown(pd.DataFrame(), predictions, items, languages=["sw"]) == {"sw": []}
    bare = drilldown(scores, pd.DataFrame(), pd.DataFrame(), levels=["L3"])
    assert bare["sw"][0]["question"] is None and bare["sw"][0]["en_answer"] is None
    with pytest.raises(ValueError, match=r"scores lack column\(s\) \['token_f1'\]"):
        drilldown(scores.drop(columns="token_f1"), predictions, items)


def test_categorical_keys_give_the_same_result_without_a_cartesian_product() -> None:
    scores, predictions, items = _frames()
    expected = drilldown(scores, predictions, items, levels=["L3"])
    # Categorical keys with unused categories, as synthetic or pandas-read frames can have: grouping
    # over every category combination (not just observed keys) needed over 20 GB on the
    # synthetic study; here it would need hundreds of MB.
    for frame in (scores, predictions):
        frame["model"] = frame["model"].astype("category").cat.add_categories([f"m-{i}" for i in range(300)])
        frame["language"] = (
            frame["language"].astype("category").cat.add_categories([f"l-{i}" for i in range(30)])
        )
    predictions["answer"] = (
        predictions["answer"].astype("category").cat.add_categories([f"a-{i}" for i in range(3000)])
    )
    tracemalloc.start()
    try:
        got = drilldown(scores, predictions, items, levels=["L3"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == expected
    assert peak < 30_000_000, f"peak {peak / 1e6:.0f} MB"
