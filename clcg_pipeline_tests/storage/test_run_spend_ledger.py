"""What a killed run paid is said once, by the next closing line, apart from that line's own
figure; a folder from before the ledger reports nothing old; a command's spend is kept by model."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.storage import partition_dir, run_spend, start_ledger, study_spend, write_frame, write_json
from clcg_pipeline.storage._paid import this_host
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


def _started(instance: dg.DagsterInstance, run_id: str, pid: int, at: float | None = None) -> None:
    """A Dagster run STARTED by process ``pid`` (as ``execute_in_process`` records it), never ended."""
    instance.add_run(dg.DagsterRun(job_name="model_calls_job", run_id=run_id))
    start = dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, "model_calls_job", pid=pid)
    instance.report_dagster_event(start, run_id, timestamp=at)


def _status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus:
    record = instance.get_run_record_by_id(run_id)
    assert record is not None
    return record.dagster_run.status


def test_another_hosts_run_still_going_is_its_own_closing_lines_not_an_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hosts, one instance: host a's closing line must not say host b's live run as an
    earlier unreported one, or b's own closing line says the same payments a second time."""
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the instance study_spend asks by default
    start_ledger(data)
    _write(data, "calls", PARTITION, _rows("b", 3, run="run-b", paid_host="host-b"))
    _write(data, "calls", {"language": "pt", "model": "m"}, _rows("a", 2, run="run-a", paid_host=this_host()))
    with dg.DagsterInstance.get() as instance:
        _started(instance, "run-b", pid=1)  # on host b: this host cannot see its process
        assert study_spend(data, {"run-a"}).unsaid_runs == ()
        assert _status(instance, "run-b") == dg.DagsterRunStatus.STARTED  # not marked from here
        # Host b's closing line says its run as its own; nothing is left for anyone to say.
        assert study_spend(data, {"run-b"}).unsaid_runs == ()
        assert study_spend(data, {"run-later"}).unsaid_runs == ()
        # A run of b that ended (failed, say) with no closing line is said once, by the next one.
        _write(
            data, "calls", {"language": "ka", "model": "m"}, _rows("f", 1, run="run-f", paid_host="host-b")
        )
        _started(instance, "run-f", pid=1)
        assert study_spend(data, {"run-a2"}).unsaid_runs == ()
        instance.report_run_failed(instance.get_run_by_id("run-f"))  # type: ignore[arg-type]
        assert study_spend(data, {"run-a3"}).unsaid_runs == ("run-f",)
        assert study_spend(data, {"run-a4"}).unsaid_runs == ()


def test_this_hosts_run_killed_with_kill_9_is_said_by_its_rerun_and_marked_failed(tmp_path: Path) -> None:
    """kill -9 leaves its run STARTED: this host sees the process is gone, says the run's
    payments once and marks it failed; a run of this host whose process runs is left alone."""
    data = tmp_path / "data"
    start_ledger(data)
    here = this_host()
    gone = subprocess.Popen(["true"])  # a process that has ended (and been reaped)
    gone.wait()
    _write(data, "calls", PARTITION, _rows("k", 3, run="run-killed", paid_host=here))
    _write(data, "calls", {"language": "pt", "model": "m"}, _rows("l", 2, run="run-live", paid_host=here))
    _write(data, "calls", {"language": "ka", "model": "m"}, _rows("r", 1, run="run-reused", paid_host=here))
    with dg.DagsterInstance.ephemeral() as instance:
        _started(instance, "run-killed", pid=gone.pid)
        _started(instance, "run-live", pid=os.getpid())  # this process: still going
        # A process id given again: this process started long after that run did.
        _started(instance, "run-reused", pid=os.getpid(), at=time.time() - 30 * 86400)
        study = study_spend(data, {"run-rerun"}, instance)
        assert study.unsaid_runs == ("run-killed", "run-reused")
        assert study.unsaid_by_model == {"m": (4, pytest.approx(0.04))}
        assert _status(instance, "run-killed") == dg.DagsterRunStatus.FAILURE
        assert _status(instance, "run-live") == dg.DagsterRunStatus.STARTED
        assert study_spend(data, {"run-rerun2"}, instance).unsaid_runs == ()  # said once


def test_a_run_that_ended_while_its_clcg_run_goes_on_is_that_commands_to_say(tmp_path: Path) -> None:
    """Host b's command is under way: its runs that ended are its closing line's, not earlier
    runs for host a's line; this host's command that was killed leaves a mark removed here."""
    data = tmp_path / "data"
    start_ledger(data)  # this command's own mark: not another's
    marks = data / "cache" / "closing_lines" / "under_way"
    write_json(marks / "b.json", {"host": "host-b", "pid": 1, "started_at": time.time() - 60})
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_json(marks / "k.json", {"host": this_host(), "pid": gone.pid, "started_at": time.time() - 60})
    _write(data, "calls", PARTITION, _rows("b", 3, run="run-b", paid_host="host-b"))
    _write(data, "calls", {"language": "pt", "model": "m"}, _rows("k", 2, run="run-k", paid_host=this_host()))
    with dg.DagsterInstance.ephemeral() as instance:
        for run_id in ("run-b", "run-k"):
            instance.add_run(dg.DagsterRun(job_name="responses_job", run_id=run_id))
            instance.report_run_failed(instance.get_run_by_id(run_id))  # type: ignore[arg-type]
        assert study_spend(data, {"run-a"}, instance).unsaid_runs == ("run-k",)
        assert not (marks / "k.json").exists() and (marks / "b.json").exists()
        # Host b's closing line says its run as its own (and its mark goes): nothing left unsaid.
        (marks / "b.json").unlink()
        assert study_spend(data, {"run-b"}, instance).unsaid_runs == ()
        assert study_spend(data, {"run-later"}, instance).unsaid_runs == ()
    assert sorted(p.name for p in marks.iterdir()) == []  # this command's mark went with its line
