"""Running a whole study through Dagster on the persistent instance (what ``clcg run`` does).

Each job runs in process against ``DAGSTER_HOME``'s instance, so every run, materialization
and asset check shows in the UI (``make dev``) exactly as if launched from there.

A partition is skipped only when it is up to date *in this data folder*: every asset the job
writes has a materialization, recorded by Dagster whoever launched it, that was stored in
this folder, carries the current code version (``clcg_pipeline/orchestration/_versions.py``: package version,
config and source contents), is newer than everything it reads, and whose file is still
there. The files are the truth; the instance only says how they were made.

Responses partitions run several at a time (``parallel``), each as its own Dagster run in a
forked worker process: threads would not do, since Dagster handles Ctrl-C only in a main
thread, and the runner's coordination (``calls/_coord.py``: call claims, the model's
concurrency slots, the study's spend ledger) is built for processes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import CODE_VERSION_TAG
from dagster._core.utils import make_new_run_id
from upath import UPath

from clcg_pipeline.calls import CALLS_AHEAD_TAG, check_credentials
from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration._calls_ahead import CallsAhead, send_calls_ahead
from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.orchestration._jobs import (
    CORPUS_ASSETS,
    RESPONSE_ASSETS,
    STUDY_INPUT_ASSETS,
    runs_under_code_location,
    study_run_tags,
)
from clcg_pipeline.orchestration._plan import select_models
from clcg_pipeline.orchestration._versions import code_versions, version_for
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, response_key
from clcg_pipeline.storage import partition_dir, read_frame

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FINGERPRINT_TAG = "clcg/fingerprint"
# The CLI prints its own progress and one root-cause line per failure; every event (stack
# traces included) is still stored on the instance and shown in the UI.
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# How many of a partition's latest materializations to look through for one stored in this
# data folder (others may have gone to another folder on the same instance).
_LOOKBACK = 25
# Call outcomes that mean a responses partition is unfinished: the next run resumes it.
_UNFINISHED_OUTCOMES = ("skipped_budget", "batch_pending")
# The calls-shaped tables a responses partition writes, and what their calls count as in the summary.
PARTITION_CALL_TABLES = {"calls": "responses", "task_calls": "tasks", "task_judge_calls": "judges"}
# Those the analysis job writes (unpartitioned): the error-taxonomy judges and the keypoint writer.
ANALYSIS_CALL_TABLES = {"judge_calls": "judges", "keypoint_calls": "judges"}
# Every paid op (multi_asset function name) of each job; ``clcg run`` hands each of them the
# run's budget (one Budget per Dagster run: ``inference._calls.run_budget``) and, where the op
# supports it, the call mode. The confusion writer is online only (see ``judge_writer``).
PAID_OPS = {
    "study_inputs_job": {"granularity_task_bank": False},
    "responses_job": {"responses": True, "task_responses": True, "task_scoring": True},
    "analysis_job": {"error_judging": True, "keypoint_checklists": True},
}
_INTERRUPTS = ("KeyboardInterrupt", "DagsterExecutionInterruptedError")
# Responses partitions run this many at a time (``clcg run --parallel``): two keep a model's
# calls flowing while a partition starts or finishes (no drain between partitions) and use
# both cores of a small machine for the offline provider.
DEFAULT_PARALLEL = 2
# The workers' niceness while calls are sent ahead from the parent process (see _worker_start).
_AHEAD_NICE = 10


class StudyRunError(RuntimeError):
    """A job of the study failed; the message names the job and partition."""


@dataclass
class RunSummary:
    runs: int = 0
    skipped: int = 0
    new_cost_usd: float = 0.0
    new_calls: int = 0  # every new (uncached) model call: the three below together
    budget_exhausted: bool = False
    response_calls: int = 0  # the evaluated models' answers (``calls``)
    task_calls: int = 0  # the granularity tasks' answers (``task_calls``)
    judge_calls: int = 0  # judges and writers (task, error-taxonomy and keypoint judges, confusion writer)
    calls_ahead: CallsAhead | None = (
        None  # what was sent ahead of the partitions' runs (clcg_pipeline/orchestration/_calls_ahead.py)
    )

    def count(self, kind: str, calls: int, cost_usd: float) -> None:
        self.new_calls += calls
        self.new_cost_usd += cost_usd
        field = {"responses": "response_calls", "tasks": "task_calls", "judges": "judge_calls"}[kind]
        setattr(self, field, getattr(self, field) + calls)


def ensure_dagster_home(project_root: Path = PROJECT_ROOT) -> Path:
    """Point ``DAGSTER_HOME`` at a persistent folder (default ``.dagster_home``).

    Without it Dagster uses a temporary instance and dynamic partitions vanish (DESIGN.md).
    The project's dagster.yaml is copied there only when the folder has none: a
    ``DAGSTER_HOME`` set by the user keeps its own settings (e.g. PostgreSQL storage).
    """
    home = Path(os.environ.get("DAGSTER_HOME") or project_root / ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    settings = home / "dagster.yaml"
    template = project_root / "dagster.yaml"
    if template.exists() and not settings.exists():
        shutil.copyfile(template, settings)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


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


class _Freshness:
    """Answers "is this job partition up to date in this data folder?" from the instance."""

    def __init__(self, instance: dg.DagsterInstance, defs: dg.Definitions, data_dir: str, versions: dict):
        self.instance = instance
        self.graph = defs.resolve_asset_graph()
        self.folder = data_location(data_dir).rstrip("/") + "/"
        self.versions = versions
        self._records: dict[tuple[str, str | None], dg.EventLogRecord | None] = {}

    def stored_here(self, asset: str, partition: str | None) -> dg.EventLogRecord | None:
        """The latest materialization of ``asset[partition]`` written into this data folder."""
        key = (asset, partition)
        if key not in self._records:
            found = None
            records = self.instance.fetch_materializations(
                dg.AssetRecordsFilter(
                    asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
                ),
                limit=_LOOKBACK,
            ).records
            for record in records:
                path = self._path(record)
                if path is not None and data_location(path).startswith(self.folder):
                    found = record
                    break
            self._records[key] = found
        return self._records[key]

    def forget(self, assets: Sequence[str], partition: str | None) -> None:
        for asset in assets:
            self._records.pop((asset, partition), None)

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
        for asset in assets:
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

    def unfinished_calls(self, partition: str) -> bool:
        """True when any of the partition's calls stopped short (budget, a pending batch):
        its responses, its granularity tasks' answers or their judges."""
        return any(self._unfinished(table, partition) for table in PARTITION_CALL_TABLES)

    def _unfinished(self, table: str, partition: str) -> bool:
        record = self.stored_here(table, partition)
        if record is None or record.asset_materialization is None:
            return True
        outcomes = record.asset_materialization.metadata.get("outcomes")
        if outcomes is not None and isinstance(outcomes.value, dict):
            return any(outcomes.value.get(outcome) for outcome in _UNFINISHED_OUTCOMES)
        path = self._path(record)
        calls = read_frame(path) if path else None
        return calls is None or (
            "outcome" in calls.columns and bool(calls["outcome"].isin(_UNFINISHED_OUTCOMES).any())
        )


