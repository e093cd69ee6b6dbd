"""The codebook written beside the CSV export (``annotation_codebook.md``).

Generated from the same constants the export and import use (columns, rubric options, the
keypoint format, the annotator-id rules), so it cannot drift from what is exported and read back:
a CSV column without a description here fails the export (``codebook``).
"""

from __future__ import annotations

from collections.abc import Sequence

from clcg_pipeline.validation.human._annotators import LS_PREFIX
from clcg_pipeline.validation.human._exchange_format import (
    ATTRIBUTION,
    CONSISTENCY,
    CSV_COLUMNS,
    EQUIVALENCE,
    EXCLUSION_REASONS,
    FILL_CSV_COLUMNS,
    FILL_FIELDS,
    FILL_MAX,
    KEYPOINT_SEPARATOR,
    KEYPOINTS_NONE,
    NOT_APPLICABLE,
    NOT_APPLICABLE_FIELDS,
    PREFERENCE,
    QUESTION_VALID,
)

GIVEN = "given"
ANSWER = "answer"
#: Every CSV column: (given by the export / answered by the annotator, what it holds).
COLUMN_NOTES: dict[str, tuple[str, str]] = {
    "annotator_id": (GIVEN, "who answers this row (an annotator of the design); keep it as it is"),
    "position": (GIVEN, "the row's place in that annotator's form: answer in this order"),
    "task_id": (GIVEN, "the task; keep it as it is (the import matches answers by it)"),
    "question": (GIVEN, "the question"),
    "gold_answer": (GIVEN, "the reference answer"),
    "passage": (
        GIVEN,
        "individual tasks: the paragraphs of the article the question was written from (``¶<pid>`` "
        "marks each), in the language the question was written in; attribution is judged against it",
    ),
    "response": (GIVEN, "individual tasks: the response to rate"),
    "response_a": (GIVEN, "contrastive tasks: answer A"),
    "response_b": (GIVEN, "contrastive tasks: answer B"),
    "keypoints": (GIVEN, "individual tasks with a checklist: its facts, `k1: ... | k2: ...`"),
    "ask_error_category": (GIVEN, "`yes` when this task asks the primary error category"),
    "adequacy": (ANSWER, "individual tasks (required): how well the response answers the question, 1-5"),
    "keypoint_hits": (ANSWER, "individual tasks with a checklist: the facts the response contains"),
    "question_valid": (ANSWER, "individual tasks: is the question valid"),
    "equivalence": (ANSWER, "individual tasks: equivalence to the gold answer"),
    "attribution": (ANSWER, "individual tasks: is what the response says supported by the passage"),
    "consistency": (ANSWER, "individual tasks: is the response internally consistent"),
    "primary_error_category": (ANSWER, "only where `ask_error_category` is `yes`: the main error"),
    "preference": (ANSWER, "contrastive tasks (required): which answer is better"),
    "confidence": (ANSWER, "contrastive tasks: how confident you are, 1 (guess) - 5 (certain)"),
    "seconds": (ANSWER, "optional: the time you spent on this row, in seconds (your own timing)"),
    "comment": (ANSWER, "optional: free text"),
    "previous_text": (GIVEN, "paragraph-filling tasks: the paragraph before the gap"),
    "next_text": (GIVEN, "paragraph-filling tasks: the paragraph after the gap"),
    **{
        name: (ANSWER, f"paragraph-filling tasks (required): {name.replace('_', ' ')}, 0-{FILL_MAX}")
        for name in FILL_FIELDS
    },
}
_OPTIONS = {
    "question_valid": QUESTION_VALID,
    "equivalence": EQUIVALENCE,
    "attribution": ATTRIBUTION,
    "consistency": CONSISTENCY,
    "preference": PREFERENCE,
}


def _columns(columns: Sequence[str]) -> list[str]:
    missing = [c for c in columns if c not in COLUMN_NOTES]
    if missing:
        raise ValueError(f"annotation codebook: no description for CSV column(s) {missing}")
    lines = ["| Column | | What it holds |", "|---|---|---|"]
    lines += [f"| `{c}` | {COLUMN_NOTES[c][0]} | {COLUMN_NOTES[c][1]} |" for c in columns]
    return lines


def _values(error_categories: Sequence[str]) -> list[str]:
    lines = ["| Column | Write (stored value) | What it means (the label annotators read) |", "|---|---|---|"]
    lines.append(
        "| `adequacy` | `1` ... `5` | 1 = does not answer the question at all, 5 = answers it fully |"
    )
    for name, options in _OPTIONS.items():
        lines += [f"| `{name}` | `{value}` | {label} |" for value, label in options]
    value, label = NOT_APPLICABLE
    lines.append(f"| {', '.join(f'`{n}`' for n in NOT_APPLICABLE_FIELDS)} | `{value}` | {label} |")
    lines.append("| `confidence` | `1` ... `5` | 1 = a guess, 5 = certain |")
    lines += [f"| `primary_error_category` | `{c}` | {c.replace('_', ' ')} |" for c in error_categories]
    return lines


