"""Export for annotators and import of their answers: round trips of both formats, refusals."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.storage._tables import conform
from clcg_pipeline.validation.human._exchange_format import (
    CODEBOOK,
    CSV_TASKS,
    LS_PAIR_CONFIG,
    LS_PAIR_TASKS,
    LS_SINGLE_CONFIG,
    LS_SINGLE_TASKS,
    InboxFile,
)
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations, import_status
from clcg_pipeline.validation.human.demo_annotations import simulate_annotations
from clcg_pipeline.validation.human.demo_annotations._simulate import simulated_inbox_files
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy

CATEGORIES = load_taxonomy().collapsed_labels
NOW = "2026-12-01T00:00:00+00:00"


def _import(
    files: list[InboxFile], sample: pd.DataFrame, keypoints: pd.DataFrame, previous=None, archive=None
):
    store = archive if archive is not None else {}
    return import_annotations(
        files,
        previous if previous is not None else pd.DataFrame(),
        store.get,
        sample,
        keypoints,
        CATEGORIES,
        imported_at=NOW,
    )


def _answers(task_id: str, kind: str, n: int, checklist: list[str]) -> dict[str, Any]:
    """Deterministic, varied answers for one (task, annotator)."""
    if kind == "pair":
        return {"preference": ("A", "B", "none")[n % 3], "confidence": 1 + n % 5}
    return {
        "adequacy": 1 + (n + len(task_id)) % 5,
        "question_valid": ("yes", "no")[n % 2],
        "equivalence": ("equivalent", "partially_equivalent", "not_equivalent")[n % 3],
        "attribution": ("supported", "partially_supported", "not_supported")[(n + 1) % 3],
        "consistency": ("consistent", "inconsistent")[n % 2],
        # No tick is "not answered": an annotator who finds no fact ticks "none" (issue 19).
        **({"keypoint_hits": checklist[: n % (len(checklist) + 1)] or ["none"]} if checklist else {}),
        "primary_error_category": CATEGORIES[n % len(CATEGORIES)],
    }


def _checklist(keypoints: pd.DataFrame, sample: pd.DataFrame, task_id: str) -> list[str]:
    row = sample.set_index("task_id").loc[task_id]
    if row["kind"] != "single":
        return []
    return list(keypoints.loc[keypoints["item_id"] == row["item_id"], "keypoint_id"])


def _ls_export(tasks: list[dict], sample, keypoints, expected: dict) -> bytes:
    """Fill exported Label Studio tasks the way Label Studio's JSON export shapes them."""
    kinds = dict(zip(sample["task_id"], sample["kind"], strict=True))
    out = []
    for t, task in enumerate(tasks, start=1):
        task_id = task["data"]["task_id"]
        annotations = []
        for user in (11, 12):
            answers = _answers(task_id, kinds[task_id], user + t, _checklist(keypoints, sample, task_id))
            expected[(task_id, f"ls:label-studio:{user}")] = answers
            result = []
            for name, value in answers.items():
                if name in ("adequacy", "confidence"):
                    result.append(
                        {
                            "from_name": name,
                            "to_name": "response",
                            "type": "rating",
                            "value": {"rating": value},
                        }
                    )
                elif name == "keypoint_hits":
                    result.append(
                        {
                            "from_name": "keypoints",
                            "to_name": "response",
                            "type": "choices",
                            "value": {"choices": value},
                        }
                    )
                else:
                    result.append(
                        {
                            "from_name": name,
                            "to_name": "response",
                            "type": "choices",
                            "value": {"choices": [value]},
                        }
                    )
            result.append(
                {"from_name": "comment", "to_name": "response", "type": "textarea", "value": {"text": ["ok"]}}
            )
            annotations.append(
                {
                    "id": t * 10 + user,
                    "completed_by": {"id": user, "email": f"u{user}@x.invalid"},
                    "result": result,
                    "lead_time": 12.5 + user,
                    "was_cancelled": False,
                }
            )
        annotations.append({"id": 0, "completed_by": 13, "result": [], "was_cancelled": True})
        out.append({"id": t, **task, "annotations": annotations, "predictions": []})
    return json.dumps(out).encode()


