"""What the online runner and the batch runner share: results, costs, cache records.

Kept apart from both so that ``calls._runner`` (which dispatches to batch mode) and ``calls._batch``
import this module rather than each other.
"""

from __future__ import annotations

import socket
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._requests import ChatRequest, model_key
from clcg_pipeline.calls._tokens import estimate_input_tokens
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.storage import TABLES

if TYPE_CHECKING:
    import dagster as dg

# Finish reasons that mean the text was cut off (OpenAI, Anthropic, Gemini spellings).
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "model_context_window_exceeded"})
# Finish reasons that mean the provider refused or filtered the answer.
REFUSAL_REASONS = frozenset(
    {"content_filter", "refusal", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}
)

CACHEABLE = frozenset({"ok", "refused", "truncated"})
PROVIDER_TAG = "clcg/provider"


# Whom a list of calls is paid for: one origin, or several when more than one launcher may have
# sent this partition's calls ahead (``partition_origin``). New cache entries take the first.
Origin = str | tuple[str, ...] | None


def _origins(origin: Origin) -> tuple[str, ...]:
    return (origin,) if isinstance(origin, str) else tuple(origin or ())


def _streams(origin: Origin) -> tuple[str, ...]:
    """``origin``'s origins that name a stream: ``"/<partition>"`` (``partitions.PARTITION_MARK``
    as the token) only names the partition the calls are made for."""
    return tuple(o for o in _origins(origin) if not o.startswith("/"))


def call_origin(calls_ahead: str | None, partition: str | None) -> str | None:
    """Whom calls sent ahead for ``partition`` by one ``clcg run`` were paid for (see ``from_cache``)."""
    return f"{calls_ahead}/{partition}" if calls_ahead and partition else None


def partition_origin(
    context: dg.AssetExecutionContext, calls_asset: str, partition_key: str | None = None
) -> Origin:
    """Whom calls sent ahead for this language x model partition were paid for: the tokens of
    the model's streams this partition has not claimed yet (``partitions.streamed_tokens``: its
    ``model_calls`` runs, a killed one included): with the daemon and ``clcg run`` both at work,
    either may have paid. ``calls_asset``: the partition's calls table. ``partition_key``: the partition, in a
    run over a range of them (each its own origin); else the run's one partition.
    """
    # Imported here: ``partitions`` imports Dagster, which the rest of ``calls`` does without.
    from clcg_pipeline.partitions import streamed_tokens

    key = str(partition_key if partition_key is not None else context.partition_key)
    tokens = streamed_tokens(context.instance, key, calls_asset)
    return tuple(f"{token}/{key}" for token in tokens) or None


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
    # Who paid for the answer, as its cache entry says (``cache_entry``): set on a result read
    # from the cache, so the calls table can record a payment that no table recorded yet.
    paid_run: str | None = None
    paid_host: str | None = None
    paid_at: float | None = None  # seconds since the epoch, when the answer arrived


# The payer of calls made outside any Dagster step and stream (a script, a test): one per process.
_PROCESS_RUN = f"process-{uuid.uuid4()}"


def _dagster_step() -> Any | None:
    """The Dagster step making the calls (its ``OpExecutionContext``), if any."""
    # Only where Dagster is loaded: without it there is no step, and ``calls`` does not need it.
    dagster = sys.modules.get("dagster")
    if dagster is None:
        return None
    try:
        return dagster.OpExecutionContext.get()
    except dagster.DagsterInvariantViolationError:
        return None


def _partitions(origin: Origin) -> tuple[str | None, ...]:
    """The partitions a list of calls is made for, first first: those ``origin`` names, else the
    Dagster step's one partition, else ``(None,)`` (an unpartitioned asset, say)."""
    named = tuple(dict.fromkeys(o.split("/", 1)[1] for o in _origins(origin) if "/" in o))
    if named:
        return named
    step = _dagster_step()
    return (str(step.partition_key),) if step is not None and step.has_partition_key else (None,)


def payer(origin: Origin = None) -> str:
    """Who pays for a call made now: the Dagster run of the step making it, else the stream
    that sends it ahead (``origin``'s token: a ``clcg run`` stream's, or a ``model_calls``
    run's, which is its run id), else this process."""
    step = _dagster_step()
    if step is not None:
        return str(step.run_id)
    streams = _streams(origin)
    return streams[0].split("/", 1)[0] if streams else _PROCESS_RUN


