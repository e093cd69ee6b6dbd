"""The human-validation QC funnel: counts at each step on crafted annotations."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.config import HumanValidationSettings
from clcg_pipeline.synthetic import synthetic_human_study
from clcg_pipeline.validation.human._qc import contradictions, normalize_value, run_qc

SETTINGS = HumanValidationSettings()


def single(ann: str, task: str, **fields: Any) -> dict[str, Any]:
    base = {
        "annotator_id": ann,
        "task_id": task,
        "kind": "single",
        "adequacy": 4,
        "equivalence": "equivalent",
        "keypoint_recall": 1.0,
        "seconds": 40.0,
    }
    return {**base, **fields}


def crafted() -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    anns = [f"a{i}" for i in range(1, 9)]
    for a in anns:  # every annotator answers the attention item; a1 fails it
        rows.append(
            {
                "annotator_id": a,
                "task_id": f"att-{a}",
                "kind": "attention",
                "adequacy": 1,
                "attention_passed": a != "a1",
                "seconds": 30.0,
            }
        )
    for a in anns:
        for t in range(6):
            rows.append(single(a, f"s{t}", seconds=40.0 + t))
        rows.append({"annotator_id": a, "task_id": "p0", "kind": "pair", "preference": "A", "seconds": 35.0})
    # a2: 4 of 6 individual ratings contradictory (adequacy 5 but "not equivalent")
    for r in rows:
        if r["annotator_id"] == "a2" and r["kind"] == "single" and r["task_id"] in ("s0", "s1", "s2", "s3"):
            r.update(adequacy=5, equivalence="Not equivalent")
    # a3: one contradictory rating only (1/6 < 30%): stays
    rows.append(single("a3", "s9", adequacy=1, equivalence="equivalent"))
    # item-level controls: impossible value, missing required field, unknown task, duplicate, bad pair
    rows.append(single("a4", "s6", adequacy=9))
    rows.append(single("a4", "s7", adequacy=None))
    rows.append(single("a5", "zz", adequacy=3))
    rows.append(single("a5", "s0", adequacy=3))  # a5 already rated s0
    rows.append({"annotator_id": "a6", "task_id": "p1", "kind": "pair", "preference": "C", "seconds": 30.0})
    rows.append(single("a6", "s8", keypoint_recall=1.5))
    # speed: one under the floor, one above it but far below everyone's log-seconds
    rows.append(single("a7", "s6", seconds=2.0))
    rows.append(single("a7", "s7", seconds=6.0))
    frame = pd.DataFrame(rows)
    frame.insert(0, "annotation_id", [f"r{i:03d}" for i in range(len(frame))])
    return frame


TASKS = {f"s{t}" for t in range(10)} | {"p0", "p1"}


def test_funnel_counts_on_crafted_annotations() -> None:
    qc = run_qc(crafted(), SETTINGS, task_ids=TASKS)
    funnel = qc.funnel.set_index("step")
    # 8 annotators x (6 singles + 1 pair) + 1 (a3) + 4 (a4, a5) + 2 (a6) + 2 (a7) ratings
    assert funnel.loc["imported", ["remaining_annotators", "remaining_ratings"]].tolist() == [8, 65]
    assert funnel.loc["attention_check", ["excluded_annotators", "excluded_ratings"]].tolist() == [1, 7]
    assert funnel.loc["contradiction_rule", ["excluded_annotators", "excluded_ratings"]].tolist() == [1, 7]
    assert funnel.loc["item_controls", ["excluded_annotators", "excluded_ratings"]].tolist() == [0, 6]
    assert funnel.loc["speed_outliers", ["excluded_annotators", "excluded_ratings"]].tolist() == [0, 2]
    assert funnel.loc["analysed", ["remaining_annotators", "remaining_ratings"]].tolist() == [6, 43]
    ratings = qc.ratings.set_index("annotation_id")
    steps = qc.ratings.groupby("qc_step").size().to_dict()
    assert steps == {
        "attention_check": 7,
        "contradiction_rule": 7,
        "item_controls": 6,
        "speed_outliers": 2,
        "kept": 43,
    }
    reasons = qc.ratings.loc[qc.ratings["qc_step"] == "item_controls", "qc_reason"].tolist()
    assert any("adequacy=9" in r and "outside 1..5" in r for r in reasons)
    assert any("required field adequacy missing" in r for r in reasons)
    assert any("task 'zz' is not in the annotation sample" in r for r in reasons)
    assert any("second rating of the same task" in r for r in reasons)
    assert any("preference='C'" in r for r in reasons)
    assert any("keypoint_recall=1.5" in r for r in reasons)
    fast = qc.ratings.loc[qc.ratings["qc_step"] == "speed_outliers", "qc_reason"].tolist()
    assert any("< speed_min_seconds" in r for r in fast) and any("robust z" in r for r in fast)
    # The kept values are canonical ("Not equivalent" -> not_equivalent) and attention items are gone.
    assert set(qc.kept["kind"]) == {"single", "pair"}
    assert "4 of 6 individual ratings" in qc.ratings.loc[7, "qc_reason"]
    assert ratings.loc[
        qc.ratings.loc[qc.ratings["annotator_id"] == "a2", "annotation_id"].iloc[0], "equivalence"
    ] == ("not_equivalent")


def test_thresholds_come_from_settings() -> None:
    update = {"contradiction_max_share": 0.9, "speed_min_seconds": 1.0, "speed_robust_z": 1000.0}
    funnel = run_qc(crafted(), SETTINGS.model_copy(update=update), task_ids=TASKS).funnel.set_index("step")
    assert funnel.loc["contradiction_rule", "excluded_annotators"] == 0
    assert funnel.loc["speed_outliers", "excluded_ratings"] == 0
    assert funnel.loc["analysed", "remaining_ratings"] == 52


def test_funnel_finds_what_a_synthetic_study_planted() -> None:
    annotations, sample, planted = synthetic_human_study(
        singles=120, pairs=12, annotators=40, attention_failures=4, contradictory=2, invalid=5, fast=6
    )
    qc = run_qc(annotations, SETTINGS, task_ids=set(sample["task_id"]))
    funnel = qc.funnel.set_index("step")
    assert funnel.loc["attention_check", "excluded_annotators"] == 4
    assert (
        set(qc.ratings.loc[qc.ratings["qc_step"] == "contradiction_rule", "annotator_id"])
        == planted.contradictory
    )
    assert funnel.loc["item_controls", "excluded_ratings"] == planted.invalid_ratings
    assert funnel.loc["speed_outliers", "excluded_ratings"] == planted.speed_outliers
    assert funnel.loc["analysed", "remaining_annotators"] == 34


def test_missing_attention_answers_are_a_caveat_not_silent() -> None:
    frame = crafted()
    frame = frame[frame["kind"] != "attention"]
    qc = run_qc(frame, SETTINGS, task_ids=TASKS)
    assert qc.funnel.set_index("step").loc["attention_check", "excluded_annotators"] == 0
    assert any("no attention-check answers" in c for c in qc.caveats)


def test_bad_kind_is_one_clear_error() -> None:
    frame = crafted()
    frame.loc[3, "kind"] = "triple"
    with pytest.raises(ValueError, match="record 'r003' has kind 'triple'"):
        run_qc(frame, SETTINGS)


def test_value_normalisation_and_contradiction_rules() -> None:
    assert normalize_value("preference", "Answer B") == ("B", None)
    assert normalize_value("adequacy", "4") == (4, None)
    assert normalize_value("adequacy", 4.5)[1] is not None
    assert normalize_value("question_valid", True) == ("yes", None)
    assert normalize_value("equivalence", "") == (None, None)
    assert contradictions({"adequacy": 5, "equivalence": "not_equivalent", "keypoint_recall": 0.5})
    # Max adequacy with incomplete keypoints is NOT a contradiction (the study kept those).
    assert not contradictions({"adequacy": 5, "equivalence": "equivalent", "keypoint_recall": 0.25})


def test_funnel_counts_on_a_crafted_csv_through_the_importer() -> None:
    """A filled-in CSV, imported by the real importer (validation/human/_import.py), then the funnel."""
    from clcg_pipeline.validation.human._exchange_format import InboxFile
    from clcg_pipeline.validation.human._import import import_annotations
    from clcg_pipeline.validation.human._keypoints import KEYPOINT_COLUMNS
    from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy

    sample = pd.DataFrame(
        [{"task_id": f"s{i}", "kind": "single", "item_id": f"i{i}", "a_side": None} for i in range(1, 5)]
        + [{"task_id": "p1", "kind": "pair", "item_id": "i1", "a_side": "higher"}]
        + [
            {
                "task_id": f"att-{u}",
                "kind": "attention",
                "item_id": "i1",
                "a_side": None,
                "attention_field": "adequacy",
                "attention_expected": "1",
            }
            for u in ("u1", "u2", "u3")
        ]
    )
    csv_text = "\n".join(
        [
            "annotator_id,task_id,adequacy,equivalence,preference,seconds",
            "u1,att-u1,3,,,20",  # u1 fails the attention check
            "u1,s1,4,equivalent,,30",
            "u1,s2,4,equivalent,,30",
            "u2,att-u2,1,,,20",
            *[f"u2,s{i},{i + 1},partially_equivalent,,{30 + i}" for i in range(1, 5)],
            "u2,p1,,,A,25",
            "u3,att-u3,1,,,20",
            "u3,s1,,equivalent,,30",  # required adequacy missing: excluded at import (issue 36)
            "u3,s2,3,partially_equivalent,,1",  # 1 s: speed outlier
            "u3,s3,3,partially_equivalent,,31",
            "u4,s1,4,equivalent,,33",  # no attention item answered: kept, with a caveat
        ]
    )
    imported = import_annotations(
        [InboxFile("batch1.csv", csv_text.encode())],
        pd.DataFrame(),
        lambda sha: None,
        sample,
        pd.DataFrame(columns=KEYPOINT_COLUMNS),
        load_taxonomy().collapsed_labels,
        imported_at="2026-01-01T00:00:00+00:00",
    )
    assert imported.imports["status"].tolist() == ["accepted"], imported.imports["error"].tolist()
    assert imported.imports["excluded"].tolist() == [1] and "line 12" in imported.imports["error"].iloc[0]
    qc = run_qc(imported.annotations, SETTINGS, task_ids=set(sample["task_id"]))
    funnel = qc.funnel.set_index("step")
    assert funnel.loc["imported", ["remaining_annotators", "remaining_ratings"]].tolist() == [4, 10]
    assert funnel.loc["attention_check", ["excluded_annotators", "excluded_ratings"]].tolist() == [1, 2]
    assert funnel.loc["contradiction_rule", "excluded_ratings"] == 0
    assert funnel.loc["item_controls", "excluded_ratings"] == 0
    assert funnel.loc["speed_outliers", "excluded_ratings"] == 1
    assert funnel.loc["analysed", ["remaining_annotators", "remaining_ratings"]].tolist() == [3, 7]
    assert any("answered no attention-check item" in c for c in qc.caveats)
