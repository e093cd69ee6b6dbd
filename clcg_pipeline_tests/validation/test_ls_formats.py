"""Issue 19: Label Studio's JSON-MIN and CSV exports, shaped as Label Studio 1.x writes them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from clcg_pipeline.storage._tables import conform
from clcg_pipeline.validation.human._exchange_format import LS_PAIR_TASKS, LS_SINGLE_TASKS, InboxFile
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations
from clcg_pipeline.validation.human._ls_formats import _pretty
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import (
    control_answers,
    json_min,
    ls_annotation,
    ls_csv,
    ls_task,
    stored_values,
)

CATEGORIES = load_taxonomy().collapsed_labels


def _import(files: list[InboxFile], sample, keypoints, previous=None, archive=None):
    store = archive if archive is not None else {}
    return import_annotations(
        files,
        previous if previous is not None else pd.DataFrame(),
        store.get,
        sample,
        keypoints,
        CATEGORIES,
        imported_at="2026-03-02T00:00:00+00:00",
    )


def _export(sample, keypoints, expected: dict | None = None) -> list[dict]:
    """A JSON export of both projects: users 11 and 12 on every task, one task left unannotated
    and one annotation skipped (cancelled), as Label Studio keeps them."""
    files = export_files(sample, keypoints, CATEGORIES)
    exported = json.loads(files[LS_SINGLE_TASKS]) + json.loads(files[LS_PAIR_TASKS])
    kinds = dict(zip(sample["task_id"], sample["kind"], strict=True))
    tasks = []
    for t, task in enumerate(exported, start=1):
        task_id = task["data"]["task_id"]
        annotations = []
        for user in (11, 12) if t != 2 else ():
            answers = control_answers(sample, keypoints, task_id, t + user)
            to = "question" if kinds[task_id] == "pair" else "response"
            annotations.append(ls_annotation(t * 100 + user, user, answers, to=to, lead_time=20.0 + user))
            if expected is not None:
                expected[(task_id, f"ls:label-studio:{user}")] = stored_values(answers)
        if t == 3:
            annotations.append({**ls_annotation(t * 100 + 13, 13, {}), "was_cancelled": True})
        tasks.append(ls_task(t, task, annotations))
    return tasks


def _check(annotations: pd.DataFrame, expected: dict) -> None:
    got = annotations.set_index(["task_id", "annotator_id"])
    assert len(got) == len(expected)
    for key, values in expected.items():
        row = got.loc[key]
        for name, value in values.items():
            if name == "keypoint_hits":
                got_hits = None if row[name] is None else list(row[name])
                assert got_hits == (None if value is None else list(value)), (key, name)
            else:
                assert row[name] == value, (key, name, row[name], value)


def test_the_fixtures_have_label_studio_shapes(sample, keypoints) -> None:
    records = json_min(_export(sample, keypoints))
    by_shape = {type(r.get("adequacy")).__name__ for r in records if "adequacy" in r}
    assert by_shape == {"list"}  # a rating: [{"rating": 3}]
    assert any(isinstance(r.get("keypoints"), dict) for r in records)  # several choices
    assert any(isinstance(r.get("keypoints"), str) for r in records)  # one choice: the bare string
    assert any(r["annotator"] is None and r["annotation_id"] is None for r in records)  # unannotated
    assert not any(r.get("annotator") == 13 for r in records)  # the skipped annotation is left out
    header = ls_csv(_export(sample, keypoints)).decode().splitlines()[0]
    assert header.startswith('"adequacy","annotation_id","annotator",') and "annotator_id" not in header


@pytest.mark.parametrize("fmt", ["label_studio_json_min", "label_studio_csv"])
def test_json_min_and_csv_exports_import_like_the_json_one(sample, keypoints, fmt) -> None:
    expected: dict = {}
    export = _export(sample, keypoints, expected)
    if fmt == "label_studio_csv":
        file = InboxFile("project-3-at-2026-03-01-10-00-1a2b3c4d.csv", ls_csv(export))
    else:
        file = InboxFile("project-3-at-2026-03-01-10-00-1a2b3c4d.json", json.dumps(json_min(export)).encode())
    result = _import([file], sample, keypoints)
    log = result.imports.iloc[0]
    assert log["status"] == "accepted", log["error"]
    assert log["format"] == fmt and log["imported"] == len(expected)
    _check(result.annotations, expected)
    a = result.annotations
    assert set(a["seconds"]) == {31.0, 32.0}
    assert a["ls_annotation_id"].notna().all() and (a["revision"] == 1).all()
    assert a.loc[a["comment"].notna(), "comment"].str.startswith("[").all()  # a comment stays text
    conform("human_annotations", a)


def test_the_same_annotations_in_another_format_are_skipped(sample, keypoints) -> None:
    export = _export(sample, keypoints)
    first_file = InboxFile("a-export.json", json.dumps(export).encode())
    first = _import([first_file], sample, keypoints)
    assert first.imports.iloc[0]["status"] == "accepted"
    archive = {first_file.sha256: first_file.data}
    files = [
        first_file,
        InboxFile("b-export-min.json", json.dumps(json_min(export)).encode()),
        InboxFile("c-export.csv", ls_csv(export)),
    ]
    again = _import(files, sample, keypoints, previous=first.imports, archive=archive)
    log = again.imports.set_index("file")
    for name in ("b-export-min.json", "c-export.csv"):
        assert log.loc[name, "status"] == "accepted", log.loc[name, "error"]
        assert log.loc[name, ["imported", "revised", "skipped"]].tolist() == [0, 0, len(first.annotations)]
    pd.testing.assert_frame_equal(again.annotations, first.annotations)


@pytest.mark.parametrize("fmt", ["json_min", "csv"])
def test_an_export_naming_annotators_by_email_is_refused_naming_the_json_export(
    sample, keypoints, fmt
) -> None:
    export = _export(sample, keypoints)
    data = (
        ls_csv(export, with_user_details=True)
        if fmt == "csv"
        else json.dumps(json_min(export, with_user_details=True)).encode()
    )
    result = _import([InboxFile(f"emails.{fmt.split('_')[0]}", data)], sample, keypoints)
    log = result.imports.iloc[0]
    assert log["status"] == "rejected" and result.annotations.empty
    assert "field 'annotator'" in log["error"] and "an e-mail, not a user id" in log["error"]
    assert "export the project as JSON" in log["error"]
    assert "@lab.invalid" not in log["error"]  # nobody's e-mail is stored, not even in the log


def test_a_flat_record_without_annotation_id_or_with_an_unknown_control_is_refused(sample, keypoints) -> None:
    records = [r for r in json_min(_export(sample, keypoints)) if r["annotator"] is not None]
    no_id = [{**records[0], "annotation_id": None}, *records[1:]]
    result = _import([InboxFile("no-id.json", json.dumps(no_id).encode())], sample, keypoints)
    error = result.imports.iloc[0]["error"]
    assert "record 1" in error and "field 'annotation_id': missing" in error and "as JSON" in error
    renamed = [{**records[0], "adequacy_v2": records[0].get("adequacy")}, *records[1:]]
    result = _import([InboxFile("renamed.json", json.dumps(renamed).encode())], sample, keypoints)
    assert "field 'adequacy_v2': unknown column" in result.imports.iloc[0]["error"]


@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("adequacy", [{"rating": 4}], 4),
        ("adequacy", '[{"rating": 4}]', 4),
        ("topic_fidelity", '[{"number": 12}]', 12),
        ("equivalence", "equivalent", "equivalent"),
        ("keypoints", "k2", ["k2"]),
        ("keypoints", '{"choices": ["k1", "k3"]}', ["k1", "k3"]),
        ("comment", "{not json", "{not json"),
        ("comment", {"text": ["one", "two"]}, "one\ntwo"),
    ],
)
def test_prettified_values_read_back(name, raw, value) -> None:
    assert _pretty("f.csv", "line 2", name, raw) == value
