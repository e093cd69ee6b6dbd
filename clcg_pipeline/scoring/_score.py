"""Score prediction rows against the item bank.

The frame-level work is vectorized with pandas; the per-answer metrics run once per unique
(prediction text, gold text) pair, because at study scale (~830k rows) answers repeat heavily
across repetitions, models and languages ("Not stated", the same extracted sentence, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from clcg_pipeline.scoring._metrics import (
    choice_index,
    factorize,
    normalize_answer,
    polar_label,
    polar_text,
    score_pairs,
)
from clcg_pipeline.storage import PREDICTION_STATUSES, TABLES

SemSim = Callable[[list[str], list[str]], list[float]]

ANSWER_FORMATS = ("polar", "span", "free", "mc")
_PRED_KEY = ["model", "language", "doc_id", "item_id", "rep", "context_scope"]
_PRED_COLUMNS = [*_PRED_KEY, "answer", "status"]
_ITEM_COLUMNS = [
    "item_id",
    "level",
    "item_source",
    "gold_answer",
    "answer_format",
    "options",
    "gold_answerable",
]
_MAX_NAMED = 10


@dataclass(frozen=True)
class ScoringResult:
    """The ``scores`` rows plus counts of what was dropped before scoring, and why."""

    scores: pd.DataFrame
    dropped: dict[str, int] = field(default_factory=dict)


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}")


def _name(values: Sequence[object]) -> str:
    shown = sorted({str(v) for v in values})
    more = f" (and {len(shown) - _MAX_NAMED} more)" if len(shown) > _MAX_NAMED else ""
    return ", ".join(shown[:_MAX_NAMED]) + more


def _options_tuple(value: Iterable[object] | float | None) -> tuple[str, ...]:
    # Parquet list columns arrive as numpy arrays; None/NaN means "no options".
    if value is None or isinstance(value, float):
        if value is None or np.isnan(value):
            return ()
        raise TypeError(f"options: expected a list of options, got the number {value!r}")
    return tuple(str(v) for v in value)


def _validate_items(items: pd.DataFrame) -> pd.DataFrame:
    _require(items, _ITEM_COLUMNS, "items")
    items = items[_ITEM_COLUMNS].copy()
    dup = items["item_id"][items["item_id"].duplicated()]
    if len(dup):
        raise ValueError(f"items: duplicate item_id(s): {_name(dup.tolist())}")
    bad_format = ~items["answer_format"].isin(ANSWER_FORMATS)
    if bad_format.any():
        raise ValueError(
            f"items: field answer_format must be one of {ANSWER_FORMATS}; "
            f"item_id(s) {_name(items.loc[bad_format, 'item_id'].tolist())}"
        )
    # An item without the flag is taken as answerable: generated items always carry a gold.
    items["gold_answerable"] = items["gold_answerable"].astype("boolean").fillna(True).astype(bool)
    no_gold = items["gold_answerable"] & items["gold_answer"].isna()
    if no_gold.any():
        raise ValueError(
            "items: field gold_answer is empty on gold-answerable item_id(s) "
            f"{_name(items.loc[no_gold, 'item_id'].tolist())}"
        )
    return items


def _validate_predictions(predictions: pd.DataFrame) -> None:
    _require(predictions, _PRED_COLUMNS, "predictions")
    bad = ~predictions["status"].isin(PREDICTION_STATUSES)
    if bad.any():
        raise ValueError(
            f"predictions: field status must be one of {PREDICTION_STATUSES}; found "
            f"{_name(predictions.loc[bad, 'status'].tolist())} (item_id(s) "
            f"{_name(predictions.loc[bad, 'item_id'].tolist())})"
        )


def _resolve_polar(answers: pd.Series, golds: pd.Series, item_ids: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Canonical label texts for prediction and gold; an unreadable gold is a data error."""
    gold_labels = {g: polar_label(g) for g in pd.unique(golds)}
    bad = golds.map(gold_labels) == "invalid"
    if bad.any():
        raise ValueError(
            "items: field gold_answer of polar item_id(s) "
            f"{_name(item_ids[bad].tolist())} is not yes / no / not stated"
        )
    pred_text = answers.map({a: polar_text(polar_label(a)) for a in pd.unique(answers)})
    gold_text = golds.map({g: polar_text(label) for g, label in gold_labels.items()})
    return pred_text, gold_text


def _resolve_choice(
    answers: pd.Series, item_ids: pd.Series, lookup: pd.DataFrame
) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Chosen-option texts for prediction and gold, and the choice accuracy.

    Resolved once per unique (answer, item) pair: multiple-choice corpora (Belebele) are all mc.
    """
    gold_of: dict[str, tuple[int, tuple[str, ...]]] = {}
    bad: list[str] = []
    for item_id in pd.unique(item_ids):
        opts = _options_tuple(lookup.at[item_id, "options"])
        gold_index = choice_index(str(lookup.at[item_id, "gold_answer"]), opts)
        if gold_index is None:
            bad.append(str(item_id))
        else:
            gold_of[item_id] = (gold_index, opts)
    if bad:
        raise ValueError(f"items: field gold_answer of mc item_id(s) {_name(bad)} names none of its options")
    codes, unique_answers, unique_items = _unique_pairs(answers, item_ids)
    pred_text, gold_text, accuracy = [], [], []
    for answer, item_id in zip(unique_answers, unique_items, strict=True):
        gold_index, opts = gold_of[item_id]
        pred_index = choice_index(answer, opts)
        pred_text.append(normalize_answer(opts[pred_index]) if pred_index is not None else "")
        gold_text.append(normalize_answer(opts[gold_index]))
        accuracy.append(float(pred_index == gold_index))
    index = answers.index
    return (
        pd.Series(np.asarray(pred_text, dtype=object)[codes], index=index),
        pd.Series(np.asarray(gold_text, dtype=object)[codes], index=index),
        pd.Series(np.asarray(accuracy, dtype=float)[codes], index=index),
    )


def _pair_metrics(pred: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token-F1, exact match and ROUGE-L for each unique (pred, gold) pair.

    One process on purpose: worker processes (spawn/forkserver) re-import ``__main__`` and
    fail under ``python -c``, notebooks and unguarded scripts, and fork is unsafe inside a
    threaded host; measured on the shared 2-core machine they also gained nothing.
    """
    f1, em, rl = score_pairs(pred.tolist(), gold.tolist())
    return np.asarray(f1, dtype=float), np.asarray(em, dtype=float), np.asarray(rl, dtype=float)


