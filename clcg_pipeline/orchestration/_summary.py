"""What ``clcg run`` reports at the end: runs, skips, new calls and their cost, budget stops,
and what each annotation file of the inbox did.

The new calls are counted from the calls-shaped tables the runs wrote (their ``cached``,
``outcome`` and ``paid_at`` columns), so a summary says what this command paid for, not what
was stored before; the annotation files likewise from ``annotation_imports`` (``imported_at``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pandas as pd

from clcg_pipeline.orchestration._calls_ahead import CallsAhead
from clcg_pipeline.storage import partition_dir, read_frame
from clcg_pipeline.validation.human import REFUSED_STATUSES, import_lines

# Call outcomes that mean a responses partition is unfinished: the next run resumes it.
UNFINISHED_OUTCOMES = ("skipped_budget", "batch_pending")
# The calls-shaped tables a responses partition writes, and what their calls count as in the summary.
PARTITION_CALL_TABLES = {"calls": "responses", "task_calls": "tasks", "task_judge_calls": "judges"}
# Those the analysis job writes (unpartitioned): the error-taxonomy judges and the keypoint writer.
ANALYSIS_CALL_TABLES = {"judge_calls": "judges", "keypoint_calls": "judges"}


@dataclass
class RunSummary:
    runs: int = 0
    skipped: int = 0
    new_cost_usd: float = 0.0
    new_calls: int = 0  # every new (uncached) model call: the three below together
    budget_exhausted: bool = False
    response_calls: int = 0  # the evaluated models' answers (``calls``)
    task_calls: int = 0  # the granularity tasks' answers (``task_calls``)
    judge_calls: int = 0  # judges and writers (task, error-taxonomy and keypoint judges, confusion writer)
    calls_ahead: CallsAhead | None = (
        None  # what was sent ahead of the partitions' runs (clcg_pipeline/orchestration/_calls_ahead.py)
    )
    #: One line per annotation file this command imported (or found refused, or gone stale):
    #: ``<file> (<format>): <status>: n imported, n skipped, n revised, n refused[: why]``.
    annotation_files: list[str] = field(default_factory=list)
    #: How many of ``annotation_files`` imported nothing because something is wrong.
    annotation_files_refused: int = 0
    #: Selected languages no source has a file for: left out, with no partition. ``clcg run``
    #: names them once, under the results table, among the languages with no data.
    uncovered_languages: list[str] = field(default_factory=list)

    def count(self, kind: str, calls: int, cost_usd: float) -> None:
        self.new_calls += calls
        self.new_cost_usd += cost_usd
        field = {"responses": "response_calls", "tasks": "task_calls", "judges": "judge_calls"}[kind]
        setattr(self, field, getattr(self, field) + calls)


def count_new_calls(
    summary: RunSummary,
    data_dir: str,
    tables: dict[str, str],
    partition: dict[str, str] | None,
    since: pd.Timestamp,
) -> tuple[float, bool]:
    """Count the new calls of the given calls-shaped tables; (their new spend, budget stopped any).

    New: paid at or after ``since`` (this command's start); a call an earlier run paid for
    keeps its record in the table (``storage/_paid.py``) and is not counted again."""
    spent, stopped = 0.0, False
    for table, kind in tables.items():
        calls_file = partition_dir(data_dir, table, partition) / "data.parquet"
        calls = read_frame(calls_file) if calls_file.exists() else None
        if calls is None or not len(calls):
            continue
        # Calls the budget skipped, or still waiting in a batch, were not made (not yet paid).
        new = calls[~calls["cached"].astype(bool) & ~calls["outcome"].isin(UNFINISHED_OUTCOMES)]
        if "paid_at" in new.columns:
            new = new[pd.to_datetime(new["paid_at"], utc=True) >= since]
        cost = float(new["cost_usd"].sum()) if len(new) else 0.0
        summary.count(kind, len(new), cost)
        spent += cost
        stopped = stopped or bool((calls["outcome"] == "skipped_budget").any())
    return spent, stopped


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


def materialized(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    """Asset name -> metadata of each materialization the run recorded."""
    found: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        found[materialization.asset_key.to_user_string()] = {
            k: v.value for k, v in materialization.metadata.items()
        }
    return found
