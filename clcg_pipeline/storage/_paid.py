"""The record of what a partition paid for survives its tables being written again.

A calls-shaped table (``calls``, ``task_calls``, the judges' tables) says, call by call,
whether this partition paid for it (``cached`` false, with its cost) or found it in the call
cache. Run again (``--force``, a fresh Dagster home on a copied data folder, a new code
version) every call is found in the cache, and the new table alone would say that nothing
was ever paid. So the IO manager writes each such table through :func:`keep_paid_record`:
the calls paid in this write are stamped with the run, host and time, and a call the stored
table recorded as paid keeps that record (cost, tokens, attempts, run, host, time), however
it was found this time. A call found in the cache whose entry names a payer no table
recorded (a run killed after paying: the entry is written when the answer arrives,
``calls.cache_entry``) is recorded paid by that run and host, once. The paid calls a write
no longer makes are kept too (storage/_io_manager.py): in an unpartitioned table itself, and
beside a partition's table in :data:`LEFT_OUT_FILE`, which the spend reads as that table's.

It is also the one owner of "what was paid": :func:`spend` reads every calls table
(:data:`CALL_TABLE_STEPS`: responses, granularity tasks, judges, writers, item generation)
through the ``call_spend`` view (``sql/views/call_spend.sql``, the only definition of a paid
call), and every figure of spend (``clcg run``'s closing line and its budget accounting,
``clcg plan``'s spend so far, ``clcg query --named call_costs``) asks it instead of counting.

The calls tables are not the whole record: a call is paid the moment its answer is written to
the call cache (``<data>/cache/calls``, with its payer), and a calls table records it only when
its partition is written. A stream or run killed after paying, whose partitions never run
again, is in no table, yet the provider billed it. So the study's spend (:func:`spend` and
:func:`call_spend` over every calls table, and the catalog) also reads the cache entries whose
call id no calls table records as paid (:func:`unrecorded_payments`): each is one paid call,
``calls_table`` "call cache", step "not yet recorded in a partition", by the payer its entry
names. The view counts such an entry only while no table records the call (a table that does
says what was paid), so nothing is counted twice. Only the ids are listed to find them (file
names locally; an object store's segments are read whole, as the cache's own index reads them,
and what they hold is remembered until the cache changes: ``storage/_cache_entries.py``).
The calls a killed process sent and never cached (billed by the provider, in no table nor
entry) are read from the intent logs (``storage/_intents.py``) into the same spend, outcome
``lost_at_kill``, calls_table "killed run", once each and at an estimated cost.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import fsspec
import pandas as pd

from clcg_pipeline.config import project_path
from clcg_pipeline.storage._cache_entries import parsed, remote_entries
from clcg_pipeline.storage._duck import connect_duckdb, duckdb_location, is_local, local_path
from clcg_pipeline.storage._files import DATA_FILE, data_root, partition_dir, relative_table_glob, table_glob
from clcg_pipeline.storage._intents import LOST_STEP, LOST_TABLE, CachedEntry, lost_at_kill
from clcg_pipeline.storage._spend_memo import KeptRows, frame_hash, read_rows, tables_key, write_rows

# What a call's payment was, copied from the stored record to the call found cached now.
PAID_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "attempts",
    "paid_run",
    "paid_at",
    "paid_host",
)
# Who paid for a call: stamped on this write's new calls, read from the cache entry of a cached one.
PAYER = ("paid_run", "paid_host", "paid_at")
_CALL_COLUMNS = frozenset({"call_id", "cached", "cost_usd"})
# Outcomes of calls not found in the cache that brought no answer, so no payment: a budget's
# skip, a batch still pending, a call that failed every attempt. A stored row of one is the
# record of a try, not of a payment: a later write finding the call cached (paid by another
# host or partition meanwhile) must not carry it as this partition's payment of $0.
UNPAID_OUTCOMES = frozenset({"skipped_budget", "batch_pending", "error"})


def is_calls_shaped(frame: pd.DataFrame) -> bool:
    return set(frame.columns) >= _CALL_COLUMNS


def this_host() -> str:
    """The host that pays for a call made here (``calls`` writes the same name in its cache)."""
    return socket.gethostname()


def keep_paid_record(
    frame: pd.DataFrame, stored: pd.DataFrame | None, run_id: str, now: pd.Timestamp
) -> pd.DataFrame:
    """``frame`` as it is to be written: this write's new calls stamped, earlier payments kept,
    and payments no calls table recorded (their payer killed first) recorded, by their payer.

    A call id keeps as many paid rows as the stored table had (one, unless a list asked twice),
    so a call is never counted paid twice by one partition; a stored row that was never paid
    (:data:`UNPAID_OUTCOMES`: skipped for a budget, failed) is no payment to keep. A cached
    call whose cache entry names its payer (``paid_run``: ``calls.cache_entry``) and that the
    stored table does not record as paid is recorded paid once, by that run and host, at the
    answer's time; any other cached call is cached, with no payer.
    """
    frame = _stamped(frame, run_id, now)
    paid_now = ~frame["cached"].astype(bool)
    recorded = set(frame.loc[paid_now, "call_id"])
    if stored is not None and len(stored) and is_calls_shaped(stored):
        recorded |= _copy_stored(frame, stored, paid_now)
    orphans = frame["cached"].astype(bool) & frame["paid_run"].notna() & ~frame["call_id"].isin(recorded)
    # One row per payment: a list that asked for a call twice found it cached twice.
    frame.loc[orphans & ~frame["call_id"].where(orphans).duplicated(), "cached"] = False
    unpaid = frame["cached"].astype(bool)
    frame.loc[unpaid, ["paid_run", "paid_host"]] = None
    frame.loc[unpaid, "paid_at"] = pd.NaT
    return frame


def _stamped(frame: pd.DataFrame, run_id: str, now: pd.Timestamp) -> pd.DataFrame:
    """A copy of ``frame`` with this write's new calls (no payer yet) paid by ``run_id`` here, now."""
    frame = frame.copy()
    for column in PAYER:
        if column not in frame.columns:
            frame[column] = None
    frame["paid_run"] = frame["paid_run"].astype(object)
    frame["paid_host"] = frame["paid_host"].astype(object)
    frame["paid_at"] = pd.to_datetime(frame["paid_at"], utc=True).dt.floor("us")  # the contract's unit
    unstamped = ~frame["cached"].astype(bool) & frame["paid_run"].isna()
    frame.loc[unstamped, "paid_run"] = run_id
    frame.loc[unstamped & frame["paid_host"].isna(), "paid_host"] = this_host()
    frame.loc[~frame["cached"].astype(bool) & frame["paid_at"].isna(), "paid_at"] = now
    return frame


