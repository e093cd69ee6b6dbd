"""The codebook shipped beside the CSV export (issue 19, item 6): generated from the export's
own constants, so every column and allowed value it documents is the one exported and read."""

from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest

from clcg_pipeline.validation.human._codebook import _columns, codebook, inbox_readme
from clcg_pipeline.validation.human._exchange_format import (
    ATTRIBUTION,
    CODEBOOK,
    CONSISTENCY,
    CSV_TASKS,
    EQUIVALENCE,
    EXCLUSION_REASONS,
    FILL_FIELDS,
    KEYPOINTS_NONE,
    PREFERENCE,
    QUESTION_VALID,
    InboxFile,
)
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import import_annotations
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import checklist_keypoints, small_sample

CATEGORIES = load_taxonomy().collapsed_labels


@pytest.fixture(scope="module")
def exported() -> tuple[pd.DataFrame, pd.DataFrame, dict[str, bytes]]:
    sample = small_sample()
    keypoints = checklist_keypoints(sample)
    return sample, keypoints, export_files(sample, keypoints, CATEGORIES)


def _documented_columns(text: str) -> list[str]:
    section = text.split("## Columns", 1)[1].split("##", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)


def test_the_codebook_is_written_beside_the_csv_and_names_its_columns_in_order(exported) -> None:
    _, _, files = exported
    text = files[CODEBOOK].decode()
    header = next(csv.reader(io.StringIO(files[CSV_TASKS].decode())))
    assert _documented_columns(text) == header


def test_every_allowed_value_is_documented_with_its_label(exported) -> None:
    text = exported[2][CODEBOOK].decode()
    for options in (QUESTION_VALID, EQUIVALENCE, ATTRIBUTION, CONSISTENCY, PREFERENCE):
        for value, label in options:
            assert f"`{value}` | {label} |" in text, value
    for category in CATEGORIES:
        assert f"| `primary_error_category` | `{category}` |" in text
    assert "`not_applicable`" in text


def test_the_codebook_gives_the_formats_and_the_id_rules(exported) -> None:
    text = exported[2][CODEBOOK].decode()
    assert "`k1|k3`" in text and f"`{KEYPOINTS_NONE[0]}`" in text and "empty: not answered" in text
    assert "`lead_time`" in text and "own timing" in text
    assert "`ls:`" in text and "`ls:<instance>:<user id>`" in text and "label_studio_users.csv" in text


def test_the_documented_keypoint_format_is_what_the_import_reads(exported) -> None:
    """The codebook's example cell, written as it says, imports as the facts it names."""
    sample, keypoints, files = exported
    example = re.search(r"`(k\d\|k\d)`", files[CODEBOOK].decode()).group(1)  # type: ignore[union-attr]
    task = sample[(sample["kind"] == "single") & sample["item_id"].isin(keypoints["item_id"])].iloc[0]
    third = (
        keypoints[keypoints["item_id"] == task["item_id"]]
        .iloc[[0]]
        .assign(keypoint_id="k3", text="a third fact")
    )
    keypoints = pd.concat([keypoints, third], ignore_index=True)
    rows = [
        {
            "task_id": task["task_id"],
            "annotator_id": task["annotators"][0],
            "adequacy": "3",
            "keypoint_hits": example,
        }
    ]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    result = import_annotations(
        [InboxFile("filled.csv", buffer.getvalue().encode())],
        pd.DataFrame(),
        {}.get,
        sample,
        keypoints,
        CATEGORIES,
        imported_at="2026-12-01T00:00:00+00:00",
    )
    assert list(result.annotations.iloc[0]["keypoint_hits"]) == example.split("|")


def test_fill_columns_are_documented_when_the_sample_has_fill_tasks() -> None:
    text = codebook(CATEGORIES, fill=True)
    for name in ("previous_text", "next_text", *FILL_FIELDS):
        assert name in _documented_columns(text)
    assert "topic_fidelity" not in _documented_columns(codebook(CATEGORIES))


def test_a_column_without_a_description_fails_the_export() -> None:
    with pytest.raises(ValueError, match=r"no description for CSV column\(s\) \['mystery'\]"):
        _columns(["task_id", "mystery"])


def test_the_inbox_readme_says_what_to_drop() -> None:
    text = inbox_readme("/data/annotations/export")
    assert "Label Studio" in text and "annotation_tasks.csv" in text and "/data/annotations/export" in text


def test_the_codebook_lists_every_exclusion_reason_the_import_gives() -> None:
    """Issue 36: a rating the import excludes names a reason the annotators' codebook explains."""
    text = codebook(["correct"])
    section = text.split("## Excluded ratings", 1)[1].split("\n## ", 1)[0]
    for code, meaning in EXCLUSION_REASONS:
        assert f"| `{code}` | {meaning} |" in section
    assert "excluded" in inbox_readme("annotations/export")
