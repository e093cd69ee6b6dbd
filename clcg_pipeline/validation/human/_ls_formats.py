"""Label Studio's exports read back: JSON (the default), JSON-MIN and CSV; the format detected.

What Label Studio 1.x writes (its converter, ``label_studio_sdk.converter``):

- JSON: the tasks as stored, ``annotations[]`` each with ``id``, ``completed_by`` (the user id,
  or the user object when exported with the users' details), ``result[]`` one entry per control
  (``{"from_name", "type", "value": {"rating": 3}}``), ``lead_time``, ``updated_at``.
- JSON-MIN: one object per annotation: the task's ``data`` fields flattened, one key per control
  holding its "prettified" value (one choice or text as a string, several choices as
  ``{"choices": [...]}``, a rating as ``[{"rating": 3}]``, a number as ``[{"number": 12}]``), and
  ``id`` (the task), ``annotator``, ``annotation_id``, ``created_at``, ``updated_at``,
  ``lead_time``. Skipped annotations are left out; a task nobody annotated is one object with
  ``annotator`` and ``annotation_id`` null.
- CSV: JSON-MIN as rows (columns sorted); a value that is not text is written as JSON.

JSON-MIN and CSV name the annotator by e-mail when exported with the users' details, and the
e-mail is neither stored nor unique across instances: such a file is refused, naming the JSON
export (which carries the user id).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from clcg_pipeline.validation.human._annotators import ls_user_id
from clcg_pipeline.validation.human._exchange_format import (
    FILL_FIELDS,
    AnnotationFileError,
    InboxFile,
    cell_text,
)
from clcg_pipeline.validation.human._ratings import Context, rating, where

LS_JSON = "label_studio_json"
LS_JSON_MIN = "label_studio_json_min"
LS_CSV = "label_studio_csv"

#: The controls of the labelling configs (``_export.label_config_*``) and the shape of their value.
CONTROLS: dict[str, str] = {
    "adequacy": "rating",
    "confidence": "rating",
    "keypoints": "multiple",
    "question_valid": "choice",
    "equivalence": "choice",
    "attribution": "choice",
    "consistency": "choice",
    "primary_error_category": "choice",
    "preference": "choice",
    "comment": "text",
    **dict.fromkeys(FILL_FIELDS, "number"),
}
#: The task fields the exports put in ``data`` (``_export._ls_*``), flattened into JSON-MIN and CSV.
DATA_KEYS = frozenset(
    {"task_id", "question", "gold_answer", "response", "response_a", "response_b", "keypoint_prompt"}
    | {"keypoint_options", "error_category_prompt", "annotators", "previous_text", "next_text"}
    | {"passage", "equivalence_options", "attribution_options", "consistency_options"}
)
#: What the converter adds to every JSON-MIN object / CSV row besides data and controls.
META_KEYS = frozenset(
    {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "agreement", "history"}
)
_LS_RESULT_KEY = {"rating": "rating", "choices": "choices", "textarea": "text", "number": "number"}
_VALUE_KEY = {
    "rating": "rating",
    "number": "number",
    "choice": "choices",
    "multiple": "choices",
    "text": "text",
}


def json_format(payload: list[Any]) -> str:
    """JSON-MIN when the objects are flat annotations (``annotator``/``annotation_id``, no ``data``)."""
    first = next((x for x in payload if isinstance(x, dict)), None)
    if first is None:
        return LS_JSON
    flat = "data" not in first and "annotations" not in first
    return LS_JSON_MIN if flat and ("annotation_id" in first or "annotator" in first) else LS_JSON


def is_ls_csv(header: Sequence[str]) -> bool:
    """A Label Studio CSV export: its ``annotator`` and ``annotation_id`` columns, no ``annotator_id``."""
    return "annotator_id" not in header and {"annotator", "annotation_id"} <= set(header)


def _blank(value: Any) -> bool:
    return cell_text(value).strip() == ""


def _annotation_id(value: Any) -> str | None:
    """An annotation id as text (``17``, ``17.0`` and ``"17"`` alike); None when missing."""
    if _blank(value):
        return None
    number = ls_user_id(value)
    return str(number) if number is not None else cell_text(value).strip()


def _ls_answers(file: str, record: str, results: Any) -> dict[str, Any]:
    """The answers of a JSON annotation's ``result[]``."""
    if not isinstance(results, list):
        raise AnnotationFileError(f"{where(file, record, 'result')}: expected a list of results")
    answers: dict[str, Any] = {}
    for entry in results:
        if not isinstance(entry, dict):
            raise AnnotationFileError(f"{where(file, record, 'result')}: a result is not an object")
        name, kind, value = entry.get("from_name"), str(entry.get("type", "")).lower(), entry.get("value")
        if name not in CONTROLS:
            raise AnnotationFileError(
                f"{where(file, record, str(name))}: unknown control (the labelling config's names are "
                f"{sorted(CONTROLS)})"
            )
        key = _LS_RESULT_KEY.get(kind)
        if key is None or not isinstance(value, dict) or key not in value:
            raise AnnotationFileError(
                f"{where(file, record, name)}: expected a {kind or '?'} value, got {value!r}"
            )
        got = value[key]
        if name == "keypoints":
            if not isinstance(got, list):
                raise AnnotationFileError(f"{where(file, record, name)}: choices must be a list")
            answers["keypoint_hits"] = [str(g) for g in got]
        elif kind in ("choices", "textarea"):
            if not isinstance(got, list) or len(got) > 1:
                raise AnnotationFileError(f"{where(file, record, name)}: expected one value, got {got!r}")
            answers[name] = got[0] if got else None
        else:
            answers[name] = got
    return answers


