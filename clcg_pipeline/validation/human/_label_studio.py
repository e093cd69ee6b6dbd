"""Label Studio push and pull (issue 19), through its API with the official SDK.

Push: one Label Studio project per exported arm (``<study> · single``, ``· pair``, ``· fill``),
made from what the ``annotation_exports`` asset wrote under ``<data>/annotations/export/``: the
labelling config, the tasks, and the overlap (maximum annotations per task) of the design.
Idempotent: projects are found by title and tasks by their ``task_id``, so a second push adds only
what is missing and never duplicates a project or a task.

Pull: each project exported whole, in Label Studio's own JSON format (the export a team would
download), written atomically into the study's annotation inbox under a name that says the
project and the time; the import (``_import.py``) skips what it has seen and keeps changes as
revisions, so pulling again is safe.

URL and token come from the environment only (``URL_ENV``, ``TOKEN_ENV``). The token is never
logged, written or put in an error message: every message passes through ``Connection.scrub``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from upath import UPath

from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.storage import write_bytes_atomic
from clcg_pipeline.validation.human._exchange_format import (
    EXPORT_DIR,
    LS_FILL_CONFIG,
    LS_FILL_TASKS,
    LS_PAIR_CONFIG,
    LS_PAIR_TASKS,
    LS_SINGLE_CONFIG,
    LS_SINGLE_TASKS,
)

URL_ENV = "LABEL_STUDIO_URL"
TOKEN_ENV = "LABEL_STUDIO_API_KEY"
#: (project kind, tasks file, config file) under the export folder; fill only when exported.
PROJECT_FILES = (
    ("single", LS_SINGLE_TASKS, LS_SINGLE_CONFIG),
    ("pair", LS_PAIR_TASKS, LS_PAIR_CONFIG),
    ("fill", LS_FILL_TASKS, LS_FILL_CONFIG),
)
OPTIONAL_KINDS = frozenset({"fill"})
TITLE_SEPARATOR = " · "
#: How Label Studio 1.23 picks the next task of a project with overlap (``maximum_annotations`` >
#: 1; ``projects/functions/next_task.py``, checked against the server by the live test): a task
#: of the project that others have annotated and the asker has not (most annotations first,
#: at random among those), else, with this sampling, the first task in import order that nobody
#: holds. So whoever is ahead takes the export's order as it stands, the others a shuffle of the
#: stretch the first has done: the export lays the individual tasks out as the design's forms
#: (``_export.served_order``), and every annotator meets its attention checks at the design's rate.
SAMPLING = "Sequential sampling"
EXPORT_TIMEOUT_S = 300
REQUEST_TIMEOUT_S = 120.0

_logger = logging.getLogger(__name__)
Log = Callable[[str], None]


class LabelStudioError(RuntimeError):
    """Label Studio cannot be reached or refused a request; the message names the URL, never the token."""


@dataclass(frozen=True)
class Connection:
    """Where the team's Label Studio is and the token to use (never shown: ``repr=False``)."""

    url: str
    token: str = field(repr=False)

    def scrub(self, text: str) -> str:
        """``text`` with the token masked (an SDK or server message may echo a request)."""
        return text.replace(self.token, "***") if self.token else text


def connection_from_env(environ: Mapping[str, str] | None = None) -> Connection:
    """The URL and token of ``URL_ENV`` / ``TOKEN_ENV``; LabelStudioError naming the one missing."""
    env = os.environ if environ is None else environ
    url = (env.get(URL_ENV) or "").strip().rstrip("/")
    token = (env.get(TOKEN_ENV) or "").strip()
    if not url:
        raise LabelStudioError(
            f"${URL_ENV} is not set: the URL of the team's Label Studio, e.g. http://localhost:8080"
        )
    if not re.match(r"https?://", url):
        raise LabelStudioError(f"${URL_ENV} is {url!r}: expected an http:// or https:// URL")
    if not token:
        raise LabelStudioError(
            f"${TOKEN_ENV} is not set: the API token of a Label Studio user (Account & Settings) for {url}"
        )
    return Connection(url, token)


@dataclass(frozen=True)
class ProjectSpec:
    """One project to push: title, labelling config, tasks and the planned annotators per task."""

    kind: str
    title: str
    label_config: str
    tasks: list[dict[str, Any]]
    max_annotations: int
    #: Tasks planned for fewer annotators than ``max_annotations`` (the attention checks).
    fewer_planned: int = 0


@dataclass(frozen=True)
class PushResult:
    kind: str
    title: str
    project_id: int
    created: bool
    settings_updated: list[str]
    tasks_added: int
    tasks_present: int
    #: Tasks in Label Studio whose data differ from the export (kept: annotations cite them).
    tasks_differing: int


