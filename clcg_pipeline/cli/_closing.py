"""The lines ``clcg run`` closes with: what this command's runs paid, what earlier runs paid
that no closing line said, the calls a killed run had in flight (the provider may have billed
them: an estimate), and the study's total, each labelled as what it is.

Only text from figures (``orchestration.RunSummary``, ``storage.StudySpend``): no Dagster is
imported, so the up-to-date fast path prints the same study lines as a run.

"Paid" calls are the hosted models' (each one provider request, the count a provider's usage
page shows); an offline model's calls (rule-based judges, readers and writers run here) are
no request to anyone and are counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clcg_pipeline.orchestration import RunSummary
    from clcg_pipeline.storage import LostCalls

KINDS = (("responses", "responses"), ("tasks", "granularity tasks"), ("judges", "judges and writers"))


def closing_line(summary: RunSummary, offline: Iterable[str]) -> str:
    """What this command ran and what its runs paid: the hosted models' calls and their cost,
    the offline models' calls apart."""
    offline = set(offline)
    totals = {"responses": summary.response_calls, "tasks": summary.task_calls, "judges": summary.judge_calls}
    paid = {kind: totals[kind] - summary.offline_calls(offline, kind) for kind, _ in KINDS}
    kinds = ", ".join(f"{paid[kind]} {label}" for kind, label in KINDS)
    line = f"{summary.runs} Dagster runs, {summary.skipped} partitions already up to date; "
    local = summary.offline_calls(offline)
    if not sum(paid.values()) and not summary.new_cost_usd and local:
        # An offline study (the demo): nothing paid is one phrase, not three zeros and "paid".
        return line + f"no paid model call; {_calls(local, 'offline model')} (run here: no provider request)"
    line += (
        f"{_calls(sum(paid.values()), 'new paid model')} ({kinds}) costing ${summary.new_cost_usd:.4f} "
        "(paid by this run)"
    )
    if local:
        line += f"; {_calls(local, 'offline model')} besides (run here: no provider request)"
    return line


def _calls(count: int, kind: str) -> str:
    """ "1 offline model call", "2 offline model calls"."""
    return f"{count} {kind} call{'s' if count != 1 else ''}"


def unsaid_line(by_model: Mapping[str, tuple[int, float]], runs: int, offline: Iterable[str]) -> str | None:
    """What earlier runs paid that no closing line said (killed, or started by the daemon or
    the UI), apart from this run's figure; None when they paid no provider."""
    offline = set(offline)
    calls = sum(n for model, (n, _) in by_model.items() if model not in offline)
    usd = sum(usd for _, usd in by_model.values())
    if not calls and not usd:
        return None
    return (
        f"paid by earlier runs that printed no closing line (killed, or not started by clcg run; "
        f"{runs} run{'s' if runs != 1 else ''}): ${usd:.4f} in {_calls(calls, 'paid model')} "
        "(in the study total, not in this run's figure; said once)"
    )


def lost_line(lost: LostCalls) -> str:
    """The calls one killed run had in flight: sent, never answered to it, so the provider may
    have billed them; their cost is an estimate (the rerun's answers, the worst case the run's
    budget reserved) or unknown."""
    run = f"run {lost.run}" if lost.run else "a run"
    were, them = ("was", "it") if lost.calls == 1 else ("were", "them")
    priced = ((lost.from_answer, "the rerun's answers"), (lost.worst_case, "the worst case reserved"))
    sources = [phrase for count, phrase in priced if count]
    cost = [f"estimated ${lost.usd:.4f} from {' and '.join(sources)}"] if sources else []
    if lost.unknown:
        cost.append(f"{lost.unknown} at unknown cost" if sources else "cost unknown, $0 counted")
    return (
        f"{lost.calls} call{'s' if lost.calls != 1 else ''} {were} in flight when {run} was killed: "
        f"the provider may have billed {them} ({'; '.join(cost)}; in the study total, not in this "
        "run's figure; said once)"
    )


def study_total_line(paid_usd: float) -> str:
    """The study's spend in all, labelled as such (this command's is the closing line's)."""
    return f"study total: ${paid_usd:.4f} paid for model calls in this data folder, by every run and host"


def study_lines(
    paid_usd: float | None,
    unsaid_by_model: Mapping[str, tuple[int, float]],
    unsaid_runs: int,
    offline: Iterable[str],
    lost: Iterable[LostCalls] = (),
) -> list[str]:
    """The lines after the closing line: earlier runs' unsaid spend (if any), the calls in
    flight when a run was killed not said before (one line per killed run), the study total."""
    lines = []
    if line := unsaid_line(unsaid_by_model, unsaid_runs, offline):
        lines.append(line)
    lines += [lost_line(calls) for calls in lost]
    if paid_usd is not None:
        lines.append(study_total_line(paid_usd))
    return lines