def _clean_message(error: Any) -> tuple[str, bool]:
    """The error's message without Python's ``module.path.ClassName:`` prefix; True if ours.

    ``SerializableErrorInfo.message`` is ``traceback.format_exception_only`` output, which
    starts with the fully qualified class name; a user needs the sentence, not the class.
    """
    message = str(error.message).strip()
    head, sep, rest = message.partition(": ")
    qualified = head.split(".")[-1] == error.cls_name and " " not in head
    # dg.Failure carries a sentence written for the user (its description).
    ours = qualified and (head.startswith("clcg_pipeline.") or error.cls_name == "Failure")
    if qualified and sep:
        message = rest.strip()
    elif qualified:
        message = ""
    if ours:
        return message, True
    return (f"{error.cls_name}: {message}" if message else error.cls_name), False


def _failure(result: dg.ExecuteInProcessResult) -> tuple[str, bool, bool]:
    """(root-cause line, raised by this project's code, was an interrupt) of a failed run."""
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None) if event.is_failure else None
        if error is None:
            continue
        chain = [error]
        while chain[-1].cause is not None:
            chain.append(chain[-1].cause)
        if any(e.cls_name in _INTERRUPTS for e in chain):
            return "interrupted", False, True
        message, ours = _clean_message(chain[-1])
        return message, ours, False
    return "see the run in the Dagster UI (make dev)", False, False