@dataclass(frozen=True)
class PullResult:
    kind: str
    title: str
    project_id: int
    tasks: int
    annotations: int
    #: The file written into the inbox; None when the project has no annotation yet.
    file: str | None


def project_title(study: str, kind: str) -> str:
    return f"{study}{TITLE_SEPARATOR}{kind}"


def _data_path(data_dir: str, relative: str) -> UPath:
    return UPath(data_dir).joinpath(*PurePosixPath(relative).parts)


def _study_name(config_dir: str, study: str | None) -> tuple[str, ProjectConfig]:
    """``(study name, config)``: ``study`` or the primary source's name (the titles' prefix)."""
    config = load_config(config_dir)
    name = (study or config.sources.primary.name).strip()
    if not name:
        raise LabelStudioError(
            "the study name (--study) is empty: it prefixes the Label Studio project titles"
        )
    return name, config


# --- reading what to push (all checked before Label Studio is called) ----------------------------


def _read_tasks(path: UPath) -> list[dict[str, Any]]:
    """The exported task list of ``path``, checked: objects with ``data.task_id``, each once."""
    try:
        payload = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabelStudioError(
            f"{path}: not valid JSON ({exc}); materialize annotation_exports again"
        ) from None
    if not isinstance(payload, list):
        raise LabelStudioError(f"{path}: expected a JSON list of tasks, got a {type(payload).__name__}")
    seen: dict[str, int] = {}
    for n, task in enumerate(payload, start=1):
        data = task.get("data") if isinstance(task, dict) else None
        task_id = data.get("task_id") if isinstance(data, dict) else None
        if not isinstance(task_id, str) or not task_id:
            raise LabelStudioError(f"{path}, task {n}, field 'data.task_id': missing or not text")
        if task_id in seen:
            raise LabelStudioError(
                f"{path}, task {n}, field 'data.task_id': {task_id!r} also task {seen[task_id]}"
            )
        seen[task_id] = n
    return payload


def _planned(task: Mapping[str, Any]) -> int:
    """How many annotators the design assigned to a task (the export's ``annotators`` field)."""
    text = str(task["data"].get("annotators") or "")
    return len([a for a in text.split(",") if a.strip()])


def read_project_specs(data_dir: str, study: str, annotators_per_item: int) -> list[ProjectSpec]:
    """The projects to push, from the export folder; LabelStudioError naming a missing or bad file."""
    folder = _data_path(data_dir, EXPORT_DIR)
    specs = []
    for kind, tasks_name, config_name in PROJECT_FILES:
        tasks_path, config_path = folder / tasks_name, folder / config_name
        if kind in OPTIONAL_KINDS and not tasks_path.exists():
            continue
        for path in (tasks_path, config_path):
            if not path.exists():
                raise LabelStudioError(
                    f"{path}: not found; materialize the annotation_exports asset first (clcg run)"
                )
        tasks = _read_tasks(tasks_path)
        planned = [_planned(t) for t in tasks]
        overlap = max([*planned, 0]) or annotators_per_item
        specs.append(
            ProjectSpec(
                kind=kind,
                title=project_title(study, kind),
                label_config=config_path.read_bytes().decode("utf-8"),
                tasks=tasks,
                max_annotations=overlap,
                fewer_planned=sum(1 for p in planned if 0 < p < overlap),
            )
        )
    return specs


# --- the API ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def _api(conn: Connection, doing: str) -> Iterator[None]:
    """Turn the SDK's and the network's errors into one LabelStudioError naming URL and variable."""
    import httpx
    from label_studio_sdk.core.api_error import ApiError

    try:
        yield
    except ApiError as exc:
        status = exc.status_code
        if status in (401, 403):
            message = (
                f"Label Studio at {conn.url} refused the token in ${TOKEN_ENV} (HTTP {status}) while "
                f"{doing}: set ${TOKEN_ENV} to the API token of a user of that instance"
            )
        else:
            body = exc.body if isinstance(exc.body, str) else json.dumps(exc.body, default=str)
            message = f"Label Studio at {conn.url}: {doing} failed (HTTP {status}): {body[:500]}"
        raise LabelStudioError(conn.scrub(message)) from None
    except httpx.HTTPError as exc:
        raise LabelStudioError(
            conn.scrub(
                f"Label Studio at {conn.url} ({URL_ENV}) is unreachable while {doing}: "
                f"{type(exc).__name__}: {exc}"
            )
        ) from None


def connect(conn: Connection) -> Any:
    """An SDK client, its token checked by one request (who am I) before any work."""
    from label_studio_sdk import LabelStudio

    with _api(conn, "checking the token"):
        # The SDK reads a JWT token (a personal access token) already here, and refuses an expired one.
        client = LabelStudio(base_url=conn.url, api_key=conn.token, timeout=REQUEST_TIMEOUT_S)
        client.users.whoami()
    return client


