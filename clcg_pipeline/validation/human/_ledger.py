"""The import's rule: which ratings of a file are new, the same again, revised or conflicting.

Label Studio exports whole tasks with all their annotations, and teams export the whole project
again as annotations arrive, so the same rating comes back many times. A rating is known by its
task and annotator, and (Label Studio) its annotation id. Against the ratings imported so far,
file by file in import order, a rating of a file is:

- **imported** when that annotator has no rating of that task yet (revision 1);
- **skipped** when it is the one imported: same annotation id, same result (``RESULT_FIELDS``;
  the time spent may differ, Label Studio adds to it when an annotation is reopened);
- **revised** when Label Studio changed it since: same annotation id, another result. The new
  revision (n + 1) is the current one, the earlier ones stay in ``human_annotation_revisions``;
  unless Label Studio dates it (``updated_at``) before the current one: an older export, refused;
- **excluded** (issue 36) when it is new or a revision but contradicts itself or the codebook
  (``excluded_reason``, ``_ratings.py``): kept as a revision like any other, but left out of
  ``human_annotations`` (no statistic sees it). Whatever later replaces it (the annotation
  edited, or deleted and made again; a CSV row filled again) is its revision;
- **refused** otherwise: another annotation of the same task by the same annotator, or a filled
  CSV row with other values (a CSV row has no annotation id to tell a correction from a second
  rating). One refused rating refuses the file whole, so a refused file changes nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.validation.human._exchange_format import (
    ANNOTATION_COLUMNS,
    RESULT_FIELDS,
    REVISION_COLUMNS,
)
from clcg_pipeline.validation.human._ratings import where

Key = tuple[str, str]


@dataclass
class Ledger:
    """The ratings imported so far: the current revision of each, and every revision in order."""

    current: dict[Key, dict[str, Any]] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Verdict:
    """What one file's ratings would do to the ledger."""

    new: list[dict[str, Any]] = field(default_factory=list)
    imported: int = 0
    skipped: int = 0
    revised: int = 0
    excluded: int = 0
    conflicts: list[str] = field(default_factory=list)
    #: The excluded ratings' messages (file, record, field and why), in file order.
    exclusions: list[str] = field(default_factory=list)

    def error(self) -> str:
        more = f" (and {len(self.conflicts) - 1} more refused rating(s))" if len(self.conflicts) > 1 else ""
        return self.conflicts[0] + more


