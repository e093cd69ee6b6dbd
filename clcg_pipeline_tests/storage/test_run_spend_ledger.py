"""What a killed run paid is said once, by the next closing line, apart from that line's own
figure; a folder from before the ledger reports nothing old; a command's spend is kept by model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.storage import partition_dir, run_spend, start_ledger, study_spend, write_frame
from clcg_pipeline_tests.storage.test_spend_view import PARTITION, _rows, _write


def _cache_entry(data: Path, call_id: str, run: str, cost: float, model: str = "m") -> None:
    """A payment only the call cache holds: its run was killed before any table recorded it."""
    entry = {
        "call_id": call_id,
        "model_id": model,
        "cost_usd": cost,
        "paid_run": run,
        "paid_host": "host-k",
        "created": 1_800_000_000.0,
        "outcome": "ok",
    }
    path = data / "cache" / "calls" / call_id[:2] / f"{call_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry), encoding="utf-8")


def test_a_killed_runs_spend_is_said_once_by_the_next_command_not_as_its_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    start_ledger(data)  # `clcg run` starts it before its first run pays
    _write(data, "calls", PARTITION, _rows("a", 3, run="run-first"))  # then killed: no closing line
    _cache_entry(data, "k1", "run-first", 0.05)  # paid, in no table yet
    _write(data, "judge_calls", None, _rows("j", 2, model="offline-judge-a", run="run-first", cost=0.0))
    _write(data, "calls", {"language": "pt", "model": "m"}, _rows("b", 2, run="run-next"))

    study = study_spend(data, {"run-next"})
    assert study.unsaid_runs == ("run-first",)
    assert study.unsaid_by_model == {"m": (4, pytest.approx(0.08)), "offline-judge-a": (2, 0.0)}
    assert study.paid_usd == pytest.approx(0.10)  # the study total holds both runs
    # Said once: the command after that says nothing of either run.
    again = study_spend(data, {"run-later"})
    assert again.unsaid_runs == () and again.unsaid_by_model == {}
    assert again.paid_usd == pytest.approx(0.10)


def test_a_folder_from_before_the_ledger_reports_nothing_old(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write(data, "calls", PARTITION, _rows("a", 3, run="run-old"))
    # A rerun with nothing to do writes nothing (the no-op rerun rewrites no file).
    assert study_spend(data, ()).unsaid_runs == ()
    assert not (data / "cache").exists()
    # A run starts the ledger with what was paid before it, said by no line.
    start_ledger(data)
    assert study_spend(data, {"run-new"}).unsaid_runs == ()
    _cache_entry(data, "k1", "run-killed", 0.02)
    assert study_spend(data, {"run-newer"}).unsaid_runs == ("run-killed",)


def test_run_spend_is_kept_by_table_and_model_for_the_given_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write(
        data,
        "calls",
        PARTITION,
        pd.concat(
            [
                _rows("a", 3, run="run-here"),
                _rows("o", 2, run="run-other", cost=0.05),
                _rows("s", 1, run="run-here", cost=0.0, outcome="skipped_budget", error="BudgetExceeded"),
            ]
        ),
    )
    _write(
        data, "task_judge_calls", PARTITION, _rows("j", 4, model="offline-judge-a", run="run-here", cost=0.0)
    )
    found = run_spend(data, tables=("calls", "task_judge_calls"), partition=PARTITION, runs={"run-here"})
    assert found.by_model == {
        ("calls", "m"): (3, pytest.approx(0.03)),
        ("task_judge_calls", "offline-judge-a"): (4, 0.0),
    }
    assert found.skipped_budget == {"run": 1} and found.paid_usd == pytest.approx(0.03)


def test_the_ledger_works_on_an_object_store(bucket: str) -> None:
    data = f"s3://{bucket}/clcg"
    start_ledger(data)
    write_frame(partition_dir(data, "calls", PARTITION) / "data.parquet", _rows("k", 2, run="run-killed"))
    assert study_spend(data, {"run-next"}).unsaid_runs == ("run-killed",)
    assert study_spend(data, {"run-later"}).unsaid_runs == ()  # said once
