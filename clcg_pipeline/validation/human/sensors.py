"""The annotation inbox sensor: a new or changed file in the inbox runs the import and the joins.

The cursor is the inbox's (file name, sha256) list, so a file dropped, replaced or renamed is
seen once; the import asset itself decides what is new (its log), so a repeated run is harmless.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.validation.human._exchange_format import InboxFile

HUMAN_VALIDATION_JOB = "human_validation_job"
#: Seconds between two looks at the inbox: annotation files arrive by hand, so this is plenty.
INBOX_INTERVAL_S = 30
#: What the import needs to exist before it can run.
IMPORT_INPUTS = ("annotation_sample", "keypoints")


def inbox_dir(data_dir: str, inbox: str) -> UPath:
    return UPath(data_dir).joinpath(*PurePosixPath(inbox).parts)


def read_inbox(folder: UPath) -> list[InboxFile]:
    """The annotation files in the inbox (hidden and temporary files are not annotations)."""
    if not folder.exists():
        return []
    return [
        InboxFile(path.name, path.read_bytes())
        for path in sorted(folder.iterdir(), key=lambda p: p.name)
        if path.is_file() and not path.name.startswith(".")
    ]


def inbox_cursor(files: list[InboxFile]) -> str:
    return json.dumps([[f.name, f.sha256] for f in files], separators=(",", ":"))


#: The metadata entry of ``annotation_imports`` holding the inbox it was imported from.
INBOX_METADATA = "inbox"


def inbox_fingerprint(data_dir: str, inbox: str) -> str:
    """The inbox's (file name, sha256) list now: unchanged since the last import, nothing is new."""
    return inbox_cursor(read_inbox(inbox_dir(data_dir, inbox)))


def build_annotation_inbox_sensor(config: ProjectConfig) -> dg.SensorDefinition:
    del config  # the inbox is re-read from the config on each tick, like the other sensors

    @dg.sensor(
        name="annotation_inbox_sensor",
        job_name=HUMAN_VALIDATION_JOB,
        minimum_interval_seconds=INBOX_INTERVAL_S,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Runs the annotation import and the human-validation joins when a file is added "
        "to or changed in the annotation inbox (study.human_validation.inbox).",
    )
    def annotation_inbox_sensor(context: dg.SensorEvaluationContext, study: StudyResource) -> dg.SensorResult:
        cfg = study.load()
        folder = inbox_dir(study.data_dir, cfg.study.human_validation.inbox)
        files = read_inbox(folder)
        cursor = inbox_cursor(files)
        if not files:
            return dg.SensorResult(skip_reason=f"awaiting annotations: {folder} holds no file", cursor=cursor)
        if cursor == context.cursor:
            return dg.SensorResult(skip_reason="no new or changed annotation file", cursor=cursor)
        missing = [
            name
            for name in IMPORT_INPUTS
            if context.instance.get_latest_materialization_event(dg.AssetKey(name)) is None
        ]
        if missing:
            # Keep the old cursor: the files are looked at again once the sample exists.
            return dg.SensorResult(skip_reason=f"annotation files waiting: {missing} not materialized yet")
        known = {name for name, _ in json.loads(context.cursor)} if context.cursor else set()
        new = [f.name for f in files if f.name not in known]
        context.log.info(
            f"annotation inbox changed ({len(files)} file(s); new names {new}): requesting the import"
        )
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=hashlib.sha256(cursor.encode()).hexdigest()[:16])],
            cursor=cursor,
        )

    return annotation_inbox_sensor
