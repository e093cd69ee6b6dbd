"""The adaptive concurrency limit of one model's calls in one process (AIMD, as TCP)."""

from __future__ import annotations

import asyncio


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
