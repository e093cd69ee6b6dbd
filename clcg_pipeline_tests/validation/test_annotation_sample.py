"""The annotation sample (strata, oversampling, blocks, pairs, attention checks) and the keypoints."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.calls._judge import render_judge_request
from clcg_pipeline.config import ConditionSettings, ModelSpec, load_config
from clcg_pipeline.validation.human._annotation_sample import ATTENTION_EXPECTED, build_annotation_sample
from clcg_pipeline.validation.human._forms import forms_of
from clcg_pipeline.validation.human._keypoints import (
    KEYPOINTS_TEMPLATE,
    checklist_items,
    split_facts,
    write_keypoints,
    write_keypoints_offline,
)
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG
from clcg_pipeline_tests.validation.annotation_world import MODELS, settings, world


def _sample(**changes: object):
    w = world()
    return build_annotation_sample(
        w["predictions"], w["scores"], w["items"], w["languages"], settings(**changes), models=MODELS
    )


def test_singles_are_stratified_and_weak_responses_oversampled() -> None:
    drawn = _sample(responses=240)
    singles = drawn.sample[drawn.sample["kind"] == "single"]
    assert len(singles) == 240
    cells = singles.groupby(["language", "category", "model"]).size()
    # 4 languages x 3 categories x 2 models = 24 cells of 10; a human cell holds only 8 responses,
    # and its shortfall moves to the other cells (11 each).
    assert len(cells) == 24
    assert set(cells.xs("human", level="category")) == {8}
    assert set(cells.drop("human", level="category")) == {11}
    assert set(singles["category"]) == {"llm_shallow", "llm_deep", "human"}
    assert set(singles.loc[singles["level"] == "H", "category"]) == {"human"}
    # Within an llm cell whose bins can supply it, 11 x 0.40/0.30/0.30 -> exactly 5 LOW / 3 MID / 3 HIGH.
    w = world()
    pool = w["scores"][w["scores"]["context_scope"] == "full_body"].merge(
        w["items"], on=["item_id", "doc_id"]
    )
    pool = pool.assign(
        bin=pd.cut(pool["token_f1"], [-1, 1 / 3, 2 / 3, 2], right=False, labels=["LOW", "MID", "HIGH"])
    )
    pool["category"] = pool["level"].map(
        lambda lv: "human" if lv == "H" else ("llm_shallow" if lv < "L3" else "llm_deep")
    )
    available = pool.groupby(["language", "category", "model", "bin"], observed=False).size().unstack()
    available = available.drop("human", level="category")
    full = available[(available["LOW"] >= 5) & (available["MID"] >= 3) & (available["HIGH"] >= 3)]
    assert len(full) >= 3
    drawn_bins = (
        singles.groupby(["language", "category", "model", "quality_bin"]).size().unstack(fill_value=0)
    )
    for cell in full.index:
        assert tuple(drawn_bins.loc[cell, ["LOW", "MID", "HIGH"]]) == (5, 3, 3)
    # And LOW is over-represented relative to the population overall.
    assert (singles["quality_bin"] == "LOW").mean() > (pool["bin"] == "LOW").mean()
    # Never an unparseable or closed-book response.
    bad = w["predictions"].iloc[0]
    assert not (
        (singles["model"] == bad["model"])
        & (singles["item_id"] == bad["item_id"])
        & (singles["language"] == bad["language"])
    ).any()


def test_three_distinct_annotators_per_task_and_balanced_forms() -> None:
    drawn = _sample()
    rated = drawn.sample[drawn.sample["kind"].isin(["single", "pair"])]
    assert all(len(a) == 3 and len(set(a)) == 3 for a in rated["annotators"])
    forms = forms_of(drawn.sample)
    loads = forms.groupby("annotator_id").size()
    assert loads.max() - loads.min() <= 1
    assert loads.max() <= settings().items_per_form
    # Positions within a form are 1..n without gaps.
    for _, form in forms.groupby("annotator_id"):
        assert list(form["position"]) == list(range(1, len(form) + 1))


def test_attention_check_planted_seventh_with_a_known_answer() -> None:
    drawn = _sample()
    attention = drawn.sample[drawn.sample["kind"] == "attention"]
    forms = forms_of(drawn.sample)
    assert len(attention) == forms["annotator_id"].nunique()  # one per form
    assert set(attention["attention_field"]) == {"adequacy"}
    assert set(attention["attention_expected"]) == {ATTENTION_EXPECTED}
    at = forms[forms["task_id"].isin(attention["task_id"])]
    full = forms.groupby("annotator_id").size()
    for annotator, position in zip(at["annotator_id"], at["position"], strict=True):
        assert position == min(7, full[annotator])


def test_pairs_compare_a_higher_with_a_lower_resource_language_in_recorded_order() -> None:
    w = world()
    drawn = _sample()
    pairs = drawn.sample[drawn.sample["kind"] == "pair"]
    assert len(pairs) == 12
    joshi = dict(zip(w["languages"]["iso"], w["languages"]["joshi_class"], strict=True))
    preds = w["predictions"][w["predictions"]["context_scope"] == "full_body"].set_index(
        ["model", "language", "item_id", "rep"]
    )["answer"]
    for row in pairs.to_dict("records"):
        assert joshi[row["language_higher"]] > joshi[row["language_lower"]]
        assert row["language_a"] == (
            row["language_higher"] if row["a_side"] == "higher" else row["language_lower"]
        )
        assert row["response_a"] == preds[(row["model"], row["language_a"], row["item_id"], 0)]
        assert row["response_b"] == preds[(row["model"], row["language_b"], row["item_id"], 0)]
    assert set(pairs["a_side"]) == {"higher", "lower"}  # randomized, both orders occur


def test_same_seed_same_sample_other_seed_other_sample() -> None:
    a, b, c = _sample(), _sample(), _sample(seed=8)
    pd.testing.assert_frame_equal(a.sample, b.sample)
    assert set(a.sample["task_id"]) != set(c.sample["task_id"])


def test_shortfall_is_reported_when_the_data_cannot_fill_the_quota() -> None:
    drawn = _sample(responses=5000, pairs=100000)
    assert drawn.counts["single"] < 5000
    assert any("individual arm: only" in s and "of 5000" in s for s in drawn.shortfalls)
    assert any("contrastive arm: only" in s for s in drawn.shortfalls)
    empty = build_annotation_sample(
        pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), world()["languages"], settings(), models=MODELS
    )
    assert empty.sample.empty and any("0 of 60" in s for s in empty.shortfalls)


def test_bad_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="quality_weights"):
        _sample(quality_weights={"LOW": 0.5, "MID": 0.5, "HIGH": 0.5})


def test_offline_writer_splits_clauses_deterministically() -> None:
    assert split_facts("A grant, the council, and local firms.") == ["A grant", "the council", "local firms"]
    assert split_facts("18,400") == ["18,400"]  # a thousands separator is not a clause break
    request = render_judge_request(
        KEYPOINTS_TEMPLATE,
        {"question": "Who paid?", "gold_answer": "The town paid; the museum raised 2,000 euros."},
        settings=ConditionSettings(temperature=0),
    )
    spec = ModelSpec(id="w", provider="offline", model="rule-writer-v1", evaluated=False)
    reply = json.loads(write_keypoints_offline(request, spec))
    assert reply == {"keypoints": ["The town paid", "the museum raised 2,000 euros"]}
    assert KEYPOINTS_TEMPLATE.schema.model_validate(reply)


def test_keypoints_written_through_the_runner_once_and_frozen(tmp_path: Path) -> None:
    writer = load_config(DEFAULT_CONFIG).models.get("offline-writer")
    items = checklist_items(_sample().sample)
    assert not items.empty and "L0" not in set(items["item_id"].str.split("-").str[1])
    keypoints, judgements, calls = write_keypoints(
        writer, items, CallOptions(cache_dir=str(tmp_path / "cache"))
    )
    assert set(judgements["status"]) == {"ok"} and len(calls) == len(items)
    first = keypoints[keypoints["item_id"] == items["item_id"].iloc[0]]
    assert list(first["text"]) == [
        "The mill closed in 19" + items["item_id"].iloc[0][1] + items["item_id"].iloc[0][-1],
        "the workers moved to the port town",
    ]
    assert set(keypoints["writer"]) == {"offline-writer"}
    # Frozen: stored rows are kept as they are and not asked again.
    edited = keypoints.assign(text=keypoints["text"] + " (frozen)")
    again, judged, _ = write_keypoints(
        writer, items, CallOptions(cache_dir=str(tmp_path / "cache")), existing=edited
    )
    assert judged.empty
    pd.testing.assert_frame_equal(
        again, edited.sort_values(["item_id", "keypoint_id"]).reset_index(drop=True)
    )
