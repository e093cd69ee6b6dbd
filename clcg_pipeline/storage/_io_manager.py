"""The Parquet IO manager: one file per asset partition, in hive layout.

Dagster's DuckDB IO manager cannot handle a dynamic partition dimension and DuckDB allows a
single writer, so assets write Parquet here and DuckDB only ever reads (DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.partitions import PartitionFrames, model_of_partition
from clcg_pipeline.storage._files import (
    DATA_FILE,
    _frame_bytes,
    partition_dir,
    read_frame,
    read_json,
    update_frame,
    write_bytes_atomic,
    write_frame,
    write_json,
)
from clcg_pipeline.storage._paid import LEFT_OUT_FILE, UNPAID_OUTCOMES, is_calls_shaped, keep_paid_record
from clcg_pipeline.storage._records import MODEL_VERSIONS, write_record
from clcg_pipeline.storage._tables import TABLES

_PREVIEW_ROWS = 5


def _left_out_payments(frame: pd.DataFrame, stored: pd.DataFrame | None) -> pd.DataFrame:
    """The ``stored`` table's paid calls that ``frame`` no longer holds, as they were (a call
    never made, a budget's skip, is no payment: not kept)."""
    if stored is None or not len(stored) or not is_calls_shaped(stored):
        return frame.iloc[0:0]
    made = ~stored["cached"].astype(bool)
    if "outcome" in stored.columns:
        made &= ~stored["outcome"].isin(UNPAID_OUTCOMES)
    return stored[made & ~stored["call_id"].isin(frame["call_id"])].reset_index(drop=True)


def _with_left_out_payments(frame: pd.DataFrame, stored: pd.DataFrame | None) -> pd.DataFrame:
    """``frame`` and the ``stored`` table's paid calls it no longer holds, as they were.

    An unpartitioned calls table (``judge_calls``, ``keypoint_calls``, the writers' and the
    item generator's) is recomputed whole when its sample is redrawn (a model added): the
    calls of what the new sample left out are not in ``frame``, yet they were paid, and with
    no table recording them the spend would name them "not yet recorded in a partition" (a
    run killed after paying). Its readers read it whole as the study's judge calls.
    """
    left_out = _left_out_payments(frame, stored)
    if not len(left_out):
        return frame
    if not len(frame):  # nothing asked now (the judges switched off): the record alone
        return left_out
    return pd.concat([frame, left_out], ignore_index=True)


def _paid_kept_apart(
    path: UPath,
    frame: pd.DataFrame,
    stored: pd.DataFrame | None,
    contract: str | None,
    run_id: str,
    now: pd.Timestamp,
) -> pd.DataFrame:
    """A partition's calls table as it is to be written (``keep_paid_record``), its paid calls
    this write no longer makes written beside it (``LEFT_OUT_FILE``), never in it.

    A partition asking fewer items (a config change) no longer makes some calls it paid for;
    its table is read as the partition's current calls (the analysis reads ``task_calls`` and
    ``task_judge_calls``), so their record goes to a file only the spend reads. A call asked
    again takes its record back from that file: one payment, in one of the two, never both.
    """
    record = path.with_name(LEFT_OUT_FILE)
    earlier = read_frame(record) if record.exists() else None
    known = [table for table in (stored, earlier) if table is not None and len(table)]
    everything = pd.concat(known, ignore_index=True) if len(known) > 1 else (known[0] if known else None)
    written = keep_paid_record(frame, everything, run_id, now)
    left_out = _left_out_payments(written, everything)
    if len(left_out):
        write_frame(record, left_out, contract=contract)
    elif earlier is not None:
        record.unlink(missing_ok=True)
    return written


# Here, not in _records: it needs the partition keys' layout (``partitions``, which imports
# Dagster), and the records are read on ``clcg run``'s no-op path without Dagster.
def partition_record_version(
    asset_version: str | None, spec_metadata: Mapping[str, Any], partition: str | None
) -> str | None:
    """The code version to record for ``partition`` of an asset with these spec version and
    metadata: its model's version where the spec lists them (None for a model it does not
    list: never current), else the asset's own."""
    listed = spec_metadata.get(MODEL_VERSIONS)
    if listed is None or partition is None:
        return asset_version
    by_model = getattr(listed, "value", listed)  # a Dagster MetadataValue holds it in .value
    model = model_of_partition(partition) or partition  # model_calls is keyed by the model alone
    version = by_model.get(model) if isinstance(by_model, Mapping) else None
    return str(version) if version is not None else None