def codebook(error_categories: Sequence[str], *, fill: bool = False) -> str:
    """The codebook of the CSV export (Markdown): columns, allowed values, formats, ids."""
    columns = [*CSV_COLUMNS, *FILL_CSV_COLUMNS] if fill else list(CSV_COLUMNS)
    none_value, none_label = KEYPOINTS_NONE
    sep = KEYPOINT_SEPARATOR
    parts = [
        "# Annotation codebook",
        "",
        "Generated with the export (`annotation_tasks.csv` and the Label Studio projects); the import "
        "reads the same columns and values. One CSV row is one assignment: an annotator and a task. "
        "Fill in the answer columns, leave the given ones as they are, and drop the file in the "
        "annotation inbox. A row with every answer column empty is not answered yet and is passed over.",
        "",
        "## Columns",
        "",
        *_columns(columns),
        "",
        "## Allowed values",
        "",
        "Write the stored value (Label Studio shows the label and stores the value). Matching is "
        "case-insensitive; the label itself is read too.",
        "",
        *_values(error_categories),
        "",
        "Attention-check rows (their response is an instruction, not an answer) take "
        f"`{NOT_APPLICABLE[0]}` (or nothing) in {', '.join(f'`{n}`' for n in NOT_APPLICABLE_FIELDS)}; "
        "only the instructed answer is checked.",
        "",
        "## `keypoint_hits`",
        "",
        "For a task with a fact checklist (the `keypoints` column): which of its facts the "
        "response contains.",
        "",
        f"- `k1{sep}k3`: those facts (ids from `keypoints`, separated by `{sep}`; `;` and `,` are read too);",
        f"- `{none_value}`: {none_label.lower()} (keypoint recall 0);",
        "- empty: not answered (keypoint recall missing, not 0).",
        "",
        f"`{none_value}` with a fact id excludes the row (below). A task without a checklist takes "
        "nothing here.",
        "",
        "## `seconds`",
        "",
        "In this CSV: the annotator's own timing of the row, in seconds (optional; the speed rule of "
        "the quality control cannot judge a row without it). From Label Studio: its `lead_time`, the "
        "time the annotation was open (Label Studio adds to it when an annotation is reopened).",
        "",
        "## Excluded ratings",
        "",
        "A row (or Label Studio annotation) that contradicts itself or this codebook is imported as "
        "excluded: the rest of the file imports, the row counts in no statistic, and the import "
        "names it with its reason until a corrected file replaces it (correct it in Label Studio, "
        "or fill the row again). The reasons:",
        "",
        "| Reason | The row |",
        "|---|---|",
        *[f"| `{code}` | {meaning} |" for code, meaning in EXCLUSION_REASONS],
        "",
        "A file that is not an export of this study (unreadable, an unknown task or column) is "
        "refused whole and changes nothing.",
        "",
        "## Annotator ids",
        "",
        "- In this CSV, `annotator_id` is the design's annotator (the export fills it in): one person "
        "per id, the same id in every file of that person.",
        f"- Ids starting with `{LS_PREFIX}` are Label Studio users' and are refused in a CSV.",
        f"- Label Studio annotations are the user `{LS_PREFIX}<instance>:<user id>` (instance: the "
        "team's name of its Label Studio), unless `annotations/label_studio_users.csv` maps the user "
        "to a design id; see docs/HUMAN_VALIDATION.md.",
        "",
    ]
    return "\n".join(parts)


def inbox_readme(export_folder: str) -> str:
    """The inbox's README.txt: what to drop there (the import never reads it as annotations)."""
    return "\n".join(
        [
            "Annotation inbox of this study: drop annotators' files here.",
            "",
            "- Label Studio: export the project (JSON, the default; JSON-MIN and CSV are read too),",
            "  again as annotations arrive: what was imported before is skipped, changes are revisions.",
            "- Spreadsheets / crowd platforms: annotation_tasks.csv filled in (see annotation_codebook.md",
            f"  beside it, in {export_folder}).",
            "",
            "The inbox sensor or `clcg run` imports new and changed files; each file's outcome (imported,",
            "skipped, revised, excluded, refused and why) is printed and logged. A rating that contradicts",
            "itself or the codebook is excluded (the rest of its file imports) until corrected. Imported",
            "files are archived under annotations/imported/, so this folder may be cleared. This README",
            "is not read as annotations.",
            "",
        ]
    )
