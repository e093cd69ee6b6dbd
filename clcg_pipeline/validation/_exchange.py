"""Annotation exchange: export tasks for annotators, import their answers (STUDY.md section 7).

Export, in the formats annotators' tools read:
- Label Studio: two projects (individual responses with the planted attention checks, and
  contrastive pairs), each a task list ``[{"data": {...}}]`` plus its labelling config XML. Two
  projects because a Label Studio config is one per project and the two arms ask different
  questions; attention checks go with the individual tasks, which they must look like.
- a third project, paragraph filling (issue 11; only when the sample has ``fill`` rows): the
  previous, original and next paragraph and the generated one, rated on the fill judge's five
  0-20 dimensions (Label Studio ``Number`` controls);
- a flat CSV, one row per assignment (annotator, position in their form, task) with empty
  answer columns, for spreadsheets and crowd platforms.
Annotators see the question, gold answer and response(s) only: never the model, language,
resource class, score or task kind (blinding; an attention check must not announce itself).

Import: a Label Studio export JSON (tasks with ``annotations[].result[]``) or the CSV filled
in. A file is accepted whole or not at all: one invalid record rejects it with an error naming
the file, record and field (and how many more records are invalid), so a bad file never
half-lands. A file whose content was already imported (same sha256), or holding a rating of a
task by an annotator already imported, is refused naming the earlier file. Values are checked
against the rubric domains of ``_qc.RUBRIC`` (the QC funnel's), so import and QC agree.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import quoteattr

import pandas as pd

from clcg_pipeline.validation._annotation_sample import FILL_DIMENSIONS
from clcg_pipeline.validation._keypoints import keypoints_by_item
from clcg_pipeline.validation._qc import normalize_value

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
# funnel's canonical ones (validation/_qc.py).
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


# ---------------------------------------------------------------------------------- export


def _choices(name: str, to: str, options: Sequence[tuple[str, str]], *, required: bool = True) -> str:
    body = "".join(f"<Choice value={quoteattr(v)} hint={quoteattr(h)}/>" for v, h in options)
    req = ' required="true"' if required else ""
    return f'<Choices name="{name}" toName="{to}" choice="single-radio"{req}>{body}</Choices>'


def label_config_single(error_categories: Sequence[str]) -> str:
    """Label Studio config of the individual arm: validity, adequacy, checklist, ..., error category last."""
    return "\n".join(
        [
            "<View>",
            '  <Header value="Question"/>',
            '  <Text name="question" value="$question"/>',
            '  <Header value="Gold answer"/>',
            '  <Text name="gold_answer" value="$gold_answer"/>',
            '  <Header value="Response"/>',
            '  <Text name="response" value="$response"/>',
            '  <Header value="Is the question valid?"/>',
            "  " + _choices("question_valid", "question", QUESTION_VALID),
            '  <Header value="Adequacy: how well does the response answer the question? '
            '(1 = not at all, 5 = fully)"/>',
            '  <Rating name="adequacy" toName="response" maxRating="5" required="true"/>',
            '  <Header value="$keypoint_prompt"/>',
            '  <Choices name="keypoints" toName="response" choice="multiple" value="$keypoint_options"/>',
            '  <Header value="Equivalence to the gold answer"/>',
            "  " + _choices("equivalence", "response", EQUIVALENCE),
            '  <Header value="Attribution"/>',
            "  " + _choices("attribution", "response", ATTRIBUTION),
            '  <Header value="Consistency"/>',
            "  " + _choices("consistency", "response", CONSISTENCY),
            '  <Header value="$error_category_prompt"/>',
            "  "
            + _choices(
                "primary_error_category",
                "response",
                [(c, c.replace("_", " ")) for c in error_categories],
                required=False,
            ),
            '  <TextArea name="comment" toName="response" placeholder="Optional comment"/>',
            "</View>",
            "",
        ]
    )


def label_config_pair() -> str:
    """Label Studio config of the contrastive arm: A / B / no preference, with a confidence rating."""
    return "\n".join(
        [
            "<View>",
            '  <Header value="Question"/>',
            '  <Text name="question" value="$question"/>',
            '  <Header value="Gold answer"/>',
            '  <Text name="gold_answer" value="$gold_answer"/>',
            '  <Header value="Answer A"/>',
            '  <Text name="response_a" value="$response_a"/>',
            '  <Header value="Answer B"/>',
            '  <Text name="response_b" value="$response_b"/>',
            '  <Header value="Which answer is better?"/>',
            "  " + _choices("preference", "question", PREFERENCE),
            '  <Header value="How confident are you? (1 = guess, 5 = certain)"/>',
            '  <Rating name="confidence" toName="question" maxRating="5" required="true"/>',
            '  <TextArea name="comment" toName="question" placeholder="Optional comment"/>',
            "</View>",
            "",
        ]
    )


def label_config_fill() -> str:
    """Label Studio config of the paragraph-filling arm: the fill judge's five dimensions, 0-20 each."""
    hints = {
        "topic_fidelity": "Topic fidelity: same topic and points as the original paragraph",
        "local_coherence": "Local coherence: follows the previous and leads into the next paragraph",
        "entity_consistency": "Entity consistency: names, numbers and entities agree with the context",
        "instruction_following": "Instruction following: one paragraph that fills the gap",
        "format_compliance": "Format compliance: plain paragraph text, no headings or commentary",
    }
    lines = [
        "<View>",
        '  <Header value="$question"/>',
        '  <Header value="Previous paragraph"/>',
        '  <Text name="previous_text" value="$previous_text"/>',
        '  <Header value="Original paragraph (removed)"/>',
        '  <Text name="gold_answer" value="$gold_answer"/>',
        '  <Header value="Generated paragraph"/>',
        '  <Text name="response" value="$response"/>',
        '  <Header value="Next paragraph"/>',
        '  <Text name="next_text" value="$next_text"/>',
    ]
    for name in FILL_FIELDS:
        lines.append(f"  <Header value={quoteattr(hints[name] + ' (0-20)')}/>")
        lines.append(
            f'  <Number name="{name}" toName="response" min="0" max="{FILL_MAX}" step="1" required="true"/>'
        )
    lines += ['  <TextArea name="comment" toName="response" placeholder="Optional comment"/>', "</View>", ""]
    return "\n".join(lines)


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _ls_single(row: Mapping[str, Any], checklist: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "data": {
            "task_id": row["task_id"],
            "question": _text(row["question"]),
            "gold_answer": _text(row["gold_answer"]),
            "response": _text(row["response"]),
            "keypoint_prompt": (
                "Tick every fact of the gold answer that the response contains"
                if checklist
                else "(no fact checklist for this item)"
            ),
            "keypoint_options": [
                {"value": kid, "hint": text, "html": f"{kid}: {text}"} for kid, text in checklist
            ],
            "error_category_prompt": (
                "Last: the primary error category of the response (choose correct if there is none)"
                if row["ask_error_category"]
                else "(no error category for this item: leave it blank)"
            ),
            "annotators": ", ".join(row["annotators"]),
        }
    }


