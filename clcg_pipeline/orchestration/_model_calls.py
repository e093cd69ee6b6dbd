"""One model's calls in one stream, as a step of the Dagster graph, whoever launches the study.

A responses partition (language x model) builds its requests, calls the model, then scores.
Run after run, a model's calls would drain at every partition boundary: the next run is still
starting, loading and building prompts when the last answers of the previous one come back.
``model_calls`` is the model's stream instead, an asset partitioned by model: it sends the
requests of every partition of the model not answered yet through one ``CallSession`` (one
limiter; the next partition's requests are built while the previous ones are in flight). The
daemon, a backfill, the UI and ``clcg run`` (``_study_steps``, ``_workers``) all launch these
same ``model_calls_job`` runs.

Each result goes to the call cache, paid for on behalf of ``<run id>/<partition>``. The
responses assets depend on the stream through their model dimension
(``partitions.model_calls_dep``), so they run after it, find their calls in the cache and
record them as their new calls (``calls.partition_origin``), paid by the stream's run
(``paid_run``, ``calls.call_row``); the run id is the token, so a stream killed half-way is
still found by the partitions (``partitions.streamed_tokens``). Judges read the answers, so
they are still called inside the runs. Offline models have no latency to hide: their stream
records that their partitions answer inside their own runs.

The requests are built by the same functions the assets use (``partition_requests``,
``plan_tasks``), so the call ids match; a mismatch would cost a second call, which
``clcg_pipeline_tests/test_study_calls.py`` guards against.
"""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CallOptions, CallSession, ChatRequest, ProviderConfigError, call_origin
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.granularity import partition_paragraphs, plan_tasks
from clcg_pipeline.inference import partition_requests, sampled_inputs
from clcg_pipeline.orchestration._dagster_internals import CODE_VERSION_TAG
from clcg_pipeline.partitions import MODEL_CALLS, STREAM_TOKEN, model_partitions, response_key
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import partition_dir, read_frame

# The calls tables a responses partition writes: answered means every one of them exists.
_PARTITION_CALLS = ("calls", "task_calls")
# Seconds between two progress lines in the run's event log (each line is a stored event).
_LOG_EVERY_S = 10.0
# Rounds of the model's concurrency built ahead: the next partition is built as soon as fewer
# requests than that are unanswered, so its build (a thread, slower on a busy machine) ends
# while the limiter is still full. Counted in requests, not partitions: two partitions at a
# time, a new model's partitions of a dozen calls each left a limit of 32 half empty and
# drained it at every boundary. Held in memory: these requests and the partition built last.
_AHEAD_WAVES = 4
OFFLINE = "offline model: its partitions answer inside their own runs (no latency to hide)"


@dataclass
class Streamed:
    """What one model's stream did (the partitions' own ``calls`` tables stay the record of spend)."""

    requests: int = 0
    sent: int = 0  # new calls answered (not from the cache)
    failed: int = 0  # errors and budget stops: the partition's run tries them again
    seconds: float = 0.0


def _stored(data_dir: str, table: str, partition: dict[str, str] | None = None) -> pd.DataFrame | None:
    path = partition_dir(data_dir, table, partition) / "data.parquet"
    return read_frame(path) if UPath(path).exists() else None


class _Inputs:
    """The stored inputs of the responses partitions, read once per stream."""

    def __init__(self, config: ProjectConfig, data_dir: str) -> None:
        self.config = config
        self.data_dir = data_dir
        self.items = _stored(data_dir, "items")
        self.sample = _stored(data_dir, "study_sample")
        gran = config.study.granularity
        self.long_paragraphs = _stored(data_dir, "long_paragraphs") if gran.enabled else None
        self.tasks = _stored(data_dir, "granularity_tasks") if gran.enabled else None
        self.names = {lang.iso: lang.name for lang in config.languages.languages}

    def requests(self, model_id: str, iso: str) -> list[ChatRequest]:
        """The partition's requests, items' then tasks' (none when an input is not stored yet)."""
        model = self.config.models.get(model_id)
        found: list[ChatRequest] = []
        paragraphs = _stored(self.data_dir, "paragraphs", {"language": iso})
        if paragraphs is not None and self.items is not None and self.sample is not None:
            paragraphs, items, reps = sampled_inputs(paragraphs, self.items, self.sample)
            found += partition_requests(
                model=model,
                language=iso,
                paragraphs=paragraphs,
                items=items,
                reps=reps,
                conditions=self.config.study.conditions,
            )
        if self.long_paragraphs is not None and self.tasks is not None and len(self.tasks):
            reference = self.config.languages.reference
            slots = plan_tasks(
                model=model,
                language=iso,
                paragraphs=partition_paragraphs(self.long_paragraphs, iso, reference),
                tasks=self.tasks,
                settings=self.config.study.granularity,
                reference=reference,
                language_name=self.names.get(iso),
            )
            found += [slot.request for slot in slots]
        return found