def _check_values(annotations: pd.DataFrame, expected: dict) -> None:
    got = annotations.set_index(["task_id", "annotator_id"])
    assert len(got) == len(expected)
    for key, answers in expected.items():
        row = got.loc[key]
        for name, value in answers.items():
            if name == "keypoint_hits":
                assert list(row[name]) == ([] if value == ["none"] else value), (key, name)
            else:
                assert row[name] == value, (key, name, row[name], value)


def test_export_files_and_label_configs_are_well_formed(sample, keypoints) -> None:
    files = export_files(sample, keypoints, CATEGORIES)
    assert set(files) == {
        LS_SINGLE_TASKS,
        LS_SINGLE_CONFIG,
        LS_PAIR_TASKS,
        LS_PAIR_CONFIG,
        CSV_TASKS,
        CODEBOOK,
    }
    single = ET.fromstring(files[LS_SINGLE_CONFIG])
    names = [el.get("name") for el in single.iter() if el.tag in ("Choices", "Rating", "TextArea")]
    # The error category comes last of the rating fields (it must not bias the earlier ones).
    assert names == [
        "question_valid",
        "adequacy",
        "keypoints",
        "equivalence",
        "attribution",
        "consistency",
        "primary_error_category",
        "comment",
    ]
    pair = ET.fromstring(files[LS_PAIR_CONFIG])
    assert [c.get("alias") for c in pair.iter("Choice")] == ["A", "B", "none"]
    singles = json.loads(files[LS_SINGLE_TASKS])
    # every individual task; one attention check per form of 10 (issue 36), not one per annotator
    n_single = int((sample["kind"] == "single").sum())
    assert len(singles) == n_single + -(-n_single // 9)
    # Blinding: no model, language, score or kind reaches the annotator.
    blob = files[LS_SINGLE_TASKS] + files[LS_PAIR_TASKS] + files[CSV_TASKS]
    for secret in (b"model-a", b'"language"', b"token_f1", b"attention", b'"kind"'):
        assert secret not in blob
    rows = list(csv.DictReader(io.StringIO(files[CSV_TASKS].decode())))
    assert len(rows) == sum(len(a) for a in sample["annotators"])


def test_label_studio_round_trip(sample, keypoints) -> None:
    files = export_files(sample, keypoints, CATEGORIES)
    expected: dict = {}
    tasks = json.loads(files[LS_SINGLE_TASKS]) + json.loads(files[LS_PAIR_TASKS])
    result = _import(
        [InboxFile("ls.json", _ls_export(tasks, sample, keypoints, expected))], sample, keypoints
    )
    assert list(result.imports["status"]) == ["accepted"]
    _check_values(result.annotations, expected)
    a = result.annotations
    assert set(a["seconds"]) == {23.5, 24.5} and set(a["comment"]) == {"ok"}
    assert "u11@x.invalid" not in a.to_string()  # the e-mail is never stored
    conform("human_annotations", a)  # matches its data contract
    singles = a[a["kind"] == "single"].merge(sample[["task_id", "item_id"]], on="task_id")
    with_list = singles[singles["item_id"].isin(keypoints["item_id"])]
    n_facts = keypoints.groupby("item_id").size()
    for row in with_list.to_dict("records"):
        assert row["keypoint_recall"] == pytest.approx(len(row["keypoint_hits"]) / n_facts[row["item_id"]])


def test_csv_round_trip(sample, keypoints) -> None:
    files = export_files(sample, keypoints, CATEGORIES)
    kinds = dict(zip(sample["task_id"], sample["kind"], strict=True))
    rows = list(csv.DictReader(io.StringIO(files[CSV_TASKS].decode())))
    expected = {}
    for n, row in enumerate(rows):
        if n % 7 == 0:
            continue  # not answered yet: skipped, not an error
        answers = _answers(
            row["task_id"], kinds[row["task_id"]], n, _checklist(keypoints, sample, row["task_id"])
        )
        expected[(row["task_id"], row["annotator_id"])] = answers
        row.update(
            {k: ";".join(v) if isinstance(v, list) else str(v) for k, v in answers.items()}, seconds="30"
        )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    result = _import([InboxFile("crowd.csv", buffer.getvalue().encode())], sample, keypoints)
    assert list(result.imports["status"]) == ["accepted"], result.imports["error"].tolist()
    _check_values(result.annotations, expected)
    pairs = result.annotations[result.annotations["kind"] == "pair"].merge(
        sample[["task_id", "a_side"]], on="task_id"
    )
    for row in pairs.to_dict("records"):
        want = {"A": row["a_side"], "B": "lower" if row["a_side"] == "higher" else "higher", "none": "none"}
        assert row["preferred"] == want[row["preference"]]


def _one_csv(sample, keypoints, name: str, **cells: str) -> InboxFile:
    task = sample[sample["kind"] == "single"].iloc[0]
    row = {"task_id": task["task_id"], "annotator_id": "ann-x", "adequacy": "3", "equivalence": "equivalent"}
    row.update(cells)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(row))
    writer.writeheader()
    writer.writerow(row)
    return InboxFile(name, buffer.getvalue().encode())


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"task_id": "s-nope"}, "field 'task_id': unknown task 's-nope'"),
        ({"annotator_id": ""}, "field 'annotator_id': missing"),
    ],
)
def test_a_record_of_another_project_rejects_the_file_naming_file_record_and_field(
    sample, keypoints, cells, message
) -> None:
    """Not a rating of this sample: the file is not this study's export, refused whole."""
    result = _import([_one_csv(sample, keypoints, "bad.csv", **cells)], sample, keypoints)
    log = result.imports.iloc[0]
    assert log["status"] == "rejected" and log["imported"] == 0 and log["refused"] == 1
    assert "annotation file 'bad.csv', line 2" in log["error"] and message in log["error"]
    assert result.annotations.empty and not result.to_archive


