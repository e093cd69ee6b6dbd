"""The paragraph-filling arm of the annotation sample (issue 11): full-context fill answers,
spread evenly over languages, each rated by its own annotators."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.config import HumanValidationSettings
from clcg_pipeline.validation.human._forms import allocate, assign_annotators, task_id_of

FILL_QUESTION = (
    "A paragraph was removed from a long document and regenerated from its context. Rate the "
    "generated paragraph against the original on each dimension, 0 (worst) to 20 (best)."
)


def draw_fills(
    task_predictions: pd.DataFrame | None,
    granularity_tasks: pd.DataFrame | None,
    long_paragraphs: pd.DataFrame | None,
    settings: HumanValidationSettings,
    *,
    models: Sequence[str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """The paragraph-filling arm: ``fill_ratings`` full-context answers, spread evenly over languages.

    Each row shows the previous, gold and next paragraph (in the answer's language) and the
    answer, exactly the fields the fill judge sees (``granularity._scoring.fill_subjects``).
    """
    if settings.fill_ratings == 0 or task_predictions is None:
        return [], []
    # Imported here: the granularity package is only needed when the fill arm is on.
    from clcg_pipeline.granularity import fill_subjects

    rng = np.random.default_rng([settings.seed, 3])  # own stream: other arms stay unchanged
    usable = (
        task_predictions is not None
        and len(task_predictions) > 0
        and granularity_tasks is not None
        and len(granularity_tasks) > 0
        and long_paragraphs is not None
        and len(long_paragraphs) > 0
    )
    subjects = []
    if usable:
        preds = task_predictions[task_predictions["model"].isin(list(models))]
        subjects = fill_subjects(preds, granularity_tasks, long_paragraphs)
    if not subjects:
        return [], [
            f"fill arm: 0 of {settings.fill_ratings} paragraph-filling answers - no parsed full-context "
            "paragraph_fill answer of an evaluated model is stored (granularity off or not run yet)"
        ]
    subjects = sorted(subjects, key=lambda s: tuple(str(s[0][k]) for k in sorted(s[0])))
    by_lang: dict[str, list[int]] = {}
    for i, (keys, _) in enumerate(subjects):
        by_lang.setdefault(str(keys["language"]), []).append(i)
    langs = sorted(by_lang)
    quotas = allocate(settings.fill_ratings, [1.0] * len(langs), [len(by_lang[lang]) for lang in langs])
    shortfalls = []
    if sum(quotas) < settings.fill_ratings:
        shortfalls.append(
            f"fill arm: only {sum(quotas)} of {settings.fill_ratings} paragraph-filling answers "
            f"available across {len(langs)} language(s)"
        )
    rows: list[dict[str, Any]] = []
    for lang, quota in zip(langs, quotas, strict=True):
        pool = by_lang[lang]
        for k in np.sort(rng.choice(len(pool), size=quota, replace=False)):
            keys, fields = subjects[pool[int(k)]]
            rows.append(_fill_task(keys, fields, lang))
    return _with_fill_annotators(rows, settings, rng), shortfalls


def _fill_task(keys: Mapping[str, Any], fields: Mapping[str, str], lang: str) -> dict[str, Any]:
    """One paragraph-filling task: the fill judge's fields, shown to annotators."""
    return {
        "task_id": task_id_of(
            "f",
            keys["model"],
            lang,
            keys["doc_id"],
            keys["task_id"],
            keys["context"],
            keys["rep"],
        ),
        "kind": "fill",
        "model": str(keys["model"]),
        "language": lang,
        "doc_id": str(keys["doc_id"]),
        "item_id": None,
        "rep": int(keys["rep"]),
        "response": fields["generated"],
        "question": FILL_QUESTION,
        "gold_answer": fields["reference"],
        "passage_ref": "",
        "ask_error_category": False,
        "gran_task_id": str(keys["task_id"]),
        "context": str(keys["context"]),
        "previous_text": fields["previous"],
        "next_text": fields["next"],
    }


def _with_fill_annotators(
    rows: list[dict[str, Any]], settings: HumanValidationSettings, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """The fill tasks with their annotators and form positions (no attention checks planted)."""
    forms = assign_annotators(
        [r["task_id"] for r in rows], settings.model_copy(update={"attention_checks": 0}), rng, prefix="fill"
    )
    placed: dict[str, tuple[list[str], list[int]]] = {r["task_id"]: ([], []) for r in rows}
    for annotator, form in forms.items():
        for pos, task in enumerate([form[i] for i in rng.permutation(len(form))], start=1):
            placed[task][0].append(annotator)
            placed[task][1].append(pos)
    return [{**r, "annotators": placed[r["task_id"]][0], "positions": placed[r["task_id"]][1]} for r in rows]
