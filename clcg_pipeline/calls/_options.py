"""How calls are made, as one typed object: cache, budgets, mode, retry policy, origin, progress.

Every function that makes or passes on calls takes one ``CallOptions``; the stages build it
once at the Dagster edge (the data folder's cache, the run's budget) and hand it down.
Nothing here enters the call id: only what changes the output does (``_requests``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from clcg_pipeline.calls._budget import Budget
    from clcg_pipeline.calls._results import Origin
    from clcg_pipeline.calls._retry import RetryPolicy

Progress = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class CallOptions:
    """Where answers are cached and what a list of calls may spend, how it retries and reports.

    ``budget_usd`` is this run's limit (a fresh ``Budget``) unless ``budget`` is given: the
    ``Budget`` of a Dagster run (``run_budget``) that all its paid ops share. ``study_budget_usd``
    binds every process sharing the cache (the ledger in ``_coord``). ``mode="batch"`` goes
    through the provider's batch API, polling every ``batch_poll_s``; with ``batch_max_wait_s``,
    what has not finished comes back ``batch_pending``. ``origin`` names the partition that
    calls sent ahead were paid for (``from_cache``). ``progress(done, total)`` is told as
    results arrive.
    """

    cache_dir: str
    budget_usd: float | None = None
    study_budget_usd: float | None = None
    budget: Budget | None = None
    mode: Literal["online", "batch"] = "online"
    policy: RetryPolicy | None = None
    batch_poll_s: float = 30.0
    batch_max_wait_s: float | None = None
    origin: Origin = None
    progress: Progress | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("online", "batch"):
            raise ValueError(f"mode must be 'online' or 'batch', got {self.mode!r}")

    def with_progress(self, progress: Progress | None) -> CallOptions:
        return replace(self, progress=progress)


def logged_progress(log: Callable[[str], None], what: str, unit: str = "calls") -> Progress:
    """A ``progress`` that logs ``"<what>: <done>/<total> <unit>"`` about every 10%: long lists
    show life without flooding the log (a Dagster run's event log, say)."""
    logged = {"decile": -1}

    def progress(done: int, total: int) -> None:
        decile = done * 10 // max(total, 1)
        if decile != logged["decile"]:
            logged["decile"] = decile
            log(f"{what}: {done}/{total} {unit}")

    return progress
