"""Is a job partition up to date *in this data folder*? Answered from the Dagster instance.

Every asset the job writes must have a materialization, recorded by Dagster whoever launched
it, that was stored in this folder, carries the current code version
(``clcg_pipeline/orchestration/_versions.py``), is newer than everything it reads, and whose
file is still there. The files are the truth; the instance only says how they were made.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.orchestration._dagster_internals import CODE_VERSION_TAG
from clcg_pipeline.orchestration._summary import PARTITION_CALL_TABLES, UNFINISHED_OUTCOMES
from clcg_pipeline.orchestration._versions import code_versions, version_for
from clcg_pipeline.partitions import LANGUAGE_DIMENSION
from clcg_pipeline.storage import read_frame

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
        self._records: dict[tuple[str, str | None], dg.EventLogRecord | None] = {}
        self._recent_by_asset: dict[str, tuple[dict[str | None, dg.EventLogRecord], bool]] = {}

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
        records = [self.stored_here(asset, None) for asset in assets]
        if any(record is None for record in records):
            return False
        oldest = min(record.storage_id for record in records if record is not None)
        read = {parent for key in own for parent in self.graph.get(key).parent_keys} - own
        newest = (self.newest_stored_here(key.to_user_string()) for key in read)
        return all(storage_id is None or storage_id < oldest for storage_id in newest)

    def forget(self, assets: Sequence[str], partition: str | None) -> None:
        for asset in assets:
            self._records.pop((asset, partition), None)
            self._recent_by_asset.pop(asset, None)

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
        record = self.stored_here(asset, partition)
        materialization = record.asset_materialization if record else None
        if record is None or materialization is None:
            return False
        if materialization.tags.get(CODE_VERSION_TAG) != version_for(asset, self.versions):
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
        record = self.stored_here(table, partition)
        if record is None or record.asset_materialization is None:
            return True
        outcomes = record.asset_materialization.metadata.get("outcomes")
        if outcomes is not None and isinstance(outcomes.value, dict):
            return any(outcomes.value.get(outcome) for outcome in UNFINISHED_OUTCOMES)
        path = self._path(record)
        calls = read_frame(path) if path else None
        return calls is None or (
            "outcome" in calls.columns and bool(calls["outcome"].isin(UNFINISHED_OUTCOMES).any())
        )
