"""Issue 11: the paragraph-filling (``fill``) annotation arm - sample, export, import of both
formats, refusals - and the human-vs-judge correlation of granularity_results."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.granularity._analysis import NO_HUMAN_RATINGS, human_fill_totals, human_judge_correlation
from clcg_pipeline.storage._tables import conform
from clcg_pipeline.validation.human._annotation_sample import (
    FILL_DIMENSIONS,
    SAMPLE_COLUMNS,
    build_annotation_sample,
)
from clcg_pipeline.validation.human._exchange_format import (
    CSV_TASKS,
    EXPORT_FILES,
    LS_FILL_CONFIG,
    LS_FILL_TASKS,
    InboxFile,
)
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations
from clcg_pipeline.validation.human.demo_annotations._simulate import (
    CSV_FILL_FILE,
    LS_FILL_FILE,
    simulate_annotations,
)
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.granularity import g2_frames
from clcg_pipeline_tests.validation.annotation_world import MODELS, settings, world

CATEGORIES = load_taxonomy().collapsed_labels
NOW = "2026-12-01T00:00:00+00:00"
FILL_TASKS = ("t-fill-2", "t-fill-3")


def _granularity() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two paragraph-filling tasks (p2, p3 blanked) answered in en and pt, 3 reps, by MODELS[0]."""
    tasks = pd.DataFrame(
        [
            {"task_id": t, "group_id": t, "doc_id": "doc-1", "task": "paragraph_fill", "blank_pids": [pid]}
            for t, pid in zip(FILL_TASKS, ("d1:p2", "d1:p3"), strict=True)
        ]
    )
    paragraphs = g2_frames.paragraphs()
    text = paragraphs.set_index(["language", "pid"])["text"]
    preds = [
        {
            "model": MODELS[0],
            "language": lang,
            "doc_id": "doc-1",
            "task_id": t,
            "group_id": t,
            "task": "paragraph_fill",
            "context": context,
            "rep": rep,
            # rep 0 copies the gold, later reps keep fewer of its words: a spread of quality
            "answer": " ".join(text[(lang, pid)].split()[: max(3, 20 - 7 * rep)]),
            "status": "ok",
            "call_id": f"c-{lang}-{t}-{rep}",
        }
        for lang in ("en", "pt")
        for t, pid in zip(FILL_TASKS, ("d1:p2", "d1:p3"), strict=True)
        for rep in range(3)
        for context in ("full", "none")
    ]
    return pd.DataFrame(preds), tasks, paragraphs


def _sample(fill_ratings: int = 8, with_fill: bool = True) -> pd.DataFrame:
    w = world()
    preds, tasks, paragraphs = _granularity()
    extra = (
        dict(task_predictions=preds, granularity_tasks=tasks, long_paragraphs=paragraphs) if with_fill else {}
    )
    return build_annotation_sample(
        w["predictions"],
        w["scores"],
        w["items"],
        w["languages"],
        settings(responses=24, pairs=6, fill_ratings=fill_ratings),
        models=MODELS,
        **extra,
    ).sample


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return _sample()


KEYPOINTS = pd.DataFrame(columns=["item_id", "keypoint_id", "text", "writer", "call_id"])


def _import(files: list[InboxFile], sample: pd.DataFrame, previous=None, store=None):
    return import_annotations(
        files,
        previous if previous is not None else pd.DataFrame(),
        (store or {}).get,
        sample,
        KEYPOINTS,
        CATEGORIES,
        imported_at=NOW,
    )


def test_fill_arm_is_stratified_by_language_and_leaves_the_other_arms_unchanged(sample) -> None:
    without = _sample(with_fill=False)
    fill = sample[sample["kind"] == "fill"]
    # the single/pair/attention rows are exactly those of a sample drawn without the fill arm
    pd.testing.assert_frame_equal(
        sample[sample["kind"] != "fill"].reset_index(drop=True)[SAMPLE_COLUMNS], without[SAMPLE_COLUMNS]
    )
    assert len(fill) == 8 and fill["language"].value_counts().to_dict() == {"en": 4, "pt": 4}
    assert set(fill["context"]) == {"full"} and set(fill["gran_task_id"]) <= set(FILL_TASKS)
    assert all(len(a) == 3 and all(x.startswith("fill-") for x in a) for a in fill["annotators"])
    row = fill.iloc[0]
    assert row["previous_text"] and row["next_text"] and row["gold_answer"] and row["response"]
    # off when fill_ratings is 0; a shortfall (not silence) when nothing can be rated
    assert not (_sample(fill_ratings=0)["kind"] == "fill").any()
    w = world()
    empty = build_annotation_sample(
        w["predictions"], w["scores"], w["items"], w["languages"], settings(responses=24, pairs=6),
        models=MODELS, task_predictions=pd.DataFrame(), granularity_tasks=pd.DataFrame(),
        long_paragraphs=pd.DataFrame(),
    )  # fmt: skip
    assert any(s.startswith("fill arm: 0 of 60") for s in empty.shortfalls)


