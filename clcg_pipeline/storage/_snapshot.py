"""The data folder as a complete ``clcg run`` left it: a rerun with nothing changed runs nothing, fast.

A memo of the records' verdict, never a second opinion. The data folder's records
(``storage/_records.py``) are the one source of "up to date" (judged in
``orchestration/_freshness.py``); when ``clcg run`` ends with every partition it was asked for
up to date by them (checked in full, after it ran), it writes ``_records/_complete_run.json``:
what it was asked (config, models, languages, mode, budget), the study's code versions
(``config.code_versions``: config, package and source contents, each model's own), the sha256 of every record
and the size and modification time of every other file in the folder but the call cache, and
the folder itself. The next ``clcg run`` in that folder (not a copy of it), asked the same, with
the same code versions, on a folder whose records say
word for word what they said and whose files are all as they were, gets the same verdict
without importing Dagster or opening the instance. Any record written since (by ``clcg run``,
the daemon, the UI: the IO manager writes one with each partition, and its time changes its
contents), a removed partition, a new annotation file (in the data folder, or in an inbox the
config puts outside it), another model in models.yaml: a miss, and the full check decides.
Records are compared by content, not modification time, so a filesystem with coarse
timestamps cannot hide a rewrite.

On an object store (``s3://``) the folder is listed, never read: one listing per top-level
folder but the call cache, and each object's ETag (its content's hash; for a record, what is
compared), LastModified and size come with it. A few requests, where the full check costs a
Dagster run (~40 s on a local S3 server). The listing is always fresh (fsspec's listings cache is
dropped first): the run that writes the memo listed the folder before its workers wrote it.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from upath import UPath

from clcg_pipeline.storage._duck import is_local
from clcg_pipeline.storage._files import write_json
from clcg_pipeline.storage._records import RECORDS

SNAPSHOT = "_complete_run.json"
_FORMAT = 3  # 2: records by content; 3: the folder it was written for
_SKIPPED = ("cache",)  # the call cache: what it holds changes no partition
_CONTENT_TAGS = ("ETag", "etag", "md5Hash")  # an object's content hash, as fsspec backends name it
_TIMES = ("LastModified", "mtime", "updated")

Stamp = list[Any] | str  # a record's content hash, or another file's time and size


def _files(root: Path) -> dict[str, list[int] | str]:
    """Every file but the call cache: a record by its contents (the verdict is made of them),
    any other file by (modification time, size)."""
    found: dict[str, list[int] | str] = {}
    for folder, dirs, names in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d not in _SKIPPED]
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if relative == os.path.join(RECORDS, SNAPSHOT):
                continue
            try:
                if relative.startswith(RECORDS + os.sep):
                    found[relative] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                    continue
                stat = os.stat(path)
            except FileNotFoundError:
                continue
            found[relative] = [stat.st_mtime_ns, stat.st_size]
    return found


def _outside_inbox(root: Path, request: Mapping[str, Any]) -> dict[str, list[int] | str]:
    """The annotation inbox's files when the config puts it outside the data folder (an absolute
    or ``..`` path): the analysis's verdict reads it, so the memo must see a file added there."""
    inbox = str(request.get("inbox") or "")
    if not inbox:
        return {}
    folder = root.joinpath(*PurePosixPath(inbox).parts).resolve()
    if folder == root or root in folder.parents or not folder.is_dir():
        return {}  # inside the data folder: already among its files (or no inbox yet)
    return {f"inbox:{name}": stamp for name, stamp in _files(folder).items()}


def _objects(fs: Any, root: str) -> dict[str, Stamp]:
    """Every object under ``root`` but the call cache, from fresh listings: a record by its
    content tag, any other object by (content tag, modification time, size)."""
    fs.invalidate_cache(root)
    found: dict[str, Stamp] = {}
    for entry in fs.ls(root, detail=True):
        name = posixpath.basename(entry["name"].rstrip("/"))
        if entry["type"] != "directory":
            found[name] = _object_stamp(fs, entry, record=False)
        elif name not in _SKIPPED:
            for path, info in fs.find(entry["name"], detail=True).items():
                relative = posixpath.relpath(path, root)
                if relative != posixpath.join(RECORDS, SNAPSHOT):
                    found[relative] = _object_stamp(fs, info, record=relative.startswith(RECORDS + "/"))
    return found


