"""Killing a run with SIGKILL and starting it again repeats no completed request."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallCache
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV

N = 40


def _cached_ids(root: Path) -> set[str]:
    return {p.stem for p in root.rglob("*.json")}


@pytest.mark.usefixtures("fake_key")
def test_kill_9_then_resume_repeats_no_completed_call(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    env = {**os.environ, FAKE_KEY_ENV: os.environ[FAKE_KEY_ENV]}
    cmd = [sys.executable, "-m", "clcg_pipeline_tests.calls.resume_worker"]
    with FakeServer(Faults(latency_s=0.05)) as server:
        proc = subprocess.Popen([*cmd, server.url, str(cache_dir), str(N)], env=env)
        deadline = time.monotonic() + 30
        while len(_cached_ids(cache_dir)) < 8:
            assert proc.poll() is None, "worker ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = _cached_ids(cache_dir)
        assert 8 <= len(done_before) < N
        requests_before = server.state.requests.copy()

        out = subprocess.run(
            [*cmd, server.url, str(cache_dir), str(N)], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        ok, cached = map(int, out.stdout.split())
        assert ok == N and cached >= len(done_before)
        resent = server.state.requests - requests_before
        # Not one request for a call whose response was already in the cache.
        assert not (set(resent) & done_before)
        assert _cached_ids(cache_dir) == set(server.state.completed) | done_before
        assert len(_cached_ids(cache_dir)) == N
        for cid in done_before:
            assert CallCache(str(cache_dir)).get(cid) is not None
