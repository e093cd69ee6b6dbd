"""What the data folder itself says about how each stored partition was made.

Beside the tables, ``_records/<asset>/<partition>.json`` holds, for every asset partition the
IO manager wrote: the asset's code version (a per-model asset's: the partition's model's,
``partition_record_version``), when it was written (nanoseconds since the epoch),
the Dagster run, the file, and the output's plain metadata (call outcomes, the annotation
inbox's fingerprint). ``clcg run`` judges a partition up to date from these, so a copied
folder, or one run with another Dagster home, is as current as it was: the Dagster instance
only knows the runs it saw. Written after the partition's file, so a record never names a file
that is not there yet; a crash between the two leaves a file without a record (redone).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from upath import UPath

from clcg_pipeline.storage._files import write_json

RECORDS = "_records"
_UNPARTITIONED = "_"
# The spec metadata entry of a per-model asset holding each model's code version
# (``orchestration/_versions.py``): Dagster versions an asset, the records a partition.
MODEL_VERSIONS = "clcg/model_code_versions"


def _name(partition: str | None) -> str:
    return _UNPARTITIONED if partition is None else quote(partition, safe="")


def plain_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata values that are plain JSON (numbers, text, flags, dicts and lists of them)."""
    plain: dict[str, Any] = {}
    for name, value in metadata.items():
        value = getattr(value, "value", value)  # a Dagster MetadataValue holds it in .value
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        plain[name] = value
    return plain


def write_record(
    base: str,
    asset: str,
    partition: str | None,
    *,
    code_version: str | None,
    run_id: str,
    path: str,
    metadata: Mapping[str, Any],
) -> None:
    """Record how ``asset[partition]`` was just written (its file at ``path``, inside ``base``)."""
    root = str(UPath(base)).rstrip("/")
    target = str(UPath(path))
    if target.startswith(root + "/"):
        target = target[len(root) + 1 :]  # kept relative: the record holds in a copied folder
    record = {
        "asset": asset,
        "partition": partition,
        "code_version": code_version,
        "written_ns": time.time_ns(),
        "run_id": run_id,
        "path": target,
        "metadata": plain_metadata(metadata),
    }
    write_json(UPath(base) / RECORDS / asset / f"{_name(partition)}.json", record)


def read_records(base: str, asset: str) -> dict[str | None, dict[str, Any]]:
    """Every partition's record of ``asset`` (one listing of its folder)."""
    folder = UPath(base) / RECORDS / asset
    if not folder.exists():
        return {}
    found: dict[str | None, dict[str, Any]] = {}
    for path in folder.iterdir():
        if not path.name.endswith(".json"):
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: as if absent, the partition is redone
        stem = path.name[: -len(".json")]
        found[None if stem == _UNPARTITIONED else unquote(stem)] = record
    return found
