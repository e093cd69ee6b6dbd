"""The new model first: when a model joins a finished study, what its owner asks next.

The rule (docs/ESTIMANDS.md, ``new_model``), decided from the calls records' payment times
and the study's earlier analyses, never from the order of ``models.yaml``:

* A call counts when it was *paid* (the ``call_spend`` view's definition: not found in the call
  cache, not skipped for the budget, not waiting in a batch), at its ``paid_at``.
* The new model is the evaluated model whose first paid call came after every other evaluated
  model's last paid call, *and* the study had been analysed in between (a ``study_results`` of
  this data folder written after the others' last paid call and before its first): the others
  had answered and been analysed, then a run added it.
* A study built with all its models at once (one ``clcg run`` answers model after model, then
  analyses once) has none, whatever order its partitions ran in.
* A model with no paid call (every call found in the call cache, as a second offline model
  identical to the first finds them) has no first paid call: it is never the new model, and
  the order is decided among the models that paid.

Its block gives its CLCG with the interval, its rank of N with the rank interval, and its
paired difference from each other model (``model_contrasts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.storage import UNPAID_OUTCOMES, NewModel, NewModelDifference, partition_dir

_GAP = "h1_micro"
_RESULTS_ASSET = "study_results"


def paid_spans(calls: pd.DataFrame, evaluated: Sequence[str]) -> pd.DataFrame:
    """First and last paid call (``min``, ``max``) of each evaluated model that paid for one."""
    if calls.empty or not {"model", "paid_at", "cached"} <= set(calls.columns):
        return pd.DataFrame(columns=["min", "max"])
    mine = calls.loc[calls["model"].astype(str).isin(list(evaluated))]
    outcome = mine["outcome"] if "outcome" in mine.columns else pd.Series("", index=mine.index)
    paid_at = pd.to_datetime(mine["paid_at"], utc=True)
    is_paid = (
        ~mine["cached"].fillna(False).astype(bool)
        & ~outcome.fillna("").isin(UNPAID_OUTCOMES)
        & paid_at.notna()
    )
    return paid_at[is_paid].groupby(mine.loc[is_paid, "model"].astype(str)).agg(["min", "max"])


def newest_model(
    calls: pd.DataFrame, evaluated: Sequence[str], *, analysed_at: Sequence[pd.Timestamp]
) -> str | None:
    """The evaluated model a run added after the others had answered and been analysed, else None.

    ``analysed_at``: when this data folder's earlier analyses (``study_results``) were written.
    """
    spans = paid_spans(calls, evaluated)
    if len(spans) < 2:
        return None
    newest = str(spans["min"].idxmax())
    first = spans.loc[newest, "min"]
    others_last = spans.drop(index=newest)["max"].max()
    if not first > others_last:
        return None  # its calls overlap the others': answered together
    analysed = pd.to_datetime(pd.Series(list(analysed_at), dtype=object), utc=True)
    return newest if bool(((analysed >= others_last) & (analysed < first)).any()) else None


def _same_place(a: str, b: str) -> bool:
    return str(UPath(a)).rstrip("/") == str(UPath(b)).rstrip("/")


def analysis_times(instance: dg.DagsterInstance, data_dir: str) -> list[pd.Timestamp]:
    """When ``study_results`` of this data folder was written, per the instance's event log
    (another data folder's analyses on the same instance are not this study's)."""
    # Where the IO manager writes it (storage/_io_manager.py), spelled the same way.
    document = str(partition_dir(data_dir, _RESULTS_ASSET, None).parent / f"{_RESULTS_ASSET}.json")
    records = instance.fetch_materializations(dg.AssetKey(_RESULTS_ASSET), limit=10_000).records
    times = []
    for record in records:
        materialization = record.asset_materialization
        path = materialization.metadata.get("path") if materialization is not None else None
        if path is not None and _same_place(str(getattr(path, "value", path)), document):
            times.append(pd.Timestamp(record.timestamp, unit="s", tz="UTC"))
    return times


def _difference(pair: Mapping[str, Any], model: str) -> NewModelDifference:
    """The pair's gap difference read as ``model`` minus the other model."""
    block = dict(pair.get(_GAP) or {})
    flip = pair.get("model_b") == model
    if flip:
        for key in ("estimate", "ci_low", "ci_high"):
            if block.get(key) is not None:
                block[key] = -block[key]
        block["ci_low"], block["ci_high"] = block.get("ci_high"), block.get("ci_low")
    other = pair.get("model_a") if flip else pair.get("model_b")
    # cast: the pair's estimate fields, copied key by key; the document validation checks them.
    return cast(NewModelDifference, {"other": other, **block})


def new_model_block(results: Mapping[str, Any], model: str) -> NewModel:
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
        "note": "the model a run added after the others had answered and the study had been "
        "analysed (its first paid call came after their last, and after an analysis without it); "
        "differences are this model minus the other, paired on the items both answered",
    }
