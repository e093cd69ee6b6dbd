"""What the annotation export and import share: folders, file names, rubric options, columns.

Stored values are the QC funnel's canonical ones, so what is exported, imported and checked agrees.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Any

from clcg_pipeline.validation.human._annotation_sample import FILL_DIMENSIONS

#: Under the data folder: where exports are written, and where accepted annotation files are
#: archived (content-addressed by sha256) so that clearing the inbox loses nothing.
EXPORT_DIR = "annotations/export"
ARCHIVE_DIR = "annotations/imported"
LS_SINGLE_TASKS = "label_studio_single_tasks.json"
LS_SINGLE_CONFIG = "label_studio_single_config.xml"
LS_PAIR_TASKS = "label_studio_pair_tasks.json"
LS_PAIR_CONFIG = "label_studio_pair_config.xml"
CSV_TASKS = "annotation_tasks.csv"
EXPORT_FILES = (LS_SINGLE_TASKS, LS_SINGLE_CONFIG, LS_PAIR_TASKS, LS_PAIR_CONFIG, CSV_TASKS)
LS_FILL_TASKS = "label_studio_fill_tasks.json"
LS_FILL_CONFIG = "label_studio_fill_config.xml"
#: Written besides EXPORT_FILES only when the sample has paragraph-filling (``fill``) tasks.
FILL_EXPORT_FILES = (LS_FILL_TASKS, LS_FILL_CONFIG)
FILL_FIELDS = FILL_DIMENSIONS
FILL_MAX = 20

# Rubric answer options: (stored value, what the annotator reads). Stored values are the QC
# funnel's canonical ones (validation/human/_qc.py).
QUESTION_VALID = (
    ("yes", "Valid: the question makes sense and the gold answer answers it"),
    ("no", "Invalid"),
)
EQUIVALENCE = (
    ("equivalent", "Equivalent to the gold answer"),
    ("partially_equivalent", "Partially equivalent"),
    ("not_equivalent", "Not equivalent"),
)
ATTRIBUTION = (
    ("supported", "Everything it says is supported by the gold answer / passage"),
    ("partially_supported", "Partly supported"),
    ("not_supported", "Not supported"),
)
CONSISTENCY = (("consistent", "Internally consistent"), ("inconsistent", "Contradicts itself"))
PREFERENCE = (("A", "Answer A"), ("B", "Answer B"), ("none", "No preference (both equally good or bad)"))

ANSWER_COLUMNS = [
    "adequacy",
    "keypoint_hits",
    "question_valid",
    "equivalence",
    "attribution",
    "consistency",
    "primary_error_category",
    "preference",
    "confidence",
    "seconds",
    "comment",
]
SINGLE_FIELDS = (
    "adequacy",
    "keypoint_hits",
    "question_valid",
    "equivalence",
    "attribution",
    "consistency",
    "primary_error_category",
)
PAIR_FIELDS = ("preference", "confidence")
#: CSV columns added after CSV_COLUMNS when the sample has fill tasks (so a sample without them
#: exports exactly the single/pair CSV).
FILL_CSV_COLUMNS = ["previous_text", "next_text", *FILL_FIELDS]
CSV_COLUMNS = [
    "annotator_id",
    "position",
    "task_id",
    "question",
    "gold_answer",
    "response",
    "response_a",
    "response_b",
    "keypoints",
    "ask_error_category",
    *ANSWER_COLUMNS,
]
ANNOTATION_COLUMNS = [
    "annotation_id",
    "task_id",
    "annotator_id",
    "source_file",
    "source_sha256",
    "record",
    "kind",
    "adequacy",
    "keypoint_hits",
    "keypoint_recall",
    "question_valid",
    "equivalence",
    "attribution",
    "consistency",
    "primary_error_category",
    "preference",
    "preferred",
    "confidence",
    "seconds",
    "comment",
    "attention_correct",
    "attention_passed",
    "imported_at",
    "simulated",
    *FILL_FIELDS,
    "fill_total",
]
IMPORT_COLUMNS = [
    "file",
    "sha256",
    "format",
    "records",
    "accepted",
    "rejected",
    "status",
    "error",
    "imported_at",
]


class AnnotationFileError(ValueError):
    """An annotation file that cannot be imported; the message names file, record and field."""

    def __init__(self, message: str, rejected: int = 0, records: int = 0) -> None:
        super().__init__(message)
        self.rejected = rejected  # invalid records found
        self.records = records  # records read in all


@dataclass(frozen=True)
class InboxFile:
    name: str
    data: bytes

    @functools.cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def format(self) -> str:
        lower = self.name.lower()
        return (
            "label_studio_json"
            if lower.endswith(".json")
            else ("csv" if lower.endswith(".csv") else "unknown")
        )


def cell_text(value: Any) -> str:
    """A cell as text: empty for a missing value (None or NaN)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
