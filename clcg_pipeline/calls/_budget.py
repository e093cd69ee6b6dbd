"""One run's spending limit, in process, and the registry that shares it across a Dagster run.

The study-wide limit is the ledger in ``calls._coord``; both follow one rule. A call is
granted when what is spent, what calls in flight hold reserved (their worst case) and its own
worst case fit the limit. When only the calls in flight stand in the way, it waits: they
usually cost less than reserved. It is refused, for good, only when what is spent plus its
own worst case would pass the limit. With identical per-call costs, the same number of calls
passes whatever the timing.

A Dagster run's limit is the tightest its config gives any of its ops (:func:`op_budget`), and
a list of calls a budget stopped is said in one line (:func:`budget_stop_line`), the same for
every step that pays (the item generator, the level auditor, the task bank's writers).
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from clcg_pipeline.calls._coord import open_ledger

if TYPE_CHECKING:
    import pandas as pd

# Why the call runner skipped a call for a budget (the call's ``error``, outcome ``skipped_budget``).
RUN_BUDGET_STOP = "BudgetExceeded"  # the run's (``--budget``, an op's ``budget_usd``)
STUDY_BUDGET_STOP = "StudyBudgetExceeded"  # the study's (study.yaml ``budget_usd``, the ledger)


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


def configured_limit(run_config: Mapping[str, Any]) -> float | None:
    """The tightest ``budget_usd`` any op of a Dagster run's config is given (None: none is)."""
    limits: list[float] = []
    ops = run_config.get("ops")
    for op in ops.values() if isinstance(ops, Mapping) else ():
        if not isinstance(op, Mapping):
            continue
        config = op.get("config")
        if isinstance(config, Mapping) and isinstance(config.get("budget_usd"), int | float):
            limits.append(float(config["budget_usd"]))
        nested = configured_limit(op)  # a graph's ops
        if nested is not None:
            limits.append(nested)
    return min(limits) if limits else None


def op_budget(run_id: str, run_config: Mapping[str, Any], limit: float | None) -> Budget:
    """:func:`run_budget` with the run's limit known from its start: the tightest of ``limit`` and
    every ``budget_usd`` the run's config gives any op. An op that runs before the op its limit
    was given to (``clcg run`` gives it to the paid ops it knows) is bound by it all the same."""
    limits = [b for b in (limit, configured_limit(run_config)) if b is not None]
    return run_budget(run_id, min(limits) if limits else None)


def study_spent(cache_dir: str) -> float | None:
    """What the study's ledger says every process sharing ``cache_dir`` spent (None: no ledger),
    as the answers' costs (what dead processes' reservations were charged is apart)."""
    ledger = open_ledger(cache_dir)
    if ledger is None:
        return None
    try:
        return ledger.totals()[0]
    finally:
        ledger.close()


def study_charged(cache_dir: str) -> float:
    """What the reservations of processes that died mid-call were charged in the study's ledger
    (0 without one): the budget counts it like spend, apart from the answers' costs. Those
    whose answers the cache holds are settled at their real cost first (``open_ledger``)."""
    ledger = open_ledger(cache_dir)
    if ledger is None:
        return 0.0
    try:
        return ledger.charged_at_death()
    finally:
        ledger.close()


def died_mid_call(charged: float) -> str:
    """The words the budget lines add for ``charged`` (nothing when it is 0)."""
    return f", plus ${charged:.4f} reserved by processes that died mid-call" if charged > 0 else ""


def _study_figures(cache_dir: str) -> str:
    """What the study spent, for the budget stop line: the answers' costs, plus what the
    reservations of processes that died mid-call were charged (``Ledger.charged_at_death``;
    the budget counts it like spend, so without it a study stopped partly by such charges would
    show a figure below its limit)."""
    ledger = open_ledger(cache_dir)
    if ledger is None:
        return "its limit spent"
    try:
        spent, charged = ledger.totals()[0], ledger.charged_at_death()
    finally:
        ledger.close()
    return f"${spent:.4f} spent by the study in all{died_mid_call(charged)}"


class _BudgetOptions(Protocol):
    """What :func:`budget_stop_line` reads of a ``CallOptions`` (a protocol: ``_options``
    imports this module, not the other way round)."""

    @property
    def budget(self) -> Budget | None: ...
    @property
    def study_budget_usd(self) -> float | None: ...
    @property
    def cache_dir(self) -> str: ...


def budget_stop_line(what: str, calls: pd.DataFrame, options: _BudgetOptions) -> str | None:
    """The one line saying a budget stopped some of ``what``'s ``calls`` (a calls-shaped table,
    made with ``options``): which budget, what was spent, how many calls were left, how to
    resume; None when no call was skipped for a budget.

    Worded as ``clcg run``'s line for the responses (``RunSummary.budget_line``): the study
    budget when it alone stopped calls (with what the study spent in all, from its ledger), else
    the run's (with what this Dagster run spent).
    """
    skipped = calls[calls["outcome"] == "skipped_budget"] if len(calls) else calls
    if not len(skipped):
        return None
    stopped = f"{len(skipped)} of {len(calls)} calls of {what}"
    left = f"{len(skipped)} calls left unmade"
    if (skipped["error"] == STUDY_BUDGET_STOP).all():
        limit = options.study_budget_usd
        shown = f" ${limit:.4f}" if limit is not None else ""
        return (
            f"budget reached: the study budget (study.yaml budget_usd{shown}) stopped {stopped}: "
            f"{_study_figures(options.cache_dir)}, {left}; raise budget_usd in study.yaml and run "
            "`clcg run` again to resume (paid calls are kept)"
        )
    budget = options.budget
    shown = f" ${budget.limit:.4f}" if budget is not None and budget.limit is not None else ""
    by_run = f"${budget.spent:.4f} spent by this run" if budget is not None else "its limit spent"
    return (
        f"budget reached: the run budget (--budget{shown}) stopped {stopped}: {by_run}, {left}; "
        "run `clcg run` again (with a larger --budget, or none) to resume (paid calls are kept)"
    )
