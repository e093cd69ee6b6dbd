"""The async call runner: cache, budget, adaptive concurrency, retries (one owner each).

One event loop per run. Each request is looked up in the cache first; only misses are sent.
Concurrency follows AIMD (cut in half on a 429, at most once per round of requests; grow by
one after a window of successes), ``Retry-After`` wins over backoff, backoff is exponential
with jitter, every attempt has a timeout and attempts are bounded. A result is written to
the cache the moment it arrives, so a killed run repeats no completed call when restarted.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from clcg_pipeline.config import ModelSpec
from clcg_pipeline.inference._cache import CallCache
from clcg_pipeline.inference._credentials import check_credentials
from clcg_pipeline.inference._prompts import ChatRequest, model_key
from clcg_pipeline.inference._providers._base import ModelAPI, ModelOutput, ProviderError
from clcg_pipeline.inference._tokens import estimate_input_tokens

log = logging.getLogger(__name__)

CACHEABLE = frozenset({"ok", "refused", "truncated"})


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff settings; tests shrink them. None of these enter the cache key."""

    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0
    max_retry_after_s: float = 300.0
    # Extra seconds the runner allows beyond the SDK's own timeout before it gives up itself.
    timeout_grace_s: float = 1.0


@dataclass(frozen=True)
class CallResult:
    """The final outcome of one request (cached or fresh)."""

    call_id: str
    text: str | None
    finish_reason: str | None
    outcome: str  # ok | refused | truncated | error | skipped_budget | batch_pending
    error: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_s: float
    attempts: int
    cached: bool


class ProviderConfigError(RuntimeError):
    """The provider rejected the configuration (bad key, unknown model): the run stops."""


def cost_usd(model: ModelSpec, input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * model.price_input_per_mtok + output_tokens * model.price_output_per_mtok) / 1e6


def estimate_cost(model: ModelSpec, request: ChatRequest) -> float:
    """Worst-case cost of one call, for the budget: output at its cap when one is set."""
    out = request.settings.max_output_tokens or model.max_output_tokens or 1024
    return cost_usd(model, estimate_input_tokens(request.messages), out)


def bind(model: ModelSpec, requests: Sequence[ChatRequest]) -> list[ChatRequest]:
    """Requests with their ``model_key`` set, so ``call_id`` names the model."""
    key = model_key(model)
    return [r if r.model_key == key else replace(r, model_key=key) for r in requests]


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


class _Budget:
    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.spent = 0.0
        self.reserved = 0.0
        self.stopped = False

    def reserve(self, estimate: float) -> bool:
        if self.limit is None:
            return True
        if self.stopped or self.spent + self.reserved + estimate > self.limit:
            # Stop for good: later, smaller calls must not sneak past a skipped one.
            self.stopped = True
            return False
        self.reserved += estimate
        return True

    def settle(self, estimate: float, actual: float) -> None:
        if self.limit is not None:
            self.reserved -= estimate
        self.spent += actual


def split_cached(
    bound: Sequence[ChatRequest], cache: CallCache
) -> tuple[dict[str, CallResult], dict[str, ChatRequest]]:
    """Results already in the cache, and the distinct requests still to send (by call id)."""
    results: dict[str, CallResult] = {}
    todo: dict[str, ChatRequest] = {}
    for request in bound:
        cid = request.call_id
        if cid in results or cid in todo:
            continue
        entry = cache.get(cid)
        if entry is not None:
            results[cid] = _from_cache(cid, entry)
        else:
            todo[cid] = request
    return results, todo


def _from_cache(call_id: str, entry: dict[str, Any]) -> CallResult:
    return CallResult(
        call_id=call_id,
        text=entry.get("text"),
        finish_reason=entry.get("finish_reason"),
        outcome=str(entry.get("outcome", "ok")),
        error=entry.get("error"),
        input_tokens=int(entry.get("input_tokens", 0)),
        output_tokens=int(entry.get("output_tokens", 0)),
        cost_usd=float(entry.get("cost_usd", 0.0)),
        latency_s=float(entry.get("latency_s", 0.0)),
        attempts=int(entry.get("attempts", 1)),
        cached=True,
    )


def _cache_entry(model: ModelSpec, request: ChatRequest, result: CallResult) -> dict[str, Any]:
    return {
        "provider": model.provider,
        "model": model.model,
        "prompt_version": request.prompt_version,
        "request_hash": request.request_hash,
        "rep": request.rep,
        "text": result.text,
        "finish_reason": result.finish_reason,
        "outcome": result.outcome,
        "error": result.error,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost_usd": result.cost_usd,
        "latency_s": result.latency_s,
        "attempts": result.attempts,
        "created": time.time(),
    }


