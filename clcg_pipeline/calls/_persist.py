"""Writing finished calls: responses to the cache, their spend to the study ledger, off the event loop."""

from __future__ import annotations

import asyncio
from typing import Any

from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import Ledger
from clcg_pipeline.storage import IntentLog, sent_by

Settle = tuple[str | None, float, str, str]  # SpendLedger.settle_many: reservation id, usd, model, call id
_Record = tuple[str, dict[str, Any] | None, Settle | None, asyncio.Future[None]]


class Persister:
    """Writes finished calls to the cache and their spend to the ledger, in batches, in a thread.

    File creation is slow on some filesystems, so it stays off the event loop; one thread hop
    and one ledger lock per batch (whatever finished while the last batch was being written)
    instead of per call (together ~5% of the event loop's CPU at 160 calls/s). A caller is
    released only once its own batch is written, so nothing is reported done before it is on disk.
    """

    def __init__(self, cache: CallCache, ledger: Ledger | None, intents: IntentLog | None = None) -> None:
        self.cache = cache
        self.ledger = ledger
        self.intents = intents  # told of each answer cached: a kill from then on loses nothing
        self._pending: list[_Record] = []
        self._flusher: asyncio.Task[None] | None = None

    async def write(self, call_id: str, entry: dict[str, Any] | None, settle: Settle | None) -> None:
        if entry is None and settle is None:
            return
        done = asyncio.get_running_loop().create_future()
        self._pending.append((call_id, entry, settle, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        await done

    def _write_batch(self, batch: list[_Record]) -> None:
        # The answers first, with their costs: the spend view counts what the cache holds, and a
        # rerun takes a cached answer as cached. A death between the two writes then leaves the
        # call on record, not to be paid again, and its reservation, still in the ledger, is
        # charged at death (``SpendLedger``): the budget never counts less than was paid. The
        # entry names that reservation, so the charge is later replaced by the answer's real
        # cost (``calls._coord.settle_from_cache``): the ledger ends equal to the bill.
        try:
            # One object for the whole batch on an object store (``_segments.py``).
            cached = {
                call_id: sent_by(_with_reservation(entry, settle), self.intents)
                for call_id, entry, settle, _ in batch
                if entry is not None
            }
            self.cache.put_many(cached)
            if self.intents is not None:
                self.intents.answered(cached)
        finally:
            # Settled even when the cache write fails (a full disk): what was paid stays on record.
            if self.ledger is not None:
                self.ledger.settle_many([settle for _, _, settle, _ in batch if settle is not None])

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


def _with_reservation(entry: dict[str, Any], settle: Settle | None) -> dict[str, Any]:
    """The cache entry, naming the ledger reservation its call was paid under (if any)."""
    rid = settle[0] if settle is not None else None
    return {**entry, "reservation": rid} if rid else entry
