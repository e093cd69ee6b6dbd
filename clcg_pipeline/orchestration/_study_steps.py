"""The steps of one ``clcg run``, in order: corpus (one run over the stale languages), study
inputs, each hosted model's stream of calls (``model_calls``), responses (one run per model over
its stale languages, in process or in forked workers), analysis. Each step runs only what is not
up to date in the data folder (``_freshness``), counts the calls it paid (``_summary``) and
passes on what the budget left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import check_credentials, coordination_tags
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.inference.sensors import sync_model_partitions
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
    partition_order,
    range_tags,
    span_name,
    stretches,
)
from clcg_pipeline.orchestration._summary import (
    ANALYSIS_CALL_TABLES,
    INPUT_CALL_TABLES,
    PARTITION_CALL_TABLES,
    RunSummary,
    Streams,
    count_job_calls,
    count_new_calls,
    record_imports,
    study_total,
)
from clcg_pipeline.orchestration._versions import code_versions, version_for
from clcg_pipeline.orchestration._workers import (
    StreamRun,
    WorkerHooks,
    WorkerPool,
    ctrl_c_for_this_process_only,
)
from clcg_pipeline.partitions import MODEL_CALLS, response_key
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
        self.on_step: Progress = on_step or (lambda _label, _step, _total: None)
        self.interrupted = interrupted
        self.defs = build_definitions(request.config_dir, request.data_dir)
        sync_model_partitions(instance, config)
        self.versions = code_versions(config)
        self.fresh = Freshness(self.defs, request.data_dir, self.versions)
        self.summary = RunSummary(run_budget_usd=request.budget_usd, study_budget_usd=config.study.budget_usd)
        self.started_at = pd.Timestamp.now(tz="UTC")  # annotation files logged since are this command's
        isos, models = len(request.isos), len(request.model_ids)
        # the corpus, the study inputs, one step per model's responses, the analysis.
        self.total = 1 + 1 + models + 1
        # What a run with nothing to do counts as up to date (``RunSummary.skipped``).
        self.partition_count = isos + 1 + isos * models + 1
        self.step = 0
        self.remaining = request.budget_usd  # what the budget left for the next paid run
        self.coordination = coordination_tags(str(UPath(request.data_dir) / "cache" / "calls"))

    # -- what is stale -------------------------------------------------------------------

    def responses_done(self, iso: str, model_id: str) -> bool:
        key = str(response_key(iso, model_id))
        return self.fresh.up_to_date(RESPONSE_ASSETS, key, self.request.isos) and not (
            self.fresh.unfinished_calls(key)
        )

    def check_keys(self) -> None:
        """A missing key fails before anything runs, for the models with work left only."""
        for model_id, stale in self.stale_languages().items():
            if stale:
                check_credentials(self.config.models.get(model_id))

    # -- running one job partition -------------------------------------------------------

    def _tags(self, partition: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        """A run's tags: ``extra`` (a range run's), and its model's provider (as the coordinator's)."""
        return {
            FINGERPRINT_TAG: self.versions["study"],
            **study_run_tags(self.config, partition),
            **provider_tags(self.config, extra or {}),
            **self.coordination,  # how its calls coordinate (clcg/coordination)
            **(extra or {}),
        }

    def execute(
        self,
        job: str,
        label: str,
        assets: Sequence[str],
        run_config: dict[str, Any],
        *,
        rerun: bool = False,
        done: Callable[[], bool] | None = None,
    ) -> dg.ExecuteInProcessResult | None:
        """Run an unpartitioned job unless it is up to date; its result when it ran, else None."""
        self.step += 1
        self._say(label)
        current = done or (lambda: self.fresh.up_to_date(assets, None, self.request.isos))
        if not (self.request.force or rerun) and current():
            self.summary.skipped += 1
            return None
        return self._launch(job, None, assets, run_config, self._tags(None))

    def _say(self, label: str) -> None:
        """Stop at a Ctrl-C noted between runs (a safe point), else show ``label`` at this step."""
        if self.interrupted():
            raise KeyboardInterrupt
        self.on_step(label, self.step, self.total)

    def _launch(
        self,
        job: str,
        partition: str | None,
        assets: Sequence[str],
        run_config: dict[str, Any],
        tags: dict[str, str],
        name: str | None = None,
    ) -> dg.ExecuteInProcessResult:
        """One Dagster run in process (``name``: the range it runs, for a failure's line)."""
        # No traceback from Dagster's helper processes; a Ctrl-C the run lost is sent again.
        with ctrl_c_for_this_process_only(self.interrupted):
            result = execute_job(self.instance, self.defs, job, partition, run_config, tags)
        self.summary.run_ids.add(result.run_id)  # the calls it paid for are this command's
        self.summary.runs += 1
        self.fresh.forget(assets)
        message, ours, was_interrupt = ("", False, False) if result.success else failure_of(result)
        if was_interrupt or self.interrupted():
            raise KeyboardInterrupt
        if result.success:
            return result
        if job == "corpus_job" and ours:
            # Every corpus partition reads the whole source; the message names the bad
            # file and language, and the partition that happened to run first would mislead.
            raise StudyRunError(f"loading the corpus failed: {message}")
        raise StudyRunError(f"{job} [{name or partition or 'unpartitioned'}] failed: {message}")

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
        # (A budget stop is already on the summary: ``count_new_calls`` says it.)
        if self.remaining is not None:
            self.remaining = 0.0 if stopped else max(self.remaining - spent, 0.0)

    def account(self, iso: str, model_id: str) -> tuple[float, bool]:
        """Count a finished partition's new calls; (its new spend, whether the budget stopped it)."""
        partition = {"language": iso, "model": model_id}
        return count_new_calls(self.summary, self.request.data_dir, PARTITION_CALL_TABLES, partition)

    # -- the steps -----------------------------------------------------------------------

    def run_corpus(self) -> None:
        """The stale languages' corpus in one run per contiguous stretch (one for a new study):
        each run parses the source once for all its languages (issue 32), as the daemon's
        backfill and the UI's Materialize do (the corpus assets' single-run backfill policy)."""
        if self.interrupted():
            raise KeyboardInterrupt
        self.step += 1
        isos = self.request.isos
        stale = [
            iso for iso in isos if self.request.force or not self.fresh.up_to_date(CORPUS_ASSETS, iso, isos)
        ]
        self.summary.skipped += len(isos) - len(stale)
        runs = stretches(partition_order(self.defs, "corpus_job"), stale)
        if not runs:
            self.on_step("corpus up to date", self.step, self.total)
        for keys in runs:
            one = keys[0] if len(keys) == 1 else None  # a stretch of one: that partition's run
            self._say(f"corpus {span_name(keys)}" + ("" if one else f" ({len(keys)} languages)"))
            tags = self._tags(one, range_tags(keys))
            self._launch("corpus_job", one, CORPUS_ASSETS, {}, tags, name=span_name(keys))

    def run_study_inputs(self) -> None:
        regenerate = self.request.regenerate_items
        # The granularity task bank is frozen like the item bank and regenerated with it.
        items_config = self.paid_ops(
            "study_inputs_job",
            self.remaining,
            {"item_bank": {"regenerate": regenerate}, "granularity_task_bank": {"regenerate": regenerate}},
        )
        inputs = self.execute(
            "study_inputs_job", "sample, items, fertility", STUDY_INPUT_ASSETS, items_config, rerun=regenerate
        )
        # The item generator's and the writers' calls, from their tables (a writer stopped by
        # the budget fails the job instead: the bank is frozen once written).
        spent, _ = count_job_calls(self.summary, self.request.data_dir, inputs, INPUT_CALL_TABLES)
        self.spend(spent, False)

    def stale_languages(self) -> dict[str, list[str]]:
        """Each model's selected languages whose responses run (all of them when reruns are asked)."""
        # New items change the questions: every partition answers them (cached calls are free).
        rerun = self.request.force or self.request.regenerate_items
        return {
            model_id: [iso for iso in self.request.isos if rerun or not self.responses_done(iso, model_id)]
            for model_id in self.request.model_ids
        }

    def response_ranges(self, stale: dict[str, list[str]]) -> list[LanguageRange]:
        """Each model's runs: the stretches of its stale languages (``stretches``); the
        partitions up to date are counted as skipped here."""
        order = partition_order(self.defs, "responses_job")
        ranges: list[LanguageRange] = []
        for model_id, isos in stale.items():
            self.summary.skipped += len(self.request.isos) - len(isos)
            ranges += [LanguageRange(model_id, run) for run in stretches(order, isos)]
        return ranges

    def plan_streams(self, stale: dict[str, list[str]]) -> dict[str, list[str]]:
        """The hosted models whose stale languages' calls go in one stream each (``model_calls``
        runs), when they may (online, no ``--budget``: a stream's spend is not known before its
        partitions run); an offline model's "calls" are local CPU work, with no latency to hide."""
        request = self.request
        if not request.calls_ahead or request.budget_usd is not None or request.mode != "online":
            return {}
        hosted = {m for m in request.model_ids if self.config.models.get(m).provider != "offline"}
        return {model_id: isos for model_id, isos in stale.items() if model_id in hosted and isos}

    def record_streams(self, streams: dict[str, list[str]], stale: dict[str, list[str]]) -> None:
        """Record ``model_calls`` of each model not streamed now and never recorded on this
        instance, with why: else ``make dev``'s daemon would launch it, for nothing."""
        version = version_for(MODEL_CALLS, self.versions, self.fresh.kinds)
        unstreamed = unstreamed_models(self.instance, self.request.model_ids)
        for model_id in [m for m in unstreamed if m not in streams]:
            why = _NOT_AHEAD if stale[model_id] else _NOTHING_PENDING
            if self.config.models.get(model_id).provider == "offline":
                why = OFFLINE
            record_stream(self.instance, model_id, version, {"streamed": False, "why": why})

    def run_responses(self) -> None:
        """One run per model over its stale languages (issue 32: the runs the daemon's backfill
        and the UI's Materialize launch), in forked workers or one after another in process;
        with streams, each hosted model's ``model_calls`` run first, in the workers."""
        stale = self.stale_languages()
        streams = self.plan_streams(stale)
        self.record_streams(streams, stale)  # before the partitions: never older than their stream
        ranges = self.response_ranges(stale)
        # Several runs at once go to forked workers; with a budget they go one after another,
        # each getting what the previous ones left.
        request = self.request
        if streams or (request.budget_usd is None and request.parallel > 1 and len(ranges) > 1):
            self._responses_in_workers(ranges, streams)
            return
        for model_id in self.request.model_ids:  # one progress step per model
            if self.interrupted():
                raise KeyboardInterrupt
            self.step += 1
            own = [r for r in ranges if r.model_id == model_id]
            if not own:
                self.on_step(f"{model_id} up to date", self.step, self.total)
            for run_range in own:
                self._range_in_process(run_range)

    def _range_in_process(self, run_range: LanguageRange) -> None:
        self._say(run_range.label)
        if self.remaining is not None and self.remaining <= 0:
            self.summary.budget_exhausted = True
            return
        self._launch(
            "responses_job",
            run_range.partition,
            RESPONSE_ASSETS,
            # The budget left caps the whole run: one Budget per Dagster run (calls.run_budget).
            self.paid_ops("responses_job", self.remaining),
            self._tags(run_range.partition, run_range.tags),
            name=run_range.name,
        )
        counted = [self.account(iso, run_range.model_id) for iso in run_range.isos]  # each as if alone
        self.spend(sum(spent for spent, _ in counted), any(stopped for _, stopped in counted))

    def _stream_runs(self, streams: dict[str, list[str]]) -> list[StreamRun]:
        """Each model's ``model_calls_job`` run, over the languages this command runs."""
        return [
            StreamRun(model_id, {"ops": {MODEL_CALLS: {"config": {"languages": isos}}}}, self._tags(model_id))
            for model_id, isos in streams.items()
        ]

    def _stream_ended(self, streamed: Streams, started: float) -> Callable[[str, str, bool, str], None]:
        """What a stream's run tells the summary once it ends (its materialization's figures)."""

        def ended(model_id: str, run_id: str, ok: bool, message: str) -> None:
            streamed.runs[model_id] = run_id
            streamed.seconds = time.monotonic() - started
            if not ok:
                streamed.refused[model_id] = message
                return
            records = self.instance.get_records_for_run(
                run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
            ).records
            for record in records:
                found = record.asset_materialization
                metadata: dict[str, Any] = {k: v.value for k, v in found.metadata.items()} if found else {}
                streamed.partitions += len(metadata.get("languages") or ())
                streamed.sent += int(metadata.get("new_calls") or 0)
                streamed.failed += int(metadata.get("failed") or 0)

        return ended

    def _responses_in_workers(self, ranges: list[LanguageRange], streams: dict[str, list[str]]) -> None:
        base = self.step
        steps: dict[str, int] = {}

        def step_of(model_id: str) -> int:
            """One step per model, numbered as its first run starts (the progress bar only grows)."""
            return steps.setdefault(model_id, base + len(steps) + 1)

        if streams:
            self.summary.calls_ahead = Streams()
        hooks = WorkerHooks(
            run_config=self.paid_ops("responses_job", None),
            tags=lambda run_range: self._tags(run_range.partition, run_range.tags),
            account=self.account,
            on_forget=lambda: self.fresh.forget(RESPONSE_ASSETS),
            progress=lambda label, model_id: self.on_step(label, step_of(model_id), self.total),
            interrupted=self.interrupted,
            streams=self._stream_runs(streams),
            on_stream=self._stream_ended(self.summary.calls_ahead or Streams(), time.monotonic()),
        )
        WorkerPool(self.instance, self.defs, ranges, self.request.parallel, hooks, self.summary).run()
        for model_id in self.request.model_ids:  # the models with nothing to run, last
            if model_id not in steps:
                self.on_step(f"{model_id} up to date", step_of(model_id), self.total)
        self.step = base + len(self.request.model_ids)

    def everything_current(self) -> bool:
        """Every partition this run was asked for is up to date now (checked in full, after it ran)."""
        isos = self.request.isos
        fresh = self.fresh
        return (
            all(fresh.up_to_date(CORPUS_ASSETS, iso, isos) for iso in isos)
            and fresh.up_to_date(STUDY_INPUT_ASSETS, None, isos)
            and all(self.responses_done(iso, m) for m in self.request.model_ids for iso in isos)
            and self.analysis_done()
        )

    def analysis_done(self) -> bool:
        """The analysis is current, newer than every partition it reads (other sessions' models
        included), none of its judges stopped short, and the inbox holds what it imported last."""
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
        run_config = self.paid_ops("analysis_job", self.remaining)
        analysis = self.execute(
            "analysis_job", "estimates and report", ANALYSIS_ASSETS, run_config, done=self.analysis_done
        )
        self.spend(*count_job_calls(self.summary, self.request.data_dir, analysis, ANALYSIS_CALL_TABLES))
        # What each annotation file did (imported, skipped, revised, refused), whether or not
        # the analysis ran: a refused file is said on every run until it is fixed.
        record_imports(self.summary, self.request.data_dir, self.started_at)
        study_total(self.summary, self.request.data_dir)