# Set by the parent just before it forks the worker processes, which inherit them.
_WORKER: dict[str, Any] = {}


def _worker_start(ref: Any, pids: Any, nice: int = 0) -> None:
    """A worker process of the responses pool: its own instance, and Ctrl-C from its parent only.

    In a process group of its own, so a Ctrl-C at the terminal reaches only ``clcg run``,
    which forwards it exactly once (twice could break into Dagster's own interrupt clean-up).
    Between runs an interrupt has nothing to stop; it is noted so no new run starts.
    """
    _WORKER["interrupted"] = False

    def note(_signum: int, _frame: object) -> None:
        _WORKER["interrupted"] = True

    signal.signal(signal.SIGINT, note)
    if nice:
        # Calls sent ahead stream from the parent meanwhile: the workers' CPU work (loading,
        # scoring) yields to it, so a small machine keeps the calls flowing.
        os.nice(nice)
    os.setpgrp()
    _die_with_parent()
    # A fresh instance: nothing of the parent's connections is shared across the fork.
    _WORKER["instance"] = dg.DagsterInstance.from_ref(ref)
    pids.put(os.getpid())


def _die_with_parent() -> None:
    """Ask Linux to end this worker if ``clcg run`` dies without cleaning up (kill -9).

    Hand-written with ctypes: the standard library has no binding for prctl. Elsewhere a
    worker left behind finishes its partition and exits when its queue closes.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _execute_partition(
    job: str, partition: str, run_config: dict[str, Any], tags: dict[str, str], run_id: str
) -> tuple[bool, str, bool, bool]:
    """In a worker: run one job partition; (success, root-cause line, ours, interrupted)."""
    if _WORKER.get("interrupted"):
        return False, "interrupted", False, True
    instance = _WORKER["instance"]
    job_def = _WORKER["defs"].resolve_job_def(job)
    with runs_under_code_location(instance):
        result = job_def.execute_in_process(
            instance=instance,
            partition_key=partition,
            run_config=run_config,
            tags=tags,
            raise_on_error=False,
            run_id=run_id,
        )
    if result.success:
        return True, "", False, False
    return (False, *_failure(result))


def _check_selection(config: ProjectConfig, languages: Sequence[str] | None) -> list[str]:
    isos = list(languages) if languages else config.languages.isos
    unknown = [iso for iso in isos if iso not in config.languages.isos]
    if unknown:
        raise StudyRunError(
            f"unknown language(s) {', '.join(unknown)}: languages.yaml has {', '.join(config.languages.isos)}"
        )
    return isos


@contextlib.contextmanager
def _deferred_interrupts() -> Iterator[Callable[[], bool]]:
    """Between Dagster runs, note Ctrl-C instead of raising it wherever the program happens to be.

    A KeyboardInterrupt raised inside a database finalizer prints a stray traceback; the run
    loop checks the flag at safe points and stops cleanly. Inside a run Dagster installs its own
    handler and fails the run, which ``_run_jobs`` turns into the same clean stop.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received = {"interrupt": False}

    def note(_signum: int, _frame: object) -> None:
        received["interrupt"] = True

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield lambda: received["interrupt"]
    finally:
        signal.signal(signal.SIGINT, previous)


