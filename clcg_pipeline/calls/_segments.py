"""The call cache on an object store: entries written in segments, read through an index.

A local cache is one file per call (``_cache.py``); on an object store a file per call costs a
request per lookup and one per write, which caps a model's stream at the store's request
rate (about 10 calls/s against a local S3 server). Here a batch of finished calls (whatever
the runner's persister gathered while the last batch was being written) is one object,
``<root>/_segments/<time>-<uuid>.jsonl``, put before any of its callers is released: a
``kill -9`` repeats only the calls not yet written, as with a file per call. Lookups read an
in-memory index, filled from the segments (and from the single-entry objects that older
caches hold) by listing the store; a listing that started after a caller's instant sees
every entry written before it, since S3 lists what it has acknowledged.

Written by hand: fsspec offers per-object I/O, and no library keeps an append-only,
multi-writer key-value log on S3 with strong read-after-write lookups.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

from fsspec import AbstractFileSystem

log = logging.getLogger(__name__)

SEGMENTS = "_segments"


class SegmentIndex:
    """The entries of one object-store cache, by call id; thread-safe."""

    def __init__(self, fs: AbstractFileSystem, root: str) -> None:
        self._fs = fs
        self._root = root.rstrip("/")
        self._entries: dict[str, dict[str, Any]] = {}
        self._singles: dict[str, str] = {}  # call id -> path of a single-entry object (older caches)
        self._loaded: set[str] = set()  # segment paths read into the index
        self._listed_root = False
        self._synced_at = -math.inf  # monotonic instant the last completed listing started
        self._sync_lock = threading.Lock()
        self._lock = threading.Lock()

    def refresh(self, since: float | None = None) -> None:
        """Make the index hold every entry written before ``since`` (time.monotonic(); default now).

        Concurrent callers share a listing: one that started after their instant covers them."""
        since = time.monotonic() if since is None else since
        with self._sync_lock:
            if self._synced_at >= since:
                return
            started = time.monotonic()
            self._sync()
            self._synced_at = started

    def _sync(self) -> None:
        if not self._listed_root:
            # Once, the whole cache: older caches hold one object per call.
            for path in self._fs.find(self._root):
                name = path.rsplit("/", 1)[-1]
                if name.endswith(".json") and f"/{SEGMENTS}/" not in path and "/_meta/" not in path:
                    self._singles.setdefault(name[: -len(".json")], path)
            self._listed_root = True
        try:
            listed = self._fs.find(f"{self._root}/{SEGMENTS}")
        except FileNotFoundError:
            listed = []
        new = [path for path in listed if path.endswith(".jsonl") and path not in self._loaded]
        if not new:
            return
        # s3fs sizes a file from its listings cache before reading it: a listing cached
        # before these segments were written would call them missing.
        self._fs.invalidate_cache(f"{self._root}/{SEGMENTS}")
        # One concurrent read of every new segment (fsspec gathers them on an async store). A
        # segment that cannot be read fails the lookup: taken as a miss, its calls are paid twice.
        for path, raw in self._fs.cat(new, on_error="raise").items():
            self._read_segment(path, raw)

    def _read_segment(self, path: str, raw: bytes) -> None:
        found: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(raw.splitlines(), 1):
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                log.warning("call cache: %s line %d is not JSON; its call is made again", path, number)
                continue
            if isinstance(entry, dict) and isinstance(entry.get("call_id"), str):
                found[entry["call_id"]] = entry
        with self._lock:
            self._entries.update(found)
            self._loaded.add(path)

    def get(self, call_id: str) -> dict[str, Any] | None:
        if not self._listed_root:
            self.refresh()
        with self._lock:
            entry = self._entries.get(call_id)
            single = None if entry is not None else self._singles.get(call_id)
        if single is None:
            return entry
        try:
            entry = json.loads(self._fs.cat_file(single))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        if not isinstance(entry, dict) or entry.get("call_id") != call_id:
            return None
        with self._lock:
            self._entries.setdefault(call_id, entry)
        return entry

    def write(self, entries: Mapping[str, bytes]) -> None:
        """Put ``entries`` (call id -> one JSON line, no newline) as one segment, then index them."""
        if not entries:
            return
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex}.jsonl"
        path = f"{self._root}/{SEGMENTS}/{name}"
        self._fs.pipe_file(path, b"\n".join(entries.values()) + b"\n")
        with self._lock:
            for call_id, line in entries.items():
                self._entries[call_id] = json.loads(line)
            self._loaded.add(path)
