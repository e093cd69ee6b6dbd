"""The async call runner: the run loop of one model's calls, and ``CallSession``.

One event loop per run. Each request is looked up in the cache first; only misses are sent.
A call takes a slot of the adaptive limiter (``_limiter``, AIMD on 429s) and a shared slot,
then reserves its worst case against the budgets just before sending (``_budget``: while calls
in flight hold them it gives its slots back and waits), so only calls in flight hold a
reservation.
``Retry-After`` wins over backoff (``_retry``), every attempt has a timeout and attempts are
bounded. A result is written to the cache the moment it arrives (``_persist``), so a killed
run repeats no completed call when restarted.
Processes sharing the cache coordinate through ``calls._coord``: a call in flight elsewhere is
waited for, not paid twice; the model's concurrency limit and the study budget hold for all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from clcg_pipeline.calls._batch import run_batch
from clcg_pipeline.calls._budget import Budget, Grant, bound_budget
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import WAIT, Coordinator
from clcg_pipeline.calls._credentials import check_credentials
from clcg_pipeline.calls._limiter import AdaptiveLimiter
from clcg_pipeline.calls._options import CallOptions
from clcg_pipeline.calls._persist import Persister
from clcg_pipeline.calls._providers._base import ModelAPI, ModelOutput, ProviderError
from clcg_pipeline.calls._requests import ChatRequest, model_key
from clcg_pipeline.calls._results import (
    CACHEABLE,
    CallResult,
    Origin,
    _partitions,
    bind,
    cache_entry,
    cost_usd,
    estimate_cost,
    from_cache,
    payer,
    split_cached,
)
from clcg_pipeline.calls._retry import RetryPolicy, backoff_delay
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.storage import IntentLog

log = logging.getLogger(__name__)


class ProviderConfigError(RuntimeError):
    """The provider rejected the configuration (bad key, unknown model): the run stops."""


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
        # Each request noted before it is sent: a kill -9 then leaves the calls it may have been
        # billed for on record (storage/_intents.py): in a local cache's folder, or this host's
        # coordination folder for an object-store cache (read by the spend built on this host).
        self.intents: IntentLog | None = IntentLog(cache.root)
        self._payers: dict[Origin, tuple[str, str | None]] = {}
        self.persist = Persister(cache, coord.ledger, self.intents)
        # Set (and replaced) whenever a call of this run settles its budget: budget waiters wake.
        self._settled = asyncio.Event()
        # Whether the provider answered any call of this run, and whether it refused the
        # configuration (a 401, an unknown model) before answering any: then no request of the
        # run was accepted, and the calls cancelled in flight were billed nothing (see call()).
        self._answered_any = False
        self._refused_outright = False

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

    def _note_sent(self, call_id: str, origin: Origin, estimate: float) -> None:
        """The intent log's line for a request about to leave: whom it is paid by and for."""
        if self.intents is None:
            return
        paid = self._payers.get(origin)
        if paid is None:
            paid = self._payers[origin] = (payer(origin), _partitions(origin)[0])
        self.intents.sent(call_id, self.model.id, paid[0], paid[1], estimate)

    def _cancelled(self, call_id: str) -> None:
        """A request cancelled in flight. Cancelled because the provider refused this run's
        configuration before answering any call, it was refused too (nothing billed): ended.
        Cancelled otherwise (Ctrl-C, a caller's error), it may have been billed: it stays open
        in the intent log, counted lost once this process is gone."""
        if self._refused_outright and self.intents is not None:
            self.intents.ended(call_id)

    def _failed(self, call_id: str, outcome: str, error: str | None, attempts: int) -> CallResult:
        return CallResult(call_id, None, None, outcome, error, 0, 0, 0.0, 0.0, attempts, False)

    async def claimed(self, request: ChatRequest, origin: Origin = None) -> CallResult:
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
                        # cache (it held the claim then, or finished before this try).
                        entry = await self._written_since(call_id, time.monotonic())
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
            entry = await self._written_since(call_id, time.monotonic())
            if entry is not None:
                self.shared_waits += 1
                return from_cache(call_id, entry, origin)

    async def _written_since(self, call_id: str, since: float) -> dict[str, Any] | None:
        """The cache entry, as written by any process before ``since``."""
        if not self.cache.remote:
            return self.cache.get(call_id)  # a local file: cheaper than a thread hop
        # A listing of the object store, shared by the calls that wait for one meanwhile.
        return await asyncio.to_thread(self.cache.get_fresh, call_id, since)

    def _settle(self, estimate: float, actual: float) -> None:
        self.budget.settle(estimate, actual)
        settled, self._settled = self._settled, asyncio.Event()
        settled.set()

    def _try_reserve(self, estimate: float, call_id: str) -> str | Grant | None:
        """One try at a reservation against both budgets: a ledger id (or None without a
        ledger), ``Grant.WAIT`` while calls in flight hold either budget, ``Grant.REFUSED`` once
        one is spent (then for good: no smaller call sneaks past later).

        The ledger reservation names ``call_id``: should this process die after caching the
        answer, the charge is settled at the answer's cost (``calls._coord.settle_from_cache``)."""
        grant = self.budget.reserve(estimate)
        if grant is not Grant.GRANTED:
            return grant
        if self.study_budget_usd is None:
            return None
        assert self.coord.ledger is not None
        ledger = self.coord.ledger
        rid = None if self.study_stopped else ledger.reserve(estimate, self.study_budget_usd, call_id=call_id)
        if rid == WAIT and not self.study_stopped:
            self.budget.settle(estimate, 0.0)  # the run budget's share is not held while waiting
            return Grant.WAIT
        if rid is None or rid == WAIT or self.study_stopped:
            if rid is not None and rid != WAIT:
                ledger.release(rid)  # another task of this run hit the limit meanwhile
            self.study_stopped = True
            self._settle(estimate, 0.0)
            return Grant.REFUSED
        return rid

    async def _slots_and_reservation(
        self, estimate: float, call_id: str
    ) -> tuple[int, int | None, str | None] | None:
        """A slot of the adaptive limiter, one of the shared slots, then a reservation against
        both budgets: (limiter epoch, shared slot, ledger id); None once a budget refuses.

        Reserved last, just before sending: a call waiting for a slot reserves nothing, so what
        is reserved (and charged, should the process be killed) is at most the calls in flight,
        never the calls queued behind them. A call the budgets make wait gives its slots back
        while it waits: a call backing off needs one to finish and settle what it holds."""
        slots = self.coord.slots
        while True:
            settled = self._settled
            epoch = await self.limiter.acquire()
            slot: int | None = None
            reservation: str | Grant | None = Grant.WAIT
            try:
                slot = await slots.acquire() if slots is not None else None
                reservation = self._try_reserve(estimate, call_id)
            finally:
                if isinstance(reservation, Grant):  # refused, waiting, or cancelled meanwhile
                    await self._free_slots(slot)
            if not isinstance(reservation, Grant):
                return epoch, slot, reservation
            if reservation is Grant.REFUSED:
                return None
            # Woken by this run's next settle; the timeout covers budgets held by other runs
            # and hosts (the shared ledger's reservations settle elsewhere).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.02 if self.study_budget_usd is not None else 1.0):
                    await settled.wait()

    async def _free_slots(self, slot: int | None) -> None:
        if slot is not None:
            assert self.coord.slots is not None
            self.coord.slots.release(slot)
        await self.limiter.release()

    async def _attempt(
        self, request: ChatRequest, slot: int | None
    ) -> tuple[ModelOutput | ProviderError, float]:
        """One HTTP exchange in the slots taken for it (given back when it is over): (output or
        error, latency). The in-process limiter adapts to 429s; the shared slots cap every
        process together."""
        started = time.perf_counter()
        try:
            # The SDK enforces timeout_s; this is the backstop should it not.
            async with asyncio.timeout(self.model.timeout_s + self.policy.timeout_grace_s):
                output = await self.api.generate(request, timeout_s=self.model.timeout_s)
        except ProviderError as exc:
            return exc, 0.0
        except TimeoutError:
            return ProviderError("timeout", "Timeout", f"no response in {self.model.timeout_s}s"), 0.0
        finally:
            # The slots are free as soon as the HTTP exchange is over.
            await self._free_slots(slot)
        return output, time.perf_counter() - started

    def _unreserve(self, estimate: float, rid: str | None) -> None:
        """An attempt that brought no answer: its reservation goes back (nothing was billed)."""
        self._settle(estimate, 0.0)
        if rid is not None and self.coord.ledger is not None:
            self.coord.ledger.release(rid)

    async def _answered(
        self, request: ChatRequest, result: CallResult, estimate: float, rid: str | None, origin: Origin
    ) -> CallResult:
        """Settle a call's budgets with its cost and write it to the cache."""
        self._settle(estimate, result.cost_usd)
        settle = (
            (rid, result.cost_usd, self.model.id, result.call_id) if self.coord.ledger is not None else None
        )
        entry = cache_entry(self.model, request, result, origin) if result.outcome in CACHEABLE else None
        if entry is None and self.intents is not None:
            self.intents.ended(result.call_id)  # an answer not to cache: in the calls table
        # Awaited, so a call counts as done (and its claim is dropped) only once its spend is
        # in the ledger and its response on disk.
        await self.persist.write(result.call_id, entry, settle)
        return result

    def _give_up(self, call_id: str, error: ProviderError, attempt: int) -> CallResult | None:
        """The call's final failure, or None when it is to be retried."""
        if error.kind == "config":
            self._refused_outright = not self._answered_any
            raise ProviderConfigError(
                f"model {self.model.id!r}: provider rejected the configuration "
                f"({self.api.redact(str(error))[:300]})"
            )
        if error.kind == "bad_request" or attempt >= self.model.max_attempts:
            return self._failed(call_id, "error", error.error_class, attempt)
        return None

    async def call(self, request: ChatRequest, origin: Origin = None) -> CallResult:
        call_id = request.call_id
        budgeted = self.budget.limit is not None or self.study_budget_usd is not None
        estimate = estimate_cost(self.model, request) if budgeted else 0.0
        for attempt in range(1, self.model.max_attempts + 1):
            # Each attempt is reserved once it has its slots: a call backing off holds nothing.
            sending = await self._slots_and_reservation(estimate, call_id)
            if sending is None:
                reason = "BudgetExceeded" if self.budget.stopped else "StudyBudgetExceeded"
                return self._failed(call_id, "skipped_budget", reason, attempt - 1)
            epoch, slot, rid = sending
            answered = False
            self._note_sent(call_id, origin, estimate)
            try:
                outcome, latency = await self._attempt(request, slot)
                if isinstance(outcome, ModelOutput):
                    self.limiter.on_success()
                    answered = self._answered_any = True
                    return await self._answered(
                        request, self._final(call_id, outcome, latency, attempt), estimate, rid, origin
                    )
            except asyncio.CancelledError:
                if not answered:
                    self._cancelled(call_id)
                raise
            finally:
                if not answered:
                    self._unreserve(estimate, rid)
            if self.intents is not None:
                self.intents.ended(call_id)  # no answer: nothing billed to lose
            log.debug("call %s attempt %d: %s", call_id[:12], attempt, self.api.redact(str(outcome))[:300])
            if outcome.kind == "rate_limit":
                self.limiter.on_rate_limit(epoch)
            failed = self._give_up(call_id, outcome, attempt)
            if failed is not None:
                return failed
            if outcome.retry_after is not None:
                await asyncio.sleep(min(outcome.retry_after, self.policy.max_retry_after_s))
            else:
                await asyncio.sleep(backoff_delay(self.policy, attempt))
        raise AssertionError("unreachable: the last attempt gives up")


class CallSession:
    """One model's calls over several request lists: one limiter, API client, coordinator, budget.

    A stream sends every partition of a model through one session (``orchestration/_model_calls.py``),
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
        # Without a shared ledger (the Coordinator warned), the study budget binds this run at least.
        budget = bound_budget(
            self._budget, budget_usd, self._study_budget_usd, shared_ledger=coord.ledger is not None
        )
        self._run = _Run(
            model, self._api, self.cache, budget, self._policy or RetryPolicy(), coord, self._study_budget_usd
        )
        return self._run

    async def _make(self, run: _Run, request: ChatRequest, origin: Origin) -> CallResult:
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
        origin: Origin = None,
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
            if self._run.intents is not None:
                self._run.intents.close()
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