@pytest.mark.parametrize(
    ("cells", "reason"),
    [
        ({"adequacy": "7"}, "out_of_scale: field 'adequacy'"),
        ({"adequacy": ""}, "missing_required: field 'adequacy': missing"),
        ({"preference": "A"}, "not_asked: field 'preference': does not apply to a single task"),
        ({"keypoint_hits": "k9"}, "out_of_scale: field 'keypoint_hits'"),
        ({"primary_error_category": "typo"}, "out_of_scale: field 'primary_error_category'"),
        ({"seconds": "soon"}, "bad_duration: field 'seconds'"),
    ],
)
def test_a_bad_rating_is_excluded_with_its_reason_and_the_file_imports(
    sample, keypoints, cells, reason
) -> None:
    """Issue 36: a rating that contradicts the codebook is a bad rating, not a bad file."""
    good = _one_csv(sample, keypoints, "x.csv").data.decode()
    other = sample[sample["kind"] == "single"].iloc[1]["task_id"]
    bad = _one_csv(sample, keypoints, "bad.csv", **cells).data.decode().splitlines()
    text = "\n".join(
        [*bad, good.splitlines()[1].replace(sample[sample["kind"] == "single"].iloc[0]["task_id"], other)]
    )
    result = _import([InboxFile("bad.csv", (text + "\n").encode())], sample, keypoints)
    log = result.imports.iloc[0]
    assert (log["status"], log["records"], log["imported"], log["excluded"], log["refused"]) == (
        "accepted",
        2,
        1,
        1,
        0,
    ), log["error"]
    assert "annotation file 'bad.csv', line 2" in log["error"] and reason.split(": ", 1)[1] in log["error"]
    assert result.annotations["task_id"].tolist() == [other]  # the excluded one counts in no statistic
    excluded = result.excluded
    assert len(excluded) == 1 and excluded.iloc[0]["excluded_reason"].startswith(reason)
    assert "bad.csv" not in excluded.iloc[0]["excluded_reason"]  # the file is its own column
    assert result.to_archive


