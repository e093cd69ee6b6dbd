"""The retry policy: backoff settings and the delay before each retry.

How many attempts a call gets is the model's ``max_attempts`` (``models.yaml``); the SDKs'
own retries are turned off in every adapter, so each attempt here is one HTTP request.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff settings; tests shrink them. None of these enter the cache key."""

    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0
    max_retry_after_s: float = 300.0
    # Extra seconds the runner allows beyond the SDK's own timeout before it gives up itself.
    timeout_grace_s: float = 1.0


def backoff_delay(policy: RetryPolicy, attempt: int) -> float:
    ceiling = min(policy.backoff_cap_s, policy.backoff_base_s * 2 ** (attempt - 1))
    # "Equal jitter": at least half the exponential delay, so retries stay spread but bounded below.
    return ceiling / 2 + random.uniform(0, ceiling / 2)