class _Stream:
    """One model's partitions through one session, built ahead of the calls in flight."""

    def __init__(self, session: CallSession, inputs: _Inputs, token: str, progress: Callable[[str], None]):
        self.session = session
        self.inputs = inputs
        self.token = token
        self.progress = progress
        self.done = Streamed()
        self.counts: dict[str, list[int]] = {}  # partition key -> [answered, requests]
        self.ahead = _AHEAD_WAVES * session.model.concurrency
        self._answered = asyncio.Event()  # set at every answer: the builder may have room again

    def unanswered(self) -> int:
        return sum(c[1] - c[0] for c in self.counts.values())

    def _report(self) -> None:
        answered = sum(c[0] for c in self.counts.values())
        self.progress(f"calls answered: {answered:,}/{sum(c[1] for c in self.counts.values()):,}")

    async def _answer(self, key: str, requests: list[ChatRequest]) -> None:
        def update(answered: int, _total: int) -> None:
            self.counts[key][0] = answered
            self._answered.set()
            self._report()

        results = await self.session.run(requests, progress=update, origin=call_origin(self.token, key))
        distinct = {r.call_id: r for r in results}.values()  # a list may ask for a call twice
        self.done.sent += sum(1 for r in distinct if not r.cached and r.outcome != "skipped_budget")
        self.done.failed += sum(1 for r in distinct if r.outcome in ("error", "skipped_budget"))

    async def _room(self, started: list[asyncio.Future[None]]) -> None:
        """Wait until fewer than ``ahead`` requests are unanswered; a failed partition raises."""
        while True:
            for task in started:
                if task.done():
                    task.result()
            if self.unanswered() < self.ahead:
                return
            self._answered.clear()
            answered: asyncio.Future[Any] = asyncio.ensure_future(self._answered.wait())
            waiting = [answered, *(task for task in started if not task.done())]
            try:
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:
                answered.cancel()

    async def run(self, model_id: str, isos: list[str]) -> None:
        started: list[asyncio.Future[None]] = []
        built: list[tuple[str, list[ChatRequest]]] = []
        try:
            for iso in isos:
                await self._room(started)
                # Built in a thread: the event loop keeps the calls already built flowing.
                requests = await asyncio.to_thread(self.inputs.requests, model_id, iso)
                self.done.requests += len(requests)
                key = str(response_key(iso, model_id))
                self.counts[key] = [0, len(requests)]
                built.append((key, requests))
                # The first calls wait for the lookahead to fill: then the next builds have
                # its rounds of calls to hide behind (a build can be slower than a round).
                if started or self.unanswered() >= self.ahead:
                    started += [asyncio.ensure_future(self._answer(k, r)) for k, r in built]
                    built.clear()
            started += [asyncio.ensure_future(self._answer(k, r)) for k, r in built]
            await asyncio.gather(*started)
        finally:
            for task in started:
                task.cancel()
            # Every partition's outcome retrieved, the failed ones too (a refusal fails them all).
            await asyncio.gather(*started, return_exceptions=True)
            await self.session.aclose()


def send_stream(
    config: ProjectConfig,
    data_dir: str,
    model_id: str,
    isos: list[str],
    *,
    token: str,
    budget_usd: float | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> Streamed:
    """Send the requests of ``model_id``'s partitions in ``isos``, paid for ``token``'s origin.

    ``budget_usd`` caps what this stream may spend (the study budget binds it as well); a call
    it stops is left to the partition's run. Raises ``ProviderConfigError`` when the provider
    refuses the configuration (a missing key). An interrupt stops it after the calls in flight
    are written: what was answered stays cached, so nothing is paid twice.
    """
    options = CallOptions(
        cache_dir=str(UPath(data_dir) / "cache" / "calls"),
        budget_usd=budget_usd,
        study_budget_usd=config.study.budget_usd,
    )
    stream = _Stream(
        CallSession(config.models.get(model_id), options), _Inputs(config, data_dir), token, progress
    )
    started = time.monotonic()
    try:
        asyncio.run(stream.run(model_id, isos))
    finally:
        stream.done.seconds = time.monotonic() - started
    return stream.done


def pending_languages(instance: dg.DagsterInstance, config: ProjectConfig, model_id: str) -> list[str]:
    """The covered languages whose partition of ``model_id`` has not been answered yet."""
    tables = _PARTITION_CALLS if config.study.granularity.enabled else _PARTITION_CALLS[:1]
    answered = [instance.get_materialized_partitions(dg.AssetKey(table)) for table in tables]
    return [
        iso
        for iso in study_coverage(config).covered
        if not all(str(response_key(iso, model_id)) in done for done in answered)
    ]


def unstreamed_models(instance: dg.DagsterInstance, model_ids: list[str]) -> list[str]:
    """The models of ``model_ids`` whose ``model_calls`` partition the instance has never recorded."""
    recorded = instance.get_materialized_partitions(dg.AssetKey(MODEL_CALLS))
    return [model_id for model_id in model_ids if model_id not in recorded]


def record_stream(
    instance: dg.DagsterInstance, model_id: str, code_version: str, metadata: dict[str, Any]
) -> None:
    """Record ``model_calls[model_id]`` as materialized by ``clcg run`` for a model whose stream
    it does not run (offline, nothing pending, a budget or batch mode: the partitions call).

    Without it the daemon of ``make dev`` finds the partition missing after ``make run`` and
    launches a stream with nothing left to send, and the UI shows the asset as never
    materialized. Recorded before the model's partitions run, so they are never older than it.
    """
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            MODEL_CALLS,
            partition=model_id,
            metadata={**metadata, "launched_by": "clcg run"},
            # As a run would record it, so the UI does not show the code version as changed.
            tags={CODE_VERSION_TAG: code_version},
        )
    )


