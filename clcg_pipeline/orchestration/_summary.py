"""What ``clcg run`` reports at the end: runs, skips, new calls and their cost, budget stops,
and what each annotation file of the inbox did.

The new calls are what the spend view (``storage.run_spend``, over ``sql/views/call_spend.sql``)
says the Dagster runs of this command paid for (``paid_run``): not what was stored before,
nor what another host's runs paid meanwhile. They are kept by model too, so the closing line
counts the hosted models' calls (one provider request each) apart from the offline models'
(local work no provider bills). The study's total is said apart, labelled as such, and so is,
once, what earlier runs paid that no closing line said (a run killed with kill -9, the
daemon's), and the calls a killed run had in flight (``lost_at_kill``: the provider may have
billed them): ``storage.study_spend``. The annotation files are counted from
``annotation_imports`` (``imported_at``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import died_mid_call, study_charged
from clcg_pipeline.storage import LostCalls, RunSpend, partition_dir, read_frame, run_spend, study_spend
from clcg_pipeline.validation.human import REFUSED_STATUSES, import_lines

# Call outcomes that mean a responses partition is unfinished: the next run resumes it.
UNFINISHED_OUTCOMES = ("skipped_budget", "batch_pending")
# The calls-shaped tables a responses partition writes, and what their calls count as in the summary.
PARTITION_CALL_TABLES = {"calls": "responses", "task_calls": "tasks", "task_judge_calls": "judges"}
# Those the analysis job writes (unpartitioned): the error-taxonomy judges and the keypoint writer.
ANALYSIS_CALL_TABLES = {"judge_calls": "judges", "keypoint_calls": "judges"}
# Those the study inputs job writes (unpartitioned): the item generator, the level auditor and the
# task bank's writers, counted with the judges and writers.
INPUT_CALL_TABLES = {"item_calls": "judges", "level_audit_calls": "judges", "task_writer_calls": "judges"}


@dataclass
class Streams:
    """What this command's ``model_calls`` runs sent ahead of the responses runs (from their
    materializations; the partitions' ``calls`` tables stay the record of spend)."""

    runs: dict[str, str] = field(default_factory=dict)  # model -> its stream's run id
    partitions: int = 0
    sent: int = 0  # new calls answered (not from the cache)
    failed: int = 0  # errors and budget stops: the partitions' runs try them again
    seconds: float = 0.0  # from the first stream's start to the last one's end
    # Models whose stream failed (a provider refusing the key): their runs call, and say why.
    refused: dict[str, str] = field(default_factory=dict)


@dataclass
class RunSummary:
    runs: int = 0
    skipped: int = 0
    new_cost_usd: float = 0.0
    new_calls: int = 0  # every new (uncached) model call: the three below together
    budget_exhausted: bool = False
    response_calls: int = 0  # the evaluated models' answers (``calls``)
    task_calls: int = 0  # the granularity tasks' answers (``task_calls``)
    # judges and writers (task, error-taxonomy, keypoint and level judges, task bank writers, item generator)
    judge_calls: int = 0
    calls_ahead: Streams | None = None  # what the models' streams sent (``_model_calls``)
    #: One line per annotation file this command imported (or found refused, or gone stale):
    #: ``<file> (<format>): <status>: n imported, n skipped, n revised, n refused[: why]``.
    annotation_files: list[str] = field(default_factory=list)
    #: How many of ``annotation_files`` imported nothing because something is wrong.
    annotation_files_refused: int = 0
    #: Selected languages no source has a file for: left out, with no partition. ``clcg run``
    #: names them once, under the results table, among the languages with no data.
    uncovered_languages: list[str] = field(default_factory=list)
    #: The Dagster runs this command started: the calls they paid for are its own.
    run_ids: set[str] = field(default_factory=set)
    #: The limits in force: ``--budget`` (this command) and study.yaml's ``budget_usd``.
    run_budget_usd: float | None = None
    study_budget_usd: float | None = None
    #: Calls a budget left unmade in this command's runs, by budget ("run", "study").
    budget_left: dict[str, int] = field(default_factory=dict)
    #: What every calls table records as paid, whoever paid it (the study's total).
    study_paid_usd: float | None = None
    #: What the study budget's ledger charged for reservations of processes that died mid-call
    #: (their requests may still be billed): the budget counts it like spend, so its line says it.
    study_charged_usd: float = 0.0
    #: The new calls by (kind, model): the closing line says the offline models' apart.
    model_calls: dict[tuple[str, str], int] = field(default_factory=dict)
    #: What earlier runs paid that no closing line said (killed, or not started by ``clcg
    #: run``), by model: (paid calls, USD); said once, apart from this command's figure.
    unsaid_by_model: dict[str, tuple[int, float]] = field(default_factory=dict)
    unsaid_runs: int = 0  # how many such runs
    #: The calls in flight when a run was killed that no closing line said, by the killed run
    #: (the provider may have billed them; estimated): said once, in no run's own figure.
    lost_at_kill: tuple[LostCalls, ...] = ()
    #: The partitions (and unpartitioned assets) current by the folder's records that this
    #: command told the Dagster instance of, as it had never materialized them (a copied folder,
    #: a new ``DAGSTER_HOME``: ``orchestration._records_sync``); said once, nothing when 0.
    reported_current: int = 0

    def count(self, kind: str, calls: int, cost_usd: float, model: str | None = None) -> None:
        self.new_calls += calls
        self.new_cost_usd += cost_usd
        field = {"responses": "response_calls", "tasks": "task_calls", "judges": "judge_calls"}[kind]
        setattr(self, field, getattr(self, field) + calls)
        if model is not None:
            self.model_calls[(kind, model)] = self.model_calls.get((kind, model), 0) + calls

    def offline_calls(self, offline: Iterable[str], kind: str | None = None) -> int:
        """The new calls of the ``offline`` models (of one ``kind``, if given): no provider's."""
        models = set(offline)
        return sum(n for (k, model), n in self.model_calls.items() if model in models and kind in (None, k))

    def budget_line(self) -> str | None:
        """The one line saying a budget stopped calls: which, what was spent, what is left, how
        to resume; None when no budget stopped anything."""
        if not self.budget_exhausted:
            return None
        left = self.budget_left
        calls = f"{sum(left.values())} calls left unmade" if left else "calls left unmade"
        if left.get("study") and not left.get("run"):
            limit = f" ${self.study_budget_usd:.4f}" if self.study_budget_usd is not None else ""
            spent = f"${self.study_paid_usd:.4f}" if self.study_paid_usd is not None else "its limit"
            return (
                f"budget reached: the study budget (study.yaml budget_usd{limit}) stopped calls: "
                f"{spent} spent by the study in all{died_mid_call(self.study_charged_usd)}, {calls} "
                "(and any partition past them); "
                "raise budget_usd in study.yaml and run `clcg run` again to resume (paid calls are kept)"
            )
        limit = f" ${self.run_budget_usd:.4f}" if self.run_budget_usd is not None else ""
        return (
            f"budget reached: the run budget (--budget{limit}) stopped calls: "
            f"${self.new_cost_usd:.4f} spent by this run, {calls} (and any partition past them); "
            "run `clcg run` again (with a larger --budget, or none) to resume (paid calls are kept)"
        )