def _object_stamp(fs: Any, info: Mapping[str, Any], *, record: bool) -> Stamp:
    """What an object's listing says of it; a backend that lists no content hash has a record read."""
    tag = next((str(info[key]) for key in _CONTENT_TAGS if info.get(key)), "")
    if record:
        return tag or hashlib.sha256(fs.cat_file(info["name"])).hexdigest()
    when = next((str(info[key]) for key in _TIMES if info.get(key)), "")
    return [tag, when, int(info.get("size") or 0)]


def _outside_inbox_objects(fs: Any, root: str, inbox: str) -> dict[str, Stamp]:
    """The annotation inbox's objects when the config puts it outside an object-store folder
    (``inbox``: its path as the import joins it to the data folder's, ``..`` resolved)."""
    folder = posixpath.normpath(inbox)
    if folder == root or folder.startswith(root + "/") or not fs.isdir(folder):
        return {}  # inside the data folder: already among its objects (or no inbox yet)
    fs.invalidate_cache(folder)
    return {
        f"inbox:{posixpath.relpath(path, folder)}": _object_stamp(fs, info, record=False)
        for path, info in fs.find(folder, detail=True).items()
    }


def _fingerprint(data_dir: str, request: Mapping[str, Any]) -> dict[str, Stamp] | None:
    """The folder's files (and an outside inbox's) as the memo compares them; None when there
    is no such folder."""
    if is_local(data_dir):
        local = _local_root(data_dir)
        return {**_files(local), **_outside_inbox(local, request)}
    folder = UPath(data_dir)
    root = folder.path.rstrip("/")
    inbox = str(request.get("inbox") or "")
    try:
        objects = _objects(folder.fs, root)
        if inbox:  # joined as the import joins it (``validation.human.data_path``)
            objects.update(
                _outside_inbox_objects(folder.fs, root, folder.joinpath(*PurePosixPath(inbox).parts).path)
            )
    except OSError:
        return None  # no such folder, or one this host may not list: the full check decides
    return objects


def _local_root(data_dir: str) -> Path:
    return Path(data_dir.removeprefix("file://")).resolve()


def _folder(data_dir: str) -> str:
    """The data folder as the memo names it: a local one by its resolved path."""
    return str(_local_root(data_dir)) if is_local(data_dir) else str(UPath(data_dir)).rstrip("/")


def _snapshot_path(data_dir: str) -> Path | UPath:
    if is_local(data_dir):
        return _local_root(data_dir) / RECORDS / SNAPSHOT
    return UPath(data_dir) / RECORDS / SNAPSHOT


def complete_run_request(
    *,
    config_dir: str,
    versions: Mapping[str, str],
    models: list[str] | None,
    languages: list[str] | None,
    mode: str,
    budget_usd: float | None,
    inbox: str = "",
) -> dict[str, Any]:
    """What a ``clcg run`` was asked, as its complete-run record keeps it (``--force`` aside);
    ``inbox`` is the config's annotation inbox (``study.human_validation.inbox``)."""
    return {
        "config_dir": os.path.abspath(config_dir),
        "versions": dict(versions),
        "models": models,
        "languages": languages,
        "mode": mode,
        "budget_usd": budget_usd,
        "inbox": inbox,
    }


def write_complete_run(data_dir: str, request: Mapping[str, Any], partitions: int) -> None:
    """Record that ``data_dir`` is up to date for ``request`` (plain JSON), over ``partitions``."""
    files = _fingerprint(data_dir, request)
    if files is None:
        return
    snapshot = {
        "format": _FORMAT,
        "folder": _folder(data_dir),
        "request": dict(request),
        "partitions": partitions,
        "files": files,
    }
    write_json(_snapshot_path(data_dir), snapshot)


def complete_run_holds(data_dir: str, request: Mapping[str, Any]) -> int | None:
    """The number of partitions up to date when the last complete run for ``request`` in this
    very folder left it exactly as it is now; None otherwise (the full check decides).

    A hit also vouches for the catalog: that run rebuilt one built for another folder before it
    ran (``refresh_catalog``), and ``clcg.duckdb`` is among the files compared."""
    try:
        snapshot = json.loads(_snapshot_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(snapshot, dict) or snapshot.get("format") != _FORMAT:
        return None
    if snapshot.get("folder") != _folder(data_dir):
        return None  # a copy: its catalog may read the original (``clcg run`` rebuilds it first)
    if snapshot.get("request") != json.loads(json.dumps(dict(request))):
        return None
    if snapshot.get("files") != _fingerprint(data_dir, request):
        return None
    return int(snapshot.get("partitions", 0))
