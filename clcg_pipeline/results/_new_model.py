"""The new model first: when a model joins a finished study, what its owner asks next.

The newest model is the one whose first paid call came after every other evaluated model's
last one: it was added to a study already answered (a first run of several models at once
has no newest model). Its block gives its CLCG with the interval, its rank of N with the
rank interval, and its paired difference from each other model (``model_contrasts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

_GAP = "h1_micro"


def newest_model(calls: pd.DataFrame, evaluated: Sequence[str]) -> str | None:
    """The evaluated model added after all the others had answered, else None."""
    if calls.empty or not {"model", "paid_at"} <= set(calls.columns):
        return None
    paid = calls.loc[calls["model"].astype(str).isin(list(evaluated)) & calls["paid_at"].notna()]
    spans = paid.groupby(paid["model"].astype(str))["paid_at"].agg(["min", "max"])
    if len(spans) < 2:
        return None
    newest = str(spans["min"].idxmax())
    others = spans.drop(index=newest)
    return newest if spans.loc[newest, "min"] > others["max"].max() else None


def _difference(pair: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The pair's gap difference read as ``model`` minus the other model."""
    block = dict(pair.get(_GAP) or {})
    flip = pair.get("model_b") == model
    if flip:
        for key in ("estimate", "ci_low", "ci_high"):
            if block.get(key) is not None:
                block[key] = -block[key]
        block["ci_low"], block["ci_high"] = block.get("ci_high"), block.get("ci_low")
    other = pair.get("model_a") if flip else pair.get("model_b")
    return {"other": other, **block}


def new_model_block(results: Mapping[str, Any], model: str) -> dict[str, Any]:
    """``model``'s CLCG, rank of N and difference from each other model, from the results."""
    by_model = (results.get("h1") or {}).get("by_model") or {}
    contrasts = results.get("model_contrasts") or {}
    ranks = (contrasts.get("ranks") or {}).get(model) or {}
    pairs = (contrasts.get("pairs") or {}).values()
    return {
        "model": model,
        "estimand": _GAP,
        "clcg": (by_model.get(model) or {}).get(_GAP),
        "rank": ranks.get(_GAP),
        "n_models": len(contrasts.get("models") or by_model),
        "differences": [
            _difference(pair, model) for pair in pairs if model in (pair.get("model_a"), pair.get("model_b"))
        ],
        "note": "the model added after all the others had answered (its first call came after their "
        "last); differences are this model minus the other, paired on the items both answered",
    }
