"""Issue 36: a bad rating is a rating, not a bad file.

A team's three weeks of whole-project Label Studio exports: on week two one annotator ticks a fact
and "none", another gives a value outside the scale, a third leaves the required adequacy empty.
Those ratings are imported as excluded with their reason (counted, named, left out of
``human_annotations``), the file's other ratings import; on week three the corrected rating is a
revision. A file that is not an export of this study, or older than what was imported, is still
refused whole with nothing changed.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from clcg_pipeline.storage._tables import conform
from clcg_pipeline.validation.human._annotators import DEFAULT_INSTANCE, LS_PREFIX
from clcg_pipeline.validation.human._exchange_format import (
    EXCLUSION_REASONS,
    LS_SINGLE_TASKS,
    InboxFile,
)
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations, import_line, import_status
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import control_answers, ls_annotation, ls_task

CATEGORIES = load_taxonomy().collapsed_labels
T1, T2, T3 = "2026-03-01T10:00:00.000000Z", "2026-03-08T10:00:00.000000Z", "2026-03-15T10:00:00.000000Z"


def _user(n: int) -> str:
    return f"{LS_PREFIX}{DEFAULT_INSTANCE}:{n}"


@pytest.fixture(scope="module")
def tasks(sample, keypoints) -> list[dict]:
    """Three exported individual tasks that have a fact checklist."""
    exported = json.loads(export_files(sample, keypoints, CATEGORIES)[LS_SINGLE_TASKS])
    with_checklist = [t for t in exported if any(o["value"] != "none" for o in t["data"]["keypoint_options"])]
    return with_checklist[:3]


class Desk:
    """What the import asset keeps between runs: its log and archive."""

    def __init__(self, sample, keypoints) -> None:
        self.sample, self.keypoints = sample, keypoints
        self.log = pd.DataFrame()
        self.archive: dict[str, bytes] = {}
        self.week = 0

    def run(self, *files: InboxFile):
        self.week += 1
        result = import_annotations(
            list(files),
            self.log,
            self.archive.get,
            self.sample,
            self.keypoints,
            CATEGORIES,
            imported_at=f"2026-03-{self.week:02d}T00:00:00+00:00",
        )
        self.log = result.imports
        self.archive.update({f.sha256: f.data for f in result.to_archive})
        return result


def _answers(sample, checklists, task: dict, seed: int, **changes: object) -> dict:
    answers = control_answers(sample, checklists, task["data"]["task_id"], seed)
    answers.update(changes)
    return {k: v for k, v in answers.items() if v is not None}


def _export(tasks: list[dict], annotations: dict[int, list[dict]]) -> bytes:
    return json.dumps([ls_task(t + 1, tasks[t], anns) for t, anns in annotations.items()]).encode()


def _facts(task: dict) -> list[str]:
    return [o["value"] for o in task["data"]["keypoint_options"] if o["value"] != "none"]


def test_three_weeks_a_bad_rating_is_excluded_then_revised_and_a_bad_file_still_refused(
    tasks, sample, keypoints
) -> None:
    a, b, c = tasks
    ok = {n: _answers(sample, keypoints, t, n) for n, t in ((1, a), (2, b), (3, c), (4, c))}
    week1 = {
        0: [ls_annotation(101, 11, ok[1], updated_at=T1)],
        1: [ls_annotation(201, 11, ok[2], updated_at=T1)],
    }
    # Week two: the same two, and five new ones, three of them bad.
    none_and_fact = _answers(sample, keypoints, a, 5, keypoints=[_facts(a)[0], "none"])
    off_scale = _answers(sample, keypoints, b, 6, adequacy=9)
    no_adequacy = _answers(sample, keypoints, c, 7, adequacy=None)
    week2 = {
        0: [*week1[0], ls_annotation(102, 12, none_and_fact, updated_at=T2)],
        1: [*week1[1], ls_annotation(202, 12, off_scale, updated_at=T2)],
        2: [
            ls_annotation(301, 11, ok[3], updated_at=T2),
            ls_annotation(302, 12, ok[4], updated_at=T2),
            ls_annotation(303, 13, no_adequacy, updated_at=T2),
        ],
    }
    # Week three: annotator 12 corrected the checklist in Label Studio; the rest as it was.
    corrected = _answers(sample, keypoints, a, 5, keypoints=[_facts(a)[0]])
    week3 = {**week2, 0: [*week1[0], ls_annotation(102, 12, corrected, updated_at=T3)]}

    desk = Desk(sample, keypoints)
    first = desk.run(InboxFile("project-3-at-week1.json", _export(tasks, week1)))
    second = desk.run(InboxFile("project-3-at-week2.json", _export(tasks, week2)))
    row = second.now.iloc[0]
    counts = ["status", "records", "imported", "skipped", "revised", "excluded", "refused"]
    assert row[counts].tolist() == ["accepted", 7, 2, 2, 0, 3, 0], row["error"]
    line = import_line(row)
    assert ": accepted: 2 imported, 2 skipped, 0 revised, 3 excluded, 0 refused: 3 rating(s) excluded" in line
    assert "'project-3-at-week2.json', task 1" in line and "field 'keypoint_hits'" in line
    # Left out of every statistic: human_annotations holds the four good ratings only.
    assert sorted(second.annotations["ls_annotation_id"]) == ["101", "201", "301", "302"]
    excluded = second.excluded.set_index("ls_annotation_id")["excluded_reason"]
    assert (
        excluded["102"].startswith("contradiction: field 'keypoint_hits'")
        and "'none' and a fact" in excluded["102"]
    )
    assert excluded["202"].startswith("out_of_scale: field 'adequacy': adequacy=9 is outside 1..5")
    assert excluded["303"] == "missing_required: field 'adequacy': missing (a required answer)"
    assert {r.split(":")[0] for r in excluded} <= {code for code, _ in EXCLUSION_REASONS}
    passed, description = import_status(second.imports, second.annotations, "inbox", second.revisions)
    assert not passed and "3 rating(s) excluded" in description
    assert f"by {_user(12)!r} ('project-3-at-week2.json', task 1 " in description
    conform("human_annotation_revisions", second.revisions)
    conform("annotation_imports", second.imports)

    third = desk.run(InboxFile("project-3-at-week3.json", _export(tasks, week3)))
    row = third.now.iloc[0]
    assert row[counts].tolist() == ["accepted", 7, 0, 6, 1, 0, 0], row["error"]
    assert pd.isna(row["error"]) or row["error"] is None
    fixed = third.revisions[third.revisions["ls_annotation_id"] == "102"]
    assert fixed[["revision", "current"]].values.tolist() == [[1, False], [2, True]]
    assert fixed["excluded_reason"].notna().tolist() == [True, False]
    current = third.annotations.set_index("ls_annotation_id")
    assert list(current.loc["102", "keypoint_hits"]) == [_facts(a)[0]] and len(current) == 5
    assert sorted(third.excluded["ls_annotation_id"]) == ["202", "303"]  # still named, still out
    passed, description = import_status(third.imports, third.annotations, "inbox", third.revisions)
    assert not passed and "2 rating(s) excluded" in description

    # Not an export of this study, and an export older than what was imported: refused whole.
    foreign = json.loads(_export(tasks, {2: [ls_annotation(401, 14, ok[3], updated_at=T3)]}))
    foreign[0]["data"] = {**foreign[0]["data"], "task_id": "s-of-another-study"}
    older = {0: [ls_annotation(102, 12, none_and_fact, updated_at=T2)], 2: [ls_annotation(402, 14, ok[3])]}
    fourth = desk.run(
        InboxFile("project-3-at-week4-old.json", _export(tasks, older)),
        InboxFile("project-9-other.json", json.dumps(foreign).encode()),
    )
    log = fourth.now.set_index("file")
    assert log["status"].tolist() == ["rejected", "rejected"]
    assert "older version of Label Studio annotation 102" in log.loc["project-3-at-week4-old.json", "error"]
    assert "unknown task 's-of-another-study'" in log.loc["project-9-other.json", "error"]
    assert fourth.annotations.equals(third.annotations) and fourth.revisions.equals(third.revisions)
    assert not fourth.to_archive
    print(  # with -s: the round trip, one line per file
        "\n" + "\n".join(import_line(r) for r in fourth.imports.to_dict("records"))
    )
    assert len(first.annotations) == 2


def test_a_filled_csv_row_replacing_an_excluded_one_is_its_correction(sample, keypoints) -> None:
    """A CSV row has no annotation id: a row with other values than an imported one is refused,
    unless the imported one was excluded (the new row is then its correction)."""
    task = sample[sample["kind"] == "single"].iloc[0]["task_id"]

    def csv(name: str, adequacy: str) -> InboxFile:
        return InboxFile(name, f"task_id,annotator_id,adequacy\n{task},ann-01,{adequacy}\n".encode())

    desk = Desk(sample, keypoints)
    first = desk.run(csv("a.csv", "8"))
    assert first.imports[["imported", "excluded"]].iloc[0].tolist() == [0, 1] and first.annotations.empty
    second = desk.run(csv("b.csv", "4"))
    assert second.now[["status", "revised", "excluded"]].iloc[0].tolist() == ["accepted", 1, 0]
    assert second.annotations["adequacy"].tolist() == [4] and second.excluded.empty
    third = desk.run(csv("c.csv", "5"))  # another value for a counted rating: refused as before
    assert third.now["status"].tolist() == ["rejected"]


def test_an_excluded_annotation_deleted_and_made_again_is_its_correction(tasks, sample, keypoints) -> None:
    """An annotator may fix a bad rating by deleting it and annotating the task again: the new
    annotation (another id) revises the excluded one instead of refusing the export."""
    a = tasks[0]
    bad = _answers(sample, keypoints, a, 1, adequacy=0)
    desk = Desk(sample, keypoints)
    first = desk.run(
        InboxFile("week1.json", _export(tasks, {0: [ls_annotation(501, 21, bad, updated_at=T1)]}))
    )
    assert first.now[["excluded", "imported"]].iloc[0].tolist() == [1, 0]
    again = {0: [ls_annotation(502, 21, _answers(sample, keypoints, a, 1), updated_at=T2)]}
    second = desk.run(InboxFile("week2.json", _export(tasks, again)))
    assert second.now[["status", "revised", "excluded", "refused"]].iloc[0].tolist() == ["accepted", 1, 0, 0]
    assert second.annotations["ls_annotation_id"].tolist() == ["502"] and second.excluded.empty
