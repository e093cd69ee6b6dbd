"""Is a job partition up to date *in this data folder*? Answered from the folder's own records.

Every asset the job writes must have been stored in this folder with the current code version
(``clcg_pipeline/orchestration/_versions.py``), after everything it reads, and its file must
still be there. The IO manager records each partition it writes beside the tables
(``storage/_records.py``), whoever launched the run, so a copied folder, or one run with
another Dagster home, is judged as it is. A folder written before those records existed is
judged from the Dagster instance's materializations stored in it, as before.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.orchestration._dagster_internals import CODE_VERSION_TAG
from clcg_pipeline.orchestration._summary import PARTITION_CALL_TABLES, UNFINISHED_OUTCOMES
from clcg_pipeline.orchestration._versions import code_versions, version_for
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, MODEL_CALLS
from clcg_pipeline.storage import read_frame, read_records

# How many of a partition's latest materializations to look through for one stored in this
# data folder (others may have gone to another folder on the same instance).
_LOOKBACK = 25
# How many of an asset's latest materializations (all partitions) are read at once.
_RECENT = 1000


def fingerprint(config: ProjectConfig) -> str:
    """What the study's results depend on besides the data: config, code, source contents.

    The same for a folder written as a path or as a ``file://`` URL, for a wheel install and
    a checkout; it is the code version of the non-corpus assets.
    """
    return code_versions(config)["study"]


def data_location(path: str | os.PathLike[str]) -> str:
    """One spelling per place: ``/a/b``, ``file:///a/b`` and ``a/b`` (from /a) are the same."""
    target = UPath(path)
    if target.protocol in ("", "file", "local"):
        return "file://" + os.path.abspath(target.path)
    return f"{target.protocol}://{target.path.rstrip('/')}"


