"""A small crafted world for the annotation round-trip tests: items, responses, scores, languages."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from clcg_pipeline.config import HumanValidationSettings
from clcg_pipeline.validation.human._annotation_sample import build_annotation_sample
from clcg_pipeline.validation.human._keypoints import KEYPOINT_COLUMNS, checklist_items, split_facts

LANGS = {"en": 5, "pt": 4, "sw": 2, "ht": 1}
MODELS = ("model-a", "model-b")
LEVELS = ("L0", "L1", "L2", "L3", "L4", "L5", "H")


def world(seed: int = 0, docs: int = 4, models: tuple[str, ...] = MODELS) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    items = []
    for d in range(docs):
        for level in LEVELS:
            for n in (1, 2):
                items.append(
                    {
                        "item_id": f"d{d}-{level}-{n}",
                        "doc_id": f"d{d}",
                        "item_source": "human" if level == "H" else "llm",
                        "level": level,
                        "question": f"Question {n} about d{d} at {level}?",
                        "gold_answer": "Yes"
                        if level == "L0"
                        else f"The mill closed in 19{d}{n}, and the workers moved to the port town",
                        "target_pids": ["p01", "p02"],
                    }
                )
    items_f = pd.DataFrame(items)
    preds, scores = [], []
    for model in models:
        for lang, joshi in LANGS.items():
            for it in items:
                # Higher-resource languages score better on average, with noise.
                f1 = float(np.clip(rng.normal(0.25 + 0.12 * joshi, 0.3), 0, 1))
                key = {
                    "model": model,
                    "language": lang,
                    "doc_id": it["doc_id"],
                    "item_id": it["item_id"],
                    "rep": 0,
                }
                preds.append(
                    {**key, "context_scope": "full_body", "answer": f"{lang} answer {f1:.2f}", "status": "ok"}
                )
                preds.append({**key, "context_scope": "closed_book", "answer": "x", "status": "ok"})
                scores.append({**key, "context_scope": "full_body", "token_f1": f1})
                scores.append({**key, "context_scope": "closed_book", "token_f1": 0.0})
    # One unparseable response, never sampled.
    preds[0]["status"] = "unparseable"
    languages = pd.DataFrame([{"iso": k, "joshi_class": v} for k, v in LANGS.items()])
    return {
        "predictions": pd.DataFrame(preds),
        "scores": pd.DataFrame(scores),
        "items": items_f,
        "languages": languages,
    }


def settings(**changes: object) -> HumanValidationSettings:
    base = {"responses": 60, "pairs": 12, "seed": 7, "keypoint_writer": None}
    return HumanValidationSettings(**{**base, **changes})


def small_sample() -> pd.DataFrame:
    """The exchange tests' annotation sample: 24 responses, 6 pairs, their attention checks."""
    w = world()
    return build_annotation_sample(
        w["predictions"],
        w["scores"],
        w["items"],
        w["languages"],
        settings(responses=24, pairs=6),
        models=MODELS,
    ).sample


def checklist_keypoints(sample: pd.DataFrame) -> pd.DataFrame:
    """A checklist for every multi-fact gold answer of ``sample`` (k1, k2, ...)."""
    rows = [
        {
            "item_id": r["item_id"],
            "keypoint_id": f"k{n}",
            "text": fact,
            "writer": "w",
            "call_id": "c",
            "prompt_version": "keypoints-v1",
            "template_hash": "h",
        }
        for r in checklist_items(sample).to_dict("records")
        for n, fact in enumerate(split_facts(r["gold_answer"]), start=1)
    ]
    return pd.DataFrame(rows, columns=KEYPOINT_COLUMNS)


# --- Label Studio exports as Label Studio 1.x writes them (issue 19) ---------------------------
# The JSON export is the tasks as stored; JSON-MIN and CSV are what its converter
# (label_studio_sdk.converter: Converter.annotation_result_from_task, prettify_result,
# convert_to_json_min, exports/csv2.py) makes of them: one flat record per annotation.

#: The labelling configs' control tags (export.label_config_*), as the converter's schema names them.
CONTROL_TAGS = {
    "adequacy": "Rating",
    "confidence": "Rating",
    "keypoints": "Choices",
    "question_valid": "Choices",
    "equivalence": "Choices",
    "attribution": "Choices",
    "consistency": "Choices",
    "primary_error_category": "Choices",
    "preference": "Choices",
    "comment": "TextArea",
}
_RESULT_TYPE = {
    "Rating": ("rating", "rating"),
    "Choices": ("choices", "choices"),
    "TextArea": ("textarea", "text"),
}


def ls_result(name: str, value: object, *, to: str = "response") -> dict:
    """One ``result[]`` entry of a JSON export for control ``name`` (answer ``value``)."""
    kind, key = _RESULT_TYPE[CONTROL_TAGS[name]]
    if kind == "rating":
        payload: object = value
    elif name == "keypoints":
        payload = list(value)  # type: ignore[call-overload]
    else:
        payload = [value]
    return {
        "id": hashlib.sha256(f"{name}|{value}".encode()).hexdigest()[:10],
        "from_name": name,
        "to_name": to,
        "type": kind,
        "origin": "manual",
        "value": {key: payload},
    }


