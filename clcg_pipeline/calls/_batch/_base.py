"""The batch backend interface and the driver every provider's batch API shares.

A submitted batch is recorded in the cache folder (``_meta/``) before it is polled, so a run
that is stopped or killed while a batch is pending finds it again on restart and collects
it instead of paying for the same requests twice. Control-plane calls (upload, create,
poll, download) use the SDK's own retries; they cost nothing.

Budgets follow the online runner's rule (``calls._budget``): a request whose worst case fits
only once the requests already submitted settle waits for them; the batch is sent in rounds,
each collected (and its spend settled) before the next is admitted. So the same requests pass
as online, whatever the provider's timing.
"""

from __future__ import annotations

import importlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from clcg_pipeline.calls._budget import Budget, Grant, bound_budget
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import COORD_ENV, WAIT, open_ledger
from clcg_pipeline.calls._credentials import check_credentials
from clcg_pipeline.calls._options import CallOptions, Progress
from clcg_pipeline.calls._providers._base import ModelOutput
from clcg_pipeline.calls._requests import ChatRequest, model_key
from clcg_pipeline.calls._results import (
    CACHEABLE,
    CallResult,
    bind,
    cache_entry,
    cost_usd,
    estimate_cost,
    split_cached,
)
from clcg_pipeline.config import ModelSpec

log = logging.getLogger(__name__)

BATCH_PROVIDERS = ("openai", "anthropic", "gemini")
CONTROL_RETRIES = 3
# Each SDK is imported only when a model of its provider runs in batch mode.
_BACKENDS: dict[str, tuple[str, str]] = {
    "openai": ("clcg_pipeline.calls._batch.openai", "OpenAIBatch"),
    "anthropic": ("clcg_pipeline.calls._batch.anthropic", "AnthropicBatch"),
    "gemini": ("clcg_pipeline.calls._batch.google", "GeminiBatch"),
}