def _backoff(policy: RetryPolicy, attempt: int) -> float:
    ceiling = min(policy.backoff_cap_s, policy.backoff_base_s * 2 ** (attempt - 1))
    # "Equal jitter": at least half the exponential delay, so retries stay spread but bounded below.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


class _Run:
    def __init__(
        self,
        model: ModelSpec,
        api: ModelAPI,
        cache: CallCache,
        budget: _Budget,
        policy: RetryPolicy,
    ) -> None:
        self.model = model
        self.api = api
        self.cache = cache
        self.budget = budget
        self.policy = policy
        self.limiter = AdaptiveLimiter(model.concurrency)

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

    async def call(self, request: ChatRequest) -> CallResult:
        call_id = request.call_id
        estimate = estimate_cost(self.model, request) if self.budget.limit is not None else 0.0
        reserved = False
        attempt = 0
        try:
            while True:
                epoch = await self.limiter.acquire()
                if not reserved:
                    if not self.budget.reserve(estimate):
                        await self.limiter.release()
                        return self._failed(call_id, "skipped_budget", "BudgetExceeded", 0)
                    reserved = True
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
                    await self.limiter.release()
                if error is None:
                    latency = time.perf_counter() - started
                    self.limiter.on_success()
                    result = self._final(call_id, output, latency, attempt)
                    self.budget.settle(estimate, result.cost_usd)
                    reserved = False
                    if result.outcome in CACHEABLE:
                        # File creation is slow on some filesystems; a thread keeps the loop free.
                        # Awaited, so a call counts as done only once its response is on disk.
                        entry = _cache_entry(self.model, request, result)
                        await asyncio.to_thread(self.cache.put, call_id, entry)
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
                    delay = _backoff(self.policy, attempt)
                await asyncio.sleep(delay)
        finally:
            if reserved:
                self.budget.settle(estimate, 0.0)


async def arun_requests(
    model: ModelSpec,
    requests: Sequence[ChatRequest],
    *,
    cache_dir: str,
    budget_usd: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    policy: RetryPolicy | None = None,
    api: ModelAPI | None = None,
) -> list[CallResult]:
    """Async core of :func:`run_requests` (for callers already inside an event loop)."""
    bound = bind(model, requests)
    cache = CallCache(cache_dir)
    total = len(bound)
    results, todo = split_cached(bound, cache)
    done = n_cached = total - sum(1 for r in bound if r.call_id in todo)
    if progress:
        progress(done, total)
    if todo:
        own_api = api is None
        if own_api:
            check_credentials(model)
            from clcg_pipeline.inference._providers._registry import get_api

            api = get_api(model)
        assert api is not None
        run = _Run(model, api, cache, _Budget(budget_usd), policy or RetryPolicy())
        multiplicity = {cid: 0 for cid in todo}
        for request in bound:
            if request.call_id in multiplicity:
                multiplicity[request.call_id] += 1

        async def one(request: ChatRequest) -> None:
            nonlocal done
            result = await run.call(request)
            results[request.call_id] = result
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
            if own_api:
                await api.aclose()
        log.info(
            "model %s: %d requests, %d from cache, %d sent; concurrency limit now %d after %d cut(s), "
            "spent $%.4f",
            model.id,
            total,
            n_cached,
            len(todo),
            run.limiter.limit,
            run.limiter.cuts,
            run.budget.spent,
        )
    return [results[r.call_id] for r in bound]


def run_requests(
    model: ModelSpec,
    requests: Sequence[ChatRequest],
    *,
    cache_dir: str,
    budget_usd: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    mode: Literal["online", "batch"] = "online",
    policy: RetryPolicy | None = None,
    batch_poll_s: float = 30.0,
    batch_max_wait_s: float | None = None,
) -> list[CallResult]:
    """Run ``requests`` against ``model`` in one event loop; results in request order.

    Cached requests are not sent. A missing key raises :class:`MissingCredentialsError` before
    any call. With ``budget_usd``, calls that would exceed it are not issued (outcome
    ``skipped_budget``). ``mode="batch"`` goes through the provider's batch API, polling every
    ``batch_poll_s`` and, with ``batch_max_wait_s``, returning ``batch_pending`` rows for what
    has not finished (a later run collects them without resubmitting).
    """
    if mode == "batch":
        from clcg_pipeline.inference._batch import run_batch

        return run_batch(
            model,
            requests,
            cache_dir=cache_dir,
            budget_usd=budget_usd,
            progress=progress,
            poll_s=batch_poll_s,
            max_wait_s=batch_max_wait_s,
        )
    if mode != "online":
        raise ValueError(f"mode must be 'online' or 'batch', got {mode!r}")
    return asyncio.run(
        arun_requests(
            model, requests, cache_dir=cache_dir, budget_usd=budget_usd, progress=progress, policy=policy
        )
    )
