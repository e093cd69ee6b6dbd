"""Sending a study's calls ahead of its partitions' runs (what ``clcg run`` does before them).

A responses partition (language x model) is one Dagster run that builds its requests, calls
the model, then scores. Run after run, a model's calls drain at every partition boundary:
the next run is still starting, loading and building prompts when the last answers of the
previous one come back, and on a small machine scoring competes with calling for the CPU.

So ``clcg run`` first sends every pending partition's requests (its items' and its
granularity tasks') through one ``CallSession`` per hosted model: one limiter, and the next
partition's requests are built while the previous ones are in flight, so calls flow from
one partition into the next. Each result goes to the call cache, tagged with the partition
it was paid for; the partitions' runs then find their calls there and record them as new
calls paid by this stream's token (``calls.from_cache``, ``calls.call_row``; ``clcg run``
counts the token among its runs), with the same claims, slots and study
ledger as ever (``inference._coord``). Judges read the answers, so they are still called
inside the runs. Nothing here is needed for correctness: a run launched from the UI, a
backfill or the daemon makes its own calls.

The requests are built by the same functions the assets use (``partition_requests``,
``plan_tasks``) from the stored inputs, so the call ids match; a mismatch would cost a
second call, which ``clcg_pipeline_tests/test_study_calls.py`` guards against.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CallOptions, CallSession, ChatRequest, ProviderConfigError, call_origin
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity import partition_paragraphs, plan_tasks
from clcg_pipeline.inference import partition_requests, sampled_inputs
from clcg_pipeline.partitions import response_key
from clcg_pipeline.storage import partition_dir, read_frame

log = logging.getLogger(__name__)

# Partitions whose requests are built but not yet all answered, per model: two keep the
# limiter full across a boundary (one being answered, the next queued behind it) while
# holding only two partitions' prompts in memory.
_LOOKAHEAD = 2


@dataclass
class CallsAhead:
    """What sending ahead did (the partitions' own ``calls`` tables stay the record of spend)."""

    token: str
    partitions: int = 0
    requests: int = 0
    sent: int = 0  # new calls answered (not from the cache)
    failed: int = 0  # errors and budget stops: the partition's run tries them again
    seconds: float = 0.0
    # Models whose provider refused the configuration: their runs meet the same error and say so.
    refused: dict[str, str] = field(default_factory=dict)


def _stored(data_dir: str, table: str, partition: dict[str, str] | None = None) -> pd.DataFrame | None:
    path = partition_dir(data_dir, table, partition) / "data.parquet"
    return read_frame(path) if UPath(path).exists() else None


class _Inputs:
    """The stored inputs of the responses partitions, read once per language."""

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


class _Sender:
    """Sends the partitions' calls, model by model, each model through its own session."""

    def __init__(
        self,
        config: ProjectConfig,
        inputs: _Inputs,
        options: CallOptions,
        summary: CallsAhead,
        progress: Callable[[str], None] | None,
        answered_partition: Callable[[str, str], None] | None,
    ) -> None:
        self.config = config
        self.inputs = inputs
        self.options = options
        self.summary = summary
        self.progress = progress
        self.answered_partition = answered_partition
        self.counts: dict[str, list[int]] = {}  # partition key -> [answered, requests]
        self._shown = 0.0

    def report(self, now: bool = False) -> None:
        if not self.progress or (not now and time.monotonic() - self._shown < 0.25):
            return
        self._shown = time.monotonic()
        done = sum(c[0] for c in self.counts.values())
        total = sum(c[1] for c in self.counts.values())
        self.progress(f"calls ahead of the partitions' runs: {done:,}/{total:,}")

    async def _answer(
        self, session: CallSession, model_id: str, iso: str, requests: list[ChatRequest]
    ) -> None:
        key = str(response_key(iso, model_id))
        self.counts[key] = [0, len(requests)]

        def update(done: int, _total: int) -> None:
            self.counts[key][0] = done
            self.report()

        results = await session.run(requests, progress=update, origin=call_origin(self.summary.token, key))
        distinct = {r.call_id: r for r in results}.values()  # a list may ask for a call twice
        self.summary.sent += sum(1 for r in distinct if not r.cached and r.outcome != "skipped_budget")
        self.summary.failed += sum(1 for r in distinct if r.outcome in ("error", "skipped_budget"))
        if self.answered_partition:
            self.answered_partition(model_id, iso)

    async def one_model(self, model_id: str, isos: list[str]) -> None:
        session = CallSession(self.config.models.get(model_id), self.options)
        in_flight: set[asyncio.Future[None]] = set()
        started: list[asyncio.Future[None]] = []
        try:
            for iso in isos:
                # Built in a thread: the event loop keeps the previous partition's calls flowing.
                requests = await asyncio.to_thread(self.inputs.requests, model_id, iso)
                self.summary.partitions += 1
                self.summary.requests += len(requests)
                started.append(asyncio.ensure_future(self._answer(session, model_id, iso, requests)))
                in_flight.add(started[-1])
                while len(in_flight) >= _LOOKAHEAD:
                    done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        task.result()
            if in_flight:
                await asyncio.gather(*in_flight)
        except ProviderConfigError as exc:
            self.summary.refused[model_id] = str(exc)
            log.warning("calls ahead stopped for %s: %s", model_id, exc)
            if self.answered_partition is not None:
                for iso in isos:
                    self.answered_partition(model_id, iso)  # their runs meet the same error and report it
        finally:
            for task in in_flight:
                task.cancel()
            # Every partition's outcome retrieved, the failed ones too (a refusal fails them all).
            await asyncio.gather(*started, return_exceptions=True)
            await session.aclose()

    async def everything(self, by_model: dict[str, list[str]], interrupted: Callable[[], bool]) -> None:
        main = asyncio.gather(*(self.one_model(m, isos) for m, isos in by_model.items()))

        async def watch() -> None:
            while not interrupted():
                await asyncio.sleep(0.1)
            main.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await main
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


def send_calls_ahead(
    config: ProjectConfig,
    data_dir: str,
    partitions: Sequence[tuple[str, str]],
    *,
    token: str,
    budget_usd: float | None = None,
    interrupted: Callable[[], bool] = lambda: False,
    progress: Callable[[str], None] | None = None,
    answered_partition: Callable[[str, str], None] | None = None,
) -> CallsAhead:
    """Send the requests of ``partitions`` ((model id, language) pairs) ahead of their runs.

    Each result is cached for ``call_origin(token, partition)``; hand ``token`` to the runs in
    the ``CALLS_AHEAD_TAG`` tag. Models run side by side, each through its own session.
    ``answered_partition(model id, language)`` is called as each partition's calls are all
    answered (or will not be: a refused model's partitions are reported at once), so its run
    can start while later partitions are still calling.
    Ctrl-C (``interrupted``) stops after the calls in flight are written, then raises
    ``KeyboardInterrupt``: what was answered stays cached, so nothing is paid twice.
    ``budget_usd`` caps what this sending may spend (the study budget binds it as well); a
    call it stops is left to the partition's run.
    """
    summary = CallsAhead(token=token)
    by_model: dict[str, list[str]] = {}
    for model_id, iso in partitions:
        by_model.setdefault(model_id, []).append(iso)
    if not by_model:
        return summary
    cache_dir = str(UPath(data_dir) / "cache" / "calls")
    options = CallOptions(
        cache_dir=cache_dir, budget_usd=budget_usd, study_budget_usd=config.study.budget_usd
    )
    sender = _Sender(config, _Inputs(config, data_dir), options, summary, progress, answered_partition)
    started = time.monotonic()
    try:
        asyncio.run(sender.everything(by_model, interrupted))
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        summary.seconds = time.monotonic() - started
    if interrupted():
        raise KeyboardInterrupt
    sender.report(now=True)
    return summary
