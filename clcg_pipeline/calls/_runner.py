"""The async call runner: cache, budget, adaptive concurrency, retries (one owner each).

One event loop per run. Each request is looked up in the cache first; only misses are sent.
Concurrency follows AIMD (cut in half on a 429, at most once per round of requests; grow by
one after a window of successes), ``Retry-After`` wins over backoff, backoff is exponential
with jitter, every attempt has a timeout and attempts are bounded. A result is written to
the cache the moment it arrives, so a killed run repeats no completed call when restarted.
Processes sharing the cache coordinate through ``calls._coord``: a call in flight elsewhere is
waited for, not paid twice; the model's concurrency limit and the study budget hold for all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from clcg_pipeline.calls._batch import run_batch
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import WAIT, Coordinator, SpendLedger
from clcg_pipeline.calls._credentials import check_credentials
from clcg_pipeline.calls._options import CallOptions
from clcg_pipeline.calls._providers._base import ModelAPI, ModelOutput, ProviderError
from clcg_pipeline.calls._requests import ChatRequest, model_key
from clcg_pipeline.calls._results import (
    CACHEABLE,
    Budget,
    CallResult,
    bind,
    cache_entry,
    cost_usd,
    estimate_cost,
    from_cache,
    split_cached,
)
from clcg_pipeline.calls._retry import RetryPolicy, backoff_delay
from clcg_pipeline.config import ModelSpec

log = logging.getLogger(__name__)



class ProviderConfigError(RuntimeError):
    """The provider rejected the configuration (bad key, unknown model): the run stops."""


class AdaptiveLimiter:
    """A concurrency limit that halves on a rate limit and grows back by one per window.

    The first round of requests is paced (``ramp_s`` apart, one second in all at most): sent
    all at once, their responses would also come back as one burst that the single event
    loop handles one after another, and that queueing would persist round after round.
    """

    def __init__(self, maximum: int, minimum: int = 1, *, ramp_s: float = 0.005) -> None:
        self.maximum = maximum
        self.minimum = minimum
        self.limit = maximum
        self.in_flight = 0
        self.cuts = 0
        self._epoch = 0
        self._successes = 0
        self._issued = 0
        self._ramp_s = min(ramp_s, 1.0 / maximum)
        self._start: float | None = None
        self._cond = asyncio.Condition()

    async def acquire(self) -> int:
        """Wait for a slot; returns the epoch the request was issued in."""
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            epoch, order = self._epoch, self._issued
            self._issued += 1
        if order < self.maximum and self._ramp_s > 0:
            loop = asyncio.get_running_loop()
            if self._start is None:
                self._start = loop.time()
            delay = self._start + order * self._ramp_s - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
        return epoch

    async def release(self) -> None:
        async with self._cond:
            self.in_flight -= 1
            self._cond.notify(max(1, self.limit - self.in_flight))

    def on_rate_limit(self, epoch: int) -> None:
        # Requests issued before the last cut saw the old limit; one cut per round, as in TCP.
        if epoch != self._epoch:
            return
        self.limit = max(self.minimum, self.limit // 2)
        self._epoch += 1
        self._successes = 0
        self.cuts += 1

    def on_success(self) -> None:
        if self.limit >= self.maximum:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self.limit += 1
            self._successes = 0


class _Persister:
    """Writes finished calls to the cache and their spend to the ledger, in batches, in a thread.

    File creation is slow on some filesystems, so it stays off the event loop; one thread hop
    and one ledger lock per batch (whatever finished while the last batch was being written)
    instead of per call (together ~5% of the event loop's CPU at 160 calls/s). A caller is
    released only once its own batch is written, so nothing is reported done before it is on disk.
    """

    def __init__(self, cache: CallCache, ledger: SpendLedger | None) -> None:
        self.cache = cache
        self.ledger = ledger
        self._pending: list[_Record] = []
        self._flusher: asyncio.Task[None] | None = None

    async def write(self, call_id: str, entry: dict[str, Any] | None, settle: _Settle | None) -> None:
        if entry is None and settle is None:
            return
        done = asyncio.get_running_loop().create_future()
        self._pending.append((call_id, entry, settle, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        await done

    def _write_batch(self, batch: list[_Record]) -> None:
        if self.ledger is not None:
            # The spend first: a crash between the two repeats a call, never hides what it cost.
            self.ledger.settle_many([settle for _, _, settle, _ in batch if settle is not None])
        for call_id, entry, _, _ in batch:
            if entry is not None:
                self.cache.put(call_id, entry)

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._write_batch, batch)
            except Exception as exc:
                for *_, done in batch:
                    if not done.done():
                        done.set_exception(exc)
            else:
                for *_, done in batch:
                    if not done.done():
                        done.set_result(None)

    async def aclose(self) -> None:
        """Wait for writes in progress (those of calls cancelled meanwhile included)."""
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)


_Settle = tuple[str | None, float, str, str]  # SpendLedger.settle_many: reservation id, usd, model, call id
_Record = tuple[str, dict[str, Any] | None, _Settle | None, asyncio.Future[None]]


class _Run:
    def __init__(
        self,
        model: ModelSpec,
        api: ModelAPI,
        cache: CallCache,
        budget: Budget,
        policy: RetryPolicy,
        coord: Coordinator,
        study_budget_usd: float | None,
    ) -> None:
        self.model = model
        self.api = api
        self.cache = cache
        self.budget = budget
        self.policy = policy
        self.limiter = AdaptiveLimiter(model.concurrency)
        self.coord = coord
        self.study_budget_usd = study_budget_usd if coord.ledger is not None else None
        self.study_stopped = False
        self.shared_waits = 0  # calls that waited for another process's result
        # Calls in progress (claimed, in flight or backing off): twice the limit keeps the
        # limiter busy while some calls back off, and bounds the claims this process holds.
        self.gate = asyncio.Semaphore(2 * model.concurrency)
        self.persist = _Persister(cache, coord.ledger)

    def _final(self, call_id: str, output: ModelOutput, latency: float, attempts: int) -> CallResult:
        return CallResult(
            call_id=call_id,
            text=output.text,
            finish_reason=output.finish_reason,
            outcome=output.outcome,
            error=output.error,
            input_tokens=output.input_tokens,
            output_tokens=output.output_tokens,
            cost_usd=cost_usd(self.model, output.input_tokens, output.output_tokens),
            latency_s=latency,
            attempts=attempts,
            cached=False,
        )

    def _failed(self, call_id: str, outcome: str, error: str | None, attempts: int) -> CallResult:
        return CallResult(call_id, None, None, outcome, error, 0, 0, 0.0, 0.0, attempts, False)

    async def claimed(self, request: ChatRequest, origin: str | None = None) -> CallResult:
        """The call, unless another process is already making it: then its cached result.

        ``origin``: whom a call this run makes is paid for (``_calls.from_cache``)."""
        claims = self.coord.claims
        if claims is None:
            return await self.call(request, origin)
        call_id = request.call_id
        delay = 0.02
        while True:
            # A claim is taken only when this process is about to send (the gate bounds calls
            # in progress), so no process hoards claims on calls it cannot send yet.
            async with self.gate:
                claim = claims.try_claim(call_id)
                if claim is not None:
                    try:
                        # Another process may have written the result since this run read the
                        # cache (it held the claim then, or finished before this try). Claims
                        # exist only for a local cache, where a missing file is cheap to look up.
                        entry = self.cache.get(call_id)
                        if entry is not None:
                            self.shared_waits += 1
                            return from_cache(call_id, entry, origin)
                        return await self.call(request, origin)
                    finally:
                        claims.release(claim)
            # Claimed elsewhere: wait for its result. A holder that fails without a cacheable
            # result, or dies, drops its lock and the next try here takes the call over.
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
            entry = await asyncio.to_thread(self.cache.get, call_id)
            if entry is not None:
                self.shared_waits += 1
                return from_cache(call_id, entry, origin)

    async def _reserve(self, estimate: float) -> str | bool | None:
        """A reservation against both budgets: a ledger id (or None without one), False when refused."""
        if not self.budget.reserve(estimate):
            return False
        if self.study_budget_usd is None:
            return None
        assert self.coord.ledger is not None
        rid = None if self.study_stopped else self.coord.ledger.reserve(estimate, self.study_budget_usd)
        while rid == WAIT and not self.study_stopped:
            # Budget is held by calls in flight (here or elsewhere); they usually cost less.
            await asyncio.sleep(0.02)
            rid = self.coord.ledger.reserve(estimate, self.study_budget_usd)
        if rid is None or rid == WAIT or self.study_stopped:
            if rid is not None and rid != WAIT:
                self.coord.ledger.release(rid)  # another task of this run hit the limit meanwhile
            self.study_stopped = True  # as for the run budget: no smaller call sneaks past later
            self.budget.settle(estimate, 0.0)
            return False
        return rid

    async def call(self, request: ChatRequest, origin: str | None = None) -> CallResult:
        call_id = request.call_id
        budgeted = self.budget.limit is not None or self.study_budget_usd is not None
        estimate = estimate_cost(self.model, request) if budgeted else 0.0
        reserved = False
        rid: str | None = None
        ledger = self.coord.ledger
        slots = self.coord.slots
        attempt = 0
        try:
            while True:
                epoch = await self.limiter.acquire()
                if not reserved:
                    reservation = await self._reserve(estimate)
                    if reservation is False:
                        await self.limiter.release()
                        reason = "BudgetExceeded" if self.budget.stopped else "StudyBudgetExceeded"
                        return self._failed(call_id, "skipped_budget", reason, 0)
                    rid = reservation if isinstance(reservation, str) else None
                    reserved = True
                # The in-process limiter adapts to 429s; the shared slots cap every process together.
                slot = await slots.acquire() if slots is not None else None
                attempt += 1
                started = time.perf_counter()
                error: ProviderError | None = None
                try:
                    # The SDK enforces timeout_s; this is the backstop should it not.
                    async with asyncio.timeout(self.model.timeout_s + self.policy.timeout_grace_s):
                        output = await self.api.generate(request, timeout_s=self.model.timeout_s)
                except ProviderError as exc:
                    error = exc
                except TimeoutError:
                    error = ProviderError("timeout", "Timeout", f"no response in {self.model.timeout_s}s")
                finally:
                    # The slot is free as soon as the HTTP exchange is over.
                    if slot is not None:
                        assert slots is not None
                        slots.release(slot)
                    await self.limiter.release()
                if error is None:
                    latency = time.perf_counter() - started
                    self.limiter.on_success()
                    result = self._final(call_id, output, latency, attempt)
                    self.budget.settle(estimate, result.cost_usd)
                    settle = (rid, result.cost_usd, self.model.id, call_id) if ledger is not None else None
                    reserved, rid = False, None
                    cacheable = result.outcome in CACHEABLE
                    entry = cache_entry(self.model, request, result, origin) if cacheable else None
                    # Awaited, so a call counts as done (and its claim is dropped) only once its
                    # spend is in the ledger and its response on disk.
                    await self.persist.write(call_id, entry, settle)
                    return result
                log.debug("call %s attempt %d: %s", call_id[:12], attempt, self.api.redact(str(error))[:300])
                if error.kind == "config":
                    raise ProviderConfigError(
                        f"model {self.model.id!r}: provider rejected the configuration "
                        f"({self.api.redact(str(error))[:300]})"
                    )
                if error.kind == "bad_request":
                    return self._failed(call_id, "error", error.error_class, attempt)
                if error.kind == "rate_limit":
                    self.limiter.on_rate_limit(epoch)
                if attempt >= self.model.max_attempts:
                    return self._failed(call_id, "error", error.error_class, attempt)
                if error.retry_after is not None:
                    delay = min(error.retry_after, self.policy.max_retry_after_s)
                else:
                    delay = backoff_delay(self.policy, attempt)
                await asyncio.sleep(delay)
        finally:
            if reserved:
                self.budget.settle(estimate, 0.0)
                if rid is not None and ledger is not None:
                    ledger.release(rid)


class CallSession:
    """One model's calls over several request lists: one limiter, API client, coordinator, budget.

    ``clcg run`` streams every partition of a model through one session (``orchestration/_calls_ahead.py``),
    so the model's calls flow from one partition into the next with no drain between them;
    :func:`arun_requests` is a session of one list. The API client and the coordinator are
    opened at the first request not in the cache (a fully cached list needs no key).
    """

    def __init__(self, model: ModelSpec, options: CallOptions, *, api: ModelAPI | None = None) -> None:
        self.model = model
        self.options = options
        self.cache_dir = options.cache_dir
        self.cache = CallCache(options.cache_dir)
        self._budget_usd = options.budget_usd
        self._study_budget_usd = options.study_budget_usd
        self._policy = options.policy
        self._api = api
        self._own_api = api is None
        self._budget = options.budget
        self._run: _Run | None = None
        self._coord: Coordinator | None = None
        # Calls this session is making, by call id: a later list asking for one waits for it
        # (a process's own file locks do not exclude each other, so claims cannot).
        self._making: dict[str, asyncio.Future[CallResult]] = {}

    def _started(self) -> _Run:
        if self._run is not None:
            return self._run
        model, budget_usd = self.model, self._budget_usd
        if self._api is None:
            check_credentials(model)
            from clcg_pipeline.calls._providers._registry import get_api

            self._api = get_api(model)
        coord = self._coord = Coordinator(
            self.cache_dir, model_key=model_key(model), concurrency=model.concurrency
        )
        if coord.ledger is None and self._study_budget_usd is not None:
            # No shared ledger (the Coordinator warned): the study budget binds this run at least.
            budget_usd = min(b for b in (budget_usd, self._study_budget_usd) if b is not None)
        budget = self._budget
        if budget is None:
            budget = Budget(budget_usd)
        elif budget_usd is not None and (budget.limit is None or budget_usd < budget.limit):
            budget.limit = budget_usd  # the run's shared budget (``run_budget``), bound by the study's here
        self._run = _Run(
            model, self._api, self.cache, budget, self._policy or RetryPolicy(), coord, self._study_budget_usd
        )
        return self._run

    async def _make(self, run: _Run, request: ChatRequest, origin: str | None) -> CallResult:
        call_id = request.call_id
        making = self._making.get(call_id)
        if making is not None:
            # Asked by an earlier list of this session (and paid for it): this list's copy is cached.
            return replace(await asyncio.shield(making), cached=True)
        future: asyncio.Future[CallResult] = asyncio.get_running_loop().create_future()
        # Nobody may be waiting on it: an error is the caller's to handle, not the event loop's.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._making[call_id] = future
        try:
            result = await run.claimed(request, origin)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
            raise
        finally:
            self._making.pop(call_id, None)
        future.set_result(result)
        return result

    async def run(
        self,
        requests: Sequence[ChatRequest],
        *,
        progress: Callable[[int, int], None] | None = None,
        origin: str | None = None,
    ) -> list[CallResult]:
        """Results of ``requests`` in order; only what the cache lacks is sent.

        ``origin`` names whom the calls sent here are paid for (``_calls.from_cache``): cache
        entries paid for the same origin come back as new calls, not cached ones."""
        bound = bind(self.model, requests)
        total = len(bound)
        results, todo = split_cached(bound, self.cache, origin)
        done = n_cached = total - sum(1 for r in bound if r.call_id in todo)
        if progress:
            progress(done, total)
        if not todo:
            return [results[r.call_id] for r in bound]
        run = self._started()
        waits_before = run.shared_waits
        multiplicity = {cid: 0 for cid in todo}
        for request in bound:
            if request.call_id in multiplicity:
                multiplicity[request.call_id] += 1

        async def one(request: ChatRequest) -> None:
            nonlocal done
            results[request.call_id] = await self._make(run, request, origin)
            done += multiplicity[request.call_id]
            if progress:
                progress(done, total)

        tasks = [asyncio.ensure_future(one(r)) for r in todo.values()]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        shared = run.shared_waits - waits_before
        log.info(
            "model %s: %d requests, %d from cache, %d sent, %d answered by another process meanwhile; "
            "concurrency limit now %d after %d cut(s), spent $%.4f",
            self.model.id,
            total,
            n_cached,
            len(todo) - shared,
            shared,
            run.limiter.limit,
            run.limiter.cuts,
            run.budget.spent,
        )
        return [results[r.call_id] for r in bound]

    async def aclose(self) -> None:
        """Wait for the cache writes in progress, then close the coordinator and the API client."""
        if self._run is not None:
            await self._run.persist.aclose()
        if self._coord is not None:
            self._coord.close()
        if self._own_api and self._api is not None:
            await self._api.aclose()


async def arun_requests(
    model: ModelSpec,
    requests: Sequence[ChatRequest],
    options: CallOptions,
    *,
    api: ModelAPI | None = None,
) -> list[CallResult]:
    """Async core of :func:`run_requests` (for callers already inside an event loop)."""
    session = CallSession(model, options, api=api)
    try:
        return await session.run(requests, progress=options.progress, origin=options.origin)
    finally:
        await session.aclose()


def run_requests(model: ModelSpec, requests: Sequence[ChatRequest], options: CallOptions) -> list[CallResult]:
    """Run ``requests`` against ``model`` in one event loop; results in request order.

    Cached requests are not sent. A missing key raises :class:`MissingCredentialsError` before
    any call. Calls that would pass ``options``' budgets are not issued (outcome
    ``skipped_budget``). ``options.mode == "batch"`` goes through the provider's batch API
    (see :class:`CallOptions`).
    """
    if options.mode == "batch":
        return run_batch(model, requests, options)
    return asyncio.run(arun_requests(model, requests, options))