def test_malformed_files_are_refused_and_earlier_imports_survive(sample, keypoints) -> None:
    good = _one_csv(sample, keypoints, "a.csv")
    first = _import([good], sample, keypoints)
    assert list(first.imports["status"]) == ["accepted"]
    archive = {good.sha256: good.data}
    files = [
        good,
        InboxFile("broken.json", b'[{"data": {"task_id": '),
        InboxFile("notes.txt", b"hello"),
        InboxFile("same-again.csv", good.data),
        _one_csv(sample, keypoints, "b.csv", adequacy="2"),  # the same task and annotator as a.csv
        InboxFile("headerless.csv", b"x,y\n1,2\n"),
    ]
    second = _import(files, sample, keypoints, previous=first.imports, archive=archive)
    log = second.imports.set_index("file")
    assert log.loc["a.csv", "status"] == "accepted"
    assert "not valid JSON" in log.loc["broken.json", "error"]
    assert "unsupported format" in log.loc["notes.txt", "error"]
    assert (
        log.loc["same-again.csv", "status"] == "duplicate" and "'a.csv'" in log.loc["same-again.csv", "error"]
    )
    assert log.loc["b.csv", "status"] == "rejected"
    assert (
        "already imported from 'a.csv'" in log.loc["b.csv", "error"]
        and "field 'annotator_id'" in log.loc["b.csv", "error"]
    )
    assert "missing column(s) ['task_id', 'annotator_id']" in log.loc["headerless.csv", "error"]
    # What was imported before is intact, and nothing new was archived.
    pd.testing.assert_frame_equal(second.annotations, first.annotations)
    assert not second.to_archive
    # A file seen before is not looked at again (its log row stays as it was).
    third = _import(files, sample, keypoints, previous=second.imports, archive=archive)
    pd.testing.assert_frame_equal(third.imports, second.imports)


def test_the_inbox_can_be_cleared_without_losing_imports(sample, keypoints) -> None:
    good = _one_csv(sample, keypoints, "a.csv")
    first = _import([good], sample, keypoints)
    again = _import([], sample, keypoints, previous=first.imports, archive={good.sha256: good.data})
    pd.testing.assert_frame_equal(again.annotations, first.annotations)
    lost = _import([], sample, keypoints, previous=first.imports, archive={})
    assert lost.annotations.empty and lost.imports.iloc[0]["status"] == "stale"


def test_simulated_demo_set_imports_and_plants_qc_failures(sample, keypoints) -> None:
    files = simulate_annotations(sample, keypoints, seed=3)
    assert all(name.startswith("SIMULATED-") for name in files)
    result = _import([InboxFile(n, d) for n, d in files.items()], sample, keypoints)
    assert set(result.imports["status"]) == {"accepted"}, result.imports["error"].tolist()
    a = result.annotations
    assert a["simulated"].all()
    assigned = sum(len(x) for x in sample["annotators"])
    assert len(a) == assigned  # every assignment answered once, by LS users or CSV annotators
    assert set(a["source_file"]) == set(files)
    assert a["attention_passed"].eq(False).any() and a["attention_passed"].eq(True).any()
    contradictory = a[(a["adequacy"] == 5) & (a["equivalence"] == "not_equivalent")]
    assert contradictory["annotator_id"].value_counts().iloc[0] >= 3
    assert (a["seconds"] < 5).any() and a["seconds"].median() > 20
    # Deterministic for a seed.
    assert simulate_annotations(sample, keypoints, seed=3) == files


def test_simulated_files_only_for_the_bundled_demo(sample, keypoints) -> None:
    assert simulated_inbox_files("demo", sample, keypoints, seed=1)
    for kind in ("jsonl", "flores", "belebele"):
        assert simulated_inbox_files(kind, sample, keypoints, seed=1) == {}


def test_import_status_warns_while_awaiting_and_on_refusals(sample, keypoints) -> None:
    empty = _import([], sample, keypoints)
    passed, description = import_status(empty.imports, empty.annotations, "data/annotations/inbox")
    assert not passed and description.startswith("awaiting annotations: the inbox data/annotations/inbox")
    mixed = _import([_one_csv(sample, keypoints, "a.csv"), InboxFile("b.csv", b"oops")], sample, keypoints)
    passed, description = import_status(mixed.imports, mixed.annotations, "inbox")
    assert not passed and description.startswith("1 of 2 file(s) not imported: annotation file 'b.csv'")
    good = _import([_one_csv(sample, keypoints, "a.csv")], sample, keypoints)
    assert import_status(good.imports, good.annotations, "inbox") == (True, "1 ratings from 1 file(s)")
