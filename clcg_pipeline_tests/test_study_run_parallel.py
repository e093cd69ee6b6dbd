"""``clcg run`` runs responses partitions side by side in worker processes, against the fake server."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.orchestration import run_study
from clcg_pipeline.partitions import run_span
from clcg_pipeline_tests.conftest import add_fake_model, assert_interrupted_in_one_line, record_chat_spans

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_PARALLEL_FAKE_KEY"
KEY = "fake-clcg-parallel-not-real"
LANGUAGES = ["en", "pt", "ka"]
LIMIT = 2


def _responses_runs(home: Path, job: str = "responses_job") -> list[dg.DagsterRun]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return [run for run in instance.get_runs() if run.job_name == job]


def _first_start(home: Path, runs: list[dg.DagsterRun]) -> float:
    """When the first of ``runs`` started (seconds since the epoch)."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return min(instance.get_run_stats(run.run_id).start_time or 0.0 for run in runs)


def test_partitions_overlap_without_paying_twice_or_passing_the_limit(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(KEY_ENV, KEY)
    data = tmp_path / "data"
    spans = record_chat_spans(monkeypatch, time.time)  # the clock of Dagster's run start times
    # Calls long enough that each run, alone, calls for 6 s or more (ka ~120 calls with its
    # granularity tasks, en..pt ~260; 2 at a time), so the two runs started by the two workers
    # (en..pt, ka) overlap however the machine staggers them. (0.15 s made the test wait ~10 s.)
    with FakeServer(Faults(latency_s=0.1)) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=LIMIT, timeout_s=5.0)
        summary = run_study(
            config_dir=str(demo_config_dir),
            data_dir=str(data),
            models=["fake-gpt"],
            languages=LANGUAGES,
            parallel=2,
            # The calls inside the partitions' runs (test_study_calls.py covers sending them ahead;
            # this test is also its case without calls ahead).
            calls_ahead=False,
        )
        requests = dict(server.state.requests)
        max_in_flight = server.state.max_in_flight

    assert summary.calls_ahead is None
    # No call sent twice (claims hold across the workers), and every new call was sent.
    assert requests and set(requests.values()) == {1}
    # (The judges and writers are offline models: their calls never reach the server.)
    assert summary.response_calls + summary.task_calls == len(requests)
    # The model's limit binds the workers together.
    assert max_in_flight <= LIMIT
    # Calls of two languages were in flight at the same time: the partitions overlapped.
    # A partition's run answers the items, then its granularity tasks: count the tasks' calls too
    # (staggered by the responses step, one partition's items overlap another's tasks).
    calls = pd.concat(
        pd.read_parquet(p)[["call_id", "language"]]
        for table in ("calls", "task_calls")
        for p in (data / table).rglob("*.parquet")
        if "fake-gpt" in str(p)
    )
    # Closed-book calls are the same in every language; the others tell the partitions apart.
    own = calls.groupby("call_id")["language"].transform("nunique") == 1
    language = dict(zip(calls.loc[own, "call_id"], calls.loc[own, "language"], strict=True))
    by_language: dict[str, list[tuple[float, float]]] = {}
    for call_id, start, end in spans:
        if call_id in language:
            by_language.setdefault(language[call_id], []).append((start, end))
    assert set(by_language) == set(LANGUAGES)
    overlapping = {
        (a, b)
        for a in by_language
        for b in by_language
        if a < b and any(s1 < e2 and s2 < e1 for s1, e1 in by_language[a] for s2, e2 in by_language[b])
    }
    assert overlapping, "the responses partitions ran one after another"
    runs = _responses_runs(tmp_path / "home")
    assert runs
    # Without calls ahead, the runs made their own calls: no stream ran (model_calls_job),
    # and calls were still answered after the first run had started.
    assert not _responses_runs(tmp_path / "home", "model_calls_job")
    assert max(end for _, _, end in spans) > _first_start(tmp_path / "home", runs)
    # One run per stretch of adjacent languages (en and pt adjacent in languages.yaml, ka apart).
    spans = sorted(str(run_span(run.tags)) for run in runs)
    assert spans == ["en|fake-gpt..pt|fake-gpt", "ka|fake-gpt"]
    assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs)
    assert all(run.tags.get("clcg/provider") and run.tags.get("clcg/fingerprint") for run in runs)


def test_ctrl_c_stops_the_workers_with_one_line(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    env = {**os.environ, "DAGSTER_HOME": str(home), KEY_ENV: KEY}
    # Slow calls, few at a time: the responses partitions are still calling when Ctrl-C comes.
    with FakeServer(Faults(latency_s=0.5)) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=LIMIT, timeout_s=5.0)
        edit_yaml(
            demo_config_dir / "models.yaml",
            lambda doc: [m.update(concurrency=1) for m in doc["models"] if m["id"] == "fake-gpt"],
        )
        command = [sys.executable, "-m", "clcg_pipeline.cli", "run", "--config", str(demo_config_dir)]
        # Stopped inside the workers' runs (test_study_calls.py stops it before them).
        command += ["--no-calls-ahead"]
        process = subprocess.Popen(
            [*command, "--data", str(data), "--models", "fake-gpt", "--languages", ",".join(LANGUAGES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        deadline = time.monotonic() + 240
        while sum(server.state.requests.values()) < 2:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    assert_interrupted_in_one_line(process.returncode, out, err)
    # The workers' runs were stopped and recorded as such, none left looking alive.
    runs = _responses_runs(home)
    assert runs and all(run.status == dg.DagsterRunStatus.FAILURE for run in runs), [r.status for r in runs]
