"""One rating read from an annotation file, validated against the sample, checklists and rubric.

Shared by every import format (the filled CSV and Label Studio's JSON, JSON-MIN and CSV
exports), so a rating means the same whichever way it came. Values are checked against the
rubric domains of ``_qc.RUBRIC`` (the QC funnel's), so import and QC agree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.validation.human._annotators import AnnotatorMap
from clcg_pipeline.validation.human._exchange_format import (
    ATTRIBUTION,
    CONSISTENCY,
    EQUIVALENCE,
    FILL_FIELDS,
    FILL_MAX,
    KEYPOINTS_NONE,
    NOT_APPLICABLE,
    NOT_APPLICABLE_FIELDS,
    PAIR_FIELDS,
    PREFERENCE,
    QUESTION_VALID,
    SINGLE_FIELDS,
    AnnotationFileError,
    RatingError,
    cell_text,
)
from clcg_pipeline.validation.human._keypoints import keypoints_by_item
from clcg_pipeline.validation.human._qc import missing_required, normalize_value

#: The labels annotators read, to their stored value: Label Studio stores the ``alias`` (the
#: value), but a Label Studio that ignores it, or a hand-filled CSV, gives the label.
_LABELS: dict[str, dict[str, str]] = {
    name: {label.strip().lower(): value for value, label in options}
    for name, options in (
        ("question_valid", QUESTION_VALID),
        ("equivalence", EQUIVALENCE),
        ("attribution", ATTRIBUTION),
        ("consistency", CONSISTENCY),
        ("preference", PREFERENCE),
    )
}
_NA_SPELLINGS = frozenset({NOT_APPLICABLE[0], NOT_APPLICABLE[1].strip().lower(), "not applicable", "n/a"})
_NONE_SPELLINGS = frozenset({KEYPOINTS_NONE[0], KEYPOINTS_NONE[1].strip().lower()})


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


@dataclass
class Context:
    """What validating a record needs: the tasks, their checklists, the error categories, and who
    the Label Studio users are."""

    tasks: dict[str, dict[str, Any]]
    checklists: dict[str, list[tuple[str, str]]]
    error_categories: frozenset[str]
    annotators: AnnotatorMap = field(default_factory=AnnotatorMap)


def context(
    sample: pd.DataFrame,
    keypoints: pd.DataFrame,
    error_categories: Sequence[str],
    annotators: AnnotatorMap | None = None,
) -> Context:
    tasks = {str(r["task_id"]): r for r in sample.to_dict("records")}
    return Context(
        tasks, keypoints_by_item(keypoints), frozenset(error_categories), annotators or AnnotatorMap()
    )


def design_annotators(sample: pd.DataFrame) -> set[str]:
    """The annotator ids of the design (every task's ``annotators``)."""
    if not len(sample) or "annotators" not in sample.columns:
        return set()
    return {str(a) for anns in sample["annotators"] for a in anns}


def where(file: str, record: str, fld: str | None = None) -> str:
    return f"annotation file {file!r}, {record}" + (f", field {fld!r}" if fld else "")


def rating(
    ctx: Context, file: str, record: str, task_id: Any, annotator: Any, answers: Mapping[str, Any]
) -> dict[str, Any]:
    """One validated rating. A record that is not a rating of this sample (no or an unknown task,
    no annotator) raises AnnotationFileError: the file is not this project's export. A rating whose
    answers contradict themselves or the codebook comes back excluded (``excluded_reason``), so the
    rest of its file imports (issue 36)."""
    task_id = cell_text(task_id).strip()
    if not task_id:
        raise AnnotationFileError(f"{where(file, record, 'task_id')}: missing")
    task = ctx.tasks.get(task_id)
    if task is None:
        raise AnnotationFileError(
            f"{where(file, record, 'task_id')}: unknown task {task_id!r} (not in the sample)"
        )
    annotator_id = cell_text(annotator).strip()
    if not annotator_id:
        raise AnnotationFileError(f"{where(file, record, 'annotator_id')}: missing")
    out: dict[str, Any] = {"task_id": task_id, "annotator_id": annotator_id, "kind": str(task["kind"])}
    out["record"] = record
    try:
        out.update(_answers(ctx, file, record, task, answers))
    except RatingError as exc:
        out.update(_excluded(exc, answers))
    return out


def _excluded(error: RatingError, answers: Mapping[str, Any]) -> dict[str, Any]:
    """An excluded rating: no answer kept, its reason, and what it said (``raw_result``) so that an
    unchanged re-export is skipped and a corrected one is a revision."""
    said = {k: v for k, v in answers.items() if k != "seconds"}
    return {
        "excluded_reason": error.reason,
        "excluded_message": str(error),
        "raw_result": json.dumps(said, sort_keys=True, default=str),
        "keypoint_hits": None,
        "seconds": None,
        "comment": cell_text(answers.get("comment")).strip() or None,
        "simulated": _simulated(answers.get("simulated")),
        "attention_correct": None,
    }


def _simulated(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes") if value not in (None, "") else False


def _answers(
    ctx: Context, file: str, record: str, task: Mapping[str, Any], answers: Mapping[str, Any]
) -> dict[str, Any]:
    """A rating's answers, checked against the rubric; RatingError for a bad one."""
    kind = str(task["kind"])
    allowed = PAIR_FIELDS if kind == "pair" else (FILL_FIELDS if kind == "fill" else SINGLE_FIELDS)
    out: dict[str, Any] = {}
    for name, raw in answers.items():
        if name in ("seconds", "comment", "simulated"):
            continue
        present = raw not in (None, "", []) and not (isinstance(raw, float) and math.isnan(raw))
        if present and name not in allowed:
            raise _bad(file, record, name, f"does not apply to a {kind} task", "not_asked")
    for name in allowed:
        if name == "keypoint_hits":
            continue
        out[name] = _field_value(ctx, file, record, kind, name, answers.get(name))
    out["fill_total"] = sum(out[d] for d in FILL_FIELDS) if kind == "fill" else None
    if kind != "pair":
        checklist = (
            [kid for kid, _ in ctx.checklists.get(str(task["item_id"]), [])] if kind == "single" else []
        )
        out["keypoint_hits"] = keypoint_hits(file, record, answers.get("keypoint_hits"), checklist)
        hits = out["keypoint_hits"]
        out["keypoint_recall"] = len(hits) / len(checklist) if checklist and hits is not None else None
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
    missing = missing_required(kind, out)
    if missing:
        raise _bad(file, record, missing[0], "missing (a required answer)", "missing_required")
    out["seconds"] = _seconds(file, record, answers.get("seconds"))
    out["comment"] = cell_text(answers.get("comment")).strip() or None
    out["simulated"] = _simulated(answers.get("simulated"))
    if kind == "attention":
        given = out.get(str(task["attention_field"]))
        out["attention_correct"] = given is not None and str(given) == str(task["attention_expected"])
    else:
        out["attention_correct"] = None
    return out


def _seconds(file: str, record: str, seconds: Any) -> float | None:
    """The time spent, a non-negative number; None when not given."""
    if seconds in (None, "") or (isinstance(seconds, float) and math.isnan(seconds)):
        return None
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise _bad(file, record, "seconds", f"{seconds!r} is not a duration", "bad_duration")
    return value


def _bad(file: str, record: str, name: str, why: str, code: str = "out_of_scale") -> RatingError:
    """A RatingError naming file, record and field, its stored reason without the file."""
    return RatingError(f"{where(file, record, name)}: {why}", code, f"field {name!r}: {why}")


def _field_value(ctx: Context, file: str, record: str, kind: str, name: str, raw: Any) -> Any:
    """One rubric answer as its canonical value (a label read as its value); ``not_applicable``
    is missing on an attention check and refused elsewhere."""
    if kind == "fill":
        return _fill_value(file, record, name, raw)
    if isinstance(raw, str):
        key = raw.strip().lower()
        if name in NOT_APPLICABLE_FIELDS and key in _NA_SPELLINGS:
            if kind == "attention":
                return None
            raise _bad(file, record, name, f"{raw!r} is only an answer of an attention check")
        raw = _LABELS.get(name, {}).get(key, raw)
    value, why = normalize_value(name, raw)
    if why:
        raise _bad(file, record, name, why)
    if name == "primary_error_category" and value is not None and value not in ctx.error_categories:
        raise _bad(file, record, name, f"{raw!r} is not one of {sorted(ctx.error_categories)}")
    return value


def keypoint_hits(file: str, record: str, raw: Any, checklist: list[str]) -> list[str] | None:
    """The checklist facts ticked, in checklist order: None when not answered (no tick, an empty
    cell), ``[]`` for the explicit "none" (recall 0). ``raw``: a list (Label Studio) or a cell
    (``k1|k3``; ``;`` and ``,`` are read too)."""
    if _missing(raw) or (isinstance(raw, list) and not raw):
        return None
    ticks = raw if isinstance(raw, list) else str(raw).replace("|", ";").replace(",", ";").split(";")
    ticks = [str(t).strip() for t in ticks if str(t).strip()]
    if not ticks:
        return None
    said_none = [t for t in ticks if t.lower() in _NONE_SPELLINGS]
    if said_none and len(said_none) < len(ticks):
        raise _bad(
            file, record, "keypoint_hits", f"{ticks} ticks {KEYPOINTS_NONE[0]!r} and a fact", "contradiction"
        )
    if said_none:
        if not checklist:
            why = f"{KEYPOINTS_NONE[0]!r}, but this task has no checklist"
            raise _bad(file, record, "keypoint_hits", why, "not_asked")
        return []
    bad = [h for h in ticks if h not in checklist]
    if bad:
        raise _bad(file, record, "keypoint_hits", f"{bad} not in this task's checklist {checklist}")
    return sorted(set(ticks), key=checklist.index)


def _fill_value(file: str, record: str, name: str, raw: Any) -> int:
    """A fill dimension: a whole number 0-20, required (the total needs all five)."""
    if (
        raw is None
        or (isinstance(raw, str) and not raw.strip())
        or (isinstance(raw, float) and math.isnan(raw))
    ):
        raise _bad(file, record, name, "missing (all five fill dimensions are required)", "missing_required")
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise _bad(file, record, name, f"{name}={raw!r} is not a number") from None
    if isinstance(raw, bool) or not number.is_integer() or not 0 <= number <= FILL_MAX:
        raise _bad(file, record, name, f"{name}={raw!r} is outside 0..{FILL_MAX} (whole numbers)")
    return int(number)
