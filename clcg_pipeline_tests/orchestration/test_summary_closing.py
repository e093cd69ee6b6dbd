"""A command's summary keeps its new calls by model (so the offline models' calls are said
apart from the provider's paid ones), and takes from the study's spend what earlier runs
paid that no closing line said."""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline.orchestration._summary import RunSummary, count_new_calls, study_total
from clcg_pipeline.storage import start_ledger
from clcg_pipeline_tests.storage.test_spend_view import PARTITION, _rows, _write

OFFLINE = ("offline-judge-a", "lexical-reader")


def test_the_summary_keeps_new_calls_by_model_and_the_offline_ones_apart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write(data, "calls", PARTITION, _rows("a", 3, run="run-here"))
    _write(
        data, "task_judge_calls", PARTITION, _rows("j", 5, model="offline-judge-a", run="run-here", cost=0.0)
    )
    summary = RunSummary()
    summary.run_ids.add("run-here")
    tables = {"calls": "responses", "task_calls": "tasks", "task_judge_calls": "judges"}
    spent, stopped = count_new_calls(summary, str(data), tables, PARTITION)
    # Every new call is still counted (the budget's and the tables' figures are unchanged) ...
    assert (summary.new_calls, summary.response_calls, summary.judge_calls) == (8, 3, 5)
    assert spent == pytest.approx(0.03) and not stopped
    # ... and by model, so the closing line can tell the provider's calls from the offline ones.
    assert summary.model_calls == {("responses", "m"): 3, ("judges", "offline-judge-a"): 5}
    assert summary.offline_calls(OFFLINE) == 5 and summary.offline_calls(OFFLINE, "responses") == 0


def test_study_total_says_what_a_killed_run_paid_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    start_ledger(str(data))
    _write(data, "calls", PARTITION, _rows("k", 2, run="run-killed", cost=0.04))
    _write(data, "calls", {"language": "pt", "model": "m"}, _rows("a", 3, run="run-here"))
    summary = RunSummary()
    summary.run_ids.add("run-here")
    study_total(summary, str(data))
    assert summary.study_paid_usd == pytest.approx(0.11)
    assert summary.unsaid_by_model == {"m": (2, pytest.approx(0.08))} and summary.unsaid_runs == 1
    later = RunSummary()
    later.run_ids.add("run-later")
    study_total(later, str(data))
    assert later.unsaid_by_model == {} and later.unsaid_runs == 0  # said once
    assert later.study_paid_usd == pytest.approx(0.11)