def _ls_pair(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "data": {
            "task_id": row["task_id"],
            "question": _text(row["question"]),
            "gold_answer": _text(row["gold_answer"]),
            "response_a": _text(row["response_a"]),
            "response_b": _text(row["response_b"]),
            "annotators": ", ".join(row["annotators"]),
        }
    }


def _ls_fill(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "data": {
            "task_id": row["task_id"],
            "question": _text(row["question"]),
            "previous_text": _text(row.get("previous_text")),
            "gold_answer": _text(row["gold_answer"]),
            "response": _text(row["response"]),
            "next_text": _text(row.get("next_text")),
            "annotators": ", ".join(row["annotators"]),
        }
    }


def export_files(
    sample: pd.DataFrame, keypoints: pd.DataFrame, error_categories: Sequence[str]
) -> dict[str, bytes]:
    """File name -> bytes of every export file (the caller writes them atomically)."""
    checklists = keypoints_by_item(keypoints)
    rows = [
        {**r, "annotators": list(r["annotators"]), "positions": list(r["positions"])}
        for r in sample.to_dict("records")
    ]
    singles = [
        _ls_single(r, checklists.get(r["item_id"], []) if r["kind"] == "single" else [])
        for r in rows
        if r["kind"] in ("single", "attention")
    ]
    pairs = [_ls_pair(r) for r in rows if r["kind"] == "pair"]
    fills = [_ls_fill(r) for r in rows if r["kind"] == "fill"]
    buffer = io.StringIO()
    columns = [*CSV_COLUMNS, *FILL_CSV_COLUMNS] if fills else CSV_COLUMNS
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    assignments = sorted(
        ((a, int(p), r) for r in rows for a, p in zip(r["annotators"], r["positions"], strict=True)),
        key=lambda x: (x[0], x[1]),
    )
    for annotator, position, r in assignments:
        checklist = checklists.get(r["item_id"], []) if r["kind"] == "single" else []
        writer.writerow(
            {
                "annotator_id": annotator,
                "position": position,
                "task_id": r["task_id"],
                "question": _text(r["question"]),
                "gold_answer": _text(r["gold_answer"]),
                "response": _text(r["response"]),
                "response_a": _text(r["response_a"]),
                "response_b": _text(r["response_b"]),
                "keypoints": " | ".join(f"{kid}: {text}" for kid, text in checklist),
                "ask_error_category": "yes" if r["ask_error_category"] else "no",
                **dict.fromkeys(ANSWER_COLUMNS, ""),
                "previous_text": _text(r.get("previous_text")),
                "next_text": _text(r.get("next_text")),
                **dict.fromkeys(FILL_FIELDS, ""),
            }
        )
    dump = lambda obj: (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")  # noqa: E731
    files = {
        LS_SINGLE_TASKS: dump(singles),
        LS_SINGLE_CONFIG: label_config_single(error_categories).encode("utf-8"),
        LS_PAIR_TASKS: dump(pairs),
        LS_PAIR_CONFIG: label_config_pair().encode("utf-8"),
        CSV_TASKS: buffer.getvalue().encode("utf-8"),
    }
    if fills:
        files[LS_FILL_TASKS] = dump(fills)
        files[LS_FILL_CONFIG] = label_config_fill().encode("utf-8")
    return files


# ---------------------------------------------------------------------------------- import


@dataclass
class _Context:
    """What validating a record needs: the tasks, their checklists and the error categories."""

    tasks: dict[str, dict[str, Any]]
    checklists: dict[str, list[tuple[str, str]]]
    error_categories: frozenset[str]


def _context(sample: pd.DataFrame, keypoints: pd.DataFrame, error_categories: Sequence[str]) -> _Context:
    tasks = {str(r["task_id"]): r for r in sample.to_dict("records")}
    return _Context(tasks, keypoints_by_item(keypoints), frozenset(error_categories))


def _where(file: str, record: str, fld: str | None = None) -> str:
    return f"annotation file {file!r}, {record}" + (f", field {fld!r}" if fld else "")


def _record(
    ctx: _Context, file: str, record: str, task_id: Any, annotator: Any, answers: Mapping[str, Any]
) -> dict[str, Any]:
    """One validated rating; raises AnnotationFileError naming file, record and field."""
    task_id = _text(task_id).strip()
    if not task_id:
        raise AnnotationFileError(f"{_where(file, record, 'task_id')}: missing")
    task = ctx.tasks.get(task_id)
    if task is None:
        raise AnnotationFileError(
            f"{_where(file, record, 'task_id')}: unknown task {task_id!r} (not in the sample)"
        )
    annotator_id = _text(annotator).strip()
    if not annotator_id:
        raise AnnotationFileError(f"{_where(file, record, 'annotator_id')}: missing")
    kind = str(task["kind"])
    allowed = PAIR_FIELDS if kind == "pair" else (FILL_FIELDS if kind == "fill" else SINGLE_FIELDS)
    out: dict[str, Any] = {"task_id": task_id, "annotator_id": annotator_id, "kind": kind, "record": record}
    for name, raw in answers.items():
        if name in ("seconds", "comment", "simulated"):
            continue
        present = raw not in (None, "", []) and not (isinstance(raw, float) and math.isnan(raw))
        if present and name not in allowed:
            raise AnnotationFileError(f"{_where(file, record, name)}: does not apply to a {kind} task")
    for name in allowed:
        raw = answers.get(name)
        if name == "keypoint_hits":
            continue
        if kind == "fill":
            out[name] = _fill_value(file, record, name, raw)
            continue
        value, why = normalize_value(name, raw)
        if why:
            raise AnnotationFileError(f"{_where(file, record, name)}: {why}")
        if name == "primary_error_category" and value is not None and value not in ctx.error_categories:
            raise AnnotationFileError(
                f"{_where(file, record, name)}: {raw!r} is not one of {sorted(ctx.error_categories)}"
            )
        out[name] = value
    out["fill_total"] = sum(out[d] for d in FILL_FIELDS) if kind == "fill" else None
    if kind != "pair":
        checklist = (
            [kid for kid, _ in ctx.checklists.get(str(task["item_id"]), [])] if kind == "single" else []
        )
        hits = answers.get("keypoint_hits")
        hits = [] if hits in (None, "") or (isinstance(hits, float) and math.isnan(hits)) else hits
        if isinstance(hits, str):
            hits = [h.strip() for h in hits.replace(",", ";").split(";") if h.strip()]
        bad = [h for h in hits if h not in checklist]
        if bad:
            raise AnnotationFileError(
                f"{_where(file, record, 'keypoint_hits')}: {bad} not in this task's checklist {checklist}"
            )
        out["keypoint_hits"] = sorted(set(hits), key=lambda h: checklist.index(h))
        out["keypoint_recall"] = len(out["keypoint_hits"]) / len(checklist) if checklist else None
    else:
        out["keypoint_hits"] = []
        out["keypoint_recall"] = None
        pref = out.get("preference")
        out["preferred"] = (
            None
            if pref is None
            else "none"
            if pref == "none"
            else (task["a_side"] if pref == "A" else ("lower" if task["a_side"] == "higher" else "higher"))
        )
    seconds = answers.get("seconds")
    if seconds in (None, "") or (isinstance(seconds, float) and math.isnan(seconds)):
        out["seconds"] = None
    else:
        try:
            out["seconds"] = float(seconds)
        except (TypeError, ValueError):
            raise AnnotationFileError(
                f"{_where(file, record, 'seconds')}: {seconds!r} is not a number"
            ) from None
        if not math.isfinite(out["seconds"]) or out["seconds"] < 0:
            raise AnnotationFileError(f"{_where(file, record, 'seconds')}: {seconds!r} is not a duration")
    out["comment"] = _text(answers.get("comment")).strip() or None
    sim = answers.get("simulated")
    out["simulated"] = str(sim).strip().lower() in ("true", "1", "yes") if sim not in (None, "") else False
    if kind == "attention":
        given = out.get(str(task["attention_field"]))
        out["attention_correct"] = given is not None and str(given) == str(task["attention_expected"])
    else:
        out["attention_correct"] = None
    return out


def _fill_value(file: str, record: str, name: str, raw: Any) -> int:
    """A fill dimension: a whole number 0-20, required (the total needs all five)."""
    if (
        raw is None
        or (isinstance(raw, str) and not raw.strip())
        or (isinstance(raw, float) and math.isnan(raw))
    ):
        raise AnnotationFileError(
            f"{_where(file, record, name)}: missing (all five fill dimensions are required)"
        )
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise AnnotationFileError(f"{_where(file, record, name)}: {name}={raw!r} is not a number") from None
    if isinstance(raw, bool) or not number.is_integer() or not 0 <= number <= FILL_MAX:
        raise AnnotationFileError(
            f"{_where(file, record, name)}: {name}={raw!r} is outside 0..{FILL_MAX} (whole numbers)"
        )
    return int(number)


_LS_RESULT_KEY = {"rating": "rating", "choices": "choices", "textarea": "text", "number": "number"}
_LS_FIELDS = {
    "adequacy",
    "keypoints",
    "question_valid",
    "equivalence",
    "attribution",
    "consistency",
    "primary_error_category",
    "preference",
    "confidence",
    "comment",
    *FILL_FIELDS,
}


def _ls_answers(file: str, record: str, results: Any) -> dict[str, Any]:
    if not isinstance(results, list):
        raise AnnotationFileError(f"{_where(file, record, 'result')}: expected a list of results")
    answers: dict[str, Any] = {}
    for entry in results:
        if not isinstance(entry, dict):
            raise AnnotationFileError(f"{_where(file, record, 'result')}: a result is not an object")
        name, kind, value = entry.get("from_name"), str(entry.get("type", "")).lower(), entry.get("value")
        if name not in _LS_FIELDS:
            raise AnnotationFileError(
                f"{_where(file, record, str(name))}: unknown control (the labelling config's names are "
                f"{sorted(_LS_FIELDS)})"
            )
        key = _LS_RESULT_KEY.get(kind)
        if key is None or not isinstance(value, dict) or key not in value:
            raise AnnotationFileError(
                f"{_where(file, record, name)}: expected a {kind or '?'} value, got {value!r}"
            )
        got = value[key]
        if name == "keypoints":
            if not isinstance(got, list):
                raise AnnotationFileError(f"{_where(file, record, name)}: choices must be a list")
            answers["keypoint_hits"] = [str(g) for g in got]
        elif kind in ("choices", "textarea"):
            if not isinstance(got, list) or len(got) > 1:
                raise AnnotationFileError(f"{_where(file, record, name)}: expected one value, got {got!r}")
            answers[name] = got[0] if got else None
        else:
            answers[name] = got
    return answers


def parse_label_studio(file: InboxFile, ctx: _Context) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of a Label Studio export JSON, and the errors of the invalid ones."""
    try:
        payload = json.loads(file.data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}: not valid JSON ({exc})") from None
    if not isinstance(payload, list):
        raise AnnotationFileError(
            f"annotation file {file.name!r}: expected a Label Studio export (a JSON list of tasks), "
            f"got a {type(payload).__name__}"
        )
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    for t, task in enumerate(payload, start=1):
        where = f"task {t}"
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            errors.append(f"{_where(file.name, where, 'data')}: a task needs a 'data' object")
            continue
        annotations = task.get("annotations", [])
        if not isinstance(annotations, list):
            errors.append(f"{_where(file.name, where, 'annotations')}: expected a list")
            continue
        for a, ann in enumerate(annotations, start=1):
            record = f"task {t} (task_id {task['data'].get('task_id')!r}) annotation {a}"
            if not isinstance(ann, dict):
                errors.append(f"{_where(file.name, record)}: not an object")
                continue
            if ann.get("was_cancelled"):
                continue  # skipped by the annotator in Label Studio: not a rating
            who = ann.get("completed_by")
            if isinstance(who, dict):
                who = who.get("id")
            try:
                answers = _ls_answers(file.name, record, ann.get("result"))
                answers["seconds"] = ann.get("lead_time")
                answers["simulated"] = ann.get("simulated")
                records.append(
                    _record(
                        ctx,
                        file.name,
                        record,
                        task["data"].get("task_id"),
                        None if who is None else f"ls-{who}",
                        answers,
                    )
                )
            except AnnotationFileError as exc:
                errors.append(str(exc))
    return records, errors


def parse_csv(file: InboxFile, ctx: _Context) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of the filled-in CSV (one row per assignment; unanswered rows are skipped)."""
    try:
        text = file.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}: not UTF-8 ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in ("task_id", "annotator_id") if c not in header]
    if missing:
        raise AnnotationFileError(f"annotation file {file.name!r}, header: missing column(s) {missing}")
    if not any(c in header for c in (*SINGLE_FIELDS, *PAIR_FIELDS, *FILL_FIELDS)):
        raise AnnotationFileError(
            f"annotation file {file.name!r}, header: no answer column ({ANSWER_COLUMNS})"
        )
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    try:
        for row in reader:
            record = f"line {reader.line_num}"
            if None in row:
                errors.append(f"{_where(file.name, record)}: more cells than header columns")
                continue
            answers = {c: row.get(c) for c in (*ANSWER_COLUMNS, *FILL_FIELDS, "simulated") if c in row}
            if not any((answers.get(c) or "").strip() for c in (*SINGLE_FIELDS, *PAIR_FIELDS, *FILL_FIELDS)):
                continue  # an assignment not answered (yet): not a rating
            try:
                records.append(
                    _record(ctx, file.name, record, row.get("task_id"), row.get("annotator_id"), answers)
                )
            except AnnotationFileError as exc:
                errors.append(str(exc))
    except csv.Error as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}, line {reader.line_num}: {exc}") from None
    return records, errors


