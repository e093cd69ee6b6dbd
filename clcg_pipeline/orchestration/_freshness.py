"""Is a job partition up to date *in this data folder*? Answered from the folder's records alone.

Every asset the job writes must be recorded in this folder (``storage/_records.py``, written by
the IO manager whoever launched the run) with the current code version (``_versions``; a
language x model partition: its model's), after everything it reads, and its file must still be
there. The Dagster instance is never asked, so a copied folder is judged as it is; a folder
without records is redone, its calls free from the call cache. The complete-run snapshot
(``storage/_snapshot.py``) only memoizes this verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg
from upath import UPath

from clcg_pipeline.orchestration._summary import PARTITION_CALL_TABLES, UNFINISHED_OUTCOMES
from clcg_pipeline.orchestration._versions import partition_version, version_kinds
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, MODEL_CALLS
from clcg_pipeline.storage import read_frame, read_records


class Freshness:
    """Answers "is this job partition up to date in this data folder?" from the folder's records.

    ``defs`` gives the asset graph (what each asset reads); nothing is read from an instance.
    """

    def __init__(self, defs: dg.Definitions, data_dir: str, versions: dict[str, str]) -> None:
        self.graph = defs.resolve_asset_graph()
        self.versions = versions
        self.kinds = version_kinds(defs)
        self.data_dir = data_dir
        self._folder: dict[str, dict[str | None, dict[str, Any]]] = {}

    def folder_record(self, asset: str, partition: str | None) -> dict[str, Any] | None:
        """How the folder says ``asset[partition]`` was written, if it says."""
        if asset not in self._folder:
            self._folder[asset] = read_records(self.data_dir, asset)  # one listing per asset
        return self._folder[asset].get(partition)

    def recorded_metadata(self, asset: str, partition: str | None, name: str) -> Any:
        """A metadata value of the stored partition, as its record keeps it (None: no record)."""
        record = self.folder_record(asset, partition)
        return record.get("metadata", {}).get(name) if record is not None else None

    def up_to_date(self, assets: Sequence[str], partition: str | None, isos: Sequence[str]) -> bool:
        """Every asset recorded here, current, on disk, and newer than everything it reads."""
        return all(self._asset_up_to_date(asset, partition, isos) for asset in assets)

    def _asset_up_to_date(self, asset: str, partition: str | None, isos: Sequence[str]) -> bool:
        record = self.folder_record(asset, partition)
        # A per-model partition is judged by its model's version: adding or editing another
        # model leaves it current (``_versions``).
        current = partition_version(asset, partition, self.versions, self.kinds)
        if record is None or current is None or record.get("code_version") != current:
            return False
        if not (UPath(self.data_dir) / str(record.get("path", ""))).exists():
            return False
        written = int(record.get("written_ns", 0))
        for parent, parent_partition in self._parents(asset, partition, isos):
            upstream = self.folder_record(parent, parent_partition)
            # An input without a record is judged (and redone) as its own job's partition.
            if upstream is not None and int(upstream.get("written_ns", 0)) > written:
                return False
        return True

    def newer_than_everything_read(self, assets: Sequence[str]) -> bool:
        """Each of ``assets`` (a job that reads every partition of its inputs) was recorded after
        every partition, recorded here, of every asset the job reads and does not write."""
        own = {dg.AssetKey(asset) for asset in assets}
        read = {parent for key in own for parent in self.graph.get(key).parent_keys} - own
        written = [self.folder_record(asset, None) for asset in assets]
        if any(record is None for record in written):
            return False
        oldest_ns = min(int(record.get("written_ns", 0)) for record in written if record is not None)
        for key in read:
            name = key.to_user_string()
            self.folder_record(name, None)
            if any(int(r.get("written_ns", 0)) > oldest_ns for r in self._folder[name].values()):
                return False
        return True

    def forget(self, assets: Sequence[str]) -> None:
        """Read the records of ``assets`` again next time (a run just wrote them): all of an
        asset's partitions, read in one listing."""
        for asset in assets:
            self._folder.pop(asset, None)

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

    def unfinished_calls(
        self, partition: str | None, tables: Sequence[str] = tuple(PARTITION_CALL_TABLES)
    ) -> bool:
        """True when any of the partition's calls stopped short (budget, a pending batch): by
        default its responses, its granularity tasks' answers or their judges."""
        return any(self._unfinished(table, partition) for table in tables)

    def _unfinished(self, table: str, partition: str | None) -> bool:
        record = self.folder_record(table, partition)
        if record is None:
            return True  # never recorded here: its calls were never made here
        outcomes = record.get("metadata", {}).get("outcomes")
        if isinstance(outcomes, dict):
            return any(outcomes.get(outcome) for outcome in UNFINISHED_OUTCOMES)
        # A record without outcomes: the table itself says.
        path = UPath(self.data_dir) / str(record.get("path", ""))
        calls = read_frame(str(path)) if path.exists() else None
        return calls is None or (
            "outcome" in calls.columns and bool(calls["outcome"].isin(UNFINISHED_OUTCOMES).any())
        )