def _entry_payer(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """The run that paid for a cache entry and the partition it paid for. An entry from before
    payers were written names them only in its ``origin`` (a stream's), if at all."""
    paid_run = entry.get("paid_run")
    if isinstance(paid_run, str) and paid_run:
        paid_for = entry.get("paid_for")
        return paid_run, paid_for if isinstance(paid_for, str) and paid_for else None
    origin = entry.get("origin")
    if isinstance(origin, str) and "/" in origin and not origin.startswith("/"):
        token, partition = origin.split("/", 1)
        return token, partition
    return None, None


def cost_usd(model: ModelSpec, input_tokens: int, output_tokens: int) -> float:
    """USD of one call, at the price tier its prompt size falls in (``ModelSpec.price_tiers``)."""
    price_in, price_out = model.prices_for(input_tokens)
    return (input_tokens * price_in + output_tokens * price_out) / 1e6


def estimate_cost(model: ModelSpec, request: ChatRequest) -> float:
    """Worst-case cost of one call, for the budget: output at its cap when one is set."""
    out = request.settings.max_output_tokens or model.max_output_tokens or 1024
    return cost_usd(model, estimate_input_tokens(request.messages), out)


def bind(model: ModelSpec, requests: Sequence[ChatRequest]) -> list[ChatRequest]:
    """Requests with their ``model_key`` set, so ``call_id`` names the model."""
    key = model_key(model)
    return [r if r.model_key == key else replace(r, model_key=key) for r in requests]


def call_row(model: ModelSpec, request: ChatRequest, result: CallResult, **keys: Any) -> dict[str, Any]:
    """One row of a calls-shaped table (``calls``, ``task_calls``, ``task_judge_calls``).

    The ``calls`` contract's columns, in its order, from the call (``doc_id``, ``language`` and
    ``context_scope`` None unless given), then ``request_hash`` and ``finish_reason``, then
    ``keys``: the request's own key columns and the table's extra ones, in the caller's order.
    """
    own: dict[str, Any] = {
        "call_id": result.call_id,
        "model": model.id,
        "provider": model.provider,
        "rep": request.rep,
        "prompt_version": request.prompt_version,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost_usd": result.cost_usd,
        "latency_s": result.latency_s,
        "attempts": result.attempts,
        "outcome": result.outcome,
        "error": result.error,
        "cached": result.cached,
    }
    if result.paid_run:
        # Whose payment answered it: a stream's call claimed as new (``from_cache``) is paid by
        # the stream, not by the partition's run that records it; a cached one is recorded by
        # the IO manager as paid by that run when no calls table did (a run killed after
        # paying, a stream ahead), else as cached.
        own["paid_run"] = result.paid_run
        own["paid_host"] = result.paid_host
        # Microseconds: the calls tables' timestamps keep no finer time.
        paid_at = pd.Timestamp(result.paid_at, unit="s", tz="UTC").floor("us") if result.paid_at else None
        own["paid_at"] = paid_at
    row = {name: own.get(name) for name in TABLES["calls"].names}
    row["request_hash"] = request.request_hash
    row["finish_reason"] = result.finish_reason
    row.update(keys)
    return row


def from_cache(call_id: str, entry: dict[str, Any], origin: Origin = None) -> CallResult:
    """A cached result; new (``cached=False``) when the entry was paid for on behalf of ``origin``.

    A stream sends a partition's calls ahead of its Dagster run (``orchestration/_model_calls.py``) and
    tags each entry it writes with that partition; the partition's run then records those
    calls as new calls (paid by the stream: ``paid_run`` is its token), and any other reader as cached.
    """
    # A payment is the calls table's to record only in the partition it was made for: another
    # partition asking the same request found it cached (``storage/_paid.py``).
    paid_run, paid_for = _entry_payer(entry)
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
        cached=entry.get("origin") not in _streams(origin),
        paid_run=paid_run if paid_for in _partitions(origin) else None,
        paid_host=entry.get("paid_host"),
        paid_at=float(entry["created"]) if isinstance(entry.get("created"), int | float) else None,
    )


def cache_entry(
    model: ModelSpec, request: ChatRequest, result: CallResult, origin: Origin = None
) -> dict[str, Any]:
    entry = {
        "provider": model.provider,
        "model": model.model,
        "model_id": model.id,  # the spend view's model for a payment no calls table recorded
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
        "created": time.time(),  # when the answer arrived: the payment's time
        # Who paid, written with the answer: a run killed before any calls table recorded the
        # call is still named, and the next write of a calls table records it (storage/_paid.py).
        "paid_run": payer(origin),
        "paid_host": socket.gethostname(),
    }
    paid_for = _partitions(origin)[0]
    if paid_for is not None:
        entry["paid_for"] = paid_for  # the partition whose calls table is to record the payment
    if _streams(origin):
        entry["origin"] = _streams(origin)[0]  # who the call was paid for (see ``from_cache``)
    return entry


def split_cached(
    bound: Sequence[ChatRequest], cache: CallCache, origin: Origin = None
) -> tuple[dict[str, CallResult], dict[str, ChatRequest]]:
    """Results already in the cache, and the distinct requests still to send (by call id).

    ``origin``: see ``from_cache``."""
    results: dict[str, CallResult] = {}
    todo: dict[str, ChatRequest] = {}
    cache.refresh()  # what other processes wrote so far (an object store's index lists them)
    for request in bound:
        cid = request.call_id
        if cid in results or cid in todo:
            continue
        entry = cache.get(cid)
        if entry is not None:
            results[cid] = from_cache(cid, entry, origin)
        else:
            todo[cid] = request
    return results, todo