@dataclass
class ImportResult:
    annotations: pd.DataFrame
    imports: pd.DataFrame
    to_archive: list[InboxFile] = field(default_factory=list)

    @property
    def rejected(self) -> pd.DataFrame:
        return self.imports[self.imports["status"] != "accepted"]


def _parse(file: InboxFile, ctx: _Context) -> list[dict[str, Any]]:
    if file.format == "unknown":
        raise AnnotationFileError(
            f"annotation file {file.name!r}: unsupported format "
            "(expected a Label Studio export .json or a .csv)"
        )
    records, errors = (parse_label_studio if file.format == "label_studio_json" else parse_csv)(file, ctx)
    if errors:
        more = f" (and {len(errors) - 1} more invalid record(s))" if len(errors) > 1 else ""
        raise AnnotationFileError(errors[0] + more, len(errors), len(records) + len(errors))
    seen: dict[tuple[str, str], str] = {}
    for r in records:
        key = (r["task_id"], r["annotator_id"])
        if key in seen:
            raise AnnotationFileError(
                f"{_where(file.name, r['record'], 'annotator_id')}: task {key[0]!r} rated twice by "
                f"{key[1]!r} in this file (also {seen[key]})",
                1,
                len(records),
            )
        seen[key] = r["record"]
    return records