def ls_annotation(
    annotation_id: int,
    user: int | dict,
    answers: dict,
    *,
    updated_at: str = "2026-03-01T10:00:00.000000Z",
    lead_time: float = 31.5,
    to: str = "response",
) -> dict:
    """One annotation of a JSON export (``answers``: control name -> answer; keypoints a list)."""
    result = [ls_result(n, v, to=to) for n, v in answers.items() if not (n == "keypoints" and not v)]
    return {
        "id": annotation_id,
        "completed_by": user,
        "result": result,
        "was_cancelled": False,
        "ground_truth": False,
        "created_at": "2026-03-01T09:59:00.000000Z",
        "updated_at": updated_at,
        "draft_created_at": None,
        "lead_time": lead_time,
        "prediction": {},
        "result_count": len(result),
        "unique_id": f"00000000-0000-4000-8000-{annotation_id:012d}",
        "import_id": None,
        "last_action": None,
        "bulk_created": False,
        "task": annotation_id // 100,
        "project": 3,
        "updated_by": user if isinstance(user, int) else user["id"],
        "parent_prediction": None,
        "parent_annotation": None,
        "last_created_by": None,
    }


def ls_task(inner_id: int, exported: dict, annotations: list[dict]) -> dict:
    """A task of a JSON export: the exported task (``{"data": ...}``) with its annotations."""
    return {
        "id": 1000 + inner_id,
        "annotations": annotations,
        "file_upload": "f3a1-label_studio_single_tasks.json",
        "drafts": [],
        "predictions": [],
        "data": exported["data"],
        "meta": {},
        "created_at": "2026-02-20T08:00:00.000000Z",
        "updated_at": "2026-03-01T10:00:00.000000Z",
        "inner_id": inner_id,
        "total_annotations": len(annotations),
        "cancelled_annotations": 0,
        "total_predictions": 0,
        "comment_count": 0,
        "unresolved_comment_count": 0,
        "last_comment_updated_at": None,
        "project": 3,
        "updated_by": None,
        "comment_authors": [],
    }


def _prettified(values: list[dict], tag: str) -> object:
    # A lone choice or text becomes the bare string; anything else stays a list of values, and a
    # multi-choice answer the one ``{"choices": [...]}`` value.
    if tag in ("Choices", "TextArea"):
        key = "choices" if tag == "Choices" else "text"
        if len(values) == 1 and len(values[0][key]) == 1:
            return values[0][key][0]
        return values[0] if len(values) == 1 else values
    return values


def json_min(export: list[dict], *, with_user_details: bool = False) -> list[dict]:
    """The JSON-MIN export of ``export`` (a JSON export): one object per annotation, newest first."""
    out = []
    for task in export:
        kept = [a for a in task["annotations"] if not a.get("was_cancelled")]
        if not task["annotations"]:
            kept = [{}]  # a task nobody annotated: one record, annotator and annotation id null
        for ann in sorted(kept, key=lambda a: a.get("created_at", ""), reverse=True):
            record = {**task["data"], "id": task["id"]}
            outputs: dict[str, list[dict]] = {}
            for r in ann.get("result", []):
                outputs.setdefault(r["from_name"], []).append(dict(r["value"]))
            for name, values in outputs.items():
                record[name] = _prettified(values, CONTROL_TAGS[name])
            user = ann.get("completed_by", {})
            if with_user_details and isinstance(user, int):
                user = {"id": user, "email": f"user{user}@lab.invalid", "first_name": "", "last_name": ""}
            record["annotator"] = user.get("email") if isinstance(user, dict) else user
            record.update(
                annotation_id=ann.get("id"),
                created_at=ann.get("created_at"),
                updated_at=ann.get("updated_at"),
                lead_time=ann.get("lead_time"),
            )
            out.append(record)
    return out


def ls_csv(export: list[dict], *, with_user_details: bool = False) -> bytes:
    """The CSV export of ``export``: JSON-MIN's records as rows, columns sorted, non-text as JSON."""
    import csv
    import io
    import json

    rows = []
    for record in json_min(export, with_user_details=with_user_details):
        row = {}
        for key, value in record.items():
            row[key] = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
        row["annotator"] = None if record["annotator"] is None else str(record["annotator"])
        rows.append(row)
    columns = sorted(
        {k for r in rows for k in r} | {"annotator", "annotation_id", "created_at", "updated_at"}
    )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def control_answers(sample: pd.DataFrame, keypoints: pd.DataFrame, task_id: str, n: int) -> dict:
    """Deterministic, varied answers (control name -> answer) to one task of ``sample``: every
    single task's checklist ticked 0, 1 or more times, a comment on some."""
    from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy

    row = sample.set_index("task_id").loc[task_id]
    if row["kind"] == "pair":
        return {"preference": ("A", "B", "none")[n % 3], "confidence": 1 + n % 5}
    checklist = (
        list(keypoints.loc[keypoints["item_id"] == row["item_id"], "keypoint_id"])
        if row["kind"] == "single"
        else []
    )
    categories = load_taxonomy().collapsed_labels
    answers = {
        "question_valid": ("yes", "no")[n % 2],
        "adequacy": 1 + n % 5,
        # No tick is "not answered": finding no fact is the explicit "none" (issue 19).
        "keypoints": (checklist[: n % (len(checklist) + 1)] or ["none"]) if checklist else [],
        "equivalence": ("equivalent", "partially_equivalent", "not_equivalent")[n % 3],
        "attribution": ("supported", "partially_supported", "not_supported")[(n + 1) % 3],
        "consistency": ("consistent", "inconsistent")[n % 2],
        "primary_error_category": categories[n % len(categories)],
    }
    if n % 3 == 0:
        answers["comment"] = f"[{n}] looks fine, mostly"
    return answers


def stored_values(answers: dict) -> dict:
    """``answers`` (control names) as ``human_annotations`` stores them: no tick is not answered
    (None), the checklist's "none" no fact found (``[]``)."""
    out = {k: v for k, v in answers.items() if k != "keypoints"}
    if "keypoints" in answers:
        ticks = list(answers["keypoints"])
        out["keypoint_hits"] = None if not ticks else ([] if ticks == ["none"] else ticks)
    return out