def run_study(
    *,
    config_dir: str,
    data_dir: str,
    models: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
    budget_usd: float | None = None,
    mode: str = "online",
    force: bool = False,
    regenerate_items: bool = False,
    on_step: Callable[[str, int, int], None] | None = None,
    parallel: int = DEFAULT_PARALLEL,
    calls_ahead: bool = True,
) -> RunSummary:
    """Materialize the whole graph: corpus, study inputs, responses, analysis.

    Partitions up to date in ``data_dir`` are skipped (``force`` re-runs them); model calls
    are never repeated either way, thanks to the cache. Ctrl-C stops after cleaning up and
    raises a plain ``KeyboardInterrupt``; what was stored stays, and the next run resumes.

    Up to ``parallel`` responses partitions run at once, each in a worker process (forked, so
    nothing is imported again) as its own Dagster run on the same instance. A model's calls
    then flow without a drain between partitions, while the claims, concurrency slots and
    spend ledger of ``calls/_coord.py`` hold across the workers: no call is paid twice,
    the model's limit binds them together. With ``budget_usd`` the partitions run one after
    another as before, each given what the previous ones left (a limit for this command only,
    which the study-wide ledger does not express). Every paid op gets it, not only the
    responses: the confusion writer (study inputs), the granularity tasks and their judges
    (each partition's run shares one budget: ``inference._calls.run_budget``), and the
    error-taxonomy judges and keypoint writer (analysis), which get whatever is left.

    With ``calls_ahead`` (online, no ``budget_usd``), the hosted models' calls of the pending
    responses partitions are sent first, one stream per model (``orchestration/_calls_ahead.py``); the
    partitions' runs then find them cached and record them as their own.
    """
    if parallel < 1:
        raise StudyRunError(f"parallel must be at least 1, got {parallel}")
    config = load_config(config_dir)
    try:
        model_ids = select_models(config, models)
    except ValueError as exc:
        raise StudyRunError(str(exc)) from None
    isos = _check_selection(config, languages)

    ensure_dagster_home()
    with _deferred_interrupts() as interrupted, dg.DagsterInstance.get() as instance:
        return _run_jobs(
            instance,
            config,
            config_dir=config_dir,
            data_dir=data_dir,
            model_ids=model_ids,
            isos=isos,
            budget_usd=budget_usd,
            mode=mode,
            force=force,
            regenerate_items=regenerate_items,
            on_step=on_step,
            interrupted=interrupted,
            parallel=parallel,
            calls_ahead=calls_ahead,
        )


def _in_step(instance: dg.DagsterInstance, run_id: str, step: str = "responses") -> bool:
    """True until the run's ``step`` has ended (or before the run exists)."""
    ended = (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE)
    records = instance.get_records_for_run(run_id, of_type=set(ended)).records
    return not any(record.event_log_entry.step_key == step for record in records)


def _run_responses_in_workers(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    partitions: Sequence[tuple[str, str]],
    *,
    parallel: int,
    run_config: dict[str, Any],
    tags: Callable[[str], dict[str, str]],
    skip: Callable[[str, str], bool],
    account: Callable[[str, str], tuple[float, bool]],
    on_forget: Callable[[str], None],
    summary: RunSummary,
    step: int,
    total: int,
    on_step: Callable[[str, int, int], None] | None,
    interrupted: Callable[[], bool],
    ready: Callable[[str, str], bool] | None = None,
    workers_started: Callable[[], None] | None = None,
) -> int:
    """Run the responses partitions ``parallel`` at a time in forked workers; the last step number.

    With calls sent ahead (``orchestration/_calls_ahead.py``), ``workers_started`` starts them once the
    workers exist (forked before any other thread does), the workers run at a lower CPU
    priority, and a partition starts only once ``ready(model id, language)``: its calls are
    answered, while later partitions are still calling.

    A failure lets the partitions in progress finish (their calls are paid for) and starts no
    other; Ctrl-C is forwarded to the workers, whose Dagster runs stop as they do in process.

    The first ``parallel`` partitions start one after another, each once the previous one has
    finished its ``responses`` step: partitions of one model are alike, and started together
    they would prepare, call and score in lockstep, every worker busy with the CPU at the same
    moments and nobody calling. Staggered, one worker calls while another prepares or scores.
    """
    context = multiprocessing.get_context("fork")  # the definitions are built once, here
    pids = context.SimpleQueue()
    _WORKER["defs"] = defs
    pool = futures.ProcessPoolExecutor(
        min(parallel, len(partitions)),
        mp_context=context,
        initializer=_worker_start,
        initargs=(instance.get_ref(), pids, _AHEAD_NICE if ready is not None else 0),
    )
    if workers_started is not None:
        # With fork, the first task starts every worker: from this thread, before the
        # calls-ahead thread exists (a fork copies no other thread, and none of its locks).
        pool.submit(os.getpid).result()
        workers_started()
    queue = list(partitions)
    running: dict[futures.Future[tuple[bool, str, bool, bool]], tuple[str, str]] = {}
    calling: dict[futures.Future[tuple[bool, str, bool, bool]], str] = {}  # run id, until calls end
    started = 0
    workers: list[int] = []
    signalled: set[int] = set()
    failure: StudyRunError | None = None
    stopped = False
    try:
        while queue or running:
            if started < parallel:  # only the first partitions are staggered
                calling = {f: r for f, r in calling.items() if f in running and _in_step(instance, r)}
            while queue and len(running) < parallel and failure is None and not interrupted():
                if started < parallel and calling:
                    break  # still staggering the first partitions
                waiting = [i for i, (m, lang) in enumerate(queue) if ready is None or ready(m, lang)]
                if not waiting:
                    break  # every partition left is still calling ahead
                model_id, iso = queue.pop(waiting[0])
                key = str(response_key(iso, model_id))
                step += 1
                if on_step:
                    on_step(f"{model_id} / {iso}", step, total)
                if skip(iso, model_id):
                    summary.skipped += 1
                    continue
                run_id = make_new_run_id()
                future = pool.submit(
                    _execute_partition, "responses_job", key, {**_QUIET, **run_config}, tags(key), run_id
                )
                running[future] = (model_id, iso)
                calling[future] = run_id
                started += 1
            while not pids.empty():
                workers.append(pids.get())
            if interrupted():
                for pid in set(workers) - signalled:  # once each: see _worker_start
                    signalled.add(pid)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGINT)
            if failure is not None or interrupted():
                queue.clear()
            if not running:
                if queue:
                    time.sleep(0.05)  # waiting for calls sent ahead
                continue
            finished, _ = futures.wait(running, timeout=0.2, return_when=futures.FIRST_COMPLETED)
            for future in finished:
                model_id, iso = running.pop(future)
                key = str(response_key(iso, model_id))
                summary.runs += 1
                on_forget(key)
                try:
                    ok, message, _ours, was_interrupt = future.result()
                except futures.process.BrokenProcessPool:
                    # Killed from outside (out of memory, kill -9): its run stays as Dagster last saw it.
                    ok, message, was_interrupt = False, "its worker process died (out of memory?)", False
                if ok:
                    account(iso, model_id)
                elif was_interrupt or interrupted():
                    stopped = True
                elif failure is None:
                    failure = StudyRunError(f"responses_job [{key}] failed: {message}")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _WORKER.pop("defs", None)
    if stopped or interrupted():
        raise KeyboardInterrupt
    if failure is not None:
        raise failure
    return step