def test_export_has_a_third_label_studio_project_and_csv_rows(sample) -> None:
    files = export_files(sample, KEYPOINTS, CATEGORIES)
    assert set(files) == {*EXPORT_FILES, LS_FILL_TASKS, LS_FILL_CONFIG}
    config = ET.fromstring(files[LS_FILL_CONFIG])
    numbers = [(n.get("name"), n.get("min"), n.get("max")) for n in config.iter("Number")]
    assert numbers == [(d, "0", "20") for d in FILL_DIMENSIONS]
    tasks = json.loads(files[LS_FILL_TASKS])
    assert len(tasks) == int((sample["kind"] == "fill").sum())
    for secret in (b"model-", b'"language"', b'"kind"', b"gran_task_id"):
        assert secret not in files[LS_FILL_TASKS]
    rows = list(csv.DictReader(io.StringIO(files[CSV_TASKS].decode())))
    fill_ids = set(sample.loc[sample["kind"] == "fill", "task_id"])
    fill_rows = [r for r in rows if r["task_id"] in fill_ids]
    assert len(fill_rows) == 3 * len(fill_ids) and all(r["previous_text"] for r in fill_rows)
    assert set(FILL_DIMENSIONS) <= set(rows[0])
    # a sample without fill tasks exports exactly the single/pair files, CSV header unchanged
    plain = export_files(_sample(with_fill=False), KEYPOINTS, CATEGORIES)
    assert set(plain) == set(EXPORT_FILES)
    assert "topic_fidelity" not in plain[CSV_TASKS].decode().splitlines()[0]


def _expected_from_files(files: dict[str, bytes]) -> dict[tuple[str, str], dict[str, int]]:
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for task in json.loads(files[LS_FILL_FILE]):
        for ann in task["annotations"]:
            values = {r["from_name"]: r["value"]["number"] for r in ann["result"]}
            expected[(task["data"]["task_id"], f"ls:simulated:{ann['completed_by']}")] = values
    for row in csv.DictReader(io.StringIO(files[CSV_FILL_FILE].decode())):
        expected[(row["task_id"], row["annotator_id"])] = {d: int(row[d]) for d in FILL_DIMENSIONS}
    return expected


def test_fill_ratings_round_trip_through_label_studio_json_and_csv(sample) -> None:
    files = simulate_annotations(sample, KEYPOINTS, seed=7)
    inbox = [InboxFile(name, files[name]) for name in (LS_FILL_FILE, CSV_FILL_FILE)]
    result = _import(inbox, sample)
    assert list(result.imports["status"]) == ["accepted", "accepted"], result.imports["error"].tolist()
    got = result.annotations
    expected = _expected_from_files(files)
    assert len(got) == len(expected) == 3 * int((sample["kind"] == "fill").sum())
    indexed = got.set_index(["task_id", "annotator_id"])
    for key, values in expected.items():
        row = indexed.loc[key]
        assert {d: int(row[d]) for d in FILL_DIMENSIONS} == values
        assert row["fill_total"] == sum(values.values()) and row["kind"] == "fill" and row["simulated"]
        assert pd.isna(row["adequacy"]) and pd.isna(row["preference"])
    conform("human_annotations", got)
    # both halves of the annotators came through (Label Studio users and CSV ids)
    assert got["source_file"].nunique() == 2
    # the whole simulated inbox (single, pair and fill files) imports together
    everything = _import([InboxFile(n, b) for n, b in files.items()], sample)
    assert set(everything.imports["status"]) == {"accepted"}
    assert set(everything.annotations["kind"]) == {"single", "pair", "attention", "fill"}


def _fill_csv(sample: pd.DataFrame, name: str, value: str) -> InboxFile:
    task = sample[sample["kind"] == "fill"].iloc[0]
    row = {"task_id": task["task_id"], "annotator_id": "fill-x", **dict.fromkeys(FILL_DIMENSIONS, "10")}
    row["topic_fidelity"] = value
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(row), lineterminator="\n")
    writer.writeheader()
    writer.writerow(row)
    return InboxFile(name, buffer.getvalue().encode())