def partition_dims(key: str, partitions_def: dg.PartitionsDefinition | None) -> dict[str, str]:
    """Map a partition key to ``{dimension: value}`` (a single dimension is named ``language``)."""
    if isinstance(key, dg.MultiPartitionKey):
        return dict(sorted(key.keys_by_dimension.items()))
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return dict(sorted(partitions_def.get_partition_key_from_str(key).keys_by_dimension.items()))
    return {"language": key}


def _is_partitioned(context: dg.OutputContext) -> bool:
    """Whether the output's asset has a partitions definition (Dagster raises when it has none)."""
    try:
        return context.asset_partitions_def is not None
    except dg.DagsterInvariantViolationError:
        return False


def _code_version(context: dg.OutputContext, partition: str | None) -> str | None:
    """The version the partition's record carries: its model's for a per-model asset."""
    try:
        spec = context.asset_spec
    except dg.DagsterInvariantViolationError:  # an output built outside a run (tests)
        return None
    return partition_record_version(spec.code_version, spec.metadata, partition)


def _table_metadata(path: UPath, frame: pd.DataFrame) -> dict[str, Any]:
    preview = frame.head(_PREVIEW_ROWS).to_markdown(index=False) if len(frame) else "(no rows)"
    return {
        "dagster/row_count": len(frame),
        "path": dg.MetadataValue.path(str(path)),
        "preview": dg.MetadataValue.md(preview),
    }


def _frames_by_partition(
    asset: str, obj: Any, keys: Sequence[str], partitions_def: dg.PartitionsDefinition
) -> dict[str, pd.DataFrame]:
    """Each partition's rows of a range run's output: given per partition, or a table split by
    its partition dimension columns (language, model). A partition without rows gets an empty
    table: an empty partition is a state of its own (its check warns), not a missing file."""
    if isinstance(obj, PartitionFrames):
        missing = [key for key in keys if key not in obj.frames]
        if missing:
            raise ValueError(f"asset {asset!r}: the run covers {missing} but has no table for them")
        return {key: obj.frames[key] for key in keys}
    if not isinstance(obj, pd.DataFrame):
        raise TypeError(
            f"asset {asset!r}: a run over {len(keys)} partitions cannot store a {type(obj).__name__}; "
            "return a DataFrame with the partition columns or a PartitionFrames"
        )
    frames: dict[str, pd.DataFrame] = {}
    for key in keys:
        dims = partition_dims(key, partitions_def)
        absent = [column for column in dims if column not in obj.columns]
        if absent:
            raise ValueError(
                f"asset {asset!r}: a run over {len(keys)} partitions cannot split a table without "
                f"the column(s) {absent}; nothing was written"
            )
        mask = pd.Series(True, index=obj.index)
        for column, value in dims.items():
            mask &= obj[column].astype(str) == value
        frames[key] = obj.loc[mask].reset_index(drop=True)
    return frames