def _payments(stored: pd.DataFrame) -> pd.Series:
    """The rows of a stored calls table that record a payment: made (not cached) and answered."""
    made = ~stored["cached"].astype(bool)
    if "outcome" not in stored.columns:  # a table from before outcomes were kept: made is paid
        return made
    return made & ~stored["outcome"].isin(UNPAID_OUTCOMES)


def _copy_stored(frame: pd.DataFrame, stored: pd.DataFrame, paid_now: pd.Series) -> set[str]:
    """Give the cached calls of ``frame`` the stored table's record of their payment (in place);
    the call ids the stored table records as paid."""
    earlier = stored[_payments(stored)]
    earlier = earlier[~earlier["call_id"].isin(frame.loc[paid_now, "call_id"])]
    if not len(earlier):
        return set()
    paid_before = earlier.groupby("call_id").size()
    candidates = frame[~paid_now & frame["call_id"].isin(paid_before.index)]
    rank = candidates.groupby("call_id").cumcount()
    keep = candidates[rank < candidates["call_id"].map(paid_before)]
    source = earlier.groupby("call_id").head(1).set_index("call_id")
    frame.loc[keep.index, "cached"] = False
    for column in PAID_FIELDS:
        if column in source.columns:
            frame.loc[keep.index, column] = keep["call_id"].map(source[column])
        elif column in PAYER:
            frame.loc[keep.index, column] = None  # a table from before it was kept
    return set(paid_before.index)


