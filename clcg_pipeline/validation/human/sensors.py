"""The annotation inbox sensor: a new or changed file in the inbox runs the import and the joins.

The cursor is the inbox's (file name, sha256) list, plus the annotator map's
(``annotations/label_studio_users.csv``: it renames imported annotators), so a file dropped,
replaced or renamed, or an edited map, is seen once; the import asset itself decides what is new
(its log), so a repeated run is harmless.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath

import dagster as dg
from upath import UPath

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import read_records, write_bytes_atomic
from clcg_pipeline.validation.human._exchange_format import ANNOTATOR_MAP_FILE, INBOX_README, InboxFile

HUMAN_VALIDATION_JOB = "human_validation_job"
#: Seconds between two looks at the inbox: annotation files arrive by hand, so this is plenty.
INBOX_INTERVAL_S = 30
#: What the import needs to exist before it can run.
IMPORT_INPUTS = ("annotation_sample", "keypoints")


def data_path(data_dir: str, relative: str) -> UPath:
    """A path under the data folder given as a POSIX relative path (config and constants)."""
    return UPath(data_dir).joinpath(*PurePosixPath(relative).parts)


inbox_dir = data_path  # the inbox is one such path (study.human_validation.inbox)


def read_inbox(folder: UPath) -> list[InboxFile]:
    """The annotation files in the inbox (hidden and temporary files, and the inbox's own
    README, are not annotations)."""
    if not folder.exists():
        return []
    return [
        InboxFile(path.name, path.read_bytes())
        for path in sorted(folder.iterdir(), key=lambda p: p.name)
        if path.is_file() and not path.name.startswith(".") and path.name != INBOX_README
    ]


def create_inbox(folder: UPath, readme: str) -> None:
    """The inbox folder, with its README saying what to drop there (an existing one is kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / INBOX_README).exists():
        write_bytes_atomic(folder / INBOX_README, readme.encode("utf-8"))


def archived_copy(archive: UPath, sha: str) -> bytes | None:
    """The archived copy of an accepted annotation file (content-addressed by sha256), if any."""
    hits = list(archive.glob(f"{sha}.*")) if archive.exists() else []
    return hits[0].read_bytes() if hits else None


def read_annotator_map_file(data_dir: str) -> InboxFile | None:
    """The team's annotator map under the data folder (``ANNOTATOR_MAP_FILE``), if there is one."""
    path = inbox_dir(data_dir, ANNOTATOR_MAP_FILE)
    return InboxFile(ANNOTATOR_MAP_FILE, path.read_bytes()) if path.is_file() else None


def inbox_cursor(files: list[InboxFile], annotator_map: InboxFile | None = None) -> str:
    """The inbox's (name, sha256) list, the annotator map's last (its name has a folder, so it is
    never an inbox file's)."""
    entries = [*files, *([annotator_map] if annotator_map is not None else [])]
    return json.dumps([[f.name, f.sha256] for f in entries], separators=(",", ":"))


#: The metadata entry of ``annotation_imports`` holding the inbox it was imported from.
INBOX_METADATA = "inbox"


def inbox_fingerprint(data_dir: str, inbox: str) -> str:
    """The inbox's (file name, sha256) list and the annotator map's now: unchanged since the last
    import, nothing is new."""
    return inbox_cursor(read_inbox(inbox_dir(data_dir, inbox)), read_annotator_map_file(data_dir))


def imported_inbox(data_dir: str) -> str | None:
    """The inbox as the last import saw it (the data folder's record of ``annotation_imports``,
    whoever ran the import: ``clcg run``, the daemon, the UI), if there was an import."""
    record = read_records(data_dir, "annotation_imports").get(None) or {}
    return record.get("metadata", {}).get(INBOX_METADATA)


def build_annotation_inbox_sensor(config: ProjectConfig) -> dg.SensorDefinition:
    del config  # the inbox is re-read from the config on each tick, like the other sensors

    @dg.sensor(
        name="annotation_inbox_sensor",
        job_name=HUMAN_VALIDATION_JOB,
        minimum_interval_seconds=INBOX_INTERVAL_S,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Runs the annotation import and the human-validation joins when a file is added "
        "to or changed in the annotation inbox (study.human_validation.inbox), or the annotator map "
        f"({ANNOTATOR_MAP_FILE}) changes.",
    )
    def annotation_inbox_sensor(context: dg.SensorEvaluationContext, study: StudyResource) -> dg.SensorResult:
        cfg = study.load()
        folder = inbox_dir(study.data_dir, cfg.study.human_validation.inbox)
        files = read_inbox(folder)
        cursor = inbox_cursor(files, read_annotator_map_file(study.data_dir))
        if not files:
            return dg.SensorResult(skip_reason=f"awaiting annotations: {folder} holds no file", cursor=cursor)
        if cursor == context.cursor:
            return dg.SensorResult(skip_reason="no new or changed annotation file", cursor=cursor)
        if cursor == imported_inbox(study.data_dir):
            # A fresh cursor (a new instance, `make dev` after `make run`): the import already
            # took every file; requesting it again would only rewrite the same tables.
            return dg.SensorResult(skip_reason="every annotation file is already imported", cursor=cursor)
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
