"""A run's summary counts what its own runs paid, and a budget stop is said in one line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.orchestration._summary import RunSummary, count_new_calls
from clcg_pipeline.storage import spend
from clcg_pipeline_tests.storage.test_spend_view import PARTITION, _rows, _study, _write


def test_a_run_summary_counts_only_the_calls_its_own_runs_paid(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # Another host's run paid for two calls of the same partition after this command started.
    mine = _rows("a", 3, run="run-here")
    theirs = _rows("b", 2, run="run-other-host", cost=0.05)
    _write(data, "calls", PARTITION, pd.concat([mine, theirs]))
    summary = RunSummary()
    summary.run_ids = {"run-here"}  # the runs this command started
    spent, stopped = count_new_calls(summary, str(data), {"calls": "responses"}, PARTITION)
    assert (summary.new_calls, summary.response_calls) == (3, 3)
    assert spent == pytest.approx(0.03) and summary.new_cost_usd == pytest.approx(0.03)
    assert not stopped and not summary.budget_exhausted


def test_a_budget_stop_is_said_once_with_the_budget_the_spend_and_the_calls_left(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _study(data)
    summary = RunSummary(study_budget_usd=0.5)
    summary.run_ids.add("run-a")
    _, stopped = count_new_calls(summary, str(data), {"calls": "responses"}, PARTITION)
    assert stopped and summary.budget_exhausted  # the caller need not pass it on
    summary.study_paid_usd = spend(data).paid_usd
    line = summary.budget_line()
    assert line is not None and "study budget (study.yaml budget_usd $0.5000)" in line
    assert f"${summary.study_paid_usd:.4f} spent by the study" in line and "2 calls left unmade" in line
    assert "raise budget_usd in study.yaml and run `clcg run` again" in line

    run_stop = RunSummary(run_budget_usd=0.02)
    run_stop.run_ids.add("run-b")
    _write(
        data,
        "calls",
        {"language": "pt", "model": "m"},
        pd.concat(
            [
                _rows("p", 2, run="run-b"),
                _rows("q", 3, run="run-b", cost=0.0, outcome="skipped_budget", error="BudgetExceeded"),
            ]
        ),
    )
    count_new_calls(run_stop, str(data), {"calls": "responses"}, {"language": "pt", "model": "m"})
    line = run_stop.budget_line()
    assert line is not None and "run budget (--budget $0.0200)" in line
    assert "$0.0200 spent by this run, 3 calls left unmade" in line and "larger --budget" in line
    assert RunSummary().budget_line() is None