def _run_jobs(
    instance: dg.DagsterInstance,
    config: ProjectConfig,
    *,
    config_dir: str,
    data_dir: str,
    model_ids: list[str],
    isos: list[str],
    budget_usd: float | None,
    mode: str,
    force: bool,
    regenerate_items: bool,
    on_step: Callable[[str, int, int], None] | None,
    interrupted: Callable[[], bool],
    parallel: int = 1,
    calls_ahead: bool = False,
) -> RunSummary:
    defs = build_definitions(config_dir, data_dir)
    sync_model_partitions(instance, config)
    versions = code_versions(config)
    fresh = _Freshness(instance, defs, data_dir, versions)

    def responses_done(iso: str, model_id: str) -> bool:
        key = str(response_key(iso, model_id))
        return fresh.up_to_date(RESPONSE_ASSETS, key, isos) and not fresh.unfinished_calls(key)

    for model_id in model_ids:
        # A missing key fails before anything runs, but only for models with work left: a
        # fully materialized model (re-scoring, re-estimating) needs no key at all.
        pending = force or regenerate_items or not all(responses_done(iso, model_id) for iso in isos)
        if pending:
            check_credentials(config.models.get(model_id))
    summary = RunSummary()
    total = len(isos) + 1 + len(isos) * len(model_ids) + 1
    step = 0

    def execute(
        job: str,
        label: str,
        partition: str | None,
        assets: Sequence[str] | None,
        run_config: dict[str, Any],
        *,
        rerun: bool = False,
        done: Callable[[], bool] | None = None,
        tags: dict[str, str] | None = None,
    ) -> dg.ExecuteInProcessResult | None:
        """Run one job partition unless it is up to date; its result when it ran, else None."""
        nonlocal step
        if interrupted():
            raise KeyboardInterrupt
        step += 1
        if on_step:
            on_step(label, step, total)
        skippable = bool(assets) and not (force or rerun)
        if skippable and (done() if done else fresh.up_to_date(assets or (), partition, isos)):
            summary.skipped += 1
            return None
        with runs_under_code_location(instance):
            result = defs.resolve_job_def(job).execute_in_process(
                instance=instance,
                partition_key=partition,
                run_config={**_QUIET, **run_config},
                tags={
                    FINGERPRINT_TAG: versions["study"],
                    **study_run_tags(config, partition),
                    **(tags or {}),
                },
                raise_on_error=False,
            )
        summary.runs += 1
        fresh.forget(assets or (), partition)
        if not result.success:
            message, ours, was_interrupt = _failure(result)
            if was_interrupt or interrupted():
                raise KeyboardInterrupt
            if job == "corpus_job" and ours:
                # Every corpus partition reads the whole source; the message names the bad
                # file and language, and the partition that happened to run first would mislead.
                raise StudyRunError(f"loading the corpus failed: {message}")
            raise StudyRunError(f"{job} [{partition or 'unpartitioned'}] failed: {message}")
        if interrupted():
            raise KeyboardInterrupt
        return result

    def paid_ops(job: str, remaining: float | None, extra: dict[str, dict[str, Any]] | None = None) -> dict:
        """Run config giving every paid op of ``job`` the budget left (and ``mode`` where it batches)."""
        ops: dict[str, dict[str, Any]] = {op: {"config": dict(cfg)} for op, cfg in (extra or {}).items()}
        job_def = defs.resolve_job_def(job)
        for op, batches in PAID_OPS[job].items():
            if not job_def.graph.has_node_named(op):
                continue  # e.g. a study whose definitions leave that op out
            settings = ops.setdefault(op, {"config": {}})["config"]
            settings["budget_usd"] = remaining
            if batches:
                settings["mode"] = mode
        return {"ops": ops}

    def account_tables(tables: dict[str, str], partition: dict[str, str] | None) -> tuple[float, bool]:
        """Count the new calls of the given calls-shaped tables; (their new spend, budget stopped any)."""
        spent, stopped = 0.0, False
        for table, kind in tables.items():
            calls_file = partition_dir(data_dir, table, partition) / "data.parquet"
            calls = read_frame(calls_file) if calls_file.exists() else None
            if calls is None or not len(calls):
                continue
            # Calls the budget skipped, or still waiting in a batch, were not made (not yet paid).
            new = calls[~calls["cached"].astype(bool) & ~calls["outcome"].isin(_UNFINISHED_OUTCOMES)]
            cost = float(new["cost_usd"].sum()) if len(new) else 0.0
            summary.count(kind, len(new), cost)
            spent += cost
            stopped = stopped or bool((calls["outcome"] == "skipped_budget").any())
        return spent, stopped

    def materialized(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
        """Asset name -> metadata of each materialization the run recorded."""
        found: dict[str, dict[str, Any]] = {}
        for event in result.get_asset_materialization_events():
            materialization = event.step_materialization_data.materialization
            found[materialization.asset_key.to_user_string()] = {
                k: v.value for k, v in materialization.metadata.items()
            }
        return found

    remaining = budget_usd

    def spend(spent: float, stopped: bool) -> None:
        nonlocal remaining
        if stopped:
            summary.budget_exhausted = True
        if remaining is not None:
            remaining = 0.0 if stopped else max(remaining - spent, 0.0)

    for iso in isos:
        execute("corpus_job", f"corpus {iso}", iso, CORPUS_ASSETS, {})
    # The granularity task bank is frozen like the item bank and regenerated with it.
    items_config = paid_ops(
        "study_inputs_job",
        remaining,
        {
            "item_bank": {"regenerate": regenerate_items},
            "granularity_task_bank": {"regenerate": regenerate_items},
        },
    )
    inputs = execute(
        "study_inputs_job",
        "sample, items, fertility",
        None,
        STUDY_INPUT_ASSETS,
        items_config,
        rerun=regenerate_items,
    )
    if inputs is not None:
        # The confusion writer's calls have no table: the task bank's materialization counts them
        # (a writer stopped by the budget fails the job instead: the bank is frozen once written).
        bank = materialized(inputs).get("granularity_tasks", {})
        writer_cost = float(bank.get("writer_new_cost_usd") or 0.0)
        summary.count("judges", int(bank.get("writer_new_calls") or 0), writer_cost)
        spend(writer_cost, False)

    def account(iso: str, model_id: str) -> tuple[float, bool]:
        """Count a finished partition's new calls; (its new spend, whether the budget stopped it)."""
        return account_tables(PARTITION_CALL_TABLES, {"language": iso, "model": model_id})

    def responses_config(remaining: float | None) -> dict[str, Any]:
        return paid_ops("responses_job", remaining)

    partitions = [(model_id, iso) for model_id in model_ids for iso in isos]
    in_workers = budget_usd is None and parallel > 1 and len(partitions) > 1
    # Hosted models only: an offline model's "calls" are local CPU work, with no latency to hide.
    pending = [
        (model_id, iso)
        for model_id, iso in partitions
        if calls_ahead
        and budget_usd is None
        and mode == "online"
        and config.models.get(model_id).provider != "offline"
        and (force or regenerate_items or not responses_done(iso, model_id))
    ]
    token = make_new_run_id() if pending else None
    ahead_tags = {CALLS_AHEAD_TAG: token} if token else {}
    shown = {"step": step + 1, "label": ""}  # what the progress line says besides the calls ahead

    def show(label: str, number: int, total_steps: int) -> None:
        shown.update(step=number, label=label)
        if on_step:
            on_step(label, number, total_steps)

    def ahead_progress(text: str) -> None:
        if on_step:
            on_step(f"{shown['label']} ({text})" if shown["label"] else text, int(shown["step"]), total)

    stop_ahead = threading.Event()

    def send_ahead(answered: Callable[[str, str], None] | None = None) -> CallsAhead:
        assert token is not None
        return send_calls_ahead(
            config,
            data_dir,
            pending,
            token=token,
            interrupted=lambda: interrupted() or stop_ahead.is_set(),
            progress=ahead_progress,
            answered_partition=answered,
        )

    if pending and not in_workers:
        summary.calls_ahead = send_ahead()
    if in_workers:
        answered: set[tuple[str, str]] = set()
        pending_set = set(pending)
        background: list[futures.Future[CallsAhead]] = []
        threads = futures.ThreadPoolExecutor(1, thread_name_prefix="clcg-calls-ahead")

        def start_ahead() -> None:
            background.append(threads.submit(send_ahead, lambda m, iso: answered.add((m, iso))))

        def ready(model_id: str, iso: str) -> bool:
            done = bool(background) and background[0].done()
            return (model_id, iso) not in pending_set or (model_id, iso) in answered or done

        try:
            step = _run_responses_in_workers(
                instance,
                defs,
                partitions,
                parallel=parallel,
                run_config=responses_config(None),
                tags=lambda key: {
                    FINGERPRINT_TAG: versions["study"],
                    **study_run_tags(config, key),
                    **ahead_tags,
                },
                # New items change the questions: every partition answers them (cached calls are free).
                skip=lambda iso, model_id: not (force or regenerate_items) and responses_done(iso, model_id),
                account=account,
                on_forget=lambda key: fresh.forget(RESPONSE_ASSETS, key),
                summary=summary,
                step=step,
                total=total,
                on_step=show,
                interrupted=interrupted,
                ready=ready if pending else None,
                workers_started=start_ahead if pending else None,
            )
        except BaseException:
            stop_ahead.set()  # a failed partition or Ctrl-C: stop sending, keep what was answered
            raise
        finally:
            threads.shutdown(wait=True)
        if background:
            summary.calls_ahead = background[0].result()
    for model_id, iso in [] if in_workers else partitions:
        key = response_key(iso, model_id)
        if remaining is not None and remaining <= 0:
            summary.budget_exhausted = True
            step += 1
            continue
        ran = execute(
            "responses_job",
            f"{model_id} / {iso}",
            str(key),
            RESPONSE_ASSETS,
            responses_config(remaining),
            # New items change the questions: every partition answers them (cached calls are free).
            rerun=regenerate_items,
            done=lambda iso=iso, model_id=model_id: responses_done(iso, model_id),
            tags=ahead_tags,
        )
        if ran is None:
            continue
        spend(*account(iso, model_id))
    # The analysis always re-runs: it reads every partition, including other sessions' models.
    # Its judges get what the budget left (zero: only free calls are made, the rest skipped).
    analysis = execute(
        "analysis_job", "estimates and report", None, None, paid_ops("analysis_job", remaining)
    )
    written = materialized(analysis) if analysis is not None else {}
    spend(*account_tables({t: k for t, k in ANALYSIS_CALL_TABLES.items() if t in written}, None))
    return summary