def find_project(client: Any, conn: Connection, title: str) -> Any | None:
    """The project titled exactly ``title``, or None; LabelStudioError when several share it."""
    with _api(conn, f"listing projects titled {title!r}"):
        hits = [p for p in client.projects.list(title=title) if p.title == title]
    if len(hits) > 1:
        raise LabelStudioError(
            f"Label Studio at {conn.url}: {len(hits)} projects are titled {title!r} (ids "
            f"{sorted(p.id for p in hits)}); rename or delete all but one"
        )
    return hits[0] if hits else None


def _task_data(client: Any, conn: Connection, project_id: int) -> dict[str, dict[str, Any]]:
    """``task_id`` -> data of every task already in the project."""
    with _api(conn, f"listing the tasks of project {project_id}"):
        tasks = list(client.tasks.list(project=project_id, page_size=500))
    return {str(t.data.get("task_id")): dict(t.data) for t in tasks if isinstance(t.data, dict)}


def _create_project(client: Any, conn: Connection, spec: ProjectSpec, study: str) -> Any:
    description = (
        f"clcg study {study!r}, {spec.kind} arm: made by `clcg annotations push` from the export; "
        f"{spec.max_annotations} annotators per task as planned"
    )
    with _api(conn, f"creating project {spec.title!r}"):
        return client.projects.create(
            title=spec.title,
            label_config=spec.label_config,
            maximum_annotations=spec.max_annotations,
            overlap_cohort_percentage=100,
            sampling=SAMPLING,
            description=description,
        )


def _update_settings(client: Any, conn: Connection, project: Any, spec: ProjectSpec) -> list[str]:
    """Bring an existing project's config and overlap to the export's; the names of what changed."""
    changes: dict[str, Any] = {}
    if (project.label_config or "").strip() != spec.label_config.strip():
        changes["label_config"] = spec.label_config
    if project.maximum_annotations != spec.max_annotations:
        changes["maximum_annotations"] = spec.max_annotations
    if project.overlap_cohort_percentage != 100:
        changes["overlap_cohort_percentage"] = 100
    if project.sampling != SAMPLING:  # "Uniform sampling" would serve even the first annotator at random
        changes["sampling"] = SAMPLING
    if changes:
        with _api(conn, f"updating {sorted(changes)} of project {spec.title!r} (id {project.id})"):
            client.projects.update(project.id, **changes)
    return sorted(changes)


def _push_project(client: Any, conn: Connection, spec: ProjectSpec, study: str, log: Log) -> PushResult:
    """Create or update one project, then import the tasks it does not have yet."""
    project = find_project(client, conn, spec.title)
    created = project is None
    updated: list[str] = []
    if project is None:
        project = _create_project(client, conn, spec, study)
    else:
        updated = _update_settings(client, conn, project, spec)
    present = _task_data(client, conn, project.id)
    new = [t for t in spec.tasks if t["data"]["task_id"] not in present]
    differing = sum(
        1
        for t in spec.tasks
        if t["data"]["task_id"] in present and present[t["data"]["task_id"]] != t["data"]
    )
    if new:
        log(f"Label Studio: importing {len(new)} task(s) into {spec.title!r} (id {project.id})")
        with _api(conn, f"importing {len(new)} task(s) into project {spec.title!r}"):
            client.projects.import_tasks(
                project.id, request=new, commit_to_project=True, return_task_ids=True
            )
    return PushResult(
        kind=spec.kind,
        title=spec.title,
        project_id=int(project.id),
        created=created,
        settings_updated=updated,
        tasks_added=len(new),
        tasks_present=len(spec.tasks) - len(new),
        tasks_differing=differing,
    )


def _push_line(conn: Connection, spec: ProjectSpec, result: PushResult) -> str:
    what = "created" if result.created else "found"
    if result.settings_updated:
        what += f", updated {', '.join(result.settings_updated)}"
    line = (
        f"Label Studio at {conn.url}: project {result.title!r} (id {result.project_id}) {what}; "
        f"{result.tasks_added} task(s) added, {result.tasks_present} already there; "
        f"up to {spec.max_annotations} annotations per task"
    )
    if spec.fewer_planned:
        line += (
            f" ({spec.fewer_planned} of them attention checks, one per form of the design, each answered "
            "by as many annotators as any task: Label Studio's overlap is per project)"
        )
    if result.tasks_differing:
        line += (
            f"; WARNING: {result.tasks_differing} task(s) in Label Studio differ from the export and "
            "were left as they are (their annotations cite them)"
        )
    return line


