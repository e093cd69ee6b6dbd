"""Batch mode: big backfills through the providers' batch APIs (OpenAI Batch, Anthropic
Message Batches, Gemini batch mode), collected into the same cache and rows as online calls.

A submitted batch is recorded in the cache folder (``_meta/``) before it is polled, so a run
that is stopped or killed while a batch is pending finds it again on restart and collects
it instead of paying for the same requests twice. Control-plane calls (upload, create,
poll, download) use the SDK's own retries; they cost nothing.
"""

from __future__ import annotations

import io
import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import COORD_ENV, WAIT, SpendLedger, coord_root
from clcg_pipeline.calls._credentials import api_key, check_credentials
from clcg_pipeline.calls._options import CallOptions
from clcg_pipeline.calls._providers._base import ModelOutput, ProviderError
from clcg_pipeline.calls._requests import ChatRequest, model_key
from clcg_pipeline.calls._results import (
    CACHEABLE,
    Budget,
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
_CONTROL_RETRIES = 3


class _Backend(ABC):
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    @abstractmethod
    def submit(self, requests: Sequence[ChatRequest]) -> str: ...

    @abstractmethod
    def ended(self, batch_id: str) -> bool: ...

    @abstractmethod
    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        """(call id, output or error class) per request of an ended batch."""


class _OpenAIBatch(_Backend):
    def __init__(self, spec: ModelSpec) -> None:
        import openai

        from clcg_pipeline.calls._providers.openai import OpenAIAPI

        super().__init__(spec)
        key = api_key(spec)
        self.client = openai.OpenAI(
            api_key=key or "unused", base_url=spec.base_url, max_retries=_CONTROL_RETRIES, timeout=120
        )
        self.adapter = OpenAIAPI(spec, key)

    def submit(self, requests: Sequence[ChatRequest]) -> str:
        lines = [
            json.dumps(
                {
                    "custom_id": r.call_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": self.adapter.body(r),
                },
                ensure_ascii=False,
            )
            for r in requests
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        upload = self.client.files.create(file=("clcg-batch.jsonl", io.BytesIO(data)), purpose="batch")
        batch = self.client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        return batch.id

    def ended(self, batch_id: str) -> bool:
        status = self.client.batches.retrieve(batch_id).status
        return status in ("completed", "failed", "expired", "cancelled")

    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        from openai.types.chat import ChatCompletion

        from clcg_pipeline.calls._providers.openai import output_from_completion

        batch = self.client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for line in self.client.files.content(file_id).text.splitlines():
                if not line.strip():
                    continue
                record = json.loads(line)
                response = record.get("response") or {}
                if record.get("error") or response.get("status_code") != 200:
                    yield record["custom_id"], f"BatchError:{response.get('status_code', 'failed')}"
                    continue
                try:
                    yield (
                        record["custom_id"],
                        output_from_completion(ChatCompletion.model_validate(response["body"])),
                    )
                except (ProviderError, ValueError):
                    yield record["custom_id"], "MalformedResponse"


class _AnthropicBatch(_Backend):
    def __init__(self, spec: ModelSpec) -> None:
        import anthropic

        from clcg_pipeline.calls._providers.anthropic import AnthropicAPI

        super().__init__(spec)
        key = api_key(spec)
        self.client = anthropic.Anthropic(
            api_key=key, base_url=spec.base_url, max_retries=_CONTROL_RETRIES, timeout=120
        )
        self.adapter = AnthropicAPI(spec, key)

    def submit(self, requests: Sequence[ChatRequest]) -> str:
        batch = self.client.messages.batches.create(
            requests=[{"custom_id": r.call_id, "params": self.adapter.params(r)} for r in requests]  # type: ignore[misc]
        )
        return batch.id

    def ended(self, batch_id: str) -> bool:
        return self.client.messages.batches.retrieve(batch_id).processing_status == "ended"

    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        from clcg_pipeline.calls._providers.anthropic import output_from_message

        for entry in self.client.messages.batches.results(batch_id):
            result = entry.result
            if result.type != "succeeded":
                yield entry.custom_id, f"Batch{result.type.capitalize()}"
                continue
            try:
                yield entry.custom_id, output_from_message(result.message)
            except ProviderError:
                yield entry.custom_id, "MalformedResponse"


class _GeminiBatch(_Backend):
    _ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")

    def __init__(self, spec: ModelSpec) -> None:
        from google import genai
        from google.genai import types

        super().__init__(spec)
        self.types = types
        self.client = genai.Client(
            api_key=api_key(spec),
            http_options=types.HttpOptions(
                base_url=spec.base_url, retry_options=types.HttpRetryOptions(attempts=_CONTROL_RETRIES)
            ),
        )

    def submit(self, requests: Sequence[ChatRequest]) -> str:
        from clcg_pipeline.calls._providers.anthropic import split_system
        from clcg_pipeline.calls._providers.google import completion_config, contents

        inlined = []
        for r in requests:
            system, messages = split_system(r.messages)
            config = completion_config(self.spec, r.settings, system)
            config.pop("automatic_function_calling", None)  # a client-side switch, not sent
            inlined.append(
                self.types.InlinedRequest(
                    contents=contents(messages),  # type: ignore[arg-type]
                    metadata={"key": r.call_id},
                    config=self.types.GenerateContentConfig(**config),
                )
            )
        job = self.client.batches.create(model=self.spec.model, src=inlined)
        if not job.name:
            raise RuntimeError(f"model {self.spec.id!r}: the batch API returned no job name")
        return job.name

    def ended(self, batch_id: str) -> bool:
        state = self.client.batches.get(name=batch_id).state
        return state is not None and state.value in self._ENDED

    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        from clcg_pipeline.calls._providers.google import output_from_response

        job = self.client.batches.get(name=batch_id)
        for entry in (job.dest.inlined_responses if job.dest else None) or []:
            key = (entry.metadata or {}).get("key")
            if not key:
                continue
            if entry.error is not None or entry.response is None:
                yield key, "BatchError"
                continue
            try:
                yield key, output_from_response(entry.response)
            except ProviderError:
                yield key, "MalformedResponse"


def _backend(model: ModelSpec) -> _Backend:
    if model.provider == "openai":
        return _OpenAIBatch(model)
    if model.provider == "anthropic":
        return _AnthropicBatch(model)
    if model.provider == "gemini":
        return _GeminiBatch(model)
    raise ValueError(
        f"model {model.id!r}: batch mode supports providers {BATCH_PROVIDERS}, not {model.provider!r}; "
        "run it with mode='online'"
    )


def _meta_name(model: ModelSpec) -> str:
    return f"batches-{model_key(model)[:24]}"


def run_batch(model: ModelSpec, requests: Sequence[ChatRequest], options: CallOptions) -> list[CallResult]:
    """Submit uncached requests as one batch (or resume a pending one), wait, collect.

    With ``max_wait_s``, calls still pending when it runs out come back with outcome
    ``batch_pending`` (their predictions are ``missing``); the next run collects them.
    ``study_budget_usd`` is checked against the shared spend ledger at submission, and every
    collected call's cost is recorded there (a pending batch is reserved only while the
    process that submitted it lives).
    """
    cache_dir, budget, progress = options.cache_dir, options.budget, options.progress
    budget_usd, study_budget_usd = options.budget_usd, options.study_budget_usd
    poll_s, max_wait_s = options.batch_poll_s, options.batch_max_wait_s
    bound = bind(model, requests)
    cache = CallCache(cache_dir)
    results, todo = split_cached(bound, cache)
    total = len(bound)
    if progress:
        progress(total - sum(1 for r in bound if r.call_id in todo), total)
    if todo:
        check_credentials(model)
        backend = _backend(model)
        name = _meta_name(model)
        pending: list[dict[str, Any]] = (cache.get_meta(name) or {}).get("pending", [])
        covered = {cid for batch in pending for cid in batch["call_ids"]}
        root = coord_root(cache_dir)
        ledger = SpendLedger(root) if root is not None else None
        study_limit = study_budget_usd if ledger is not None else None
        if ledger is None and study_budget_usd is not None:
            log.warning(
                "cache %s is not a local folder and %s is unset: the study budget binds this run only",
                cache_dir,
                COORD_ENV,
            )
            budget_usd = min(b for b in (budget_usd, study_budget_usd) if b is not None)
        if budget is None:
            budget = Budget(budget_usd)
        elif budget_usd is not None and (budget.limit is None or budget_usd < budget.limit):
            budget.limit = budget_usd  # the run's shared budget (``run_budget``), bound by the study's here
        reservations: list[str] = []
        study_stopped = False
        fresh: list[ChatRequest] = []
        for cid, request in todo.items():
            if cid in covered:
                continue
            budgeted = budget.limit is not None or study_limit is not None
            estimate = estimate_cost(model, request) if budgeted else 0.0
            rid: str | None = None
            reason: str | None = None
            if not budget.reserve(estimate):
                reason = "BudgetExceeded"
            elif study_limit is not None and ledger is not None:
                # WAIT counts as no: nothing of this run settles before the batch is submitted.
                rid = None if study_stopped else ledger.reserve(estimate, study_limit)
                if rid is None or rid == WAIT:
                    reason, rid, study_stopped = "StudyBudgetExceeded", None, True
            if reason is None:
                fresh.append(request)
                if rid is not None:
                    reservations.append(rid)
            else:
                results[cid] = CallResult(cid, None, None, "skipped_budget", reason, 0, 0, 0.0, 0.0, 0, False)
        if fresh:
            batch_id = backend.submit(fresh)
            pending.append({"id": batch_id, "call_ids": [r.call_id for r in fresh], "submitted": time.time()})
            cache.put_meta(name, {"pending": pending})  # recorded before any wait: resumable
        started = time.monotonic()
        waiting = [b for b in pending if set(b["call_ids"]) & set(todo)]
        while waiting:
            for batch in list(waiting):
                if not backend.ended(batch["id"]):
                    continue
                elapsed = time.time() - float(batch.get("submitted", time.time()))
                for cid, output in backend.collect(batch["id"]):
                    if isinstance(output, str):
                        result = CallResult(cid, None, None, "error", output, 0, 0, 0.0, elapsed, 1, False)
                    else:
                        result = CallResult(
                            cid,
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
                        if ledger is not None:
                            ledger.settle(None, result.cost_usd, model=model.id, call_id=cid)
                        if result.outcome in CACHEABLE and cid in todo:
                            cache.put(cid, cache_entry(model, todo[cid], result))
                    if cid in todo:
                        results[cid] = result
                waiting.remove(batch)
                pending = [b for b in pending if b["id"] != batch["id"]]
                cache.put_meta(name, {"pending": pending})
                if progress:
                    progress(sum(1 for r in bound if r.call_id in results), total)
            if not waiting:
                break
            if max_wait_s is not None and time.monotonic() - started >= max_wait_s:
                break
            time.sleep(poll_s)
        if not pending:
            cache.delete_meta(name)
        if ledger is not None:
            # Collected calls are settled above; what is still pending stops holding budget.
            for rid in reservations:
                ledger.release(rid)
            ledger.close()
        for cid in todo:
            if cid not in results:
                results[cid] = CallResult(
                    cid, None, None, "batch_pending", "BatchPending", 0, 0, 0.0, 0.0, 0, False
                )
    return [results[r.call_id] for r in bound]
