"""Issue 19: re-exports of a whole Label Studio project import idempotently; changes are revisions."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from clcg_pipeline.storage._tables import conform
from clcg_pipeline.validation.human._exchange_format import LS_SINGLE_TASKS, InboxFile
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations, import_status
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import (
    control_answers,
    ls_annotation,
    ls_task,
)

CATEGORIES = load_taxonomy().collapsed_labels


@pytest.fixture(scope="module")
def exported(sample, keypoints) -> list[dict]:
    """The individual project's exported tasks (the first three are used)."""
    return json.loads(export_files(sample, keypoints, CATEGORIES)[LS_SINGLE_TASKS])[:3]


class Inbox:
    """What the import asset keeps between runs: the log and the archive."""

    def __init__(self, sample, keypoints) -> None:
        self.sample, self.keypoints = sample, keypoints
        self.log = pd.DataFrame()
        self.archive: dict[str, bytes] = {}
        self.runs = 0

    def drop(self, *files: InboxFile):
        self.runs += 1
        result = import_annotations(
            list(files),
            self.log,
            self.archive.get,
            self.sample,
            self.keypoints,
            CATEGORIES,
            imported_at=f"2026-03-0{self.runs}T00:00:00+00:00",
        )
        self.log = result.imports
        self.archive.update({f.sha256: f.data for f in result.to_archive})
        return result


def _export(exported, sample, keypoints, annotations: dict[int, list[tuple[int, int, int, str]]]) -> bytes:
    """A JSON export: task index -> [(annotation id, user, answer seed, updated_at)]."""
    tasks = []
    for t, rows in annotations.items():
        task_id = exported[t]["data"]["task_id"]
        anns = [
            ls_annotation(aid, user, control_answers(sample, keypoints, task_id, seed), updated_at=when)
            for aid, user, seed, when in rows
        ]
        tasks.append(ls_task(t + 1, exported[t], anns))
    return json.dumps(tasks).encode()


T1, T2 = "2026-03-01T10:00:00.000000Z", "2026-03-05T16:30:00.000000Z"


def test_a_whole_project_export_again_adds_only_what_is_new(exported, sample, keypoints) -> None:
    inbox = Inbox(sample, keypoints)
    first = inbox.drop(
        InboxFile("project-3-at-1.json", _export(exported, sample, keypoints, {0: [(101, 11, 1, T1)]}))
    )
    assert first.imports.iloc[0][["status", "imported", "skipped"]].tolist() == ["accepted", 1, 0]
    # Later: the same task gained a second annotator, another task a first; exported whole again.
    again = _export(
        exported, sample, keypoints, {0: [(101, 11, 1, T1), (102, 12, 2, T1)], 1: [(201, 11, 3, T1)]}
    )
    second = inbox.drop(InboxFile("project-3-at-2.json", again))
    log = second.imports.set_index("file").loc["project-3-at-2.json"]
    assert log["status"] == "accepted", log["error"]
    assert log[["records", "imported", "skipped", "revised", "refused"]].tolist() == [3, 2, 1, 0, 0]
    a = second.annotations
    assert len(a) == 3 and set(a["annotator_id"]) == {"ls:label-studio:11", "ls:label-studio:12"}
    # The re-exported rating keeps its first import's file; the new ones cite the new file.
    first_rating = a[
        (a["task_id"] == exported[0]["data"]["task_id"]) & (a["annotator_id"].str.endswith(":11"))
    ]
    assert first_rating["source_file"].tolist() == ["project-3-at-1.json"]
    assert second.to_archive and second.to_archive[0].name == "project-3-at-2.json"
    passed, description = import_status(second.imports, a, "inbox")
    assert passed and "1 already imported, skipped" in description


