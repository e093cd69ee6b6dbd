"""The data folder as a complete ``clcg run`` left it: a rerun with nothing changed runs nothing, fast.

When ``clcg run`` ends with every partition it was asked for up to date (judged in full, from
the folder's records, ``orchestration/_freshness.py``), it writes
``_records/_complete_run.json``: what it was asked (config, models, languages, mode, budget),
the study's code versions (``config.code_versions``: config, package and source contents) and
the size and modification time of every file in the folder but the call cache. The next
``clcg run`` asked the same, with the same code versions, on a folder whose files are all as
they were, is up to date without importing Dagster or opening the instance. Anything else
(a file written by the daemon, a removed partition, a new annotation file, another model in
models.yaml) misses, and the full check runs. Local folders only: on an object store, listing
the folder costs what the full check does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clcg_pipeline.storage._duck import is_local
from clcg_pipeline.storage._files import write_json
from clcg_pipeline.storage._records import RECORDS

SNAPSHOT = "_complete_run.json"
_FORMAT = 1
_SKIPPED = ("cache",)  # the call cache: what it holds changes no partition


def _files(root: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for folder, dirs, names in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d not in _SKIPPED]
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if relative == os.path.join(RECORDS, SNAPSHOT):
                continue
            try:
                stat = os.stat(path)
            except FileNotFoundError:
                continue
            found[relative] = [stat.st_mtime_ns, stat.st_size]
    return found


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
) -> dict[str, Any]:
    """What a ``clcg run`` was asked, as its complete-run record keeps it (``--force`` aside)."""
    return {
        "config_dir": os.path.abspath(config_dir),
        "versions": dict(versions),
        "models": models,
        "languages": languages,
        "mode": mode,
        "budget_usd": budget_usd,
    }


def write_complete_run(data_dir: str, request: Mapping[str, Any], partitions: int) -> None:
    """Record that ``data_dir`` is up to date for ``request`` (plain JSON), over ``partitions``."""
    root = _local_root(data_dir)
    if root is None:
        return
    snapshot = {"format": _FORMAT, "request": dict(request), "partitions": partitions, "files": _files(root)}
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
    if snapshot.get("files") != _files(root):
        return None
    return int(snapshot.get("partitions", 0))