def parse_json(file: InboxFile, ctx: Context) -> tuple[str, list[dict[str, Any]], list[str]]:
    """``(format, records, errors)`` of a Label Studio JSON or JSON-MIN export."""
    try:
        payload = json.loads(file.data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}: not valid JSON ({exc})") from None
    if not isinstance(payload, list):
        raise AnnotationFileError(
            f"annotation file {file.name!r}: expected a Label Studio export (a JSON list of tasks), "
            f"got a {type(payload).__name__}"
        )
    fmt = json_format(payload)
    if fmt == LS_JSON_MIN:
        return (fmt, *_parse_flat(file, ctx, ((f"record {n}", r) for n, r in enumerate(payload, start=1))))
    return (fmt, *_parse_tasks(file, ctx, payload))


def _parse_tasks(file: InboxFile, ctx: Context, payload: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of a Label Studio JSON export (tasks with ``annotations[].result[]``)."""
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    for t, task in enumerate(payload, start=1):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            errors.append(f"{where(file.name, f'task {t}', 'data')}: a task needs a 'data' object")
            continue
        annotations = task.get("annotations", [])
        if not isinstance(annotations, list):
            errors.append(f"{where(file.name, f'task {t}', 'annotations')}: expected a list")
            continue
        for a, ann in enumerate(annotations, start=1):
            record = f"task {t} (task_id {task['data'].get('task_id')!r}) annotation {a}"
            if not isinstance(ann, dict):
                errors.append(f"{where(file.name, record)}: not an object")
                continue
            if ann.get("was_cancelled"):
                continue  # skipped by the annotator in Label Studio: not a rating
            try:
                records.append(_task_rating(ctx, file.name, record, task["data"].get("task_id"), ann))
            except AnnotationFileError as exc:
                errors.append(str(exc))
    return records, errors


def _task_rating(
    ctx: Context, file: str, record: str, task_id: Any, ann: Mapping[str, Any]
) -> dict[str, Any]:
    user = ls_user_id(ann.get("completed_by"))
    if user is None:
        raise AnnotationFileError(
            f"{where(file, record, 'completed_by')}: {ann.get('completed_by')!r} is not a Label Studio "
            "user id"
        )
    simulated = str(ann.get("simulated", "")).strip().lower() in ("true", "1", "yes")
    answers = _ls_answers(file, record, ann.get("result"))
    answers.update(seconds=ann.get("lead_time"), simulated=ann.get("simulated"))
    out = rating(ctx, file, record, task_id, ctx.annotators.annotator(user, simulated=simulated), answers)
    out.update(ls_annotation_id=_annotation_id(ann.get("id")), ls_updated_at=_updated(ann.get("updated_at")))
    return out


def _updated(value: Any) -> str | None:
    return cell_text(value).strip() or None


def parse_ls_csv(file: InboxFile, ctx: Context, text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of a Label Studio CSV export (JSON-MIN as rows; non-text values written as JSON)."""
    reader = csv.DictReader(io.StringIO(text))
    rows = ((f"line {reader.line_num}", row) for row in reader)
    try:
        return _parse_flat(file, ctx, rows)
    except csv.Error as exc:
        raise AnnotationFileError(f"annotation file {file.name!r}, line {reader.line_num}: {exc}") from None


def _parse_flat(file: InboxFile, ctx: Context, rows: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of JSON-MIN objects or CSV rows, ``rows`` yielding ``(record name, row)``."""
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    for record, row in rows:
        if not isinstance(row, dict):
            errors.append(f"{where(file.name, record)}: not an object")
            continue
        try:
            got = _flat_rating(ctx, file.name, record, row)
        except AnnotationFileError as exc:
            errors.append(str(exc))
            continue
        if got is not None:
            records.append(got)
    return records, errors


def _flat_rating(ctx: Context, file: str, record: str, row: Mapping[str, Any]) -> dict[str, Any] | None:
    """One JSON-MIN object / CSV row as a rating; None for a task nobody annotated."""
    unknown = sorted(
        k for k in row if k not in CONTROLS and k not in DATA_KEYS and k not in META_KEYS
        and not str(k).endswith("_transcript")
    )  # fmt: skip
    if unknown:
        raise AnnotationFileError(
            f"{where(file, record, str(unknown[0]))}: unknown column (neither a task field of the export "
            f"nor a control of the labelling configs {sorted(CONTROLS)})"
        )
    if _blank(row.get("annotator")) and _blank(row.get("annotation_id")):
        return None
    annotator = row.get("annotator")
    user = ls_user_id(annotator)
    if user is None:
        why = (
            "an e-mail, not a user id (exported with the users' details)"
            if "@" in cell_text(annotator)
            else f"{annotator!r} is not a Label Studio user id"
        )
        raise AnnotationFileError(
            f"{where(file, record, 'annotator')}: {why}; export the project as JSON (Label Studio's "
            "default export, which carries the user id) instead"
        )
    annotation_id = _annotation_id(row.get("annotation_id"))
    if annotation_id is None:
        raise AnnotationFileError(
            f"{where(file, record, 'annotation_id')}: missing; export the project as JSON instead"
        )
    answers = {
        ("keypoint_hits" if name == "keypoints" else name): _pretty(file, record, name, row[name])
        for name in CONTROLS
        if name in row and not _blank(row[name])
    }
    answers["seconds"] = row.get("lead_time")
    out = rating(
        ctx, file, record, row.get("task_id"), ctx.annotators.annotator(user, simulated=False), answers
    )
    out.update(ls_annotation_id=annotation_id, ls_updated_at=_updated(row.get("updated_at")))
    return out


def _decoded(raw: Any) -> Any:
    """A CSV cell holding JSON (``[{"rating": 3}]``) decoded; anything else as it is."""
    if isinstance(raw, str) and raw.strip()[:1] in ("[", "{"):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _pretty(file: str, record: str, name: str, raw: Any) -> Any:
    """A control's prettified value (``prettify_result``) back to the answer it holds."""
    shape = CONTROLS[name]
    value = _decoded(raw)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]  # a rating or number: [{"rating": 3}]
    key = _VALUE_KEY[shape]
    inner = value.get(key) if isinstance(value, dict) else None
    if shape in ("rating", "number"):
        if inner is None:
            raise AnnotationFileError(
                f"{where(file, record, name)}: expected a {shape} value like [{{{key!r}: 3}}], got {raw!r}"
            )
        return inner
    if not isinstance(value, dict) or key not in value:
        # one choice or one text is written as the bare string (a comment stays as it was typed)
        text = cell_text(raw)
        return [text] if shape == "multiple" else text
    if not isinstance(inner, list):
        raise AnnotationFileError(f"{where(file, record, name)}: expected {{{key!r}: [...]}}, got {raw!r}")
    if shape == "multiple":
        return [str(v) for v in inner]
    if shape == "text":
        return "\n".join(str(v) for v in inner)
    if len(inner) > 1:
        raise AnnotationFileError(f"{where(file, record, name)}: expected one value, got {inner!r}")
    return inner[0] if inner else None