def _write_if_changed(path: UPath, frame: pd.DataFrame, contract: str | None) -> None:
    """Write ``frame`` unless ``path`` holds it already, byte for byte: the frozen
    ``annotation_sample``, yielded as read on every refresh, is not rewritten."""
    payload = _frame_bytes(frame, contract)
    if path.exists() and path.read_bytes() == payload:
        return
    write_bytes_atomic(path, payload)


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores DataFrames as Parquet (conformed to their data contract) and dicts as JSON."""

    base_path: str

    def _dir(self, asset: str, key: str | None, partitions_def: dg.PartitionsDefinition | None) -> UPath:
        dims: Mapping[str, str] | None = partition_dims(key, partitions_def) if key is not None else None
        return partition_dir(self.base_path, asset, dims)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        asset = context.asset_key.path[-1]
        if isinstance(obj, PartitionFrames) or (
            context.has_asset_partitions and len(context.asset_partition_keys) > 1
        ):
            self._write_range(context, asset, obj)
            return
        key = context.asset_partition_key if context.has_asset_partitions else None
        if key is None and _is_partitioned(context):
            # A run tagged only per dimension (dagster/partition/<dim>) gives the asset a key but
            # its outputs none; an unpartitioned file beside the partitions breaks every read.
            raise ValueError(
                f"asset {asset!r} is partitioned but this run has no partition key: launch it with "
                "the tag dagster/partition (e.g. 'en|<model id>' for language x model); nothing was written"
            )
        folder = self._dir(asset, key, context.asset_partitions_def if key else None)
        if isinstance(obj, pd.DataFrame):
            path, obj = self._write_table(folder, asset, obj, context.run_id, whole_study=key is None)
            context.add_output_metadata(_table_metadata(path, obj))
        elif isinstance(obj, dict):
            # An unpartitioned document sits beside the tables as <asset>.json (study_results.json).
            path = folder / "data.json" if key is not None else folder.parent / f"{asset}.json"
            write_json(path, obj, compact=True)  # read by programs; jq indents it for people
            context.add_output_metadata({"path": dg.MetadataValue.path(str(path))})
        else:
            raise TypeError(
                f"asset {asset!r}: cannot store a {type(obj).__name__}; return a DataFrame or dict"
            )
        write_record(
            self.base_path,
            asset,
            str(key) if key is not None else None,
            code_version=_code_version(context, str(key) if key is not None else None),
            run_id=context.run_id,
            path=str(path),
            metadata=context.output_metadata,
        )

    def _write_table(
        self, folder: UPath, asset: str, frame: pd.DataFrame, run_id: str, *, whole_study: bool = False
    ) -> tuple[UPath, pd.DataFrame]:
        """Write one partition's table (or an unpartitioned one: ``whole_study``); returns its
        path and the rows stored."""
        path = folder / DATA_FILE
        contract = asset if asset in TABLES else None
        if is_calls_shaped(frame):
            frame = self._write_calls(path, frame, contract, run_id, keep_left_out=whole_study)
        elif whole_study:  # a frozen table yielded as stored keeps its file (and time)
            _write_if_changed(path, frame, contract)
        else:  # derived from the inputs alone: a concurrent writer's table is as good as this one
            write_frame(path, frame, contract=contract)
        return path, frame

    def _write_range(self, context: dg.OutputContext, asset: str, obj: Any) -> None:
        """A run over a partition range: each partition's table and record, as if run alone.

        Dagster scopes the IO manager's metadata to every partition of the range, so each
        partition's row count reaches its materialization from the asset
        (``partitions.range_events``); its record holds its own output metadata, as alone.
        """
        partitions_def = context.asset_partitions_def
        keys = [str(key) for key in context.asset_partition_keys]
        frames = _frames_by_partition(asset, obj, keys, partitions_def)
        own = obj.metadata if isinstance(obj, PartitionFrames) else {}
        for key in keys:
            path, _ = self._write_table(
                self._dir(asset, key, partitions_def), asset, frames[key], context.run_id
            )
            write_record(
                self.base_path,
                asset,
                key,
                code_version=_code_version(context, key),
                run_id=context.run_id,
                path=str(path),
                # As a run of the partition alone records it: the output's metadata.
                metadata={**context.output_metadata, **own.get(key, {})},
            )
        context.add_output_metadata({"partitions": len(keys)})

    @staticmethod
    def _write_calls(
        path: UPath, frame: pd.DataFrame, contract: str | None, run_id: str, *, keep_left_out: bool
    ) -> pd.DataFrame:
        """Write a calls table keeping every payment already stored, whoever else writes it now,
        those of calls this write no longer makes included: in an unpartitioned table itself
        (``keep_left_out``), beside a partition's table (``_paid_kept_apart``)."""
        now = pd.Timestamp.now(tz="UTC")
        # Merged again with the other writer's table if one lands between this read and write.
        if keep_left_out:
            return update_frame(
                path,
                lambda stored: _with_left_out_payments(keep_paid_record(frame, stored, run_id, now), stored),
                contract=contract,
            )
        return update_frame(
            path,
            lambda stored: _paid_kept_apart(path, frame, stored, contract, run_id, now),
            contract=contract,
        )

    def load_input(self, context: dg.InputContext) -> Any:
        asset = context.asset_key.path[-1]
        if not context.has_asset_partitions:
            return self._read(self._dir(asset, None, None), asset)
        partitions_def = context.asset_partitions_def
        frames = [
            self._read(self._dir(asset, key, partitions_def), asset)
            for key in sorted(context.asset_partition_keys)
        ]
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    @staticmethod
    def _read(folder: UPath, asset: str) -> Any:
        if (folder / DATA_FILE).exists():
            return read_frame(folder / DATA_FILE)
        for document in (folder / "data.json", folder.parent / f"{asset}.json"):
            if document.exists():
                return read_json(document)
        raise FileNotFoundError(
            f"asset {asset!r}: nothing stored at {folder} - materialize that partition first"
        )