def test_a_malformed_fill_rating_is_excluded_naming_file_record_and_field(sample) -> None:
    """Issue 36: an out-of-scale or missing dimension excludes the rating, not the file."""
    bad = _fill_csv(sample, "b-bad.csv", "25")
    second = _import([bad], sample)
    log = second.imports.set_index("file")
    assert log.loc["b-bad.csv", ["status", "imported", "excluded"]].tolist() == ["accepted", 0, 1]
    error = log.loc["b-bad.csv", "error"]
    assert "'b-bad.csv'" in error and "line 2" in error and "'topic_fidelity'" in error and "25" in error
    assert second.annotations.empty  # nothing of the excluded rating is counted
    # the same in a Label Studio export: the record is the task/annotation, the field the control
    task = sample[sample["kind"] == "fill"].iloc[1]
    ls = [
        {
            "data": {"task_id": task["task_id"]},
            "annotations": [
                {
                    "completed_by": 9,
                    "result": [
                        {
                            "from_name": d,
                            "type": "number",
                            "value": {"number": 25 if d == "entity_consistency" else 5},
                        }
                        for d in FILL_DIMENSIONS
                    ],
                }
            ],
        }
    ]
    third = _import([InboxFile("c-ls.json", json.dumps(ls).encode())], sample)
    error = third.imports["error"].iloc[0]
    assert third.imports[["status", "excluded"]].iloc[0].tolist() == ["accepted", 1]
    assert "'c-ls.json'" in error and "task 1" in error and "annotation 1" in error
    assert "'entity_consistency'" in error
    # a missing dimension is excluded too; a second rating of a fill task by the same annotator
    # (a CSV row with other values than the one imported) refuses the file
    missing = _import([_fill_csv(sample, "d-missing.csv", "")], sample)
    assert "missing_required" in missing.excluded["excluded_reason"].iloc[0]
    good = _fill_csv(sample, "a-good.csv", "12")
    first = _import([good], sample)
    store = {good.sha256: good.data}
    again = _import([_fill_csv(sample, "e-again.csv", "11")], sample, previous=first.imports, store=store)
    assert again.imports["status"].iloc[-1] == "rejected"
    assert "already imported from 'a-good.csv'" in again.imports["error"].iloc[-1]


def _judgements(units: pd.DataFrame, totals: np.ndarray) -> pd.DataFrame:
    rows = []
    for judge, shift in (("judge-a", 0.0), ("judge-b", 4.0)):
        part = units.assign(judge=judge, total=totals + shift, status="ok")
        rows.append(part)
    return pd.concat(rows, ignore_index=True)


def test_human_judge_correlation_on_crafted_frames(sample) -> None:
    fill = sample[sample["kind"] == "fill"].reset_index(drop=True)
    units = pd.DataFrame(
        {
            "model": fill["model"],
            "language": fill["language"],
            "doc_id": fill["doc_id"],
            "task_id": fill["gran_task_id"],
            "context": fill["context"],
            "rep": fill["rep"].astype("int64"),
        }
    )
    judge_totals = np.linspace(20, 90, len(fill))
    judgements = _judgements(units, judge_totals)
    # two annotators per task; their mean total rises with the judges' (monotone, not linear)
    annotations = pd.DataFrame(
        [
            {
                "task_id": t,
                "annotator_id": a,
                "kind": "fill",
                "fill_total": 5 + k**2 + d,
                "simulated": False,
            }
            for k, t in enumerate(fill["task_id"])
            for a, d in (("fill-1", -1), ("fill-2", 1))
        ]
        + [
            {
                "task_id": "s-x",
                "annotator_id": "ann-1",
                "kind": "single",
                "fill_total": None,
                "simulated": False,
            }
        ]
    )
    human = human_fill_totals(annotations, sample)
    assert len(human) == 2 * len(fill) and set(human["task_id"]) <= set(FILL_TASKS)
    corr, reason = human_judge_correlation(judgements, human)
    assert reason is None and corr["n"] == len(fill) and corr["n_ratings"] == 2 * len(fill)
    assert corr["spearman_rho"] == pytest.approx(1.0) and 0.9 < corr["pearson_r"] < 1.0
    assert corr["simulated"] is False
    # reversed human order: a perfect negative rank correlation
    flipped = human.assign(total=100 - human["total"])
    assert human_judge_correlation(judgements, flipped)[0]["spearman_rho"] == pytest.approx(-1.0)
    # null with the reason: no fill ratings, or too few answers rated by both
    assert human_fill_totals(annotations[annotations["kind"] != "fill"], sample) is None
    assert human_judge_correlation(judgements, None) == (None, NO_HUMAN_RATINGS)
    few = human[human["task_id"].isin(human["task_id"].iloc[:1]) & (human["rep"] == human["rep"].iloc[0])]
    few = few[few["language"] == few["language"].iloc[0]]
    value, why = human_judge_correlation(judgements, few)
    assert value is None and "need 3" in why
    # ratings citing tasks the sample does not have are an error, not silently dropped
    with pytest.raises(ValueError, match="not among the annotation_sample's fill tasks"):
        human_fill_totals(annotations.assign(task_id="f-unknown"), sample)