# The calls-shaped tables, and the step of the study whose provider calls each one holds.
CALL_TABLE_STEPS = {
    "calls": "responses",
    "task_calls": "granularity tasks",
    "task_judge_calls": "judges",
    "judge_calls": "judges",
    "keypoint_calls": "writers",
    "item_calls": "item generation",
    "level_audit_calls": "judges",
    "task_writer_calls": "writers",
}
# A partitioned calls table's paid calls its latest write no longer makes (the partition asks
# fewer items now): kept beside the partition's data file, not in it, since every reader takes
# that file as the partition's current calls. Only the spend reads it: ``*.parquet`` globs and
# ``data.parquet`` reads never see it (storage/_io_manager.py writes it).
LEFT_OUT_FILE = "left_out_payments.parq"
CALL_RECORDS = "call_records"  # the calls tables as one relation (built here, from the files present)
SPEND_VIEW = "call_spend"  # sql/views/call_spend.sql: what each call paid, on top of call_records
SPEND_VIEW_FILE = project_path("sql") / "views" / f"{SPEND_VIEW}.sql"
# The columns call_records gives every table (cast: an empty table's columns have no type).
_RECORD_COLUMNS = {
    "call_id": "VARCHAR",
    "model": "VARCHAR",
    "language": "VARCHAR",
    "input_tokens": "BIGINT",
    "output_tokens": "BIGINT",
    "cost_usd": "DOUBLE",
    "outcome": "VARCHAR",
    "error": "VARCHAR",
    "cached": "BOOLEAN",
    "paid_run": "VARCHAR",
    "paid_at": "TIMESTAMPTZ",
    "paid_host": "VARCHAR",  # NULL for files written before it was kept
}
# Why the call runner skipped a call for the budget (its ``error``): the study budget's ledger.
STUDY_BUDGET_ERROR = "StudyBudgetExceeded"
UNKNOWN_HOST = "unknown host"  # Spend.by_host's key for calls recorded before hosts were kept
# A payment only the call cache holds (its run killed before any calls table recorded it): its
# calls_table and step in the spend view (sql/views/call_spend.sql counts it while no table does).
CACHE_TABLE = "call cache"
UNRECORDED_STEP = "not yet recorded in a partition"
CACHE_PAYMENTS = "call_cache_payments"  # the catalog's table of them, as of its build


def _projection(table: str, columns: Iterable[str]) -> str:
    """The SELECT list turning one calls table into call_records' shape (only names and literals)."""
    present = set(columns)
    parts = [
        f"CAST({name} AS {kind}) AS {name}" if name in present else f"CAST(NULL AS {kind}) AS {name}"
        for name, kind in _RECORD_COLUMNS.items()
    ]
    # The partition is the file's hive folders (a judges table's ``model`` is the judge's).
    where = r"regexp_extract(filename, 'language=([^/]+)/model=([^/]+)/', ['language', 'model'])"
    parts += [
        f"'{table}' AS calls_table",
        f"'{CALL_TABLE_STEPS[table]}' AS step",
        f"nullif(concat_ws('|', nullif({where}.language, ''), nullif({where}.model, '')), '') AS partition",
    ]
    return ", ".join(parts)


def register_call_records(
    con: duckdb.DuckDBPyConnection,
    sources: Mapping[str, str | list[str]],
    unrecorded: duckdb.DuckDBPyRelation | None = None,
) -> bool:
    """Create the ``call_records`` view over ``{table: glob or files}`` and, if given, the
    ``unrecorded`` payments of the call cache (:func:`unrecorded_payments`); False when none."""
    relations = []
    for table, source in sources.items():
        relation = con.read_parquet(source, union_by_name=True, filename=True)
        relations.append(relation.project(_projection(table, relation.columns)))
    if unrecorded is not None:
        relations.append(unrecorded.project(_cache_projection()))
    if not relations:
        return False
    union = relations[0]
    for relation in relations[1:]:
        union = union.union(relation)
    union.create_view(CALL_RECORDS, replace=True)
    return True


def catalog_call_records(
    con: duckdb.DuckDBPyConnection, data_dir: str | os.PathLike[str], tables: Iterable[str], *, relative: bool
) -> bool:
    """``call_records`` in the catalog, over the stored calls tables among ``tables`` and the
    payments only the call cache holds, as of this build (a table of the catalog: reading the
    whole cache at every query would cost seconds)."""
    sources: dict[str, str | list[str]] = {}
    for table in CALL_TABLE_STEPS:
        if table in set(tables):
            glob = relative_table_glob(table) if relative else table_glob(data_dir, table)
            left_out = _left_out_glob(table_glob(data_dir, table))
            sources[table] = [glob, _left_out_glob(glob)] if _exists(left_out) else glob
    rows = _with_lost(data_dir, unrecorded_payments(data_dir, _recorded_call_ids(con, sources)))
    if not len(rows):
        return register_call_records(con, sources)
    con.register("unrecorded_rows", rows)
    con.execute(f"CREATE OR REPLACE TABLE {CACHE_PAYMENTS} AS SELECT * FROM unrecorded_rows")
    con.unregister("unrecorded_rows")
    return register_call_records(con, sources, con.table(CACHE_PAYMENTS))


