"""The study's spend rows as the last closing line computed them, while nothing they come from changed.

``clcg run``'s closing line reads the ``call_spend`` view over every calls table and the call
cache (``storage/_paid.py``): on an object store, a DuckDB read of eight tables' files through
fsspec, ~0.8 s of a no-op rerun's ~3 s on a local S3 server (issue 32). The view's rows are a
function of the calls tables' files, the cache's unrecorded payments (themselves remembered:
``storage/_cache_entries.py``), the calls lost at a kill (this host's intent logs) and the
view's SQL; so the rows are kept in :data:`MEMO` (``<data>/cache/spend_memo/``), with a key
made of a fresh listing of each calls table (every object's path, content tag and size) and
the SQL, and with a hash of the unrecorded and lost payments they were computed over. The next
closing line whose listing, SQL and payments are the same takes the rows from it; any other
is a miss, computed in full and written again (only then, so a rerun with nothing changed
rewrites nothing). A backend whose listing gives neither a content tag nor a modification time
keeps no memo.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from clcg_pipeline.storage._files import data_root, write_table

log = logging.getLogger(__name__)

MEMO = "spend_memo/study_rows.parquet"  # under ``<data>/cache/``
_FORMAT = 1
_META = b"clcg_spend_memo"
_STAMPS = ("ETag", "etag", "md5Hash", "LastModified", "mtime", "updated")  # what says an object changed


@dataclass(frozen=True)
class KeptRows:
    """A memo's rows, the listing key and unrecorded payments' hash they were computed for, and
    the call ids the calls tables recorded as paid (what the cache's payments are read against)."""

    key: str
    unrecorded: str
    recorded: set[str]
    rows: pd.DataFrame


def tables_key(data_dir: str | os.PathLike[str], tables: Iterable[str], view_sql: str) -> str | None:
    """A fresh listing of each calls table's objects and the view's SQL, as one hash; None when
    the listing says nothing that changes with an object's contents."""
    root = data_root(data_dir)
    fs, base = root.fs, root.path.rstrip("/")
    digest = hashlib.sha256(view_sql.encode("utf-8"))
    for table in sorted(tables):
        fs.invalidate_cache(f"{base}/{table}")  # another process may have written since
        try:
            listed = fs.find(f"{base}/{table}", detail=True)
        except FileNotFoundError:
            listed = {}
        for path in sorted(listed):
            info = listed[path]
            stamps = [str(info[name]) for name in _STAMPS if info.get(name)]
            if not stamps:
                return None
            digest.update(json.dumps([path, stamps, info.get("size")]).encode("utf-8"))
    return digest.hexdigest()


def frame_hash(frame: pd.DataFrame) -> str:
    """A hash of ``frame``'s contents (the unrecorded and lost payments a view was computed over)."""
    text = frame.to_json(orient="split", index=False, date_format="iso", date_unit="ns")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _memo_path(data_dir: str | os.PathLike[str]) -> UPath:
    return data_root(data_dir) / "cache" / MEMO


def read_rows(data_dir: str | os.PathLike[str], key: str | None) -> KeptRows | None:
    """The memo when it was written for ``key``; None otherwise (or when there is none)."""
    if key is None:
        return None
    try:
        table = pq.read_table(pa.BufferReader(_memo_path(data_dir).read_bytes()))
        meta = json.loads((table.schema.metadata or {})[_META])
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return None  # none yet, or unreadable: the view is read (and the memo written again)
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT or meta.get("key") != key:
        return None
    return KeptRows(key, str(meta.get("unrecorded")), set(meta.get("recorded", [])), table.to_pandas())


def write_rows(data_dir: str | os.PathLike[str], kept: KeptRows) -> None:
    """Keep ``kept``; a folder this host may not write keeps none (the spend is computed, only
    not remembered)."""
    meta = {
        "format": _FORMAT,
        "key": kept.key,
        "unrecorded": kept.unrecorded,
        "recorded": sorted(kept.recorded),
    }
    try:
        table = pa.Table.from_pandas(kept.rows, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META: json.dumps(meta)})
        write_table(_memo_path(data_dir), table)
    except (OSError, ValueError, pa.ArrowException) as exc:
        log.debug("no study spend memo written (%s)", exc)