def _every(seconds: float, log: Callable[[str], None]) -> Callable[[str], None]:
    shown = {"at": float("-inf")}

    def progress(text: str) -> None:
        if time.monotonic() - shown["at"] >= seconds:
            shown["at"] = time.monotonic()
            log(text)

    return progress


class ModelCallsConfig(dg.Config):
    budget_usd: float | None = None
    """Stop sending before this run's spend would exceed it; the study budget binds as well.
    What it stops is left to the partitions' runs, under their own budgets."""
    languages: list[str] | None = None
    """The languages to send (``clcg run`` names its stale ones: a ``--languages`` selection,
    or partitions it reruns); by default every covered language not answered yet."""


def _inputs(config: ProjectConfig) -> list[dg.AssetDep]:
    # Every language's paragraphs: the stream builds every pending partition's requests.
    inputs = [dg.AssetDep("paragraphs", partition_mapping=dg.AllPartitionMapping())]
    inputs += [dg.AssetDep(name) for name in ("items", "study_sample")]
    if config.study.granularity.enabled:
        inputs += [dg.AssetDep(name) for name in ("long_paragraphs", "granularity_tasks")]
    return inputs


def build_model_calls_defs(config: ProjectConfig) -> dg.Definitions:
    @dg.asset(
        name=MODEL_CALLS,
        group_name="inference",
        partitions_def=model_partitions,
        deps=_inputs(config),
        owners=["team:clcg"],
        description="Sends one model's requests for every language not answered yet in one "
        "stream, ahead of its language x model partitions (which record the calls as theirs).",
    )
    def model_calls(
        context: dg.AssetExecutionContext, config: ModelCallsConfig, study: StudyResource
    ) -> dg.MaterializeResult:
        """One call session for every pending partition of the model: no drain between them."""
        cfg = study.load()
        model_id = str(context.partition_key)
        if cfg.models.get(model_id).provider == "offline":
            context.log.info(f"{model_id}: {OFFLINE}")
            return dg.MaterializeResult(metadata={"streamed": False, "why": OFFLINE})
        languages = config.languages
        if languages is None:
            languages = pending_languages(context.instance, cfg, model_id)
        try:
            sent = send_stream(
                cfg,
                study.data_dir,
                model_id,
                languages,
                token=context.run_id,
                budget_usd=config.budget_usd,
                progress=_every(_LOG_EVERY_S, context.log.info),
            )
        except ProviderConfigError as exc:
            # Its partitions would meet the same error: said once, here, before any of them runs.
            raise dg.Failure(description=f"{model_id}: {exc}") from None
        if sent.failed:
            context.log.warning(
                f"{model_id}: {sent.failed:,} calls not answered (errors, or a budget reached): "
                "the partitions' runs try them again, under their own budgets"
            )
        context.log.info(
            f"{model_id}: {sent.requests:,} requests of {len(languages)} partitions, "
            f"{sent.sent:,} new calls, {sent.failed:,} failed, in {sent.seconds:.1f}s"
        )
        return dg.MaterializeResult(
            metadata={
                "streamed": True,
                STREAM_TOKEN: context.run_id,
                "languages": dg.MetadataValue.json(languages),
                "requests": sent.requests,
                "new_calls": sent.sent,
                # errors and budget stops: the partitions' runs try them again
                "failed": sent.failed,
                "seconds": round(sent.seconds, 2),
                "budget_usd": config.budget_usd,
                "calls_per_s": round(sent.sent / sent.seconds, 1) if sent.seconds else 0.0,
            }
        )

    return dg.Definitions(assets=[model_calls])
