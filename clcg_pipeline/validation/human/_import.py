"""Annotation exchange, import: annotators' answers read back (STUDY.md section 7).

Import: a Label Studio export JSON (tasks with ``annotations[].result[]``) or the CSV filled
in. A file is accepted whole or not at all: one invalid record rejects it with an error naming
the file, record and field (and how many more records are invalid), so a bad file never
half-lands. A file whose content was already imported (same sha256), or holding a rating of a
task by an annotator already imported, is refused naming the earlier file. Values are checked
against the rubric domains of ``_qc.RUBRIC`` (the QC funnel's), so import and QC agree.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.validation.human._exchange_format import (
    ANNOTATION_COLUMNS,
    ANSWER_COLUMNS,
    FILL_FIELDS,
    FILL_MAX,
    IMPORT_COLUMNS,
    PAIR_FIELDS,
    SINGLE_FIELDS,
    AnnotationFileError,
    InboxFile,
    cell_text,
)
from clcg_pipeline.validation.human._keypoints import keypoints_by_item
from clcg_pipeline.validation.human._qc import normalize_value


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
    task_id = cell_text(task_id).strip()
    if not task_id:
        raise AnnotationFileError(f"{_where(file, record, 'task_id')}: missing")
    task = ctx.tasks.get(task_id)
    if task is None:
        raise AnnotationFileError(
            f"{_where(file, record, 'task_id')}: unknown task {task_id!r} (not in the sample)"
        )
    annotator_id = cell_text(annotator).strip()
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
    out["comment"] = cell_text(answers.get("comment")).strip() or None
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
    accepted, owner = _reimported(log, archived, ctx)
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
        records = _new_records(file, entry, ctx, owner, by_sha)
        if records is None:
            continue
        for r in records:
            r.update(source_file=file.name, source_sha256=file.sha256, imported_at=imported_at)
            owner[(r["task_id"], r["annotator_id"])] = file.name
        accepted.extend(records)
        entry.update(status="accepted", records=len(records), accepted=len(records))
        by_sha[file.sha256] = entry
        to_archive.append(file)
    imports = pd.DataFrame(log, columns=IMPORT_COLUMNS)
    return ImportResult(annotations=_annotations_frame(accepted), imports=imports, to_archive=to_archive)


def _reimported(
    log: list[dict[str, Any]], archived: Callable[[str], bytes | None], ctx: _Context
) -> tuple[list[dict[str, Any]], dict[tuple[str, str], str]]:
    """The records of every file accepted before, read again from the archive against the current
    sample, and which file owns each (task, annotator); a file that no longer imports goes stale."""
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
    return accepted, owner


def _new_records(
    file: InboxFile,
    entry: dict[str, Any],
    ctx: _Context,
    owner: dict[tuple[str, str], str],
    by_sha: dict[str, dict[str, Any]],
) -> list[dict[str, Any]] | None:
    """A new inbox file's records, or None with ``entry`` saying why it is refused (a duplicate,
    an invalid record, or a rating already imported from another file)."""
    if file.sha256 in by_sha:
        entry.update(
            status="duplicate",
            error=f"annotation file {file.name!r}: same content (sha256 {file.sha256[:12]}...) as "
            f"{by_sha[file.sha256]['file']!r}, already imported; nothing imported from it",
        )
        return None
    try:
        records = _parse(file, ctx)
    except AnnotationFileError as exc:
        entry.update(error=str(exc), rejected=exc.rejected, records=exc.records)
        return None
    clash = next((r for r in records if (r["task_id"], r["annotator_id"]) in owner), None)
    if clash is not None:
        entry.update(
            records=len(records),
            rejected=sum((r["task_id"], r["annotator_id"]) in owner for r in records),
            error=f"{_where(file.name, clash['record'], 'annotator_id')}: the rating of task "
            f"{clash['task_id']!r} by {clash['annotator_id']!r} was already imported from "
            f"{owner[(clash['task_id'], clash['annotator_id'])]!r}; export only new annotations",
        )
        return None
    return records


def _annotations_frame(accepted: list[dict[str, Any]]) -> pd.DataFrame:
    """``human_annotations``: the accepted records with their ids and each annotator's attention verdict."""
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
    return annotations.sort_values(["task_id", "annotator_id"]).reset_index(drop=True)


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
