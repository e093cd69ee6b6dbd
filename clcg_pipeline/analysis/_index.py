"""The suite's per-estimand Python values at scale: the flat ``estimands`` index built column by
column, and the garbage collector paused while such per-pair objects are built (issue 37).

At 500 models the estimates table has about 375,000 rows (three per model pair), and the
document one pair entry and one index entry for each: built one ``itertuples`` row at a time
with the collector running, they were most of the suite's per-pair Python time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._definitions import DEFINITIONS, definition_of


@contextmanager
def paused_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused while millions of small dicts and lists are built.

    The pair entries, their estimates rows and the flat index are one dict (and a flags list)
    per pair and gap, 374,250 of each at 500 models: every few hundred of them set off a
    collection that traversed all those built before, a third of the per-pair Python time
    (issue 37). They form no reference cycle, so nothing waits for a collection meanwhile;
    collections resume when the block ends. Left alone where the collector was already off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def estimand_index(estimates: pd.DataFrame, metric: str) -> dict[str, dict[str, Any]]:
    """Flat index of every estimand (same content as the estimates table), so two runs can be
    compared key by key.

    Column by column into Python values (one ``tolist`` each), then one entry per row: at 500
    models the table has about 375,000 rows, and reading them one ``itertuples`` row at a time
    was the largest part of the per-pair Python work (issue 37).
    """
    cols: dict[str, list[Any]] = {
        c: finite_values(estimates[c]) for c in ("estimate", "ci_low", "ci_high", "p", "p_adj")
    }
    cols |= {c: _int_values(estimates[c]) for c in ("n", "n_articles", "valid_replicates")}
    p_bound = estimates["p_bound"].fillna(False).astype(bool).tolist()
    identifiable = estimates["identifiable"].fillna(True).astype(bool).tolist()
    status, flags = estimates["status"].tolist(), estimates["flags"].tolist()
    names, groups = estimates["estimand"].tolist(), estimates["group"].tolist()
    metrics = _metrics(names, groups, metric)
    out = {}
    for k, (name, group) in enumerate(zip(names, groups, strict=True)):
        flag = flags[k]
        out[f"{name}/{group}"] = {
            "estimate": cols["estimate"][k],
            "ci_low": cols["ci_low"][k],
            "ci_high": cols["ci_high"][k],
            "p": cols["p"][k],
            "p_adj": cols["p_adj"][k],
            "p_bound": p_bound[k],
            "n": cols["n"][k],
            "n_articles": cols["n_articles"][k],
            "identifiable": identifiable[k],
            "reason": None if identifiable[k] else reason_of(str(status[k])),
            "valid_replicates": cols["valid_replicates"][k],
            "status": status[k],
            "flags": [] if flag is None or pd.isna(flag) else str(flag).split("; "),
            "metric": metrics[k],
            "sided": DEFINITIONS[name]["sided"],
        }
    return out


def finite_values(column: pd.Series | np.ndarray) -> list[float | None]:
    """``finite`` of every value of a float column: Python floats, None for NaN and infinities."""
    values = np.asarray(column, dtype=np.float64)
    out: list[float | None] = values.tolist()
    for k in np.flatnonzero(~np.isfinite(values)).tolist():
        out[k] = None
    return out


def _int_values(column: pd.Series) -> list[int | None]:
    """Every value of a nullable integer column as a Python int, None where missing."""
    missing = column.isna().to_numpy()
    out: list[int | None] = column.fillna(0).astype(np.int64).tolist()
    for k in np.flatnonzero(missing).tolist():
        out[k] = None
    return out


def _metrics(names: list[str], groups: list[str], metric: str) -> list[str]:
    """Each row's metric (``definition_of``'s), formatted once per estimand whose metric does not
    name its group, rather than once per row."""
    fixed: dict[str, str | None] = {}
    for name in dict.fromkeys(names):
        template = definition_of(name, "{group}", metric)["metric"]
        fixed[name] = None if "{group}" in template else template
    out = []
    for name, group in zip(names, groups, strict=True):
        text = fixed[name]
        out.append(text if text is not None else definition_of(name, group, metric)["metric"])
    return out


def reason_of(status: str) -> str:
    """A status's reason: what follows ``not identifiable: ``, else the status itself."""
    return status.split(": ", 1)[1] if status.startswith("not identifiable: ") else status