def _norm(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def result_of(record: dict[str, Any]) -> tuple[Any, ...]:
    """What a rating says, comparable between two imports of it (an excluded one: what it said)."""
    return (*(_norm(record.get(name)) for name in RESULT_FIELDS), record.get("raw_result"))


def excluded(record: dict[str, Any]) -> bool:
    return bool(record.get("excluded_reason"))


def _when(text: Any) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def _older(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Label Studio dates ``new`` before ``old`` (both dated, comparably)."""
    a, b = _when(new.get("ls_updated_at")), _when(old.get("ls_updated_at"))
    try:
        return a is not None and b is not None and a < b
    except TypeError:  # one with a time zone, one without: not comparable
        return False


def judge(ledger: Ledger, records: list[dict[str, Any]], file: str) -> Verdict:
    """Sort a file's (valid, within-file unique) ratings by the rule above."""
    verdict = Verdict()
    for r in records:
        key = (r["task_id"], r["annotator_id"])
        old = ledger.current.get(key)
        if old is None:
            verdict.new.append({**r, "revision": 1})
            _count(verdict, r, "imported")
            continue
        same_id = r.get("ls_annotation_id") == old.get("ls_annotation_id")
        if same_id and result_of(r) == result_of(old):
            verdict.skipped += 1
        elif not _older(r, old) and (excluded(old) or (same_id and r.get("ls_annotation_id") is not None)):
            # An excluded rating counts for nothing: whatever replaces it (the annotation edited,
            # deleted and made again, a CSV row filled again) is its correction.
            verdict.new.append({**r, "revision": int(old["revision"]) + 1})
            _count(verdict, r, "revised")
        else:
            verdict.conflicts.append(_conflict(file, r, old, same_id))
    return verdict


def _count(verdict: Verdict, record: dict[str, Any], as_: str) -> None:
    """Count a new rating or revision as ``as_``, or as excluded (with its message)."""
    if excluded(record):
        verdict.excluded += 1
        verdict.exclusions.append(str(record.get("excluded_message") or record["excluded_reason"]))
    else:
        setattr(verdict, as_, getattr(verdict, as_) + 1)


def _conflict(file: str, new: dict[str, Any], old: dict[str, Any], same_id: bool) -> str:
    head = (
        f"{where(file, new['record'], 'annotator_id')}: the rating of task {new['task_id']!r} by "
        f"{new['annotator_id']!r} was already imported from {old['source_file']!r}"
    )
    if same_id and new.get("ls_annotation_id") is not None:
        why = (
            f"; this file holds an older version of Label Studio annotation {new['ls_annotation_id']} "
            f"(updated {new['ls_updated_at']}, the imported one {old['ls_updated_at']}): export again"
        )
    elif new.get("ls_annotation_id") is None and old.get("ls_annotation_id") is None:
        why = (
            " with other values; a CSV row has no annotation id to tell a correction from a second "
            "rating, so it is refused (correct the rating in Label Studio, or leave the row out)"
        )
    else:
        why = (
            f" as annotation {old.get('ls_annotation_id') or '(a CSV row)'}, and this is another one "
            f"({new.get('ls_annotation_id') or 'a CSV row'}): an annotator rates a task once (delete "
            "the extra annotation in Label Studio and export again)"
        )
    return head + why + "; nothing imported from this file"


def apply(ledger: Ledger, verdict: Verdict, source: dict[str, Any]) -> None:
    """Add a file's new ratings and revisions (``source``: their file, sha256 and import time)."""
    for r in verdict.new:
        r.update(source)
        ledger.history.append(r)
        ledger.current[(r["task_id"], r["annotator_id"])] = r


def _with_ids(records: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=[c for c in columns if c != "annotation_id"])
    # Stable across revisions: the rating of a task by an annotator is one annotation.
    frame.insert(
        0,
        "annotation_id",
        [
            hashlib.sha256(f"{t}|{a}".encode()).hexdigest()[:16]
            for t, a in zip(frame["task_id"], frame["annotator_id"], strict=True)
        ],
    )
    return frame


def annotations_frame(ledger: Ledger) -> pd.DataFrame:
    """``human_annotations``: the current revision of every rating, with each annotator's
    attention verdict (every attention item they answered was right; None: they had none). A
    rating whose current revision is excluded is left out: no statistic reads it (issue 36)."""
    counted = [r for r in ledger.current.values() if not excluded(r)]
    annotations = _with_ids(counted, ANNOTATION_COLUMNS)
    passed = _passed(annotations)
    annotations["attention_passed"] = [passed.get(a) for a in annotations["annotator_id"]]
    return annotations.sort_values(["task_id", "annotator_id"]).reset_index(drop=True)


def _passed(annotations: pd.DataFrame) -> dict[str, bool]:
    checks = annotations[annotations["kind"] == "attention"]
    return checks.groupby("annotator_id")["attention_correct"].all().to_dict() if len(checks) else {}


def revisions_frame(ledger: Ledger, annotations: pd.DataFrame) -> pd.DataFrame:
    """``human_annotation_revisions``: every revision of every rating; ``current`` marks the one
    in ``human_annotations`` (whose attention verdict every revision carries)."""
    current = {id(r) for r in ledger.current.values()}
    rows = [{**r, "current": id(r) in current} for r in ledger.history]
    revisions = _with_ids(rows, REVISION_COLUMNS)
    revisions["excluded_reason"] = [r if isinstance(r, str) else None for r in revisions["excluded_reason"]]
    passed = dict(zip(annotations["annotator_id"], annotations["attention_passed"], strict=True))
    revisions["attention_passed"] = [passed.get(a) for a in revisions["annotator_id"]]
    return revisions.sort_values(["task_id", "annotator_id", "revision"]).reset_index(drop=True)
