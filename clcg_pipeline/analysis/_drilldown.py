"""Item-level evidence behind a gap: where English and a target language disagree most.

A pure function over the ``scores``, ``predictions`` and ``items`` frames; the report shows
its output per language, so an analyst can read the answers behind a CLCG before trusting it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

_KEYS = ["model", "doc_id", "item_id", "context_scope"]
_SCORE_COLUMNS = {"model", "language", "doc_id", "item_id", "rep", "context_scope", "level"}


def _answers(predictions: pd.DataFrame, language: str) -> dict[tuple[str, ...], str | None]:
    """The most frequent answer over repetitions per item (ties: the earliest repetition)."""
    rows = predictions[predictions["language"] == language]
    if rows.empty:
        return {}
    rows = rows.sort_values("rep", kind="stable")
    counts = rows.groupby([*_KEYS, "answer"], dropna=False, sort=False, observed=True).agg(
        count=("rep", "size"), first=("rep", "min")
    )
    counts = counts.reset_index().sort_values(
        [*_KEYS, "count", "first"], ascending=[True] * 4 + [False, True]
    )
    best = counts.drop_duplicates(_KEYS, keep="first")
    return {
        tuple(str(v) for v in key): (None if pd.isna(answer) else str(answer))
        for *key, answer in best[[*_KEYS, "answer"]].itertuples(index=False, name=None)
    }


def _as_strings(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    frame = frame.copy()
    for column in columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(object)
    return frame


def _clean(value: object) -> Any:
    """JSON-able scalar: NaN/NA -> None, numpy scalars -> Python."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str):
        return _clean(value.tolist())
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return value.item()
    return value


def drilldown(
    scores: pd.DataFrame,
    predictions: pd.DataFrame,
    items: pd.DataFrame,
    *,
    reference: str = "en",
    metric: str = "token_f1",
    k: int = 10,
    levels: Iterable[str] | None = None,
    item_source: str | None = None,
    context_scope: str | None = None,
    languages: Iterable[str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Per target language, the ``k`` items with the largest English-minus-target score.

    Scores are averaged over repetitions per model x item x context scope before the
    difference; only items scored in both languages and with a positive difference (English
    better) are listed, largest first (ties: model, doc_id, item_id). ``levels``,
    ``item_source`` and ``context_scope`` restrict the rows to the analysis band. Answers are
    each side's most frequent answer over repetitions; question and gold come from ``items``.
    Languages with no such item get an empty list (when named in ``languages``).
    """
    if k < 1:
        raise ValueError(f"drilldown: k must be at least 1, got {k}")
    out: dict[str, list[dict[str, Any]]] = {str(lang): [] for lang in languages or [] if lang != reference}
    if scores is None or scores.empty:
        return out
    missing = (_SCORE_COLUMNS | {metric}) - set(scores.columns)
    if missing:
        raise ValueError(f"drilldown: scores lack column(s) {sorted(missing)}")
    rows = _band_rows(scores, metric, levels, item_source, context_scope)
    if rows.empty:
        return out
    # Plain strings: categorical keys would make every groupby/merge below a cartesian product.
    rows = _as_strings(rows, ["language", *_KEYS, "level"])
    means = (
        rows.groupby(["language", *_KEYS, "level"], dropna=False, sort=False, observed=True)
        .agg(score=(metric, "mean"), reps=("rep", "nunique"))
        .reset_index()
    )
    english = means[means["language"] == reference].drop(columns="language")
    if english.empty:
        return out
    pred = None
    if predictions is not None and not predictions.empty:
        pred = _as_strings(predictions, ["language", *_KEYS])
    item_info: Mapping[str, Mapping[str, Any]] = {}
    if items is not None and not items.empty and "item_id" in items.columns:
        item_info = items.drop_duplicates("item_id").set_index("item_id").to_dict(orient="index")
    en_answers = _answers(pred, reference) if pred is not None else {}
    wanted = set(out) if languages is not None else None
    for language in sorted(set(means["language"]) - {reference}):
        if wanted is not None and language not in wanted:
            continue
        target = means[means["language"] == language].drop(columns=["language", "level"])
        paired = english.merge(target, on=_KEYS, suffixes=("_en", "_target"))
        paired["difference"] = paired["score_en"] - paired["score_target"]
        paired = paired[paired["difference"] > 0].sort_values(
            ["difference", "model", "doc_id", "item_id"], ascending=[False, True, True, True]
        )
        target_answers = _answers(pred, language) if pred is not None else {}
        listed = [
            _entry(row, item_info, en_answers, target_answers)
            for row in paired.head(k).itertuples(index=False)
        ]
        out[language] = listed
    return out


def _band_rows(
    scores: pd.DataFrame,
    metric: str,
    levels: Iterable[str] | None,
    item_source: str | None,
    context_scope: str | None,
) -> pd.DataFrame:
    """The rows of the analysis band (each restriction only when given) that have a score."""
    rows = scores
    if levels is not None:
        rows = rows[rows["level"].isin(list(levels))]
    if item_source is not None and "item_source" in rows.columns:
        rows = rows[rows["item_source"] == item_source]
    if context_scope is not None:
        rows = rows[rows["context_scope"] == context_scope]
    return rows[rows[metric].notna()]


def _entry(
    row: Any,
    item_info: Mapping[str, Mapping[str, Any]],
    en_answers: Mapping[tuple[str, ...], str | None],
    target_answers: Mapping[tuple[str, ...], str | None],
) -> dict[str, Any]:
    """One listed item: its keys, question and gold, both answers and both scores."""
    key = (str(row.model), str(row.doc_id), str(row.item_id), str(row.context_scope))
    info = item_info.get(row.item_id, {})
    return {
        "model": str(row.model),
        "doc_id": str(row.doc_id),
        "item_id": str(row.item_id),
        "level": _clean(row.level),
        "context_scope": str(row.context_scope),
        "question": _clean(info.get("question")),
        "gold": _clean(info.get("gold_answer")),
        "options": _clean(info.get("options")),
        "en_answer": en_answers.get(key),
        "target_answer": target_answers.get(key),
        "en_score": float(row.score_en),
        "target_score": float(row.score_target),
        "difference": float(row.difference),
        "reps": int(min(row.reps_en, row.reps_target)),
    }
