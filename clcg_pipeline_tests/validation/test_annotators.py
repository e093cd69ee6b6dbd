"""Issue 19: Label Studio users namespaced by instance, apart from simulated ones, and mapped."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.validation.human._annotators import AnnotatorMapError
from clcg_pipeline.validation.human._exchange_format import ANNOTATOR_MAP_FILE, LS_SINGLE_TASKS, InboxFile
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations
from clcg_pipeline.validation.human.demo_annotations._simulate import LS_SINGLE_FILE, simulate_annotations
from clcg_pipeline.validation.human.sensors import inbox_fingerprint
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import (
    control_answers,
    ls_annotation,
    ls_task,
)

CATEGORIES = load_taxonomy().collapsed_labels


def _import(files: list[InboxFile], sample, keypoints, annotator_map: str | None = None):
    return import_annotations(
        files,
        pd.DataFrame(),
        {}.get,
        sample,
        keypoints,
        CATEGORIES,
        imported_at="2026-03-02T00:00:00+00:00",
        annotator_map=None
        if annotator_map is None
        else InboxFile(ANNOTATOR_MAP_FILE, annotator_map.encode()),
    )


def _real_export(sample, keypoints, task_id: str | None, users: tuple[int, ...]) -> InboxFile:
    """A real Label Studio export: ``users`` rated task ``task_id`` (None: the first exported)."""
    tasks = json.loads(export_files(sample, keypoints, CATEGORIES)[LS_SINGLE_TASKS])
    task = next(x for x in tasks if task_id in (None, x["data"]["task_id"]))
    task_id = task["data"]["task_id"]
    anns = [ls_annotation(500 + u, u, control_answers(sample, keypoints, task_id, u)) for u in users]
    return InboxFile("project-1-at-2026-03-01.json", json.dumps([ls_task(1, task, anns)]).encode())


def test_simulated_and_real_users_with_the_same_id_stay_apart(sample, keypoints) -> None:
    simulated = simulate_annotations(sample, keypoints, seed=3)[LS_SINGLE_FILE]
    tasks = json.loads(simulated)
    # A real user whose id is a simulated one's, on a task that simulated user rated too.
    task = next(x for x in tasks if x["annotations"])
    user = task["annotations"][0]["completed_by"]
    real = _real_export(sample, keypoints, task["data"]["task_id"], (user,))
    result = _import([InboxFile(LS_SINGLE_FILE, simulated), real], sample, keypoints)
    assert set(result.imports["status"]) == {"accepted"}, result.imports["error"].tolist()
    raters = result.annotations[result.annotations["task_id"] == task["data"]["task_id"]]
    ids = set(raters["annotator_id"])
    assert {f"ls:simulated:{user}", f"ls:label-studio:{user}"} <= ids
    assert raters.set_index("annotator_id").loc[f"ls:label-studio:{user}", "simulated"] == False  # noqa: E712
    assert result.annotations["annotator_id"].str.startswith("ls:simulated:").sum() == sum(
        len(x["annotations"]) for x in tasks
    )


def test_the_map_names_the_instance_and_maps_users_to_design_ids(sample, keypoints) -> None:
    design = sorted({a for anns in sample["annotators"] for a in anns})
    mapping = f"instance,user_id,annotator_id\nlab-berlin,11,{design[0]}\nlab-berlin,13,{design[1]}\n"
    result = _import([_real_export(sample, keypoints, None, (11, 12))], sample, keypoints, mapping)
    assert set(result.annotations["annotator_id"]) == {design[0], "ls:lab-berlin:12"}
    # a map with the instance only
    named = _import(
        [_real_export(sample, keypoints, None, (11,))],
        sample,
        keypoints,
        "instance,user_id,annotator_id\nlab-b,,\n",
    )
    assert named.annotations["annotator_id"].tolist() == ["ls:lab-b:11"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("lab,11,ann-99", "line 2, field 'annotator_id': 'ann-99' is not an annotator of the design"),
        ("lab,11,ann-01\nlab,11,ann-02", "line 3, field 'user_id': user 11 is mapped twice (also line 2)"),
        (
            "lab,11,ann-01\nlab,12,ann-01",
            "line 3, field 'annotator_id': 'ann-01' is already the id of another user",
        ),
        ("lab,eleven,ann-01", "line 2, field 'user_id': 'eleven' is not a Label Studio user id"),
        ("Lab Berlin,11,ann-01", "line 2, field 'instance': 'Lab Berlin' is not an instance name"),
        ("simulated,11,ann-01", "line 2, field 'instance': 'simulated' is reserved"),
        ("lab,11,ann-01\nlab2,12,ann-02", "line 3, field 'instance': 'lab2' differs from 'lab' (line 2)"),
    ],
)
def test_a_bad_map_is_refused_before_any_import(sample, keypoints, rows, message) -> None:
    good = _real_export(sample, keypoints, None, (11,))
    with pytest.raises(AnnotatorMapError) as caught:
        _import([good], sample, keypoints, f"instance,user_id,annotator_id\n{rows}\n")
    assert f"annotator map {ANNOTATOR_MAP_FILE!r}, {message}" in str(caught.value)


def test_a_map_without_its_columns_is_refused(sample, keypoints) -> None:
    with pytest.raises(AnnotatorMapError, match=r"header: missing column\(s\) \['instance'\]"):
        _import([], sample, keypoints, "user_id,annotator_id\n11,ann-01\n")


def test_a_csv_cannot_claim_a_label_studio_user(sample, keypoints) -> None:
    task = sample[sample["kind"] == "single"].iloc[0]["task_id"]
    csv_text = f"task_id,annotator_id,adequacy\n{task},ls:label-studio:11,3\n"
    result = _import([InboxFile("claims.csv", csv_text.encode())], sample, keypoints)
    error = result.imports.iloc[0]["error"]
    assert "line 2, field 'annotator_id'" in error and "are Label Studio users'" in error


def test_an_edited_map_changes_the_inbox_fingerprint(tmp_path: Path) -> None:
    (tmp_path / "annotations" / "inbox").mkdir(parents=True)
    (tmp_path / "annotations" / "inbox" / "a.csv").write_text("task_id,annotator_id,adequacy\n")
    before = inbox_fingerprint(str(tmp_path), "annotations/inbox")
    (tmp_path / ANNOTATOR_MAP_FILE).write_text("instance,user_id,annotator_id\nlab,11,ann-01\n")
    mapped = inbox_fingerprint(str(tmp_path), "annotations/inbox")
    (tmp_path / ANNOTATOR_MAP_FILE).write_text("instance,user_id,annotator_id\nlab,11,ann-02\n")
    assert len({before, mapped, inbox_fingerprint(str(tmp_path), "annotations/inbox")}) == 3