def import_annotations(
    inbox: Sequence[InboxFile],
    previous: pd.DataFrame,
    archived: Callable[[str], bytes | None],
    sample: pd.DataFrame,
    keypoints: pd.DataFrame,
    error_categories: Sequence[str],
    *,
    imported_at: str,
) -> ImportResult:
    """Rebuild ``human_annotations`` from every accepted file, plus what is new in the inbox.

    ``previous`` is the last ``annotation_imports`` log; ``archived(sha256)`` returns the bytes
    of a file accepted earlier (kept by the caller under the data folder, so clearing the inbox
    loses nothing). New inbox files are taken in name order; a (name, sha256) already logged is
    not looked at again.
    """
    ctx = _context(sample, keypoints, error_categories)
    log: list[dict[str, Any]] = previous[IMPORT_COLUMNS].to_dict("records") if len(previous) else []
    accepted: list[dict[str, Any]] = []
    owner: dict[tuple[str, str], str] = {}
    for entry in log:
        if entry["status"] != "accepted":
            continue
        data = archived(entry["sha256"])
        try:
            if data is None:
                raise AnnotationFileError(f"annotation file {entry['file']!r}: its archived copy is missing")
            records = _parse(InboxFile(entry["file"], data), ctx)
        except AnnotationFileError as exc:
            entry.update(
                status="stale", accepted=0, error=f"no longer imports against the current sample: {exc}"
            )
            continue
        for r in records:
            r.update(
                source_file=entry["file"], source_sha256=entry["sha256"], imported_at=entry["imported_at"]
            )
            owner[(r["task_id"], r["annotator_id"])] = entry["file"]
        accepted.extend(records)
    logged = {(e["file"], e["sha256"]) for e in log}
    by_sha = {e["sha256"]: e for e in log if e["status"] == "accepted"}
    to_archive: list[InboxFile] = []
    for file in sorted(inbox, key=lambda f: f.name):
        if (file.name, file.sha256) in logged:
            continue
        entry = {
            "file": file.name,
            "sha256": file.sha256,
            "format": file.format,
            "records": 0,
            "accepted": 0,
            "rejected": 0,
            "status": "rejected",
            "error": None,
            "imported_at": imported_at,
        }
        log.append(entry)
        logged.add((file.name, file.sha256))
        if file.sha256 in by_sha:
            entry.update(
                status="duplicate",
                error=f"annotation file {file.name!r}: same content (sha256 {file.sha256[:12]}...) as "
                f"{by_sha[file.sha256]['file']!r}, already imported; nothing imported from it",
            )
            continue
        try:
            records = _parse(file, ctx)
        except AnnotationFileError as exc:
            entry.update(error=str(exc), rejected=exc.rejected, records=exc.records)
            continue
        clash = next((r for r in records if (r["task_id"], r["annotator_id"]) in owner), None)
        if clash is not None:
            entry.update(
                records=len(records),
                rejected=sum((r["task_id"], r["annotator_id"]) in owner for r in records),
                error=f"{_where(file.name, clash['record'], 'annotator_id')}: the rating of task "
                f"{clash['task_id']!r} by {clash['annotator_id']!r} was already imported from "
                f"{owner[(clash['task_id'], clash['annotator_id'])]!r}; export only new annotations",
            )
            continue
        for r in records:
            r.update(source_file=file.name, source_sha256=file.sha256, imported_at=imported_at)
            owner[(r["task_id"], r["annotator_id"])] = file.name
        accepted.extend(records)
        entry.update(status="accepted", records=len(records), accepted=len(records))
        by_sha[file.sha256] = entry
        to_archive.append(file)
    annotations = pd.DataFrame(accepted, columns=[c for c in ANNOTATION_COLUMNS if c != "annotation_id"])
    annotations.insert(
        0,
        "annotation_id",
        [
            hashlib.sha256(f"{t}|{a}".encode()).hexdigest()[:16]
            for t, a in zip(annotations["task_id"], annotations["annotator_id"], strict=True)
        ],
    )
    # attention_passed: per annotator, every attention item they answered was right (None: they had none).
    checks = annotations[annotations["kind"] == "attention"]
    passed = checks.groupby("annotator_id")["attention_correct"].all().to_dict() if len(checks) else {}
    annotations["attention_passed"] = [passed.get(a) for a in annotations["annotator_id"]]
    annotations = annotations.sort_values(["task_id", "annotator_id"]).reset_index(drop=True)
    imports = pd.DataFrame(log, columns=IMPORT_COLUMNS)
    return ImportResult(annotations=annotations, imports=imports, to_archive=to_archive)


def import_status(imports: pd.DataFrame, annotations: pd.DataFrame, inbox: str) -> tuple[bool, str]:
    """``(passed, description)`` of the import's check: WARN while awaiting annotations or when a
    file was refused; simulated (demo) ratings are named as such."""
    refused = imports[imports["status"] != "accepted"] if len(imports) else imports
    if imports.empty:
        passed, description = False, f"awaiting annotations: the inbox {inbox} holds no annotation file yet"
    elif len(refused):
        passed = False
        description = f"{len(refused)} of {len(imports)} file(s) not imported: {refused['error'].iloc[0]}"
    else:
        passed, description = True, f"{len(annotations)} ratings from {len(imports)} file(s)"
    if len(annotations) and bool(annotations["simulated"].any()):
        description += " (SIMULATED demo annotations)"
    return passed, description