def _recorded_call_ids(con: duckdb.DuckDBPyConnection, sources: Mapping[str, str | list[str]]) -> set[str]:
    """The call ids the calls tables of ``sources`` record as paid (by the spend view's definition)."""
    if not register_call_records(con, sources):
        return set()
    con.execute(SPEND_VIEW_FILE.read_text(encoding="utf-8"))
    return {
        str(row[0]) for row in con.sql(f"SELECT DISTINCT call_id FROM {SPEND_VIEW} WHERE paid").fetchall()
    }


def call_cache_dir(data_dir: str | os.PathLike[str]) -> str:
    """``<data>/cache/calls``: where the call cache of a data folder lives (``resources.cache_dir``)."""
    return str(data_root(data_dir) / "cache" / "calls")


def unrecorded_payments(
    data_dir: str | os.PathLike[str], recorded: set[str], *, memo: bool = False
) -> pd.DataFrame:
    """The call cache's paid entries whose call id is not in ``recorded``, one row each, in the
    columns :func:`_cache_projection` reads: payments no calls table holds yet.

    Every entry is a paid answer (``calls.cache_entry`` writes one when it arrives). A local
    cache's file names are its call ids, so only the files of unrecorded ids are read; an
    object store's segments are read whole, or, with ``memo``, remembered while the cache is
    unchanged (``storage/_cache_entries.py``)."""
    root = call_cache_dir(data_dir)
    if is_local(root):
        entries = _local_entries(local_path(root), recorded)
    else:
        entries = remote_entries(root, recorded, memo=memo)
    return _entry_rows(entries)


def _local_entries(root: Path, recorded: set[str]) -> list[dict[str, Any]]:
    """The entries of a local cache (``<id[:2]>/<id>.json``) whose id is not in ``recorded``."""
    if not root.is_dir():
        return []
    found = []
    for folder in os.scandir(root):
        # Two hex digits: not ``_meta`` (pending batches) nor ``_coord`` (coordination files).
        if len(folder.name) != 2 or not folder.is_dir():
            continue
        for file in os.scandir(folder.path):
            call_id = file.name.removesuffix(".json")
            if call_id == file.name or call_id in recorded:
                continue  # a temporary file being written, or a recorded payment
            try:
                raw = Path(file.path).read_bytes()
            except FileNotFoundError:  # removed since it was listed: nothing to count
                continue
            entry = parsed(raw, file.path, call_id)
            if entry is not None:
                found.append(entry)
    return found


def _entry_rows(entries: list[dict[str, Any]]) -> pd.DataFrame:
    """Cache entries as rows: model id, payer (an entry from before payers: its stream's token),
    the partition paid for, time, tokens and cost."""
    rows = []
    for entry in entries:
        paid_run, paid_for = entry.get("paid_run"), entry.get("paid_for")
        origin = entry.get("origin")
        if not paid_run and isinstance(origin, str) and "/" in origin and not origin.startswith("/"):
            paid_run, paid_for = origin.split("/", 1)
        created = entry.get("created")
        rows.append(
            {
                "call_id": entry["call_id"],
                "model": entry.get("model_id") or entry.get("model"),
                "language": paid_for.split("|", 1)[0]
                if isinstance(paid_for, str) and "|" in paid_for
                else None,
                "input_tokens": entry.get("input_tokens"),
                "output_tokens": entry.get("output_tokens"),
                "cost_usd": entry.get("cost_usd"),
                "outcome": entry.get("outcome", "ok"),
                "error": entry.get("error"),
                "paid_run": paid_run or None,
                "paid_at": pd.Timestamp(created, unit="s", tz="UTC")
                if isinstance(created, int | float)
                else pd.NaT,
                "paid_host": entry.get("paid_host"),
                "partition": paid_for or None,
            }
        )
    frame = pd.DataFrame(rows, columns=_UNRECORDED_COLUMNS)
    return frame.assign(calls_table=CACHE_TABLE, step=UNRECORDED_STEP)


# The columns of the payments no calls table holds (the call cache's, the calls lost at a kill).
_UNRECORDED_COLUMNS = [*(name for name in _RECORD_COLUMNS if name != "cached"), "partition"]