def test_a_rating_changed_in_label_studio_is_kept_as_a_revision(exported, sample, keypoints) -> None:
    inbox = Inbox(sample, keypoints)
    inbox.drop(
        InboxFile(
            "a.json", _export(exported, sample, keypoints, {0: [(101, 11, 1, T1)], 1: [(201, 11, 3, T1)]})
        )
    )
    changed = _export(exported, sample, keypoints, {0: [(101, 11, 2, T2)], 1: [(201, 11, 3, T1)]})
    second = inbox.drop(InboxFile("b.json", changed))
    log = second.imports.set_index("file").loc["b.json"]
    assert log[["status", "imported", "skipped", "revised"]].tolist() == ["accepted", 0, 1, 1]
    task = exported[0]["data"]["task_id"]
    now = control_answers(sample, keypoints, task, 2)
    current = second.annotations.set_index(["task_id", "annotator_id"]).loc[(task, "ls:label-studio:11")]
    assert current["adequacy"] == now["adequacy"] and current["equivalence"] == now["equivalence"]
    assert current["revision"] == 2 and current["source_file"] == "b.json" and current["ls_updated_at"] == T2
    assert len(second.annotations) == 2  # the analyses count the latest revision only
    # The history stays: both revisions, the first superseded, one annotation id throughout.
    history = second.revisions[second.revisions["task_id"] == task]
    assert history[["revision", "source_file", "current"]].values.tolist() == [
        [1, "a.json", False],
        [2, "b.json", True],
    ]
    assert history["annotation_id"].nunique() == 1
    assert history["adequacy"].iloc[0] == control_answers(sample, keypoints, task, 1)["adequacy"]
    conform("human_annotation_revisions", second.revisions)
    # Rebuilt from the archive on the next run: the same tables.
    third = inbox.drop()
    pd.testing.assert_frame_equal(third.annotations, second.annotations)
    pd.testing.assert_frame_equal(third.revisions, second.revisions)
    passed, description = import_status(third.imports, third.annotations, "inbox")
    assert passed and "1 revised in Label Studio since imported" in description


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # the same annotation, changed, but dated before the imported version: an older export
        ([(101, 11, 2, "2026-02-01T00:00:00.000000Z")], "an older version of Label Studio annotation 101"),
        # another annotation of the same task by the same user
        ([(109, 11, 2, T2)], "an annotator rates a task once"),
    ],
)
def test_a_rating_contradicting_an_imported_one_refuses_the_file(
    exported, sample, keypoints, rows, message
) -> None:
    inbox = Inbox(sample, keypoints)
    first = inbox.drop(InboxFile("a.json", _export(exported, sample, keypoints, {0: [(101, 11, 1, T1)]})))
    bad = _export(exported, sample, keypoints, {0: rows, 1: [(201, 12, 3, T1)]})
    second = inbox.drop(InboxFile("b.json", bad))
    log = second.imports.set_index("file").loc["b.json"]
    assert log["status"] == "rejected" and log["refused"] == 1 and log["imported"] == 0
    assert (
        "'b.json'" in log["error"]
        and "already imported from 'a.json'" in log["error"]
        and message in log["error"]
    )
    # A refused file changes nothing: not even the new rating of the other task lands.
    pd.testing.assert_frame_equal(second.annotations, first.annotations)
    assert not second.to_archive and len(second.revisions) == 1


def test_a_filled_csv_dropped_again_is_skipped(sample, keypoints) -> None:
    task = sample[sample["kind"] == "single"].iloc[0]["task_id"]
    text = f"task_id,annotator_id,adequacy,equivalence\n{task},ann-x,3,equivalent\n"
    inbox = Inbox(sample, keypoints)
    first = inbox.drop(InboxFile("batch-1.csv", text.encode()))
    # The same rows saved again by a spreadsheet (other bytes, same ratings), plus a new one.
    other = sample[sample["kind"] == "single"].iloc[1]["task_id"]
    again = text.replace("\n", "\r\n") + f"{other},ann-x,4,equivalent\r\n"
    second = inbox.drop(InboxFile("batch-1-again.csv", again.encode()))
    log = second.imports.set_index("file").loc["batch-1-again.csv"]
    assert log[["status", "imported", "skipped", "refused"]].tolist() == ["accepted", 1, 1, 0]
    assert len(second.annotations) == len(first.annotations) + 1


def test_a_log_written_before_the_counts_existed_is_read(exported, sample, keypoints) -> None:
    inbox = Inbox(sample, keypoints)
    inbox.drop(InboxFile("a.json", _export(exported, sample, keypoints, {0: [(101, 11, 1, T1)]})))
    old = inbox.log.drop(columns=["imported", "skipped", "revised", "refused"]).assign(accepted=1, rejected=0)
    buffer = io.BytesIO()
    old.to_parquet(buffer)  # as stored then
    inbox.log = pd.read_parquet(io.BytesIO(buffer.getvalue()))
    again = inbox.drop(
        InboxFile("b.json", _export(exported, sample, keypoints, {0: [(101, 11, 1, T1), (102, 12, 2, T1)]}))
    )
    log = again.imports.set_index("file")
    assert log.loc["a.json", "imported"] == 1 and log.loc["b.json", ["imported", "skipped"]].tolist() == [
        1,
        1,
    ]
    conform("annotation_imports", again.imports)
