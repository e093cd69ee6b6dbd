"""The data folder's records, told to a Dagster instance that lacks them: one source of "up to date".

Whether a partition is up to date is decided by the data folder's own records
(``storage/_records.py``, judged by ``_freshness.Freshness``); the daemon's declarative
automation (``_automation.py``) decides from the instance's materializations. On the instance
that ran the study the two agree. A folder copied to a fresh ``DAGSTER_HOME`` (or built with
another one) is up to date by its records, but the fresh instance has no materialization: its
UI showed every asset missing, and its daemon's first tick requested the corpus of every
language, then rebuilt the whole study after it (calls free from the cache, every file
rewritten).

``report_folder_records`` closes that gap from the records' side: every partition the records
say is current, and the instance has no materialization of, is reported to the instance as a
runless materialization (as ``_model_calls.record_stream`` does for a stream ``clcg run`` did
not run). A partition whose record is stale, or missing, is not reported, so it is still
rebuilt. Nothing is reported twice: a partition the instance knows is left as it is.

Where it runs: ``sync_folder_records`` before ``make dev`` (and ``LocalDaemon``) starts the
daemon, so the automation's first tick already sees the folder (the sensor alone is not enough
there: the daemon evaluates it and the automation side by side, and a real daemon on a fresh
instance launched runs before it reported); ``run_study`` after its steps, so what ``clcg run``
found current without running it shows in the UI; and ``folder_records_sensor`` whenever the
folder's records change while the daemon runs (a ``clcg run`` with another Dagster home, a
folder copied in).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig, default_config_dir, default_data_dir, ensure_dagster_home
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration._dagster_internals import CODE_VERSION_TAG
from clcg_pipeline.orchestration._freshness import Freshness
from clcg_pipeline.orchestration._jobs import RESPONSE_ASSETS
from clcg_pipeline.orchestration._versions import code_versions, version_for
from clcg_pipeline.partitions import MODEL_CALLS, response_key
from clcg_pipeline.resources import StudyResource, load_study_config
from clcg_pipeline.storage import RECORDS, read_records

# Said on every reported materialization, so the UI tells it from a run's.
REPORTED_FROM = "the data folder's records (orchestration/_records_sync.py)"
# Seconds between two looks at the folder's records by the sensor (a stat per asset folder).
SYNC_INTERVAL_S = 30
# Runs that may still write records (the sensor waits for them).
_IN_PROGRESS = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
_NOTHING_PENDING = "every partition of the model is up to date in the data folder: nothing to send"


class _FolderRecords(Freshness):
    """``Freshness`` that also hands out every recorded partition of an asset (the same listing)."""

    def partitions(self, asset: str) -> dict[str | None, dict[str, Any]]:
        self.folder_record(asset, None)  # one listing of the asset's records, kept for the verdicts
        return self._folder[asset]


def _known(
    instance: dg.DagsterInstance, plain: Sequence[dg.AssetKey], partitioned: Sequence[dg.AssetKey]
) -> dict[dg.AssetKey, set[str | None]]:
    """The partitions of each asset the instance has a materialization of: one query for all the
    unpartitioned assets (one each took 20 ms on SQLite: most of a run's look), one per partitioned."""
    latest = instance.get_latest_materialization_events(plain) if plain else {}
    known: dict[dg.AssetKey, set[str | None]] = {
        key: {None} if latest.get(key) is not None else set() for key in plain
    }
    for key in partitioned:
        known[key] = set[str | None](instance.get_materialized_partitions(key))
    return known


def _current(folder: _FolderRecords, asset: str, partition: str | None, isos: Sequence[str]) -> bool:
    """Up to date by the records; an unpartitioned asset also newer than every partition it reads
    (``Freshness.up_to_date`` skips the parent partitions it cannot name, a language x model's)."""
    if not folder.up_to_date([asset], partition, isos):
        return False
    return partition is not None or folder.newer_than_everything_read([asset])


def _event(
    key: dg.AssetKey, partition: str | None, record: dict[str, Any], code_version: str
) -> dg.AssetMaterialization:
    metadata = {
        **record.get("metadata", {}),
        "reported_from": REPORTED_FROM,
        "recorded_run_id": str(record.get("run_id", "")),
        "path": str(record.get("path", "")),
    }
    # Tagged with the code version as a run would record it, so the UI does not show it as changed.
    return dg.AssetMaterialization(
        key, partition=partition, metadata=metadata, tags={CODE_VERSION_TAG: code_version}
    )


def _stream_events(
    folder: _FolderRecords, config: ProjectConfig, known: set[str | None], isos: Sequence[str], version: str
) -> list[dg.AssetMaterialization]:
    """``model_calls`` keeps no file: a model's stream counts as done when every one of its
    language x model partitions is current in the folder (nothing left to send)."""
    events = []
    for model in config.models.evaluated:
        if model.id in known:
            continue
        if all(folder.up_to_date(RESPONSE_ASSETS, str(response_key(iso, model.id)), isos) for iso in isos):
            metadata: dict[str, Any] = {
                "streamed": False,
                "why": _NOTHING_PENDING,
                "reported_from": REPORTED_FROM,
            }
            events.append(
                dg.AssetMaterialization(
                    MODEL_CALLS, partition=model.id, metadata=metadata, tags={CODE_VERSION_TAG: version}
                )
            )
    return events


def _asset_events(
    instance: dg.DagsterInstance,
    folder: _FolderRecords,
    key: dg.AssetKey,
    known: set[str | None],
    isos: Sequence[str],
) -> list[dg.AssetMaterialization]:
    """The current recorded partitions of ``key`` the instance does not know, as materializations."""
    asset = key.to_user_string()
    recorded = folder.partitions(asset)
    if not set(recorded) - known:  # the usual case: nothing judged, no partition listed
        return []
    partitions_def = folder.graph.get(key).partitions_def
    valid: set[str | None] = {None}
    if partitions_def is not None:  # a record of a language or model no longer configured: not told
        valid = {str(p) for p in partitions_def.get_partition_keys(dynamic_partitions_store=instance)}
    version = version_for(asset, folder.versions, folder.kinds)
    return [
        _event(key, partition, record, version)
        for partition, record in sorted(recorded.items(), key=lambda item: str(item[0]))
        if partition in valid and partition not in known and _current(folder, asset, partition, isos)
    ]


def report_folder_records(
    instance: dg.DagsterInstance, defs: dg.Definitions, data_dir: str, config: ProjectConfig
) -> list[str]:
    """Report to ``instance`` every partition current by ``data_dir``'s records that it has no
    materialization of, upstream first; return them as ``asset[partition]``.

    One listing of records per asset; one query of the instance for the unpartitioned assets and
    one per partitioned asset with records. The model partitions of ``models.yaml`` are added
    first (as ``model_partitions_sensor`` would).
    """
    sync_model_partitions(instance, config)
    versions = code_versions(config)
    folder = _FolderRecords(defs, data_dir, versions)
    keys = [key for key in folder.graph.toposorted_asset_keys if folder.graph.get(key).is_materializable]
    plain = [key for key in keys if folder.graph.get(key).partitions_def is None]
    # model_calls keeps no records: what the instance knows of it is always asked.
    partitioned = [
        key
        for key in keys
        if key not in plain
        and (key.to_user_string() == MODEL_CALLS or folder.partitions(key.to_user_string()))
    ]
    known = _known(instance, plain, partitioned)
    isos = list(study_coverage(config).covered)
    events: list[dg.AssetMaterialization] = []
    for key in keys:
        if key.to_user_string() == MODEL_CALLS:
            version = version_for(MODEL_CALLS, versions, folder.kinds)
            events += _stream_events(folder, config, known[key], isos, version)
        elif key in known:
            events += _asset_events(instance, folder, key, known[key], isos)
    for event in events:
        instance.report_runless_asset_event(event)
    return [f"{e.asset_key.to_user_string()}[{e.partition or ''}]" for e in events]


def runs_in_progress(instance: dg.DagsterInstance) -> bool:
    """Whether a run on ``instance`` may still write records: a run writes a partition's record
    just before Dagster stores its materialization, so one reported in between is told twice."""
    return bool(instance.get_runs_count(dg.RunsFilter(statuses=_IN_PROGRESS)))


def sync_folder_records(
    config_dir: str | None = None,
    data_dir: str | None = None,
    *,
    say: Callable[[str], None] | None = None,
    dagster_home: str | None = None,
) -> list[str]:
    """``report_folder_records`` on ``DAGSTER_HOME``'s instance (or ``dagster_home``'s) for the
    default (or given) config and data folders: what ``make dev`` and ``LocalDaemon`` run before
    the daemon starts (its automation's first tick then sees the folder as it is). ``say`` gets
    one line when something was reported."""
    from clcg_pipeline.orchestration._definitions import build_definitions  # it imports this module

    config_path = config_dir or str(default_config_dir())
    data_path = data_dir or default_data_dir()
    config = load_study_config(config_path)
    defs = build_definitions(config_path, data_path)
    if dagster_home is None:
        ensure_dagster_home()
    with (
        dg.DagsterInstance.get() if dagster_home is None else dg.DagsterInstance.from_config(dagster_home)
    ) as instance:
        reported = report_folder_records(instance, defs, data_path, config)
    if reported and say is not None:
        say(
            f"{len(reported)} partitions up to date in {data_path} (its records) reported to the "
            "Dagster instance, which had no materialization of them"
        )
    return reported


def records_fingerprint(data_dir: str) -> str:
    """What changes whenever a record is written: on a local folder the newest modification time
    of the records folder and of each asset's folder in it (a record is written by an atomic
    rename, which touches its folder: a stat per asset, no record read); in an object store,
    which has no folders, a digest of one listing of every record's ETag."""
    root = UPath(data_dir) / RECORDS
    if not root.exists():
        return "no records"
    if root.protocol in ("", "file", "local"):
        folders = [root, *(path for path in root.iterdir() if path.is_dir())]
        return str(max(os.stat(path.path).st_mtime_ns for path in folders))
    listing = root.fs.find(root.path, detail=True)
    tags = sorted(
        (name, str(info.get("ETag") or info.get("LastModified") or info.get("size")))
        for name, info in listing.items()
    )
    return hashlib.sha256(json.dumps(tags).encode("utf-8")).hexdigest()


def _all_known(instance: dg.DagsterInstance, data_dir: str) -> bool:
    """Whether the instance has a materialization of every partition the folder records (one
    listing of records per asset, one query for the unpartitioned assets and one per partitioned
    asset; stale or not is not judged here)."""
    root = UPath(data_dir) / RECORDS
    assets = [path.name for path in root.iterdir() if path.is_dir()] if root.exists() else []
    recorded = {dg.AssetKey(asset): set(read_records(data_dir, asset)) for asset in assets}
    recorded = {key: partitions for key, partitions in recorded.items() if partitions}
    plain = [key for key, partitions in recorded.items() if partitions == {None}]
    known = _known(instance, plain, [key for key in recorded if key not in plain])
    return all(partitions <= known[key] for key, partitions in recorded.items())


@dg.sensor(
    minimum_interval_seconds=SYNC_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Reports the data folder's up-to-date partitions that this instance has no "
    "materialization of (a copied folder, another Dagster home's run), so the automation does "
    "not rebuild them: the folder's records decide what is up to date.",
)
def folder_records_sensor(context: dg.SensorEvaluationContext, study: StudyResource) -> dg.SensorResult:
    fingerprint = records_fingerprint(study.data_dir)
    if context.cursor == fingerprint:
        return dg.SensorResult(skip_reason="the folder's records are unchanged since the last look")
    if runs_in_progress(context.instance):  # looked at again next tick
        return dg.SensorResult(skip_reason="a run is in progress: its records are its own to report")
    if _all_known(context.instance, study.data_dir):
        # The usual case, the daemon's own runs: no definitions built, no freshness judged.
        return dg.SensorResult(cursor=fingerprint, skip_reason="every recorded partition is known here")
    from clcg_pipeline.orchestration._definitions import build_definitions  # it imports this module

    defs = build_definitions(study.config_dir, study.data_dir)
    reported = report_folder_records(context.instance, defs, study.data_dir, study.load())
    if reported:
        context.log.info(f"reported {len(reported)} partitions up to date in the data folder")
    return dg.SensorResult(
        cursor=fingerprint,
        skip_reason=None if reported else "every up-to-date partition of the folder is known here",
    )