class Freshness:
    """Answers "is this job partition up to date in this data folder?" from the instance."""

    def __init__(
        self, instance: dg.DagsterInstance, defs: dg.Definitions, data_dir: str, versions: dict[str, str]
    ) -> None:
        self.instance = instance
        self.graph = defs.resolve_asset_graph()
        self.folder = data_location(data_dir).rstrip("/") + "/"
        self.versions = versions
        self.data_dir = data_dir
        self._records: dict[tuple[str, str | None], dg.EventLogRecord | None] = {}
        self._recent_by_asset: dict[str, tuple[dict[str | None, dg.EventLogRecord], bool]] = {}
        self._folder: dict[str, dict[str | None, dict[str, Any]]] = {}

    # -- the folder's records (storage/_records.py) --------------------------------------

    def folder_record(self, asset: str, partition: str | None) -> dict[str, Any] | None:
        """How the folder says ``asset[partition]`` was written, if it says."""
        if asset not in self._folder:
            self._folder[asset] = read_records(self.data_dir, asset)
        return self._folder[asset].get(partition)

    def recorded_metadata(self, asset: str, partition: str | None, name: str) -> Any:
        """A metadata value of the stored partition: from the folder's record, else the instance."""
        record = self.folder_record(asset, partition)
        if record is not None:
            return record.get("metadata", {}).get(name)
        stored = self.stored_here(asset, partition)
        materialization = stored.asset_materialization if stored is not None else None
        entry = materialization.metadata.get(name) if materialization is not None else None
        return entry.value if entry is not None else None

    def _folder_up_to_date(
        self, record: dict[str, Any], asset: str, partition: str | None, isos: Sequence[str]
    ) -> bool:
        if record.get("code_version") != version_for(asset, self.versions):
            return False
        if not (UPath(self.data_dir) / str(record.get("path", ""))).exists():
            return False
        written = int(record.get("written_ns", 0))
        for parent, parent_partition in self._parents(asset, partition, isos):
            upstream = self.folder_record(parent, parent_partition)
            if upstream is None and self.stored_here(parent, parent_partition) is not None:
                return False  # the input is recorded by the instance only: no order to compare
            if upstream is not None and int(upstream.get("written_ns", 0)) > written:
                return False
        return True

    # -- the instance's materializations (folders written before the records) ------------

    def stored_here(self, asset: str, partition: str | None) -> dg.EventLogRecord | None:
        """The latest materialization of ``asset[partition]`` written into this data folder."""
        key = (asset, partition)
        if key not in self._records:
            found, complete = self._recent(asset)
            if partition in found or complete:
                self._records[key] = found.get(partition)
            else:
                self._records[key] = self._latest_stored_here(asset, partition)
        return self._records[key]

    def _recent(self, asset: str) -> tuple[dict[str | None, dg.EventLogRecord], bool]:
        """The newest materialization stored here of each partition among the asset's latest
        ``_RECENT``, and whether those are all there are: one query per asset, not per partition
        (a no-op ``clcg run`` asks about hundreds of partitions)."""
        if asset not in self._recent_by_asset:
            records = self.instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=_RECENT
            ).records
            found: dict[str | None, dg.EventLogRecord] = {}
            for record in filter(self._is_here, records):  # newest first
                found.setdefault(record.partition_key, record)
            self._recent_by_asset[asset] = (found, len(records) < _RECENT)
        return self._recent_by_asset[asset]

    def _latest_stored_here(self, asset: str, partition: str | None) -> dg.EventLogRecord | None:
        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
            ),
            limit=_LOOKBACK,
        ).records
        return next(filter(self._is_here, records), None)

    def newest_stored_here(self, asset: str) -> int | None:
        """The storage id of the newest materialization of any partition of ``asset`` stored here."""
        found, complete = self._recent(asset)
        if found:
            return max(record.storage_id for record in found.values())
        if complete:
            return None
        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=_LOOKBACK * _RECENT
        ).records
        record = next(filter(self._is_here, records), None)
        return record.storage_id if record is not None else None

    def newer_than_everything_read(self, assets: Sequence[str]) -> bool:
        """Each of ``assets`` (a job that reads every partition of its inputs) was stored after
        every partition, stored here, of every asset the job reads and does not write."""
        own = {dg.AssetKey(asset) for asset in assets}
        read = {parent for key in own for parent in self.graph.get(key).parent_keys} - own
        written = [self.folder_record(asset, None) for asset in assets]
        if all(record is not None for record in written):
            oldest_ns = min(int(record.get("written_ns", 0)) for record in written if record is not None)
            for key in read:
                name = key.to_user_string()
                if any(int(r.get("written_ns", 0)) > oldest_ns for r in self._all_folder_records(name)):
                    return False
            return True
        records = [self.stored_here(asset, None) for asset in assets]
        if any(record is None for record in records):
            return False
        oldest = min(record.storage_id for record in records if record is not None)
        newest = (self.newest_stored_here(key.to_user_string()) for key in read)
        return all(storage_id is None or storage_id < oldest for storage_id in newest)

    def _all_folder_records(self, asset: str) -> list[dict[str, Any]]:
        self.folder_record(asset, None)
        return list(self._folder[asset].values())

    def forget(self, assets: Sequence[str], partition: str | None) -> None:
        for asset in assets:
            self._records.pop((asset, partition), None)
            self._recent_by_asset.pop(asset, None)
            self._folder.pop(asset, None)

    def _is_here(self, record: dg.EventLogRecord) -> bool:
        """The materialization was stored in this data folder."""
        path = self._path(record)
        return path is not None and data_location(path).startswith(self.folder)

    @staticmethod
    def _path(record: dg.EventLogRecord) -> str | None:
        materialization = record.asset_materialization
        entry = materialization.metadata.get("path") if materialization else None
        return str(entry.value) if entry is not None else None

    def _parents(
        self, asset: str, partition: str | None, isos: Sequence[str]
    ) -> list[tuple[str, str | None]]:
        node = self.graph.get(dg.AssetKey(asset))
        parents: list[tuple[str, str | None]] = []
        for parent_key in node.parent_keys:
            parent = self.graph.get(parent_key)
            name = parent_key.to_user_string()
            if name == MODEL_CALLS:
                continue  # orders the runs only: its answers are read from the call cache
            if parent.partitions_def is None:
                parents.append((name, None))
            elif parent.partitions_def == node.partitions_def:
                parents.append((name, partition))
            elif isinstance(node.partitions_def, dg.MultiPartitionsDefinition) and partition is not None:
                # A language x model partition reads its language's partition.
                key = node.partitions_def.get_partition_key_from_str(partition)
                parents.append((name, key.keys_by_dimension[LANGUAGE_DIMENSION]))
            else:
                parents.extend((name, iso) for iso in isos)  # an unpartitioned reader of every language
        return parents

    def up_to_date(self, assets: Sequence[str], partition: str | None, isos: Sequence[str]) -> bool:
        """Every asset stored here, current, on disk, and newer than everything it reads."""
        return all(self._asset_up_to_date(asset, partition, isos) for asset in assets)

    def _asset_up_to_date(self, asset: str, partition: str | None, isos: Sequence[str]) -> bool:
        written = self.folder_record(asset, partition)
        if written is not None:
            return self._folder_up_to_date(written, asset, partition, isos)
        record = self.stored_here(asset, partition)
        materialization = record.asset_materialization if record else None
        if record is None or materialization is None:
            return False
        if (materialization.tags or {}).get(CODE_VERSION_TAG) != version_for(asset, self.versions):
            return False
        path = self._path(record)
        if path is None or not UPath(path).exists():
            return False
        for parent, parent_partition in self._parents(asset, partition, isos):
            upstream = self.stored_here(parent, parent_partition)
            if upstream is not None and upstream.storage_id > record.storage_id:
                return False
        return True

    def unfinished_calls(
        self, partition: str | None, tables: Sequence[str] = tuple(PARTITION_CALL_TABLES)
    ) -> bool:
        """True when any of the partition's calls stopped short (budget, a pending batch): by
        default its responses, its granularity tasks' answers or their judges."""
        return any(self._unfinished(table, partition) for table in tables)

    def _unfinished(self, table: str, partition: str | None) -> bool:
        written = self.folder_record(table, partition)
        if written is not None:
            outcomes = written.get("metadata", {}).get("outcomes")
            if isinstance(outcomes, dict):
                return any(outcomes.get(outcome) for outcome in UNFINISHED_OUTCOMES)
            path: str | None = str(UPath(self.data_dir) / str(written.get("path", "")))
        else:
            record = self.stored_here(table, partition)
            if record is None or record.asset_materialization is None:
                return True
            entry = record.asset_materialization.metadata.get("outcomes")
            outcomes = entry.value if entry is not None else None
            path = self._path(record)
        if isinstance(outcomes, dict):
            return any(outcomes.get(outcome) for outcome in UNFINISHED_OUTCOMES)
        calls = read_frame(path) if path and UPath(path).exists() else None
        return calls is None or (
            "outcome" in calls.columns and bool(calls["outcome"].isin(UNFINISHED_OUTCOMES).any())
        )