def _unique_pairs(pred: pd.Series, gold: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes mapping rows to unique (pred, gold) pairs, and the unique pairs themselves."""
    pred_codes, pred_uniques = factorize(pred.tolist())
    gold_codes, gold_uniques = factorize(gold.tolist())
    width = max(len(gold_uniques), 1)
    codes, uniques = pd.factorize(pred_codes * width + gold_codes)
    return (
        codes,
        np.asarray(pred_uniques, dtype=object)[uniques // width],
        np.asarray(gold_uniques, dtype=object)[uniques % width],
    )


def score_predictions(
    predictions: pd.DataFrame, items: pd.DataFrame, *, semsim: SemSim | None = None
) -> ScoringResult:
    """Score every prediction whose item is gold-answerable.

    Rule A (primary): rows whose status is not ``ok`` keep their row with
    every applicable metric 0 (accuracy stays null for span/free items, where it does not
    apply). Polar and multiple-choice items get ``accuracy``; their Token-F1, exact match and
    ROUGE-L are computed on the normalized label / chosen option. ``semsim`` (optional) is
    called once with the unique (answer, gold) pairs of ``ok`` rows.
    """
    _validate_predictions(predictions)
    items = _validate_items(items)

    known = predictions["item_id"].isin(items["item_id"])
    if not known.all():
        unknown = predictions.loc[~known, "item_id"].unique().tolist()
        raise ValueError(f"predictions: field item_id names item(s) not in items: {_name(unknown)}")

    lookup = items.set_index("item_id")
    frame = predictions[_PRED_COLUMNS].reset_index(drop=True)
    answerable = frame["item_id"].map(lookup["gold_answerable"]).astype(bool)
    n_dropped = int((~answerable).sum())
    frame = frame[answerable.to_numpy()].reset_index(drop=True)
    for column in ("level", "item_source", "gold_answer", "answer_format"):
        frame[column] = frame["item_id"].map(lookup[column])

    n = len(frame)
    ok = (frame["status"] == "ok").to_numpy()
    answers = frame["answer"].fillna("").astype(str)
    golds = frame["gold_answer"].astype(str)
    fmt = frame["answer_format"].to_numpy()

    # Texts the F1/EM/ROUGE-L metrics compare: raw answers for span/free, labels otherwise.
    pred_text = answers.copy()
    gold_text = golds.copy()
    accuracy = np.full(n, np.nan)

    polar = fmt == "polar"
    if polar.any():
        p, g = _resolve_polar(answers[polar], golds[polar], frame.loc[polar, "item_id"])
        pred_text[polar], gold_text[polar] = p, g
        accuracy[polar] = (p.to_numpy() == g.to_numpy()) & (p.to_numpy() != "")

    mc = fmt == "mc"
    if mc.any():
        p, g, acc = _resolve_choice(answers[mc], frame.loc[mc, "item_id"], lookup)
        pred_text[mc], gold_text[mc] = p, g
        accuracy[mc] = acc.to_numpy()

    token_f1 = np.zeros(n)
    exact = np.zeros(n)
    rouge = np.zeros(n)
    semsim_values = np.full(n, np.nan) if semsim is None else np.zeros(n)
    if ok.any():
        codes, upred, ugold = _unique_pairs(pred_text[ok], gold_text[ok])
        f1, em, rl = _pair_metrics(upred, ugold)
        token_f1[ok], exact[ok], rouge[ok] = f1[codes], em[codes], rl[codes]
        if semsim is not None:
            scodes, sa, sg = _unique_pairs(answers[ok], golds[ok])
            values = np.asarray(semsim(list(sa), list(sg)), dtype=float)
            if values.shape != (len(sa),):
                raise ValueError(f"semsim returned {values.shape} values for {len(sa)} pairs")
            semsim_values[ok] = values[scodes]
    # Rule A: failed rows score 0 on every metric that applies to their item.
    accuracy[~ok & ~np.isnan(accuracy)] = 0.0

    out = frame[[*_PRED_KEY, "level", "item_source"]].copy()
    out["token_f1"] = token_f1
    out["exact_match"] = exact
    out["accuracy"] = accuracy
    out["rouge_l"] = rouge
    out["semsim"] = semsim_values
    out["status"] = frame["status"].to_numpy()
    out["rep"] = out["rep"].astype("int64")
    return ScoringResult(
        scores=out[TABLES["scores"].names],
        dropped={"not_gold_answerable": n_dropped},
    )
