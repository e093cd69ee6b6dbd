"""Content-addressed cache of provider responses.

Locally, one JSON file per call id at ``<root>/<id[:2]>/<id>.json``. Writes go to a temporary
file in the same folder and are published with ``os.replace``, so a reader (or a process
killed mid-write) never sees half a file and several processes may share one cache. On an
object store (fsspec URL) a batch of entries is one object, and lookups read an index of
them (``_segments.py``): a request per call would cap the calls' rate at the store's.
Entries hold the response, token counts and cost, never the request's secrets (requests
carry none) nor an API key. All path handling for the cache lives here and there, so a URL
``cache_dir`` needs no other change.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from clcg_pipeline.calls._segments import SegmentIndex

CACHE_FORMAT = 1


class CallCache:
    """Read and write cached responses by call id."""

    def __init__(self, root: str) -> None:
        self._fs, self._root = fsspec.core.url_to_fs(root)
        self._local = isinstance(self._fs, LocalFileSystem)
        self._index = None if self._local else SegmentIndex(self._fs, self._root)
        self._made: set[str] = set()
        self.root = root

    @property
    def remote(self) -> bool:
        """On an object store: a lookup costs a listing (see :meth:`get_fresh`), not a file read."""
        return self._index is not None

    def _path(self, call_id: str) -> str:
        if len(call_id) < 8 or not all(c in "0123456789abcdef" for c in call_id):
            raise ValueError(f"call id {call_id!r} is not a hex digest")
        return f"{self._root.rstrip('/')}/{call_id[:2]}/{call_id}.json"

    def get(self, call_id: str) -> dict[str, Any] | None:
        """The cached entry, or None when absent (or unreadable: then it is simply redone)."""
        path = self._path(call_id)
        if self._index is not None:
            return self._index.get(call_id)
        try:
            # A local cache is read with plain open(): fsspec's wrapper costs more than the read,
            # and the runner looks up every call it sends.
            with open(path, "rb") if self._local else self._fs.open(path, "rb") as handle:
                entry = json.loads(handle.read())
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        if not isinstance(entry, dict) or entry.get("call_id") != call_id:
            return None
        return entry

    def get_fresh(self, call_id: str, since: float) -> dict[str, Any] | None:
        """:meth:`get`, seeing every entry any process wrote before ``since`` (``time.monotonic()``)."""
        self.refresh(since)
        return self.get(call_id)

    def refresh(self, since: float | None = None) -> None:
        """See what other processes wrote (before ``since``; default now). Local reads always do."""
        if self._index is not None:
            self._index.refresh(since)

    def exists(self, call_id: str) -> bool:
        if self._index is not None:
            return self.get(call_id) is not None
        return os.path.exists(self._path(call_id))

    def put(self, call_id: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` atomically under ``call_id``."""
        self.put_many({call_id: entry})

    def put_many(self, entries: Mapping[str, dict[str, Any]]) -> None:
        """Write ``entries`` (by call id), each atomically; on an object store, as one object."""
        encoded = {
            call_id: json.dumps(
                {**entry, "call_id": call_id, "cache_format": CACHE_FORMAT},
                ensure_ascii=False,
                sort_keys=True,
            ).encode("utf-8")
            for call_id, entry in entries.items()
        }
        if self._index is not None:
            for call_id in encoded:
                self._path(call_id)  # the same ids as a local cache accepts
            self._index.write(encoded)
            return
        for call_id, data in encoded.items():
            self._put_local(call_id, data)

    def _put_local(self, call_id: str, data: bytes) -> None:
        path = self._path(call_id)
        folder = os.path.dirname(path)
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        fd, tmp = tempfile.mkstemp(prefix=f".{call_id[:8]}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            # Leave no temporary behind on failure; a kill -9 may, and readers ignore it.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def put_meta(self, name: str, entry: dict[str, Any]) -> None:
        """Write a small side record (e.g. a pending batch) atomically at ``<root>/_meta/<name>.json``."""
        data = json.dumps(entry, sort_keys=True).encode("utf-8")
        path = f"{self._root.rstrip('/')}/_meta/{name}.json"
        if not self._local:
            self._fs.pipe_file(path, data)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)

    def get_meta(self, name: str) -> dict[str, Any] | None:
        path = f"{self._root.rstrip('/')}/_meta/{name}.json"
        try:
            with self._fs.open(path, "rb") as handle:
                return json.loads(handle.read())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def delete_meta(self, name: str) -> None:
        path = f"{self._root.rstrip('/')}/_meta/{name}.json"
        if self._fs.exists(path):
            self._fs.rm_file(path)
