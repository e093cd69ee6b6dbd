"""The record of what a partition paid for survives its tables being written again.

A calls-shaped table (``calls``, ``task_calls``, the judges' tables) says, call by call,
whether this partition paid for it (``cached`` false, with its cost) or found it in the call
cache. Run again (``--force``, a fresh Dagster home on a copied data folder, a new code
version) every call is found in the cache, and the new table alone would say that nothing
was ever paid. So the IO manager writes each such table through :func:`keep_paid_record`:
the calls paid in this write are stamped with the run and the time, and a call the stored
table recorded as paid keeps that record (cost, tokens, attempts, run, time), however it was
found this time.
"""

from __future__ import annotations

import pandas as pd

# What a call's payment was, copied from the stored record to the call found cached now.
PAID_FIELDS = ("input_tokens", "output_tokens", "cost_usd", "latency_s", "attempts", "paid_run", "paid_at")
_CALL_COLUMNS = frozenset({"call_id", "cached", "cost_usd"})


def is_calls_shaped(frame: pd.DataFrame) -> bool:
    return set(frame.columns) >= _CALL_COLUMNS


def keep_paid_record(
    frame: pd.DataFrame, stored: pd.DataFrame | None, run_id: str, now: pd.Timestamp
) -> pd.DataFrame:
    """``frame`` as it is to be written: this write's new calls stamped, earlier payments kept.

    A call id keeps as many paid rows as the stored table had (one, unless a list asked twice),
    so a call is never counted paid twice by one partition.
    """
    frame = frame.copy()
    paid_now = ~frame["cached"].astype(bool)
    for column in ("paid_run", "paid_at"):
        if column not in frame.columns:
            frame[column] = None
    frame["paid_run"] = frame["paid_run"].astype(object).where(~paid_now | frame["paid_run"].notna(), run_id)
    stamped = pd.to_datetime(frame["paid_at"], utc=True)
    frame["paid_at"] = stamped.where(~paid_now | stamped.notna(), now)
    if stored is None or not len(stored) or not is_calls_shaped(stored):
        return frame
    earlier = stored[~stored["cached"].astype(bool)]
    earlier = earlier[~earlier["call_id"].isin(frame.loc[paid_now, "call_id"])]
    if not len(earlier):
        return frame
    paid_before = earlier.groupby("call_id").size()
    candidates = frame[~paid_now & frame["call_id"].isin(paid_before.index)]
    rank = candidates.groupby("call_id").cumcount()
    keep = candidates[rank < candidates["call_id"].map(paid_before)]
    source = earlier.groupby("call_id").head(1).set_index("call_id")
    frame.loc[keep.index, "cached"] = False
    for column in PAID_FIELDS:
        if column in source.columns:
            frame.loc[keep.index, column] = keep["call_id"].map(source[column])
    return frame
