"""Killing a run with SIGKILL and starting it again repeats no completed request.

The same on a local cache folder and on an object store (a local S3 server), whose entries
are written in segments (``calls/_segments.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fsspec
import pytest

from clcg_pipeline.calls import CallCache
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV

N = 40


def _cached_ids(cache_dir: str) -> set[str]:
    """The call ids stored, read from the files (local) or the segments (object store)."""
    fs, root = fsspec.core.url_to_fs(cache_dir)
    fs.invalidate_cache()
    paths = fs.find(root) if fs.exists(root) else []
    ids = {Path(p).stem for p in paths if p.endswith(".json")}
    for path in (p for p in paths if p.endswith(".jsonl")):
        ids |= {json.loads(line)["call_id"] for line in fs.cat_file(path).splitlines()}
    return ids


@pytest.fixture(params=["local", "s3"])
def cache_dir(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "cache")
    return f"s3://{request.getfixturevalue('bucket')}/cache"


@pytest.mark.usefixtures("fake_key")
def test_kill_9_then_resume_repeats_no_completed_call(cache_dir: str) -> None:
    env = {**os.environ, FAKE_KEY_ENV: os.environ[FAKE_KEY_ENV]}
    cmd = [sys.executable, "-m", "clcg_pipeline_tests.calls.resume_worker"]
    with FakeServer(Faults(latency_s=0.05)) as server:
        proc = subprocess.Popen([*cmd, server.url, cache_dir, str(N)], env=env)
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
            [*cmd, server.url, cache_dir, str(N)], env=env, capture_output=True, text=True, timeout=60
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
            assert CallCache(cache_dir).get(cid) is not None