def count_new_calls(
    summary: RunSummary,
    data_dir: str,
    tables: dict[str, str],
    partition: dict[str, str] | None,
) -> tuple[float, bool]:
    """Count what this command's runs paid in the given calls tables; (that spend, a budget stopped any).

    A call counts when the spend view says it was paid and its ``paid_run`` is one of
    ``summary.run_ids``: a call an earlier run paid for keeps its record in the table
    (``storage/_paid.py``), and one another host's run paid for is that run's."""
    found: RunSpend = run_spend(data_dir, tables=tuple(tables), partition=partition, runs=summary.run_ids)
    for (table, model), (calls, cost) in sorted(found.by_model.items()):
        if table in tables:
            summary.count(tables[table], calls, cost, model)
    for budget, calls in found.skipped_budget.items():
        summary.budget_left[budget] = summary.budget_left.get(budget, 0) + calls
    spent, stopped = found.paid_usd, bool(found.skipped_budget)
    # Said here, not by the caller: the workers' path does not pass it on.
    summary.budget_exhausted = summary.budget_exhausted or stopped
    return spent, stopped


def study_total(summary: RunSummary, data_dir: str) -> None:
    """Set the study's total spend on ``summary`` (every calls table, whoever paid), and what
    earlier runs paid that no closing line said (from now on said: ``storage.study_spend``)."""
    study = study_spend(data_dir, summary.run_ids)
    summary.study_paid_usd = study.paid_usd
    summary.unsaid_by_model = dict(study.unsaid_by_model)
    summary.unsaid_runs = len(study.unsaid_runs)
    summary.lost_at_kill = study.lost
    if summary.study_budget_usd is not None:
        # Only a study budget reserves in the ledger (and a run without one opens none).
        summary.study_charged_usd = study_charged(str(UPath(data_dir) / "cache" / "calls"))


def record_imports(summary: RunSummary, data_dir: str, since: pd.Timestamp) -> None:
    """Add the annotation files of this command to ``summary``: the ``annotation_imports`` rows
    logged at or after ``since``, and every stale one (accepted once, no longer importing: a
    standing problem, said on every run)."""
    path = partition_dir(data_dir, "annotation_imports", None) / "data.parquet"
    log = read_frame(path) if path.exists() else None
    if log is None or not len(log):
        return
    logged = pd.to_datetime(log["imported_at"], utc=True, errors="coerce")
    now = log[(logged >= since) | (log["status"] == "stale")]
    summary.annotation_files = import_lines(now)
    summary.annotation_files_refused = int(now["status"].isin(REFUSED_STATUSES).sum())


def count_job_calls(
    summary: RunSummary, data_dir: str, result: dg.ExecuteInProcessResult | None, tables: dict[str, str]
) -> tuple[float, bool]:
    """``count_new_calls`` in the unpartitioned calls ``tables`` an in-process run of a job
    wrote; (0, False) when it did not run."""
    if result is None:
        return 0.0, False
    written = {
        event.step_materialization_data.materialization.asset_key.to_user_string()
        for event in result.get_asset_materialization_events()
    }
    return count_new_calls(summary, data_dir, {t: k for t, k in tables.items() if t in written}, None)