def _with_lost(data_dir: str | os.PathLike[str], unrecorded: pd.DataFrame) -> pd.DataFrame:
    """``unrecorded`` and the calls the dead processes of this host sent and never cached
    (``storage/_intents.py``; an object-store cache's logs are in a local folder of the host
    that sent): calls_table :data:`LOST_TABLE`, outcome ``lost_at_kill``."""
    root = call_cache_dir(data_dir)
    lost = lost_at_kill(local_path(root)) if is_local(root) else lost_at_kill(root, _segment_lookup(root))
    if not lost:
        return unrecorded
    frame = pd.DataFrame(lost, columns=_UNRECORDED_COLUMNS).assign(calls_table=LOST_TABLE, step=LOST_STEP)
    return pd.concat([unrecorded, frame], ignore_index=True) if len(unrecorded) else frame


def _segment_lookup(root: str) -> CachedEntry:
    """An object-store cache's entry by call id, its segments read once at the first lookup
    (only when a dead intent log has calls in flight)."""
    entries: dict[str, dict[str, Any]] = {}

    def cached(call_id: str) -> dict[str, Any] | None:
        if not entries:
            entries.update((entry["call_id"], entry) for entry in remote_entries(root, set()))
        return entries.get(call_id)

    return cached


def _cache_projection() -> str:
    """The SELECT list turning :func:`unrecorded_payments`' rows (and :func:`_with_lost`'s) into
    call_records' shape."""
    parts = [
        "CAST(false AS BOOLEAN) AS cached" if name == "cached" else f"CAST({name} AS {kind}) AS {name}"
        for name, kind in _RECORD_COLUMNS.items()
    ]
    parts += [
        "CAST(calls_table AS VARCHAR) AS calls_table",
        "CAST(step AS VARCHAR) AS step",
        "CAST(partition AS VARCHAR) AS partition",
    ]
    return ", ".join(parts)


@dataclass(frozen=True)
class Spend:
    """What a set of calls paid, as the ``call_spend`` view counts it."""

    paid_usd: float = 0.0
    paid_calls: int = 0
    by_step: dict[str, int] = field(default_factory=dict)  # paid calls per step
    by_table: dict[str, tuple[int, float]] = field(default_factory=dict)  # (paid calls, USD) per table
    # (paid calls, USD) per host that paid ("unknown host": calls tables from before hosts were kept).
    by_host: dict[str, tuple[int, float]] = field(default_factory=dict)
    # Calls a budget left unmade, by budget ("run": --budget or a run's budget_usd; "study").
    skipped_budget: dict[str, int] = field(default_factory=dict)


def call_spend(
    data_dir: str | os.PathLike[str],
    *,
    tables: Iterable[str] = tuple(CALL_TABLE_STEPS),
    partition: Mapping[str, str] | None = None,
    memo: bool = False,
) -> pd.DataFrame:
    """The ``call_spend`` view's rows over the stored calls tables (one partition's, if given).

    Over every calls table and no one partition (the study's spend), it also holds the
    payments only the call cache records (:func:`unrecorded_payments`). With ``memo`` (the
    closing line's), a study's rows on an object store are remembered, and read again only
    when what they come from changed (``storage/_spend_memo.py``)."""
    tables = tuple(tables)
    whole_study = partition is None and set(tables) >= set(CALL_TABLE_STEPS)
    if memo and whole_study and not is_local(str(data_dir)):
        return _remembered_study_rows(data_dir)
    return _computed_rows(data_dir, tables, partition, whole_study=whole_study, memo=False)[0]


def _computed_rows(
    data_dir: str | os.PathLike[str],
    tables: tuple[str, ...],
    partition: Mapping[str, str] | None,
    *,
    whole_study: bool,
    memo: bool,
) -> tuple[pd.DataFrame, set[str], pd.DataFrame]:
    """The view's rows; the call ids the tables record as paid and the payments only the cache
    and the intent logs hold (both empty but for the ``whole_study``)."""
    sources = _stored_sources(data_dir, tables, partition)
    recorded: set[str] = set()
    unrecorded = pd.DataFrame(columns=_UNRECORDED_COLUMNS)
    con = connect_duckdb(data_dir)
    try:
        rows = _spend_rows(con) if register_call_records(con, sources) else None
        if whole_study:
            recorded = set(rows.loc[rows["paid"].astype(bool), "call_id"]) if rows is not None else set()
            unrecorded = _with_lost(data_dir, unrecorded_payments(data_dir, recorded, memo=memo))
            if len(unrecorded):  # the view again, over the tables and these payments
                con.register("unrecorded_rows", unrecorded)
                register_call_records(con, sources, con.table("unrecorded_rows"))
                rows = _spend_rows(con)
    finally:
        con.close()
    if rows is None:
        columns = ["model", "step", "calls_table", "run", "host", "paid", "paid_usd", "outcome", "error"]
        rows = pd.DataFrame(columns=columns)
    return rows, recorded, unrecorded


