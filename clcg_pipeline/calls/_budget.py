"""One run's spending limit, in process, and the registry that shares it across a Dagster run.

The study-wide limit is the ledger in ``calls._coord``; both follow one rule. A call is
granted when what is spent, what calls in flight hold reserved (their worst case) and its own
worst case fit the limit. When only the calls in flight stand in the way, it waits: they
usually cost less than reserved. It is refused, for good, only when what is spent plus its
own worst case would pass the limit. With identical per-call costs, the same number of calls
passes whatever the timing.
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict


class Grant(enum.Enum):
    """The answer of :meth:`Budget.reserve`."""

    GRANTED = "granted"
    WAIT = "wait"  # calls in flight hold the budget: ask again once one settles
    REFUSED = "refused"  # for good: the budget is spent


class Budget:
    """One run's spending limit, in process (the study-wide one is the ledger in ``calls._coord``)."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.spent = 0.0
        self.reserved = 0.0
        self.stopped = False

    def reserve(self, estimate: float) -> Grant:
        """Reserve ``estimate`` (a call's worst case) if it fits; see the module's rule."""
        if self.limit is None:
            return Grant.GRANTED
        if self.stopped or self.spent + estimate > self.limit:
            # Stop for good: later, smaller calls must not sneak past a refused one.
            self.stopped = True
            return Grant.REFUSED
        if self.spent + self.reserved + estimate > self.limit:
            return Grant.WAIT
        self.reserved += estimate
        return Grant.GRANTED

    def settle(self, estimate: float, actual: float) -> None:
        """End a reservation of ``estimate``; ``actual`` is what the call cost (0 if not made)."""
        if self.limit is not None:
            self.reserved -= estimate
        self.spent += actual


# One Budget per Dagster run: every paid op of a run executes in one process (in_process_executor),
# so a registry in the process lets them share the run's limit. Bounded: a long-lived process
# (a code server, a test session) must not keep every run it ever saw.
_RUN_BUDGETS: OrderedDict[str, Budget] = OrderedDict()
_RUN_BUDGETS_LOCK = threading.Lock()
_RUN_BUDGETS_KEPT = 64


def run_budget(run_id: str, limit: float | None) -> Budget:
    """The Budget every paid op of Dagster run ``run_id`` spends from (the same object each time).

    The run's limit is the tightest any of its ops asks for: an op launched with ``limit=None``
    still stops once the run's spend reaches a limit another op set, and its spend counts too.
    """
    with _RUN_BUDGETS_LOCK:
        budget = _RUN_BUDGETS.get(run_id)
        if budget is None:
            budget = _RUN_BUDGETS[run_id] = Budget(limit)
            while len(_RUN_BUDGETS) > _RUN_BUDGETS_KEPT:
                _RUN_BUDGETS.popitem(last=False)
        else:
            _RUN_BUDGETS.move_to_end(run_id)
            if limit is not None and (budget.limit is None or limit < budget.limit):
                budget.limit = limit
        return budget


def bound_budget(
    budget: Budget | None, budget_usd: float | None, study_budget_usd: float | None, *, shared_ledger: bool
) -> Budget:
    """The run's ``Budget`` for one list of calls: ``budget`` (a run's shared one) or a fresh one,
    bound by ``budget_usd`` and, when no shared ledger enforces it, by ``study_budget_usd`` too."""
    if not shared_ledger and study_budget_usd is not None:
        # No shared ledger: the study budget binds this run at least.
        budget_usd = min(b for b in (budget_usd, study_budget_usd) if b is not None)
    if budget is None:
        return Budget(budget_usd)
    if budget_usd is not None and (budget.limit is None or budget_usd < budget.limit):
        budget.limit = budget_usd  # the run's shared budget (``run_budget``), bound by the study's here
    return budget
