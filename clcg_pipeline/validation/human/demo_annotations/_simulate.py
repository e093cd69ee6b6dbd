"""A seeded simulated-annotator model: plausible, noisy, SIMULATED answers to the demo's tasks.

Generated at run time from the annotation sample (and so from the exported tasks), because task
ids depend on the demo sample: shipped files would go stale the moment the demo reader, corpus
or sample settings change, whereas these always match. See README.md for the model.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.validation.human._annotation_sample import FILL_DIMENSIONS
from clcg_pipeline.validation.human._exchange_format import (
    ANSWER_COLUMNS,
    CSV_COLUMNS,
    FILL_CSV_COLUMNS,
    KEYPOINT_SEPARATOR,
    KEYPOINTS_NONE,
    NOT_APPLICABLE,
    NOT_APPLICABLE_FIELDS,
)
from clcg_pipeline.validation.human._export import _ls_fill, _ls_pair, _ls_single
from clcg_pipeline.validation.human._forms import forms_of
from clcg_pipeline.validation.human._keypoints import keypoints_by_item

SIMULATED_PREFIX = "SIMULATED-"
LS_SINGLE_FILE = f"{SIMULATED_PREFIX}label-studio-single-export.json"
LS_PAIR_FILE = f"{SIMULATED_PREFIX}label-studio-pair-export.json"
CSV_FILE = f"{SIMULATED_PREFIX}crowd-export.csv"
LS_FILL_FILE = f"{SIMULATED_PREFIX}label-studio-fill-export.json"
CSV_FILL_FILE = f"{SIMULATED_PREFIX}crowd-fill-export.csv"
_WORD = re.compile(r"\w+")


def _words(text: Any) -> set[str]:
    return {w.lower() for w in _WORD.findall(str(text or ""))}


def _coverage(fact: str, response: str) -> float:
    words = _words(fact)
    return len(words & _words(response)) / len(words) if words else 0.0


def simulate_annotations(sample: pd.DataFrame, keypoints: pd.DataFrame, *, seed: int) -> dict[str, bytes]:
    """File name -> bytes: a Label Studio export of each project (half the annotators) and the
    crowd CSV filled in (the other half). Every record carries ``simulated: true``.

    Paragraph-filling (``fill``) tasks are simulated apart (``simulate_fill``, own generator), so
    the single/pair files are the same with or without them."""
    fill = sample[sample["kind"] == "fill"] if len(sample) else sample
    sample = sample[sample["kind"] != "fill"] if len(sample) else sample
    rng = np.random.default_rng(seed)
    checklists = keypoints_by_item(keypoints)
    tasks = {r["task_id"]: r for r in sample.to_dict("records")}
    forms = forms_of(sample)
    annotators = sorted(forms["annotator_id"].unique())
    # Three planted misbehaviours, so the QC funnel has something to remove.
    fails_attention, contradictory, speeder = (annotators + [None] * 3)[:3]
    planted = (fails_attention, contradictory)
    severity = {a: rng.normal(0, 0.35) for a in annotators}
    pace = {a: float(np.exp(rng.normal(math.log(40), 0.3))) for a in annotators}
    in_ls = {a: i % 2 == 0 for i, a in enumerate(annotators)}

    ls_annotations: dict[str, list[dict[str, Any]]] = {t: [] for t in tasks}
    csv_rows: list[dict[str, Any]] = []
    for annotator, position, task_id in forms.itertuples(index=False):
        task = tasks[task_id]
        answers = (
            _pair_answers(task, rng)
            if task["kind"] == "pair"
            else _single_answers(annotator, task, checklists, severity, planted, rng)
        )
        seconds = pace[annotator] * float(np.exp(rng.normal(0, 0.3)))
        if annotator == speeder:
            seconds = float(rng.uniform(1.0, 3.0))
        if in_ls[annotator]:
            ls_annotations[task_id].append(_ls_result(annotator, position, task["kind"], answers, seconds))
        else:
            csv_rows.append(
                {
                    "annotator_id": annotator,
                    "position": position,
                    "task_id": task_id,
                    **{k: answers.get(k, "") for k in ANSWER_COLUMNS},
                    "keypoint_hits": KEYPOINT_SEPARATOR.join(answers.get("keypoint_hits", [])),
                    "seconds": f"{seconds:.1f}",
                    "simulated": "true",
                }
            )
    files = _simulated_files(tasks, checklists, ls_annotations, csv_rows)
    if len(fill):
        files.update(simulate_fill(fill, seed=seed))
    return files


def _single_answers(
    annotator: str,
    task: dict[str, Any],
    checklists: dict[str, list[tuple[str, str]]],
    severity: dict[str, float],
    planted: tuple[str | None, str | None],
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One annotator's answers on a single or attention task: adequacy follows Token-F1 and the
    checklist hits, shifted by their severity; ``planted`` = (fails attention, contradictory)."""
    fails_attention, contradictory = planted
    response = str(task["response"] or "")
    checklist = checklists.get(task["item_id"], []) if task["kind"] == "single" else []
    hits = [k for k, text in checklist if (_coverage(text, response) >= 0.5) != (rng.random() < 0.1)]
    quality = float(task["token_f1"]) if task["token_f1"] == task["token_f1"] else 0.0
    if checklist:
        quality = 0.6 * quality + 0.4 * len(hits) / len(checklist)
    adequacy = int(np.clip(round(1 + 4 * quality + severity[annotator] + rng.normal(0, 0.6)), 1, 5))
    equivalence = ("not_equivalent", "partially_equivalent", "equivalent")[
        int(np.clip((adequacy - 1) // 2 + (rng.random() < 0.1) * rng.choice([-1, 1]), 0, 2))
    ]
    attribution = ("not_supported", "partially_supported", "supported")[
        int(np.clip(round(2 * quality + rng.normal(0, 0.4)), 0, 2))
    ]
    answers: dict[str, Any] = {
        "question_valid": "yes" if rng.random() < 0.95 else "no",
        "adequacy": adequacy,
        # An annotator who finds none of the facts says so (an empty checklist is not answered).
        "keypoint_hits": hits or ([KEYPOINTS_NONE[0]] if checklist else []),
        "equivalence": equivalence,
        "attribution": attribution,
        "consistency": "consistent" if rng.random() < 0.95 else "inconsistent",
    }
    if task["kind"] == "attention":
        answers["adequacy"] = 4 if annotator == fails_attention else 1
        # The rubric does not apply to an instruction: its only option there.
        answers.update(dict.fromkeys(NOT_APPLICABLE_FIELDS, NOT_APPLICABLE[0]))
    elif annotator == contradictory and rng.random() < 0.8:
        answers.update(adequacy=5, equivalence="not_equivalent")
    if task["ask_error_category"]:
        not_stated = response.strip().rstrip(".").lower() == "not stated"
        answers["primary_error_category"] = (
            "no_answer" if not_stated
            else "correct" if adequacy >= 5
            else "partial_or_omission" if adequacy >= 3
            else "wrong_answer"
        )  # fmt: skip
    return answers


def _pair_answers(task: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """A preference that follows the Token-F1 gap (ties likely when the gap is small)."""
    f1_a, f1_b = float(task["token_f1_a"]), float(task["token_f1_b"])
    if abs(f1_a - f1_b) < 0.1 and rng.random() < 0.4:
        choice = "none"
    else:
        choice = "A" if rng.random() < 1 / (1 + math.exp(-6 * (f1_a - f1_b))) else "B"
    confidence = int(np.clip(round(2 + 4 * abs(f1_a - f1_b) + rng.normal(0, 0.7)), 1, 5))
    return {"preference": choice, "confidence": confidence}


def _simulated_files(
    tasks: dict[str, dict[str, Any]],
    checklists: dict[str, list[tuple[str, str]]],
    ls_annotations: dict[str, list[dict[str, Any]]],
    csv_rows: list[dict[str, Any]],
) -> dict[str, bytes]:
    """The Label Studio exports of both projects and the filled crowd CSV, as bytes."""
    files: dict[str, bytes] = {}
    for name, kinds in ((LS_SINGLE_FILE, ("single", "attention")), (LS_PAIR_FILE, ("pair",))):
        export = []
        for n, (task_id, task) in enumerate(sorted(tasks.items()), start=1):
            if task["kind"] not in kinds:
                continue
            item = checklists.get(task["item_id"], []) if task["kind"] == "single" else []
            data = _ls_pair(task) if task["kind"] == "pair" else _ls_single(task, item)
            export.append({"id": n, **data, "annotations": ls_annotations[task_id], "predictions": []})
        files[name] = (json.dumps(export, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*CSV_COLUMNS, "simulated"], lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(csv_rows)
    files[CSV_FILE] = buffer.getvalue().encode("utf-8")
    return files


def simulate_fill(sample: pd.DataFrame, *, seed: int) -> dict[str, bytes]:
    """SIMULATED ratings of paragraph-filling tasks: a judge-like total from ROUGE-L plus noise.

    Latent quality per task = ROUGE-L F of the generated against the original paragraph; each
    annotator's total ~ 100 x quality + severity N(0, 6) + noise N(0, 8), clipped to 0-100 and
    split over the five 0-20 dimensions with per-dimension noise N(0, 2). Half the annotators
    answer in a Label Studio export of the fill project, the other half in the fill CSV.
    """
    # Imported here: only needed when the sample has a fill arm.
    from clcg_pipeline.granularity import rouge_l

    rng = np.random.default_rng([seed, 3])
    tasks = {r["task_id"]: r for r in sample.to_dict("records")}
    ids = sorted(tasks)
    quality = dict(
        zip(
            ids,
            rouge_l(
                [str(tasks[t]["response"] or "") for t in ids],
                [str(tasks[t]["gold_answer"] or "") for t in ids],
            ),
            strict=True,
        )
    )
    forms = forms_of(sample)
    annotators = sorted(forms["annotator_id"].unique())
    severity = {a: rng.normal(0, 6.0) for a in annotators}
    in_ls = {a: i % 2 == 0 for i, a in enumerate(annotators)}
    ls_annotations: dict[str, list[dict[str, Any]]] = {t: [] for t in tasks}
    csv_rows: list[dict[str, Any]] = []
    for annotator, position, task_id in forms.itertuples(index=False):
        total = float(np.clip(100 * quality[task_id] + severity[annotator] + rng.normal(0, 8.0), 0, 100))
        scores = {d: int(np.clip(round(total / 5 + rng.normal(0, 2.0)), 0, 20)) for d in FILL_DIMENSIONS}
        seconds = float(np.exp(rng.normal(math.log(90), 0.3)))
        number = int(annotator.rsplit("-", 1)[-1])
        if in_ls[annotator]:
            result = [
                {"id": f"{d}-{position}", "from_name": d, "to_name": "response", "origin": "manual",
                 "type": "number", "value": {"number": v}}
                for d, v in scores.items()
            ]  # fmt: skip
            ls_annotations[task_id].append(
                {
                    # Label Studio users 1000+n: apart from the single/pair projects' users.
                    "id": (1000 + number) * 100 + position,
                    "completed_by": 1000 + number,
                    "result": result,
                    "was_cancelled": False,
                    "ground_truth": False,
                    "lead_time": round(seconds, 1),
                    "simulated": True,
                }
            )
        else:
            csv_rows.append(
                {
                    "annotator_id": annotator,
                    "position": position,
                    "task_id": task_id,
                    **scores,
                    "seconds": f"{seconds:.1f}",
                    "simulated": "true",
                }
            )
    export = [
        {"id": n, **_ls_fill(tasks[t]), "annotations": ls_annotations[t], "predictions": []}
        for n, t in enumerate(ids, start=1)
    ]
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=[*CSV_COLUMNS, *FILL_CSV_COLUMNS, "simulated"], lineterminator="\n", restval=""
    )
    writer.writeheader()
    writer.writerows(csv_rows)
    return {
        LS_FILL_FILE: (json.dumps(export, indent=1, ensure_ascii=False) + "\n").encode("utf-8"),
        CSV_FILL_FILE: buffer.getvalue().encode("utf-8"),
    }


def _ls_result(
    annotator: str, position: int, kind: str, answers: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """One Label Studio annotation in the export's shape (``result`` items per control)."""
    to = "question" if kind == "pair" else "response"
    result: list[dict[str, Any]] = []
    for name, value in answers.items():
        if name in ("adequacy", "confidence"):
            entry = {"type": "rating", "value": {"rating": value}}
        elif name == "keypoint_hits":
            if not value:
                continue
            entry = {"type": "choices", "value": {"choices": value}}
            name = "keypoints"
        else:
            entry = {"type": "choices", "value": {"choices": [value]}}
        result.append(
            {"id": f"{name}-{position}", "from_name": name, "to_name": to, "origin": "manual", **entry}
        )
    return {
        "id": int(annotator.rsplit("-", 1)[-1]) * 100 + position,
        "completed_by": int(annotator.rsplit("-", 1)[-1]),
        "result": result,
        "was_cancelled": False,
        "ground_truth": False,
        "lead_time": round(seconds, 1),
        "simulated": True,
    }


def simulated_file_names(sample: pd.DataFrame) -> tuple[str, ...]:
    """Every file ``simulate_annotations`` may give for ``sample`` (the fill pair only with a fill arm)."""
    has_fill = bool(len(sample)) and bool((sample["kind"] == "fill").any())
    return (LS_SINGLE_FILE, LS_PAIR_FILE, CSV_FILE, *((LS_FILL_FILE, CSV_FILL_FILE) if has_fill else ()))


def simulated_inbox_files(
    source_kind: str,
    sample: pd.DataFrame,
    keypoints: pd.DataFrame,
    *,
    seed: int,
    present: Callable[[str], bool] | None = None,
) -> dict[str, bytes]:
    """The SIMULATED files for the inbox: only for the bundled demo source, never a real study.

    ``present(name)``: whether the inbox holds that file already. The inbox's files are never
    overwritten, so when it holds every one the sample gives, none is simulated (a second
    analysis run of the demo skips the ~1 s of simulating and JSON indenting)."""
    if source_kind != "demo" or sample.empty:
        return {}
    if present is not None and all(present(name) for name in simulated_file_names(sample)):
        return {}
    return simulate_annotations(sample, keypoints, seed=seed)