class BatchBackend(ABC):
    """One provider's batch API: submit requests, tell when a batch has ended, read it back."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    @abstractmethod
    def submit(self, requests: Sequence[ChatRequest]) -> str: ...

    @abstractmethod
    def ended(self, batch_id: str) -> bool: ...

    @abstractmethod
    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        """(call id, output or error class) per request of an ended batch."""


def backend_for(model: ModelSpec) -> BatchBackend:
    if model.provider not in _BACKENDS:
        raise ValueError(
            f"model {model.id!r}: batch mode supports providers {BATCH_PROVIDERS}, not {model.provider!r}; "
            "run it with mode='online'"
        )
    module_name, class_name = _BACKENDS[model.provider]
    backend: BatchBackend = getattr(importlib.import_module(module_name), class_name)(model)
    return backend


def _skipped(call_id: str, reason: str) -> CallResult:
    return CallResult(call_id, None, None, "skipped_budget", reason, 0, 0, 0.0, 0.0, 0, False)


def _collected(model: ModelSpec, call_id: str, output: ModelOutput | str, elapsed: float) -> CallResult:
    if isinstance(output, str):
        return CallResult(call_id, None, None, "error", output, 0, 0, 0.0, elapsed, 1, False)
    return CallResult(
        call_id,
        output.text,
        output.finish_reason,
        output.outcome,
        output.error,
        output.input_tokens,
        output.output_tokens,
        cost_usd(model, output.input_tokens, output.output_tokens),
        elapsed,
        1,
        False,
    )


class _BatchRun:
    """The requests of one :func:`run_batch` still to send, the batches pending, the budgets."""

    def __init__(
        self, model: ModelSpec, options: CallOptions, cache: CallCache, todo: dict[str, ChatRequest]
    ) -> None:
        self.model = model
        self.options = options
        self.cache = cache
        self.todo = todo
        self.results: dict[str, CallResult] = {}
        self.backend = backend_for(model)
        self.name = f"batches-{model_key(model)[:24]}"
        self.pending: list[dict[str, Any]] = (cache.get_meta(self.name) or {}).get("pending", [])
        self.ledger = open_ledger(options.cache_dir)  # the backend of calls._coord: files or PostgreSQL
        self.study_limit = options.study_budget_usd if self.ledger is not None else None
        if self.ledger is None and options.study_budget_usd is not None:
            log.warning(
                "cache %s is not a local folder and %s is unset: the study budget binds this run only",
                options.cache_dir,
                COORD_ENV,
            )
        self.budget: Budget = bound_budget(
            options.budget,
            options.budget_usd,
            options.study_budget_usd,
            shared_ledger=self.ledger is not None,
        )
        self.study_stopped = False
        self.reserved: dict[str, tuple[float, str | None]] = {}  # call id -> (estimate, ledger id)
        self.held_by = "BudgetExceeded"  # which budget made the last request wait

    def covered(self) -> set[str]:
        return {cid for batch in self.pending for cid in batch["call_ids"]}

    def _reserve(self, request: ChatRequest) -> Literal[Grant.GRANTED, Grant.WAIT] | str:
        """GRANTED, WAIT, or the reason the request is skipped for good."""
        budgeted = self.budget.limit is not None or self.study_limit is not None
        estimate = estimate_cost(self.model, request) if budgeted else 0.0
        grant = self.budget.reserve(estimate)
        if grant is Grant.REFUSED:
            return "BudgetExceeded"
        if grant is Grant.WAIT:
            self.held_by = "BudgetExceeded"
            return Grant.WAIT
        rid: str | None = None
        if self.study_limit is not None and self.ledger is not None:
            rid = None if self.study_stopped else self.ledger.reserve(estimate, self.study_limit)
            if rid is None or rid == WAIT:
                self.budget.settle(estimate, 0.0)
                if rid == WAIT:
                    self.held_by = "StudyBudgetExceeded"
                    return Grant.WAIT
                self.study_stopped = True  # as for the run budget: no smaller call sneaks past later
                return "StudyBudgetExceeded"
        self.reserved[request.call_id] = (estimate, rid)
        return Grant.GRANTED

    def admit(self, candidates: list[ChatRequest]) -> tuple[list[ChatRequest], list[ChatRequest]]:
        """(requests to submit now, requests that wait for those in flight to settle), in order."""
        fresh: list[ChatRequest] = []
        for i, request in enumerate(candidates):
            grant = self._reserve(request)
            if grant is Grant.WAIT:
                return fresh, candidates[i:]
            if grant is Grant.GRANTED:
                fresh.append(request)
            else:
                self.results[request.call_id] = _skipped(request.call_id, grant)
        return fresh, []

    def submit(self, fresh: list[ChatRequest]) -> None:
        batch_id = self.backend.submit(fresh)
        # The ledger's reservation ids go with the record: a run that collects the batch after
        # this process died settles them, which replaces their charge at death (not counted twice).
        rids = {r.call_id: rid for r in fresh if (rid := self.reserved[r.call_id][1])}
        self.pending.append(
            {
                "id": batch_id,
                "call_ids": [r.call_id for r in fresh],
                "submitted": time.time(),
                "reservations": rids,
            }
        )
        self.cache.put_meta(self.name, {"pending": self.pending})  # recorded before any wait: resumable

    def _settle(self, call_id: str, result: CallResult, recorded: str | None) -> None:
        """End the call's reservation: this run's own, else the one its batch's record names."""
        estimate, rid = self.reserved.pop(call_id, (0.0, recorded))
        self.budget.settle(estimate, result.cost_usd)
        if self.ledger is not None:
            self.ledger.settle(rid, result.cost_usd, model=self.model.id, call_id=call_id)

    def _release(self, call_ids: Sequence[str], recorded: Mapping[str, str] | None = None) -> None:
        """End the reservations of calls that cost nothing (failed, or never sent): this run's
        own, else those ``recorded`` with their batch (a dead submitter's, charged at its death)."""
        for call_id in call_ids:
            if call_id in self.reserved:
                estimate, rid = self.reserved.pop(call_id)
                self.budget.settle(estimate, 0.0)
                if rid is not None and self.ledger is not None:
                    self.ledger.release(rid)
            elif recorded and call_id in recorded and self.ledger is not None:
                self.ledger.release(recorded[call_id])

    def collect(self, batch: dict[str, Any]) -> None:
        """Every result of an ended batch that this run asked for: cached, settled, and kept.

        Only the calls of ``todo`` (not cached when this run began): one that an earlier
        collector cached is on record already, paid once (settled then, or its reservation
        charged at that collector's death), so a rerun collecting the batch again adds nothing.
        """
        elapsed = time.time() - float(batch.get("submitted", time.time()))
        recorded: dict[str, str] = batch.get("reservations") or {}
        settled: set[str] = set()
        for cid, output in self.backend.collect(batch["id"]):
            if cid not in self.todo:
                continue  # another run's request, or cached already: that run records it
            result = _collected(self.model, cid, output, elapsed)
            if not isinstance(output, str):
                settled.add(cid)
                # The answer first, as ``_persist`` does: a death between the two writes leaves
                # it cached (taken as cached by the rerun) and its reservation charged at death.
                try:
                    if result.outcome in CACHEABLE:
                        self.cache.put(cid, cache_entry(self.model, self.todo[cid], result))
                finally:
                    self._settle(cid, result, recorded.get(cid))  # paid even if the cache write fails
            self.results[cid] = result
        # Failed ones, and any the provider left out: they cost nothing.
        self._release([c for c in batch["call_ids"] if c in self.todo and c not in settled], recorded)
        self.pending = [b for b in self.pending if b["id"] != batch["id"]]
        self.cache.put_meta(self.name, {"pending": self.pending})

    def wait(self, deadline: float | None, progress: Progress | None, bound: Sequence[ChatRequest]) -> bool:
        """Poll until every pending batch with a request of this run is collected; False on the deadline."""
        waiting = [b for b in self.pending if set(b["call_ids"]) & set(self.todo)]
        while waiting:
            for batch in [b for b in waiting if self.backend.ended(b["id"])]:
                self.collect(batch)
                waiting.remove(batch)
                if progress:
                    progress(sum(1 for r in bound if r.call_id in self.results), len(bound))
            if not waiting:
                break
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(self.options.batch_poll_s)
        return True

    def close(self) -> None:
        """Forget the pending record once empty; what is still pending stops holding budget."""
        if not self.pending:
            self.cache.delete_meta(self.name)
        self._release(list(self.reserved))
        if self.ledger is not None:
            self.ledger.close()


