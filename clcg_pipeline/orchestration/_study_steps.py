"""The steps of one ``clcg run``, in the order they run, over the state they share.

corpus (one run per language) -> study inputs -> calls sent ahead -> responses (one run per
model over the range of its stale languages, in process or in forked workers) -> analysis.
Each step runs a job partition only when it is not up to date in the data folder
(``_freshness``), counts the new calls it paid for (``_summary``) and passes on what the
budget left.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CALLS_AHEAD_TAG, check_credentials, coordination_tags
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration._calls_ahead import CallsAhead, send_calls_ahead
from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.orchestration._freshness import Freshness
from clcg_pipeline.orchestration._jobs import (
    ANALYSIS_ASSETS,
    CORPUS_ASSETS,
    RESPONSE_ASSETS,
    STUDY_INPUT_ASSETS,
    provider_tags,
    study_run_tags,
)
from clcg_pipeline.orchestration._model_calls import OFFLINE, record_stream, unstreamed_models
from clcg_pipeline.orchestration._partition_run import (
    LanguageRange,
    StudyRunError,
    execute_job,
    failure_of,
    language_order,
    stale_ranges,
)
from clcg_pipeline.orchestration._summary import (
    ANALYSIS_CALL_TABLES,
    INPUT_CALL_TABLES,
    PARTITION_CALL_TABLES,
    RunSummary,
    count_new_calls,
    materialized,
    record_imports,
    study_total,
)
from clcg_pipeline.orchestration._versions import code_versions, version_for
from clcg_pipeline.orchestration._workers import (
    WorkerHooks,
    ctrl_c_for_this_process_only,
    run_responses_in_workers,
)
from clcg_pipeline.partitions import MODEL_CALLS, STREAM_TOKEN, response_key
from clcg_pipeline.validation.human import INBOX_METADATA, inbox_fingerprint

FINGERPRINT_TAG = "clcg/fingerprint"
# Why a hosted model's stream sent nothing ahead (``model_calls``'s record of it).
_NOT_AHEAD = "not sent ahead (a budget, batch mode or --no-calls-ahead): its partitions call in their runs"
_NOTHING_PENDING = "every partition already answered: nothing to send"
# Every paid op (multi_asset function name) of each job; ``clcg run`` hands each of them the
# run's budget (one Budget per Dagster run: ``calls.run_budget``) and, where the op supports
# it, the call mode. The confusion writer is online only (see ``judge_writer``).
PAID_OPS = {
    "study_inputs_job": {"granularity_task_bank": False},
    "responses_job": {"responses": True, "task_responses": True, "task_scoring": True},
    "analysis_job": {"error_judging": True, "keypoint_checklists": True},
}

Progress = Callable[[str, int, int], None]  # (label, step number, steps in all)


@dataclass(frozen=True)
class StudyRequest:
    """What ``clcg run`` was asked to do (checked: known models and languages)."""

    config_dir: str
    data_dir: str
    model_ids: list[str]
    isos: list[str]
    budget_usd: float | None
    mode: str
    force: bool
    regenerate_items: bool
    parallel: int = 1
    calls_ahead: bool = False


@dataclass
class _AheadPlan:
    """The pending hosted partitions whose calls are sent ahead, and the token their runs carry."""

    pending: list[tuple[str, str]]
    token: str | None

    @property
    def tags(self) -> dict[str, str]:
        return {CALLS_AHEAD_TAG: self.token} if self.token else {}


class StudyRun:
    """One ``clcg run`` on one instance: its definitions, freshness, progress, budget and summary."""

    def __init__(
        self,
        instance: dg.DagsterInstance,
        config: ProjectConfig,
        request: StudyRequest,
        *,
        on_step: Progress | None,
        interrupted: Callable[[], bool],
    ) -> None:
        self.instance = instance
        self.config = config
        self.request = request
        self.on_step = on_step
        self.interrupted = interrupted
        self.defs = build_definitions(request.config_dir, request.data_dir)
        sync_model_partitions(instance, config)
        self.versions = code_versions(config)
        self.fresh = Freshness(self.defs, request.data_dir, self.versions)
        self.summary = RunSummary(run_budget_usd=request.budget_usd, study_budget_usd=config.study.budget_usd)
        self.started_at = pd.Timestamp.now(tz="UTC")  # annotation files logged since are this command's
        isos, models = len(request.isos), len(request.model_ids)
        # corpus per language, the study inputs, one step per model's responses, the analysis.
        self.total = isos + 1 + models + 1
        # What a run with nothing to do counts as up to date (``RunSummary.skipped``).
        self.partition_count = isos + 1 + isos * models + 1
        self.step = 0
        self.remaining = request.budget_usd  # what the budget left for the next paid run
        self.partitions = [(model_id, iso) for model_id in request.model_ids for iso in request.isos]
        self.coordination = coordination_tags(str(UPath(request.data_dir) / "cache" / "calls"))

    # -- what is stale -------------------------------------------------------------------

    def responses_done(self, iso: str, model_id: str) -> bool:
        key = str(response_key(iso, model_id))
        return self.fresh.up_to_date(RESPONSE_ASSETS, key, self.request.isos) and not (
            self.fresh.unfinished_calls(key)
        )

    def _reruns_responses(self) -> bool:
        # New items change the questions: every partition answers them (cached calls are free).
        return self.request.force or self.request.regenerate_items

    def check_keys(self) -> None:
        """A missing key fails before anything runs, but only for models with work left: a
        fully materialized model (re-scoring, re-estimating) needs no key at all."""
        for model_id in self.request.model_ids:
            pending = self._reruns_responses() or not all(
                self.responses_done(iso, model_id) for iso in self.request.isos
            )
            if pending:
                check_credentials(self.config.models.get(model_id))

    # -- running one job partition -------------------------------------------------------

    def _range_tags(self, run_range: LanguageRange, extra: dict[str, str]) -> dict[str, str]:
        """A responses run's tags: its range's, and its model's provider as the coordinator
        gives a backfill's range run (``provider_tags``)."""
        return {
            **self._tags(run_range.partition, {**run_range.tags, **extra}),
            **provider_tags(self.config, run_range.tags),
        }

    def _tags(self, partition: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            FINGERPRINT_TAG: self.versions["study"],
            **study_run_tags(self.config, partition),
            **self.coordination,  # how its calls coordinate (clcg/coordination)
            **(extra or {}),
        }

    def execute(
        self,
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
        if self.interrupted():
            raise KeyboardInterrupt
        self.step += 1
        if self.on_step:
            self.on_step(label, self.step, self.total)
        skippable = bool(assets) and not (self.request.force or rerun)
        if skippable and (
            done() if done else self.fresh.up_to_date(assets or (), partition, self.request.isos)
        ):
            self.summary.skipped += 1
            return None
        return self._launch(job, partition, [partition], assets, run_config, self._tags(partition, tags))

    def _launch(
        self,
        job: str,
        partition: str | None,
        written: Sequence[str | None],
        assets: Sequence[str] | None,
        run_config: dict[str, Any],
        tags: dict[str, str],
        name: str | None = None,
    ) -> dg.ExecuteInProcessResult:
        """One Dagster run in process; ``written``: the partitions it writes (a range's several)."""
        with ctrl_c_for_this_process_only():  # no traceback from Dagster's helper processes
            result = execute_job(self.instance, self.defs, job, partition, run_config, tags)
        self.summary.ran(result.run_id)  # the calls it paid for are this command's
        self.summary.runs += 1
        for key in written:
            self.fresh.forget(assets or (), key)
        if not result.success:
            self._raise_failure(job, name or partition, result)
        if self.interrupted():
            raise KeyboardInterrupt
        return result

    def _raise_failure(self, job: str, partition: str | None, result: dg.ExecuteInProcessResult) -> None:
        message, ours, was_interrupt = failure_of(result)
        if was_interrupt or self.interrupted():
            raise KeyboardInterrupt
        if job == "corpus_job" and ours:
            # Every corpus partition reads the whole source; the message names the bad
            # file and language, and the partition that happened to run first would mislead.
            raise StudyRunError(f"loading the corpus failed: {message}")
        raise StudyRunError(f"{job} [{partition or 'unpartitioned'}] failed: {message}")

    def paid_ops(
        self, job: str, remaining: float | None, extra: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Run config giving every paid op of ``job`` the budget left (and ``mode`` where it batches)."""
        ops: dict[str, dict[str, Any]] = {op: {"config": dict(cfg)} for op, cfg in (extra or {}).items()}
        job_def = self.defs.resolve_job_def(job)
        for op, batches in PAID_OPS[job].items():
            if not job_def.graph.has_node_named(op):
                continue  # e.g. a study whose definitions leave that op out
            settings = ops.setdefault(op, {"config": {}})["config"]
            settings["budget_usd"] = remaining
            if batches:
                settings["mode"] = self.request.mode
        return {"ops": ops}

    # -- the budget ----------------------------------------------------------------------

    def spend(self, spent: float, stopped: bool) -> None:
        if stopped:
            self.summary.budget_exhausted = True
        if self.remaining is not None:
            self.remaining = 0.0 if stopped else max(self.remaining - spent, 0.0)

    def account(self, iso: str, model_id: str) -> tuple[float, bool]:
        """Count a finished partition's new calls; (its new spend, whether the budget stopped it)."""
        partition = {"language": iso, "model": model_id}
        return count_new_calls(
            self.summary, self.request.data_dir, PARTITION_CALL_TABLES, partition, self.started_at
        )

    def account_range(self, run_range: LanguageRange) -> tuple[float, bool]:
        """Count each partition of a finished range run, as if each had run alone."""
        spent, stopped = 0.0, False
        for iso in run_range.isos:
            cost, hit = self.account(iso, run_range.model_id)
            spent, stopped = spent + cost, stopped or hit
        return spent, stopped

    # -- the steps -----------------------------------------------------------------------

    def run_corpus(self) -> None:
        for iso in self.request.isos:
            self.execute("corpus_job", f"corpus {iso}", iso, CORPUS_ASSETS, {})

    def run_study_inputs(self) -> None:
        regenerate = self.request.regenerate_items
        # The granularity task bank is frozen like the item bank and regenerated with it.
        items_config = self.paid_ops(
            "study_inputs_job",
            self.remaining,
            {"item_bank": {"regenerate": regenerate}, "granularity_task_bank": {"regenerate": regenerate}},
        )
        inputs = self.execute(
            "study_inputs_job",
            "sample, items, fertility",
            None,
            STUDY_INPUT_ASSETS,
            items_config,
            rerun=regenerate,
        )
        if inputs is not None:
            # The item generator's and the writers' calls, from their tables (a writer stopped by
            # the budget fails the job instead: the bank is frozen once written).
            written = materialized(inputs)
            tables = {t: k for t, k in INPUT_CALL_TABLES.items() if t in written}
            spent, _ = count_new_calls(self.summary, self.request.data_dir, tables, None)
            self.spend(spent, False)

    def response_ranges(self) -> list[LanguageRange]:
        """Each model's runs: the stretches of its stale languages (``stale_ranges``); the
        partitions up to date are counted as skipped here."""
        order = language_order(self.defs)
        ranges: list[LanguageRange] = []
        for model_id in self.request.model_ids:
            stale = [
                iso
                for iso in self.request.isos
                if self._reruns_responses() or not self.responses_done(iso, model_id)
            ]
            self.summary.skipped += len(self.request.isos) - len(stale)
            ranges += stale_ranges(model_id, order, stale)
        return ranges

    def in_workers(self, ranges: Sequence[LanguageRange]) -> bool:
        """The models' runs go to forked workers: several at once, and no ``budget_usd``
        (each in-process run gets what the previous ones left). One run needs no worker."""
        request = self.request
        return request.budget_usd is None and request.parallel > 1 and len(ranges) > 1

    def plan_calls_ahead(self) -> _AheadPlan:
        """The stale partitions of hosted models, when calls go ahead (online, no budget)."""
        request = self.request
        # Hosted models only: an offline model's "calls" are local CPU work, with no latency to hide.
        pending = [
            (model_id, iso)
            for model_id, iso in self.partitions
            if request.calls_ahead
            and request.budget_usd is None
            and request.mode == "online"
            and self.config.models.get(model_id).provider != "offline"
            and (self._reruns_responses() or not self.responses_done(iso, model_id))
        ]
        return _AheadPlan(pending, str(uuid.uuid4()) if pending else None)

    def record_streams(self, ahead: _AheadPlan) -> None:
        """Record ``model_calls`` of each model streamed now, or never recorded on this instance.

        ``clcg run`` is that asset's launcher here (its stream is ``_calls_ahead``): without the
        record, the daemon of ``make dev`` would find the stream missing and launch it again.
        Recorded before anything is sent: the record names the stream's token, so if this
        process is killed after paying, the next run's partitions still claim what it paid
        (``partitions.streamed_tokens``).
        """
        streamed: dict[str, list[str]] = {}
        for model_id, iso in ahead.pending:
            streamed.setdefault(model_id, []).append(iso)
        version = version_for(MODEL_CALLS, self.versions)
        for model_id in {*streamed, *unstreamed_models(self.instance, self.request.model_ids)}:
            if model_id in streamed:
                metadata: dict[str, Any] = {
                    "streamed": True,
                    STREAM_TOKEN: ahead.token,
                    "languages": dg.MetadataValue.json(streamed[model_id]),
                }
            elif self.config.models.get(model_id).provider == "offline":
                metadata = {"streamed": False, "why": OFFLINE}
            else:
                pending = not all(self.responses_done(iso, model_id) for iso in self.request.isos)
                metadata = {"streamed": False, "why": _NOT_AHEAD if pending else _NOTHING_PENDING}
            record_stream(self.instance, model_id, version, metadata)

    def run_responses(self, ahead: _AheadPlan) -> None:
        """One run per model over its stale languages (issue 32: the runs the daemon's backfill
        and the UI's Materialize launch), in forked workers or one after another in process."""
        self.record_streams(ahead)  # before the partitions: they are never older than their stream
        if ahead.token:
            self.summary.ran(ahead.token)  # what its stream pays is this command's (calls/_results.py)
        sender = _AheadSender(self, ahead)
        ranges = self.response_ranges()
        if self.in_workers(ranges):
            self._responses_in_workers(ranges, ahead, sender)
            return
        if ahead.pending:
            self.summary.calls_ahead = sender.send()
        for model_id in self.request.model_ids:  # one progress step per model
            if self.interrupted():
                raise KeyboardInterrupt
            self.step += 1
            own = [r for r in ranges if r.model_id == model_id]
            if not own and self.on_step:
                self.on_step(f"{model_id} up to date", self.step, self.total)
            for run_range in own:
                self._range_in_process(run_range, ahead)

    def _range_in_process(self, run_range: LanguageRange, ahead: _AheadPlan) -> None:
        if self.interrupted():
            raise KeyboardInterrupt
        if self.on_step:
            self.on_step(run_range.label, self.step, self.total)
        if self.remaining is not None and self.remaining <= 0:
            self.summary.budget_exhausted = True
            return
        self._launch(
            "responses_job",
            run_range.partition,
            run_range.keys,
            RESPONSE_ASSETS,
            # The budget left caps the whole run: one Budget per Dagster run (calls.run_budget).
            self.paid_ops("responses_job", self.remaining),
            self._range_tags(run_range, ahead.tags),
            name=run_range.name,
        )
        self.spend(*self.account_range(run_range))

    def _responses_in_workers(
        self, ranges: list[LanguageRange], ahead: _AheadPlan, sender: _AheadSender
    ) -> None:
        answered: set[tuple[str, str]] = set()
        pending = set(ahead.pending)
        background: list[futures.Future[CallsAhead]] = []
        threads = futures.ThreadPoolExecutor(1, thread_name_prefix="clcg-calls-ahead")

        def start_ahead() -> None:
            background.append(threads.submit(sender.send, lambda m, iso: answered.add((m, iso))))

        def ready(run_range: LanguageRange) -> bool:
            """A model's run starts once every call sent ahead for its languages is answered."""
            if background and background[0].done():
                return True
            waiting = {(run_range.model_id, iso) for iso in run_range.isos} & pending
            return waiting <= answered

        base = self.step
        steps: dict[str, int] = {}

        def step_of(model_id: str) -> int:
            """One step per model, numbered as its first run starts (the progress bar only grows)."""
            return steps.setdefault(model_id, base + len(steps) + 1)

        hooks = WorkerHooks(
            run_config=self.paid_ops("responses_job", None),
            tags=lambda run_range: self._range_tags(run_range, ahead.tags),
            step_of=step_of,
            account=self.account,
            on_forget=lambda key: self.fresh.forget(RESPONSE_ASSETS, key),
            on_step=sender.show,
            interrupted=self.interrupted,
            ready=ready if ahead.pending else None,
            workers_started=start_ahead if ahead.pending else None,
        )
        try:
            run_responses_in_workers(
                self.instance,
                self.defs,
                ranges,
                parallel=self.request.parallel,
                hooks=hooks,
                summary=self.summary,
                total=self.total,
            )
        except BaseException:
            sender.stop.set()  # a failed partition or Ctrl-C: stop sending, keep what was answered
            raise
        finally:
            threads.shutdown(wait=True)
        for model_id in self.request.model_ids:  # the models with nothing to run, last
            if model_id not in steps and self.on_step:
                self.on_step(f"{model_id} up to date", step_of(model_id), self.total)
        self.step = base + len(self.request.model_ids)
        if background:
            self.summary.calls_ahead = background[0].result()

    def everything_current(self) -> bool:
        """Every partition this run was asked for is up to date now (checked in full, after it ran)."""
        isos = self.request.isos
        fresh = self.fresh
        return (
            all(fresh.up_to_date(CORPUS_ASSETS, iso, isos) for iso in isos)
            and fresh.up_to_date(STUDY_INPUT_ASSETS, None, isos)
            and all(self.responses_done(iso, model_id) for model_id, iso in self.partitions)
            and self.analysis_done()
        )

    def analysis_done(self) -> bool:
        """The analysis is current, stored here, newer than every partition of what it reads
        (other sessions' models included), none of its judges stopped short, and the
        annotation inbox holds what it imported last."""
        fresh = self.fresh
        if not (
            fresh.up_to_date(ANALYSIS_ASSETS, None, self.request.isos)
            and fresh.newer_than_everything_read(ANALYSIS_ASSETS)
            and not fresh.unfinished_calls(None, tuple(ANALYSIS_CALL_TABLES))
        ):
            return False
        recorded = fresh.recorded_metadata("annotation_imports", None, INBOX_METADATA)
        inbox = inbox_fingerprint(self.request.data_dir, self.config.study.human_validation.inbox)
        return recorded is not None and recorded == inbox

    def run_analysis(self) -> None:
        # Its judges get what the budget left (zero: only free calls are made, the rest skipped).
        analysis = self.execute(
            "analysis_job",
            "estimates and report",
            None,
            ANALYSIS_ASSETS,
            self.paid_ops("analysis_job", self.remaining),
            done=self.analysis_done,
        )
        written = materialized(analysis) if analysis is not None else {}
        tables = {t: k for t, k in ANALYSIS_CALL_TABLES.items() if t in written}
        self.spend(*count_new_calls(self.summary, self.request.data_dir, tables, None, self.started_at))
        # What each annotation file did (imported, skipped, revised, refused), whether or not
        # the analysis ran: a refused file is said on every run until it is fixed.
        record_imports(self.summary, self.request.data_dir, self.started_at)
        study_total(self.summary, self.request.data_dir)


class _AheadSender:
    """Sends the calls ahead, and shows their progress on the partition's progress line."""

    def __init__(self, run: StudyRun, ahead: _AheadPlan) -> None:
        self.run = run
        self.ahead = ahead
        self.stop = threading.Event()
        # What the progress line says besides the calls ahead.
        self.shown: dict[str, Any] = {"step": run.step + 1, "label": ""}

    def show(self, label: str, number: int, total_steps: int) -> None:
        self.shown.update(step=number, label=label)
        if self.run.on_step:
            self.run.on_step(label, number, total_steps)

    def progress(self, text: str) -> None:
        on_step = self.run.on_step
        if on_step:
            label = self.shown["label"]
            on_step(f"{label} ({text})" if label else text, int(self.shown["step"]), self.run.total)

    def send(self, answered: Callable[[str, str], None] | None = None) -> CallsAhead:
        assert self.ahead.token is not None
        run = self.run
        return send_calls_ahead(
            run.config,
            run.request.data_dir,
            self.ahead.pending,
            token=self.ahead.token,
            interrupted=lambda: run.interrupted() or self.stop.is_set(),
            progress=self.progress,
            answered_partition=answered,
        )
