"""``clcg run`` sends a hosted model's calls ahead of its partitions' runs, in one stream per model:
the model's ``model_calls`` run, the one the daemon and a backfill launch."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.calls import fake_server
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.config import load_config
from clcg_pipeline.orchestration._model_calls import _Inputs
from clcg_pipeline.orchestration._study_run import run_study
from clcg_pipeline.partitions import run_span
from clcg_pipeline_tests.conftest import (
    add_fake_model,
    assert_interrupted_in_one_line,
    partition_call_rows,
    record_chat_spans,
)

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_AHEAD_FAKE_KEY"
KEY = "fake-clcg-ahead-not-real"
LANGUAGES = ["en", "pt", "ka"]
LIMIT = 4
HOLD_S = 30.0  # how long the one-stream test holds a partition's first call at most


def _runs(home: Path, job: str = "responses_job") -> list[tuple[dg.DagsterRun, float]]:
    """Each run of ``job`` and when it started."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return [
            (run, instance.get_run_stats(run.run_id).start_time or 0.0)
            for run in instance.get_runs()
            if run.job_name == job
        ]


def _hold_each_partitions_first_call(
    monkeypatch: pytest.MonkeyPatch, config_dir: Path, data: Path
) -> dict[str, str | None]:
    """Hold the first call of each language but the last until a later language's call arrives.

    Which language (the first to build it, in the stream's order) is told by the requests each
    partition builds, built here when the first call arrives (the stream runs in a worker
    process). The answer is the language whose call released the hold (None: it timed out).
    Calls drained at a partition boundary would hold every partition back for the whole
    timeout; one stream releases each hold within a partition's worth of calls. A timing check
    would race the machine's load: it once missed by 7 ms on a 2-core CI machine.
    """
    built: dict[str, str] = {}

    def language_of(call_id: str) -> str:
        if not built:
            inputs = _Inputs(load_config(str(config_dir)), str(data))
            for iso in LANGUAGES:
                for request in inputs.requests("fake-gpt", iso):
                    built.setdefault(request.call_id, iso)
        return built.get(call_id, "")

    released_by: dict[str, str | None] = {}
    arrived: list[str] = []
    original = fake_server.App.openai

    async def held(self: object, request: object) -> object:
        iso = language_of(request.headers.get(fake_server.CALL_ID_HEADER, ""))  # type: ignore[attr-defined]
        arrived.append(iso)
        if iso in LANGUAGES[:-1] and iso not in released_by:
            released_by[iso] = None
            later = LANGUAGES[LANGUAGES.index(iso) + 1 :]
            deadline = time.monotonic() + HOLD_S
            while time.monotonic() < deadline:
                if found := next((a for a in arrived if a in later), None):
                    released_by[iso] = found
                    break
                await asyncio.sleep(0.01)
        return await original(self, request)

    monkeypatch.setattr(fake_server.App, "openai", held)
    return released_by


