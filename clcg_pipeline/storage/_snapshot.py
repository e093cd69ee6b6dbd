"""The data folder as a complete ``clcg run`` left it: a rerun with nothing changed runs nothing, fast.

A memo of the records' verdict, never a second opinion. The data folder's records
(``storage/_records.py``) are the one source of "up to date" (judged in
``orchestration/_freshness.py``); when ``clcg run`` ends with every partition it was asked for
up to date by them (checked in full, after it ran), it writes ``_records/_complete_run.json``:
what it was asked (config, models, languages, mode, budget), the study's code versions
(``config.code_versions``: config, package and source contents, each model's own), the sha256 of every record
and the size and modification time of every other file in the folder but the call cache. The
next ``clcg run`` asked the same, with the same code versions, on a folder whose records say
word for word what they said and whose files are all as they were, gets the same verdict
without importing Dagster or opening the instance. Any record written since (by ``clcg run``,
the daemon, the UI: the IO manager writes one with each partition, and its time changes its
contents), a removed partition, a new annotation file (in the data folder, or in an inbox the
config puts outside it), another model in models.yaml: a miss, and the full check decides.
Records are compared by content, not modification time, so a filesystem with coarse
timestamps cannot hide a rewrite. Local folders only: on an object store, listing the folder
costs what the full check does.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from clcg_pipeline.storage._duck import is_local
from clcg_pipeline.storage._files import write_json
from clcg_pipeline.storage._records import RECORDS

SNAPSHOT = "_complete_run.json"
_FORMAT = 2  # 2: records by content
_SKIPPED = ("cache",)  # the call cache: what it holds changes no partition


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


def _fingerprint(root: Path, request: Mapping[str, Any]) -> dict[str, list[int] | str]:
    return {**_files(root), **_outside_inbox(root, request)}


def _local_root(data_dir: str) -> Path | None:
    if not is_local(data_dir):
        return None
    return Path(data_dir.removeprefix("file://")).resolve()


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
    root = _local_root(data_dir)
    if root is None:
        return
    snapshot = {
        "format": _FORMAT,
        "request": dict(request),
        "partitions": partitions,
        "files": _fingerprint(root, request),
    }
    write_json(root / RECORDS / SNAPSHOT, snapshot)


def complete_run_holds(data_dir: str, request: Mapping[str, Any]) -> int | None:
    """The number of partitions up to date when the last complete run for ``request`` left the
    folder exactly as it is now; None otherwise (the full check decides)."""
    root = _local_root(data_dir)
    if root is None:
        return None
    try:
        snapshot = json.loads((root / RECORDS / SNAPSHOT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(snapshot, dict) or snapshot.get("format") != _FORMAT:
        return None
    if snapshot.get("request") != json.loads(json.dumps(dict(request))):
        return None
    if snapshot.get("files") != _fingerprint(root, request):
        return None
    return int(snapshot.get("partitions", 0))