def _remembered_study_rows(data_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The study's rows from the memo when the calls tables, the code reading them and the
    payments only the cache and intent logs hold are as it was written for; else computed (and
    remembered)."""
    code = SPEND_VIEW_FILE.read_text(encoding="utf-8") + Path(__file__).read_text(encoding="utf-8")
    key = tables_key(data_dir, CALL_TABLE_STEPS, code)
    kept = read_rows(data_dir, key)
    if kept is not None:
        unrecorded = _with_lost(data_dir, unrecorded_payments(data_dir, kept.recorded, memo=True))
        if frame_hash(unrecorded) == kept.unrecorded:
            return kept.rows
    rows, recorded, unrecorded = _computed_rows(
        data_dir, tuple(CALL_TABLE_STEPS), None, whole_study=True, memo=True
    )
    if key is not None:
        write_rows(data_dir, KeptRows(key, frame_hash(unrecorded), recorded, rows))
    return rows


def _spend_rows(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The ``call_spend`` view's rows over the ``call_records`` registered on ``con``."""
    con.execute(SPEND_VIEW_FILE.read_text(encoding="utf-8"))
    return con.sql(f"SELECT * FROM {SPEND_VIEW}").df()


def _left_out_glob(glob: str) -> str:
    """The glob of a table's :data:`LEFT_OUT_FILE` records, from its ``<table>/**/*.parquet`` glob."""
    return glob.removesuffix("*.parquet") + LEFT_OUT_FILE


def _exists(glob: str) -> bool:
    fs, _ = fsspec.core.url_to_fs(glob)
    return bool(fs.glob(glob))


def _stored_sources(
    data_dir: str | os.PathLike[str], tables: Iterable[str], partition: Mapping[str, str] | None
) -> dict[str, str | list[str]]:
    """``{table: globs or files}`` of the ``tables`` stored (their ``partition``, if given), with
    the paid calls their partitions no longer make (:data:`LEFT_OUT_FILE`)."""
    sources: dict[str, str | list[str]] = {}
    for table in tables:
        if partition is None:
            glob = table_glob(data_dir, table)
            found = [pattern for pattern in (glob, _left_out_glob(glob)) if _exists(pattern)]
        else:
            folder = partition_dir(data_dir, table, partition)
            found = [
                duckdb_location(folder / name)
                for name in (DATA_FILE, LEFT_OUT_FILE)
                if (folder / name).exists()
            ]
        if found:
            sources[table] = found
    return sources


def usd_sum(usd: pd.Series) -> float:
    """The exact sum of ``usd`` (``math.fsum``): the same figure whatever order the record's rows
    come in (DuckDB does not keep one), so two views of one spend never differ in a rounded digit."""
    return math.fsum(usd.astype(float))


def spend(
    data_dir: str | os.PathLike[str],
    *,
    tables: Iterable[str] = tuple(CALL_TABLE_STEPS),
    partition: Mapping[str, str] | None = None,
    runs: Iterable[str] | None = None,
) -> Spend:
    """What the calls tables record as paid: all of it, or what the Dagster ``runs`` paid."""
    rows = call_spend(data_dir, tables=tables, partition=partition)
    if runs is not None:
        rows = rows[rows["run"].isin(set(runs))]
    paid = rows[rows["paid"].astype(bool)]
    skipped = rows[rows["outcome"] == "skipped_budget"]
    budgets = skipped["error"].map(lambda e: "study" if e == STUDY_BUDGET_ERROR else "run")
    return Spend(
        paid_usd=usd_sum(paid["paid_usd"]),
        paid_calls=len(paid),
        by_step={str(k): int(v) for k, v in paid.groupby("step").size().items()},
        by_table={
            str(k): (len(group), usd_sum(group["paid_usd"])) for k, group in paid.groupby("calls_table")
        },
        by_host={
            str(k): (len(group), usd_sum(group["paid_usd"]))
            for k, group in paid.groupby(paid["host"].fillna(UNKNOWN_HOST))
        },
        skipped_budget={str(k): int(v) for k, v in budgets.value_counts().items()},
    )