def _send_in_rounds(run: _BatchRun, progress: Progress | None, bound: Sequence[ChatRequest]) -> None:
    """Submit what the budgets admit, collect it, and admit again until nothing waits."""
    covered = run.covered()
    candidates = [r for cid, r in run.todo.items() if cid not in covered]
    max_wait_s = run.options.batch_max_wait_s
    deadline = time.monotonic() + max_wait_s if max_wait_s is not None else None
    while True:
        fresh, candidates = run.admit(candidates)
        if fresh:
            run.submit(fresh)
        in_time = run.wait(deadline, progress, bound)
        if not candidates:
            return
        if not in_time or (deadline is not None and time.monotonic() >= deadline):
            # Never submitted: skipped as the budget held them back, sent by the next run.
            for request in candidates:
                run.results[request.call_id] = _skipped(request.call_id, run.held_by)
            return
        if not fresh:
            time.sleep(run.options.batch_poll_s)  # held by another process's calls in flight


def run_batch(model: ModelSpec, requests: Sequence[ChatRequest], options: CallOptions) -> list[CallResult]:
    """Submit uncached requests as batches (or resume a pending one), wait, collect.

    With ``options.batch_max_wait_s``, calls still pending when it runs out come back with
    outcome ``batch_pending`` (their predictions are ``missing``); the next run collects them.
    ``study_budget_usd`` is checked against the shared spend ledger at submission, and every
    collected call's cost is recorded there, once: cached first, then settled. A run that
    ends with a batch pending releases its reservations; one that dies leaves them charged,
    and the run that collects the batch settles (or releases) them in place of the charge.
    """
    bound = bind(model, requests)
    cache = CallCache(options.cache_dir)
    results, todo = split_cached(bound, cache)
    total = len(bound)
    if options.progress:
        options.progress(total - sum(1 for r in bound if r.call_id in todo), total)
    if todo:
        check_credentials(model)
        run = _BatchRun(model, options, cache, todo)
        try:
            _send_in_rounds(run, options.progress, bound)
        finally:
            run.close()
        results.update(run.results)
        for cid in todo:
            if cid not in results:
                results[cid] = CallResult(
                    cid, None, None, "batch_pending", "BatchPending", 0, 0, 0.0, 0.0, 0, False
                )
    return [results[r.call_id] for r in bound]
