"""What annotators see (issue 19, item 4): readable choices stored as canonical values, the
passage attribution is judged against, tasks in their planned order, an attention check that
asks only true answers, and a keypoint checklist that tells "none" from "not answered"; issue
36: the individual tasks laid out as the design's forms, a bad rating excluded, not its file."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from clcg_pipeline.config import HumanValidationSettings
from clcg_pipeline.validation.human._exchange_format import (
    ATTRIBUTION,
    CSV_TASKS,
    EQUIVALENCE,
    LS_PAIR_CONFIG,
    LS_SINGLE_CONFIG,
    LS_SINGLE_TASKS,
    QUESTION_VALID,
    InboxFile,
)
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations
from clcg_pipeline.validation.human._qc import run_qc
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import (
    ls_annotation,
    ls_task,
)

CATEGORIES = load_taxonomy().collapsed_labels
NOW = "2026-12-01T00:00:00+00:00"


@pytest.fixture(scope="module")
def passages(sample: pd.DataFrame) -> dict[str, list[tuple[str, str]]]:
    return {
        d: [(f"p0{n}", f"{d} English paragraph {n}.") for n in (1, 2, 3)] for d in sample["doc_id"].unique()
    }


@pytest.fixture(scope="module")
def files(sample, keypoints, passages) -> dict[str, bytes]:
    return export_files(sample, keypoints, CATEGORIES, passages)


def _import(records: list[dict], sample, keypoints):
    payload = InboxFile("ls.json", json.dumps(records).encode())
    return import_annotations(
        [payload], pd.DataFrame(), {}.get, sample, keypoints, CATEGORIES, imported_at=NOW
    )


def _tasks(files) -> list[dict]:
    return json.loads(files[LS_SINGLE_TASKS])


def _first(files, kind_of, kind: str, *, checklist: bool | None = None) -> dict:
    for task in _tasks(files):
        has = any(o["value"].startswith("k") for o in task["data"]["keypoint_options"])
        if kind_of[task["data"]["task_id"]] == kind and (checklist is None or has == checklist):
            return task
    raise AssertionError(kind)


def _kinds(sample) -> dict[str, str]:
    return dict(zip(sample["task_id"], sample["kind"], strict=True))


# --- choices: the label shows, the canonical value is stored ------------------------------------


def test_every_choice_shows_its_label_and_stores_the_canonical_value(files, sample) -> None:
    single = ET.fromstring(files[LS_SINGLE_CONFIG])
    shown = {(c.get("alias"), c.get("value")) for c in single.iter("Choice")}
    assert set(QUESTION_VALID) <= shown
    assert ("partially_equivalent", "Partially equivalent") not in shown  # from the task, see below
    pair = ET.fromstring(files[LS_PAIR_CONFIG])
    assert [c.get("alias") for c in pair.iter("Choice")] == ["A", "B", "none"]
    assert all(c.get("value") != c.get("alias") for c in pair.iter("Choice"))
    task = _first(files, _kinds(sample), "single")
    assert task["data"]["equivalence_options"] == [
        {"value": label, "alias": value} for value, label in EQUIVALENCE
    ]


def test_the_importer_maps_aliases_and_labels_to_the_canonical_value(files, sample, keypoints) -> None:
    task = _first(files, _kinds(sample), "single")
    # Label Studio stores the alias; a Label Studio that ignored it would store the label.
    by_alias = {"adequacy": 3, "equivalence": "partially_equivalent", "question_valid": "yes"}
    by_label = {"adequacy": 3, "equivalence": EQUIVALENCE[1][1], "question_valid": QUESTION_VALID[0][1]}
    by_label["attribution"] = ATTRIBUTION[2][1]
    export = [ls_task(1, task, [ls_annotation(101, 1, by_alias), ls_annotation(102, 2, by_label)])]
    result = _import(export, sample, keypoints)
    assert list(result.imports["status"]) == ["accepted"], result.imports["error"].tolist()
    got = result.annotations.set_index("annotator_id")
    for user in ("ls:label-studio:1", "ls:label-studio:2"):
        assert got.loc[user, "equivalence"] == "partially_equivalent"
        assert got.loc[user, "question_valid"] == "yes"
    assert got.loc["ls:label-studio:2", "attribution"] == "not_supported"


# --- the passage --------------------------------------------------------------------------------


def test_individual_tasks_show_the_passage_attribution_is_judged_against(files, sample) -> None:
    config = files[LS_SINGLE_CONFIG].decode()
    assert '<Text name="passage" value="$passage"/>' in config
    assert "gold answer / passage" not in config and all("passage" in label for _, label in ATTRIBUTION)
    by_id = sample.set_index("task_id")
    for task in _tasks(files):
        row = by_id.loc[task["data"]["task_id"]]
        linked = row["passage_ref"].split(",")
        assert task["data"]["passage"] == "\n\n".join(
            f"¶{pid} {row['doc_id']} English paragraph {pid[-1]}." for pid in linked
        )
    rows = list(csv.DictReader(io.StringIO(files[CSV_TASKS].decode())))
    kinds = _kinds(sample)
    assert all(r["passage"].startswith("¶p01 ") for r in rows if kinds[r["task_id"]] != "pair")
    assert all(r["passage"] == "" for r in rows if kinds[r["task_id"]] == "pair")


def test_an_item_linked_to_no_paragraph_shows_the_whole_article(sample, keypoints, passages) -> None:
    unlinked = sample.assign(passage_ref="")
    task = json.loads(export_files(unlinked, keypoints, CATEGORIES, passages)[LS_SINGLE_TASKS])[0]
    assert task["data"]["passage"].count("¶") == 3


# --- order --------------------------------------------------------------------------------------


def test_individual_tasks_are_laid_out_as_the_designs_forms(files, sample) -> None:
    """Issue 36: a check at the design's place (7th) of every block of a form's length (10), the
    individual tasks in their planned order between; not the checks in one run."""
    settings = HumanValidationSettings()
    place = {t: sum(ps) / len(ps) for t, ps in zip(sample["task_id"], sample["positions"], strict=True)}
    order = [t["data"]["task_id"] for t in _tasks(files)]
    kinds = _kinds(sample)
    singles = [t for t in order if kinds[t] == "single"]
    assert singles == sorted(singles, key=lambda t: (place[t], t))
    assert sorted(singles) == sorted(sample.loc[sample["kind"] == "single", "task_id"])
    per_form = settings.items_per_form - settings.attention_checks
    blocks = -(-len(singles) // per_form)
    checks = [i + 1 for i, t in enumerate(order) if kinds[t] == "attention"]
    # every full form of 10 has its check 7th; the last, shorter one too (24 tasks: 9 + 9 + 6)
    assert checks == [b * settings.items_per_form + settings.attention_position for b in range(blocks)]
    assert len(order) == len(singles) + blocks
    # the checks pushed are the sample's, each once; the others stay the CSV forms'
    assert set(order) <= set(sample["task_id"]) and len(set(order)) == len(order)


# --- the attention check asks only true answers --------------------------------------------------


def test_the_attention_check_offers_only_not_applicable_where_the_rubric_does_not_apply(
    files, sample
) -> None:
    config = files[LS_SINGLE_CONFIG].decode()
    for name in ("equivalence", "attribution", "consistency"):
        assert (
            f'name="{name}" toName="response" choice="single-radio" required="true" value="${name}_options"'
            in config
        )
    task = _first(files, _kinds(sample), "attention")
    for name in ("equivalence", "attribution", "consistency"):
        assert [o["alias"] for o in task["data"][f"{name}_options"]] == ["not_applicable"]
    assert task["data"]["keypoint_options"] == []  # no checklist: nothing to tick


def test_not_applicable_is_missing_on_an_attention_check_and_excluded_elsewhere(
    files, sample, keypoints
) -> None:
    kinds = _kinds(sample)
    check, single = _first(files, kinds, "attention"), _first(files, kinds, "single")
    na = dict.fromkeys(("equivalence", "attribution", "consistency"), "not_applicable")
    answered = {"adequacy": 1, "question_valid": "yes", **na}
    user = int(sample.set_index("task_id").loc[check["data"]["task_id"], "annotators"][0].split("-")[1])
    result = _import([ls_task(1, check, [ls_annotation(101, user, answered)])], sample, keypoints)
    assert list(result.imports["status"]) == ["accepted"], result.imports["error"].tolist()
    row = result.annotations.iloc[0]
    assert row["equivalence"] is None and row["attribution"] is None and row["consistency"] is None
    assert bool(row["attention_correct"])
    excluded = _import([ls_task(1, single, [ls_annotation(102, 1, answered)])], sample, keypoints)
    assert excluded.imports.iloc[0][["status", "excluded"]].tolist() == ["accepted", 1]  # issue 36
    assert (
        "field 'equivalence': 'not_applicable' is only an answer of an attention check"
        in (excluded.imports.iloc[0]["error"])
    )


# --- keypoints: "none" is recall 0, no tick is not answered ---------------------------------------


def test_the_checklist_offers_none_of_these_facts(files, sample) -> None:
    task = _first(files, _kinds(sample), "single", checklist=True)
    assert task["data"]["keypoint_options"][-1] == {"value": "none", "html": "None of these facts"}


def _single_with_checklist(files, sample) -> dict:
    return _first(files, _kinds(sample), "single", checklist=True)


def test_none_is_recall_zero_and_no_tick_is_not_answered(files, sample, keypoints) -> None:
    task = _single_with_checklist(files, sample)
    base = {"adequacy": 2, "equivalence": "not_equivalent"}
    export = [
        ls_task(
            1,
            task,
            [
                ls_annotation(101, 1, {**base, "keypoints": ["none"]}),
                ls_annotation(102, 2, {**base, "keypoints": []}),  # no tick
                ls_annotation(103, 3, {**base, "keypoints": ["k1"]}),
            ],
        )
    ]
    result = _import(export, sample, keypoints)
    assert list(result.imports["status"]) == ["accepted"], result.imports["error"].tolist()
    got = result.annotations.set_index("annotator_id")
    assert list(got.loc["ls:label-studio:1", "keypoint_hits"]) == []
    assert got.loc["ls:label-studio:1", "keypoint_recall"] == 0.0
    assert got.loc["ls:label-studio:2", "keypoint_hits"] is None
    assert pd.isna(got.loc["ls:label-studio:2", "keypoint_recall"])
    assert got.loc["ls:label-studio:3", "keypoint_recall"] > 0
    mixed = _import(
        [ls_task(1, task, [ls_annotation(104, 4, {**base, "keypoints": ["none", "k1"]})])], sample, keypoints
    )
    assert mixed.imports.iloc[0][["status", "excluded"]].tolist() == ["accepted", 1]  # issue 36
    assert mixed.annotations.empty
    assert (
        "field 'keypoint_hits'" in mixed.imports.iloc[0]["error"]
        and "'none'" in mixed.imports.iloc[0]["error"]
    )


@pytest.mark.parametrize(
    ("cell", "hits"), [("", None), ("none", []), ("k1|k2", ["k1", "k2"]), ("k2;k1", ["k1", "k2"])]
)
def test_the_csv_keypoint_hits_cell(files, sample, keypoints, cell, hits) -> None:
    task = _single_with_checklist(files, sample)["data"]["task_id"]
    row = {"task_id": task, "annotator_id": "ann-01", "adequacy": "3", "keypoint_hits": cell}
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(row))
    writer.writeheader()
    writer.writerow(row)
    result = import_annotations(
        [InboxFile("crowd.csv", buffer.getvalue().encode())],
        pd.DataFrame(),
        {}.get,
        sample,
        keypoints,
        CATEGORIES,
        imported_at=NOW,
    )
    assert list(result.imports["status"]) == ["accepted"], result.imports["error"].tolist()
    got = result.annotations.iloc[0]["keypoint_hits"]
    assert (None if got is None else list(got)) == hits


def test_an_honest_annotator_who_skips_the_checklist_is_not_contradictory(files, sample, keypoints) -> None:
    """Equivalent with no tick is not answered, not recall 0: the contradiction rule keeps the
    annotator; the same ratings with an explicit "none" are contradictions and exclude them."""
    settings = HumanValidationSettings(contradiction_min_ratings=3)
    kinds = _kinds(sample)
    with_list = [
        t
        for t in _tasks(files)
        if kinds[t["data"]["task_id"]] == "single" and len(t["data"]["keypoint_options"]) > 1
    ][:5]
    assert len(with_list) == 5

    def funnel(ticks: list[str]) -> pd.DataFrame:
        answers = {"adequacy": 4, "equivalence": "equivalent", "keypoints": ticks}
        export = [
            ls_task(n, t, [ls_annotation(100 * n + 1, 1, answers)]) for n, t in enumerate(with_list, start=1)
        ]
        result = _import(export, sample, keypoints)
        assert list(result.imports["status"]) == ["accepted"], result.imports["error"].tolist()
        return run_qc(result.annotations, settings).ratings

    assert set(funnel([])["qc_step"]) == {"kept"}
    assert set(funnel(["none"])["qc_step"]) == {"contradiction_rule"}