def push_annotation_projects(
    config_dir: str,
    data_dir: str,
    *,
    study: str | None = None,
    environ: Mapping[str, str] | None = None,
    log: Log = _logger.info,
) -> list[PushResult]:
    """Create or update the study's Label Studio projects from the export folder (idempotent).

    Everything is read and checked first (config, export files, URL and token), so a bad input
    stops the push before Label Studio is changed.
    """
    name, config = _study_name(config_dir, study)
    hv = config.study.human_validation
    specs = read_project_specs(data_dir, name, hv.annotators_per_item)
    conn = connection_from_env(environ)
    started = time.perf_counter()
    client = connect(conn)
    results = []
    for spec in specs:
        if not spec.tasks:
            log(f"Label Studio: {spec.title!r}: the export has no task, no project made")
            continue
        result = _push_project(client, conn, spec, name, log)
        log(_push_line(conn, spec, result))
        results.append(result)
    log(f"Label Studio push: {len(results)} project(s) in {time.perf_counter() - started:.1f} s")
    return results


# --- pull ------------------------------------------------------------------------------------------


def _export_counts(conn: Connection, title: str, payload: bytes) -> tuple[int, int]:
    """``(tasks, annotations)`` of a JSON export; LabelStudioError when it is not one."""
    try:
        tasks = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabelStudioError(
            f"Label Studio at {conn.url}: the export of {title!r} is not JSON ({exc})"
        ) from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise LabelStudioError(f"Label Studio at {conn.url}: the export of {title!r} is not a list of tasks")
    return len(tasks), sum(len(t.get("annotations") or []) for t in tasks)


def export_file_name(study: str, kind: str, at: dt.datetime) -> str:
    """``label_studio_<study>_<kind>_<UTC time>.json``: sorts by time within a project."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", study.lower()).strip("-") or "study"
    return f"label_studio_{slug}_{kind}_{at.astimezone(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}.json"


def _free_name(inbox: UPath, name: str) -> UPath:
    """``inbox / name``, or ``name-2``, ``-3``... when a pull in the same second wrote it already."""
    stem, suffix = name.rsplit(".", 1)
    target, n = inbox / name, 1
    while target.exists():
        n += 1
        target = inbox / f"{stem}-{n}.{suffix}"
    return target


def _pull_project(
    client: Any, conn: Connection, project: Any, kind: str, inbox: UPath, study: str, at: dt.datetime
) -> PullResult:
    """Export one project whole (JSON, every task with all its annotations) into the inbox."""
    with _api(conn, f"exporting project {project.title!r} (id {project.id})"):
        payload = client.projects.exports.as_binary(project.id, export_type="JSON", timeout=EXPORT_TIMEOUT_S)
    tasks, annotations = _export_counts(conn, project.title, payload)
    written = None
    if annotations:
        target = _free_name(inbox, export_file_name(study, kind, at))
        write_bytes_atomic(target, payload)
        written = str(target)
    return PullResult(kind, project.title, int(project.id), tasks, annotations, written)


def pull_annotation_exports(
    config_dir: str,
    data_dir: str,
    *,
    study: str | None = None,
    environ: Mapping[str, str] | None = None,
    log: Log = _logger.info,
    now: dt.datetime | None = None,
) -> list[PullResult]:
    """Fetch Label Studio's JSON export of each of the study's projects into the annotation inbox.

    A project without annotations writes nothing (said in the log); no project found at all is
    an error naming the titles looked for.
    """
    name, config = _study_name(config_dir, study)
    inbox = _data_path(data_dir, config.study.human_validation.inbox)
    conn = connection_from_env(environ)
    at = now or dt.datetime.now(dt.UTC)
    started = time.perf_counter()
    client = connect(conn)
    titles = {kind: project_title(name, kind) for kind, _, _ in PROJECT_FILES}
    found = {kind: find_project(client, conn, title) for kind, title in titles.items()}
    if not any(found.values()):
        raise LabelStudioError(
            f"Label Studio at {conn.url}: no project of study {name!r} (looked for "
            f"{sorted(titles.values())}); run `clcg annotations push` first"
        )
    results = []
    for kind, project in found.items():
        if project is None:
            log(f"Label Studio: no project {titles[kind]!r}, nothing pulled for it")
            continue
        result = _pull_project(client, conn, project, kind, inbox, name, at)
        where = f"-> {result.file}" if result.file else "no annotation yet, nothing written"
        log(
            f"Label Studio at {conn.url}: project {result.title!r} (id {result.project_id}) exported "
            f"whole: {result.tasks} task(s), {result.annotations} annotation(s) {where}"
        )
        results.append(result)
    log(f"Label Studio pull: {len(results)} project(s) in {time.perf_counter() - started:.1f} s")
    return results
