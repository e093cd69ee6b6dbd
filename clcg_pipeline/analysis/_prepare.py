"""Selecting analysis rows and applying the parse-failure rule."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

Rule = Literal["A", "B"]

#: Columns every analysis needs from the ``scores`` table.
KEY_COLUMNS = (
    "model",
    "language",
    "doc_id",
    "item_id",
    "rep",
    "context_scope",
    "level",
    "item_source",
    "status",
)


def score_values(frame: pd.DataFrame, metric: str) -> np.ndarray:
    """The primary score of each row: ``metric``, except L0 rows, which are scored by accuracy."""
    values = frame[metric].to_numpy(dtype=np.float64, na_value=np.nan)
    if metric != "accuracy" and "accuracy" in frame.columns:
        is_l0 = (frame["level"] == "L0").to_numpy()
        if is_l0.any():
            acc = frame["accuracy"].to_numpy(dtype=np.float64, na_value=np.nan)
            values = np.where(is_l0, acc, values)
    return values


def apply_rule(frame: pd.DataFrame, values: np.ndarray, rule: Rule) -> pd.DataFrame:
    """Attach the analysed score ``y`` under a parse-failure rule.

    Rule A (primary): rows whose status is not ``ok`` score 0. Rule B: they are dropped.
    An ``ok`` row without a score cannot be analysed under either rule and is dropped.
    """
    failed = (frame["status"] != "ok").to_numpy()
    if rule == "A":
        y = np.where(failed, 0.0, values)
    elif rule == "B":
        y = np.where(failed, np.nan, values)
    else:
        raise ValueError(f"rule must be 'A' or 'B', got {rule!r}")
    keep = np.isfinite(y)
    # One copy of the rows, whether every row is kept or not (``take`` gives a frame of its
    # own, where a filtered ``loc`` had to be copied once more before ``y`` could be added).
    out = frame.copy() if keep.all() else frame.take(np.flatnonzero(keep))
    out["y"] = y[keep]
    return out


def select_rows(
    scores: pd.DataFrame,
    *,
    levels: Iterable[str] | None = None,
    item_source: str | Iterable[str] | None = None,
    context_scope: str | Iterable[str] | None = None,
    languages: Iterable[str] | None = None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Rows matching every given filter (``None`` = no filter on that column).

    ``columns``: only these columns are copied (a section that reads a few columns of
    millions of rows then copies those alone); ``None`` = every column.
    """
    mask = np.ones(len(scores), dtype=bool)
    for col, allowed in (
        ("level", levels),
        ("item_source", item_source),
        ("context_scope", context_scope),
        ("language", languages),
    ):
        if allowed is None:
            continue
        values = [allowed] if isinstance(allowed, str) else list(allowed)
        mask &= scores[col].isin(values).to_numpy()
    return scores.loc[mask] if columns is None else scores.loc[mask, list(columns)]


def analysis_rows(
    scores: pd.DataFrame,
    *,
    metric: str,
    rule: Rule,
    levels: Iterable[str] | None = None,
    item_source: str | Iterable[str] | None = None,
    context_scope: str | Iterable[str] | None = None,
    languages: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Filtered rows with the analysed score ``y`` under ``rule``."""
    sub = select_rows(
        scores, levels=levels, item_source=item_source, context_scope=context_scope, languages=languages
    )
    return apply_rule(sub, score_values(sub, metric), rule)


def as_str(series: pd.Series) -> pd.Series:
    """``series.astype(str)``, with one ``str`` per distinct value rather than one per row.

    A column of millions of rows has a few hundred distinct models, languages or articles;
    converting each row (as ``astype(str)`` does, even on a categorical) dominated the sections.
    Missing values fall back to ``astype(str)`` so they read exactly as it writes them.
    """
    codes, uniques = pd.factorize(series)
    if (codes < 0).any():
        return series.astype(str)
    labels = np.array([str(u) for u in uniques], dtype=object)
    return pd.Series(labels[codes], index=series.index, name=series.name, dtype=object)


def distinct_strs(series: pd.Series) -> set[str]:
    """``set(as_str(series))`` from the distinct values: one ``str`` per value, not per row.

    A section's list of models or repetitions over millions of band rows: the set built from
    one string per row was a tenth of a refresh at a hundred models (issue 37).
    """
    codes, uniques = pd.factorize(series)
    if (codes < 0).any():  # a missing value reads as the string as_str writes for it
        return set(as_str(series))
    return {str(u) for u in uniques}


def map_strs(series: pd.Series, mapping: Mapping[str, object] | pd.Series) -> pd.Series:
    """``as_str(series).map(mapping)``, looked up once per distinct value, not once per row."""
    codes, uniques = pd.factorize(series)
    if (codes < 0).any():  # a missing value reads as the string as_str writes for it
        return as_str(series).map(mapping)
    labels = pd.Series([str(u) for u in uniques], dtype=object).map(mapping)
    return pd.Series(labels.to_numpy()[codes], index=series.index, name=series.name, dtype=labels.dtype)


def check_columns(scores: pd.DataFrame, needed: Iterable[str], *, source: str = "scores") -> None:
    """Raise a ``ValueError`` naming the source and every missing column."""
    missing = [c for c in needed if c not in scores.columns]
    if missing:
        raise ValueError(f"{source}: missing required column(s) {missing}")
