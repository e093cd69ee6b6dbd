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
#: Under the data folder: the team's Label Studio instance name and its users' design annotator
#: ids (``instance,user_id,annotator_id``; optional, see docs/HUMAN_VALIDATION.md).
ANNOTATOR_MAP_FILE = "annotations/label_studio_users.csv"
LS_SINGLE_TASKS = "label_studio_single_tasks.json"
LS_SINGLE_CONFIG = "label_studio_single_config.xml"
LS_PAIR_TASKS = "label_studio_pair_tasks.json"
LS_PAIR_CONFIG = "label_studio_pair_config.xml"
CSV_TASKS = "annotation_tasks.csv"
#: Beside the CSV: every column, its allowed values and formats (``_codebook.py``, from these constants).
CODEBOOK = "annotation_codebook.md"
EXPORT_FILES = (LS_SINGLE_TASKS, LS_SINGLE_CONFIG, LS_PAIR_TASKS, LS_PAIR_CONFIG, CSV_TASKS, CODEBOOK)
#: In the inbox: what to drop there (written with the export; never read as an annotation file).
INBOX_README = "README.txt"
LS_FILL_TASKS = "label_studio_fill_tasks.json"
LS_FILL_CONFIG = "label_studio_fill_config.xml"
#: Written besides EXPORT_FILES only when the sample has paragraph-filling (``fill``) tasks.
FILL_EXPORT_FILES = (LS_FILL_TASKS, LS_FILL_CONFIG)
FILL_FIELDS = FILL_DIMENSIONS
FILL_MAX = 20

# Rubric answer options: (stored value, what the annotator reads). Stored values are the QC
# funnel's canonical ones (validation/human/_qc.py); Label Studio shows the label and stores the
# value (the ``alias`` of each ``<Choice>``).
QUESTION_VALID = (
    ("yes", "Valid: the question makes sense and the gold answer answers it"),
    ("no", "Invalid"),
)
EQUIVALENCE = (
    ("equivalent", "Equivalent to the gold answer"),
    ("partially_equivalent", "Partially equivalent"),
    ("not_equivalent", "Not equivalent"),
)
#: Attribution is judged against the passage shown (the item's paragraphs, in the language the
#: item was written in), the source the model had to answer from (docs/HUMAN_VALIDATION.md).
ATTRIBUTION = (
    ("supported", "Supported: everything it says is stated in or follows from the passage"),
    ("partially_supported", "Partly supported: some of what it says is not in the passage"),
    ("not_supported", "Not supported: what it says is not in the passage"),
)
CONSISTENCY = (("consistent", "Internally consistent"), ("inconsistent", "Contradicts itself"))
PREFERENCE = (("A", "Answer A"), ("B", "Answer B"), ("none", "No preference (both equally good or bad)"))
#: The only option of equivalence, attribution and consistency on an attention-check task: its
#: "response" is an instruction, not an answer, so those questions do not apply (stored as missing).
NOT_APPLICABLE = ("not_applicable", "Not applicable: this is not an answer to the question")
#: Fields an attention-check task answers "not applicable" (Label Studio requires them).
NOT_APPLICABLE_FIELDS = ("equivalence", "attribution", "consistency")
#: The keypoint checklist's explicit "none" (keypoint recall 0); no tick at all is not answered.
KEYPOINTS_NONE = ("none", "None of these facts")
#: Between keypoint ids in the CSV's ``keypoint_hits`` cell (``k1|k3``); ``;`` and ``,`` are read too.
KEYPOINT_SEPARATOR = "|"

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
#: A single or pair form's answer columns, in the CSV's order.
ANSWER_COLUMNS = [*SINGLE_FIELDS, *PAIR_FIELDS, "seconds", "comment"]
#: CSV columns added after CSV_COLUMNS when the sample has fill tasks (so a sample without them
#: exports exactly the single/pair CSV).
FILL_CSV_COLUMNS = ["previous_text", "next_text", *FILL_FIELDS]
CSV_COLUMNS = [
    "annotator_id",
    "position",
    "task_id",
    "question",
    "gold_answer",
    "passage",
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
    "ls_annotation_id",
    "ls_updated_at",
    "revision",
]
#: ``human_annotation_revisions``: every revision of every rating; ``current`` marks the one counted.
#: ``excluded_reason`` (issue 36): why a revision is excluded (``EXCLUSION_REASONS``); an excluded
#: current revision keeps its rating out of ``human_annotations`` until a later export corrects it.
REVISION_COLUMNS = [*ANNOTATION_COLUMNS, "current", "excluded_reason"]
#: What a rating says (not when or how long it took): two imports of a rating with the same
#: values are the same rating; different values are a revision.
RESULT_FIELDS = (*SINGLE_FIELDS, *PAIR_FIELDS, "comment", *FILL_FIELDS)
IMPORT_COLUMNS = [
    "file",
    "sha256",
    "format",
    "records",
    "imported",
    "skipped",
    "revised",
    "excluded",
    "refused",
    "status",
    "error",
    "imported_at",
]
#: Statuses of a file that imported nothing because something is wrong (a check WARNs).
REFUSED_STATUSES = ("rejected", "stale")


class AnnotationFileError(ValueError):
    """An annotation file that cannot be imported; the message names file, record and field."""

    def __init__(self, message: str, rejected: int = 0, records: int = 0) -> None:
        super().__init__(message)
        self.rejected = rejected  # invalid records found
        self.records = records  # records read in all


#: Why a rating is imported as excluded (issue 36): a record that contradicts itself or the
#: codebook is a bad rating, not a bad file. The file imports; the rating is kept with its reason
#: in ``human_annotation_revisions`` and counts in no statistic until a later export corrects it.
#: (code, what it means); the codebook lists them.
EXCLUSION_REASONS: tuple[tuple[str, str], ...] = (
    ("contradiction", "the checklist ticks `none` and a fact"),
    (
        "out_of_scale",
        "a value outside the field's scale or options (adequacy 7, an unknown error category, a fact "
        "not in the task's checklist, `not_applicable` on a task that is not an attention check)",
    ),
    (
        "missing_required",
        "a required answer is empty (adequacy of an individual task, preference of a pair, any of "
        "the five paragraph-filling dimensions)",
    ),
    (
        "not_asked",
        "an answer to a question the task does not ask (a preference on an individual task, "
        "`none` on a task without a checklist)",
    ),
    ("bad_duration", "`seconds` is not a duration (a non-negative number)"),
)


class RatingError(AnnotationFileError):
    """A rating that contradicts itself or the codebook: excluded with its reason, the file imports.

    ``str(error)`` names file, record and field (for the log); ``reason`` is
    ``<code>: field '<name>': <why>`` without the file (stored with the rating)."""

    def __init__(self, message: str, code: str, reason: str) -> None:
        super().__init__(message, 1, 1)
        self.code = code
        self.reason = f"{code}: {reason}"


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