def test_calls_go_ahead_in_one_stream_and_count_as_the_partitions_own(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(KEY_ENV, KEY)
    data = tmp_path / "data"
    released_by = _hold_each_partitions_first_call(monkeypatch, demo_config_dir, data)
    spans = record_chat_spans(monkeypatch, time.time)
    with FakeServer(Faults(latency_s=0.05)) as server:
        # The client waits out a held call (a timeout would send it again).
        add_fake_model(
            demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=LIMIT, timeout_s=2 * HOLD_S
        )
        summary = run_study(
            config_dir=str(demo_config_dir), data_dir=str(data), models=["fake-gpt"], languages=LANGUAGES
        )
        requests = dict(server.state.requests)
        max_in_flight = server.state.max_in_flight
        tables = partition_call_rows(data)
        runs = _runs(tmp_path / "home")
        streams = _runs(tmp_path / "home", "model_calls_job")
        # Run again, forced: nothing sent, and every call is now an old one.
        again = run_study(
            config_dir=str(demo_config_dir),
            data_dir=str(data),
            models=["fake-gpt"],
            languages=LANGUAGES,
            force=True,
        )
        assert dict(server.state.requests) == requests

    ahead = summary.calls_ahead
    assert ahead is not None and ahead.partitions == len(LANGUAGES) and not ahead.refused
    # The stream is the model's model_calls run, the daemon's: one, and it paid every call.
    assert [(run.run_id, run.tags["dagster/partition"]) for run, _ in streams] == [
        (ahead.runs["fake-gpt"], "fake-gpt")
    ]
    assert streams[0][0].status == dg.DagsterRunStatus.SUCCESS
    # Every call sent once, all of them ahead, within the model's limit.
    assert requests and set(requests.values()) == {1}
    assert ahead.sent == len(requests) and ahead.failed == 0
    assert max_in_flight <= LIMIT
    # The runs sent nothing: each partition's run started once its calls were all answered
    # (while later partitions were still calling: the runs overlap the stream).
    # One run per stretch of adjacent languages (en and pt adjacent in languages.yaml, ka apart).
    assert sorted(str(run_span(run.tags)) for run, _ in runs) == ["en|fake-gpt..pt|fake-gpt", "ka|fake-gpt"]
    assert all(run.status == dg.DagsterRunStatus.SUCCESS for run, _ in runs)
    ended = {call_id: end for call_id, _, end in spans}
    for run, started in runs:
        isos = ["ka"] if run.tags.get("dagster/partition") else ["en", "pt"]
        asked = set(tables.loc[tables["language"].isin(isos), "call_id"])
        assert max(ended[c] for c in asked) <= started, isos
    # One stream: each held call was released by the next partition's calls (no drain at a
    # partition boundary), so the partitions' calls overlap.
    assert released_by == dict(itertools.pairwise(LANGUAGES))
    calls = tables
    own = calls.groupby("call_id")["language"].transform("nunique") == 1
    language = dict(zip(calls.loc[own, "call_id"], calls.loc[own, "language"], strict=True))
    by_language: dict[str, list[tuple[float, float]]] = {}
    for call_id, start, end in spans:
        if call_id in language:
            by_language.setdefault(language[call_id], []).append((start, end))
    assert set(by_language) == set(LANGUAGES)
    for a, b in itertools.pairwise(LANGUAGES):
        assert min(s for s, _ in by_language[b]) < max(e for _, e in by_language[a]), (a, b)
    # The partitions' tables record each call sent ahead as new exactly once (a closed-book
    # request, the same in every language, in the first partition that asked for it).
    new = calls[~calls["cached"].astype(bool)]
    assert sorted(new["call_id"]) == sorted(requests)
    assert set(new["paid_run"]) == {ahead.runs["fake-gpt"]}  # paid by the stream's run
    assert summary.response_calls + summary.task_calls == len(requests)
    assert summary.new_cost_usd == pytest.approx(float(new["cost_usd"].sum()))
    # The requests sent ahead are exactly those the runs asked for, partition by partition.
    inputs = _Inputs(load_config(str(demo_config_dir)), str(data))
    for iso in LANGUAGES:
        asked = set(calls.loc[calls["language"] == iso, "call_id"])
        assert {r.call_id for r in inputs.requests("fake-gpt", iso)} == asked, iso

    assert again.calls_ahead is not None and again.calls_ahead.sent == 0
    assert again.response_calls + again.task_calls == 0
    # The tables still say who paid for each call: the first run, not the forced one.
    stored = partition_call_rows(data)
    assert sorted(stored.loc[~stored["cached"].astype(bool), "call_id"]) == sorted(new["call_id"])
    assert set(stored["paid_run"].dropna()) == set(new["paid_run"].dropna())


def test_ctrl_c_while_calling_ahead_stops_cleanly_and_pays_nothing_twice(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    env = {**os.environ, "DAGSTER_HOME": str(home), KEY_ENV: KEY}
    command = [sys.executable, "-m", "clcg_pipeline.cli", "run", "--config", str(demo_config_dir)]
    # Two partitions make a stream that crosses a partition boundary; a third adds only work.
    command += ["--data", str(data), "--models", "fake-gpt", "--languages", ",".join(LANGUAGES[:2])]
    with FakeServer(Faults(latency_s=0.3)) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=2, timeout_s=5.0)
        pipe = subprocess.PIPE
        process = subprocess.Popen(command, stdout=pipe, stderr=pipe, env=env, text=True)
        deadline = time.monotonic() + 240
        while sum(server.state.requests.values()) < 4:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        assert_interrupted_in_one_line(process.returncode, out, err)
        # Stopped before any partition's run, the stream's run recorded as stopped, not left
        # looking alive; what was answered is in the cache.
        assert not _runs(home)
        streams = _runs(home, "model_calls_job")
        assert streams and all(run.status == dg.DagsterRunStatus.FAILURE for run, _ in streams)
        # (The offline judges and writers cache their answers too, without the server.)
        sent = set(server.state.requests)
        answered = {path.stem for path in (data / "cache" / "calls").rglob("*.json")} & sent
        # The next run resumes: what was answered is not asked again. (In this process: the
        # command line's Ctrl-C is what needed a `clcg run` of its own.)
        server.set_faults(Faults(latency_s=0.0))
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        monkeypatch.setenv(KEY_ENV, KEY)
        resumed = run_study(
            config_dir=str(demo_config_dir), data_dir=str(data), models=["fake-gpt"], languages=LANGUAGES[:2]
        )
        requests = dict(server.state.requests)
    assert resumed.new_calls > 0  # the calls Ctrl-C left unanswered were made
    # (A call cut off in flight by Ctrl-C is asked again, as in an interrupted run.)
    assert answered and all(requests[cid] == 1 for cid in answered), "an answered call was paid twice"
