"""Content-addressed cache of provider responses.

One JSON file per call id at ``<root>/<id[:2]>/<id>.json``. Local writes go to a temporary
file in the same folder and are published with ``os.replace``, so a reader (or a process
killed mid-write) never sees half a file and several processes may share one cache; on an
object store (fsspec URL) a single put is already atomic. Entries hold the response, token
counts and cost, never the request's secrets (requests carry none) nor an API key.
All path handling for the cache lives here, so a URL ``cache_dir`` needs no other change.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

CACHE_FORMAT = 1


class CallCache:
    """Read and write cached responses by call id."""

    def __init__(self, root: str) -> None:
        self._fs, self._root = fsspec.core.url_to_fs(root)
        self._local = isinstance(self._fs, LocalFileSystem)
        self._made: set[str] = set()
        self.root = root

    def _path(self, call_id: str) -> str:
        if len(call_id) < 8 or not all(c in "0123456789abcdef" for c in call_id):
            raise ValueError(f"call id {call_id!r} is not a hex digest")
        return f"{self._root.rstrip('/')}/{call_id[:2]}/{call_id}.json"

    def get(self, call_id: str) -> dict[str, Any] | None:
        """The cached entry, or None when absent (or unreadable: then it is simply redone)."""
        path = self._path(call_id)
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

    def exists(self, call_id: str) -> bool:
        return self._fs.exists(self._path(call_id))

    def put(self, call_id: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` atomically under ``call_id``."""
        data = json.dumps(
            {**entry, "call_id": call_id, "cache_format": CACHE_FORMAT}, ensure_ascii=False, sort_keys=True
        ).encode("utf-8")
        path = self._path(call_id)
        if not self._local:
            self._fs.pipe_file(path, data)
            return
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
