"""The frozen bank: each task's content hash, and keeping stored tasks of unchanged documents."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.granularity._tasks._base import sha

#: Columns added after banks were first frozen. Unset (None or empty) they stay out of the
#: hash, so the tasks they do not apply to keep the hash a stored bank has for them.
LATER_COLUMNS: dict[str, Any] = {"role": None, "evidence": []}


def _plain(value: Any) -> Any:
    """A cell as the builder made it: a bank read back from Parquet has numpy arrays for lists,
    numpy scalars, and NaN / <NA> or whole floats in nullable integer columns (sentence_index)."""
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def frozen_hash(row: Mapping[str, Any]) -> str:
    """sha256 of a task's content (every column but the hash itself and the doc hash)."""
    content = {k: _plain(v) for k, v in row.items() if k not in ("frozen_hash", "doc_hash")}
    for name, unset in LATER_COLUMNS.items():
        if name in content and content[name] in (unset, None):
            del content[name]
    return sha(content)


def freeze(previous: pd.DataFrame | None, rebuilt: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Keep the stored tasks of every document whose English content is unchanged (``doc_hash``).

    The bank is frozen like the item bank: a rebuild never silently replaces stored tasks;
    documents that changed (or are new) take the rebuilt tasks, and the notes say which.
    """
    if previous is None or previous.empty or "doc_hash" not in previous.columns:
        return rebuilt, []
    kept: list[pd.DataFrame] = []
    notes: list[str] = []
    drifted = [
        str(row["task_id"])
        for row in previous[rebuilt.columns.intersection(previous.columns)].to_dict("records")
        if frozen_hash(row) != row["frozen_hash"]
    ]
    if drifted:
        notes.append(f"{len(drifted)} stored task(s) no longer match their frozen_hash: {drifted[:5]}")
    previous, added = _with_later_columns(previous, rebuilt)
    if added:
        notes.append(added)
    old_hash = previous.groupby("doc_id")["doc_hash"].first().to_dict()
    for doc_id, group in rebuilt.groupby("doc_id", sort=True):
        if old_hash.get(doc_id) == group["doc_hash"].iloc[0]:
            old = previous[previous["doc_id"] == doc_id]
            if set(old["frozen_hash"]) != set(group["frozen_hash"]):
                notes.append(f"{doc_id}: stored tasks kept (frozen) although a rebuild differs")
            kept.append(old)
        else:
            if doc_id in old_hash:
                notes.append(f"{doc_id}: document changed, tasks rebuilt")
            kept.append(group)
    docs_without_tasks = sorted(set(previous["doc_id"]) - set(rebuilt["doc_id"]))
    if docs_without_tasks:
        notes.append(f"stored tasks of documents no longer built dropped: {docs_without_tasks}")
    out = pd.concat(kept, ignore_index=True) if kept else rebuilt
    return out[rebuilt.columns].reset_index(drop=True), notes


def _with_later_columns(previous: pd.DataFrame, rebuilt: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """A stored bank from before :data:`LATER_COLUMNS`, given them from the rebuild of the same
    (unchanged) document: the rules are deterministic, so the rebuild's value is what the stored
    task would have had. Its hash is recomputed, and a note says how many tasks took a value."""
    absent = [c for c in LATER_COLUMNS if c in rebuilt.columns and c not in previous.columns]
    if not absent:
        return previous, None
    out = previous.copy()
    by_id = rebuilt.set_index("task_id")
    same_doc = out["task_id"].isin(by_id.index) & out["doc_hash"].eq(
        out["task_id"].map(by_id["doc_hash"]).fillna("")
    )
    for name in absent:
        unset = LATER_COLUMNS[name]
        values = out["task_id"].map(by_id[name])
        out[name] = [
            v if ok and v is not None else (list(unset) if isinstance(unset, list) else unset)
            for v, ok in zip(values, same_doc, strict=True)
        ]
    changed = [frozen_hash(r) != r["frozen_hash"] for r in out.to_dict("records")]
    out["frozen_hash"] = [frozen_hash(r) for r in out.to_dict("records")]
    note = (
        f"stored bank predates column(s) {absent}: {sum(changed)} stored task(s) took them from the "
        "rebuild of their unchanged document (frozen_hash recomputed)"
    )
    return out, note
