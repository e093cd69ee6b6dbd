"""A run killed with SIGKILL while calls are in flight: a provider bills a request when it
arrives (answered to no one or not), and the spend record shows those calls, once each, as
``lost_at_kill``; after the rerun the record equals the bill to the cent (storage/_intents.py).

The bill is the fake server's request log (every request that arrived, at its answer's cost):
it drops the answer of a request whose client hung up, where a real provider bills it."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallCache, CallOptions, CallSession, ProviderConfigError
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.storage import LOST_OUTCOME, call_spend
from clcg_pipeline.storage._intents import lost_at_kill
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV, FAST, make_request, spec_for

N = 16
CONCURRENCY = 4  # lost_worker's
WORKER = [sys.executable, "-m", "clcg_pipeline_tests.calls.lost_worker"]


def _cached(cache_dir: Path) -> set[str]:
    return {path.stem for path in cache_dir.glob("??/*.json")}


def _kill_with_calls_in_flight(server: FakeServer, cache_dir: Path, env: dict[str, str]) -> None:
    """Start the worker and kill it just after a round of calls reached the server."""
    proc = subprocess.Popen([*WORKER, server.url, str(cache_dir), str(N)], env=env)
    deadline = time.monotonic() + 30
    # The server answers each round of calls together (same latency): right after a round has
    # arrived, every call sent is at the server and none is being answered.
    while not (len(_cached(cache_dir)) >= CONCURRENCY and server.state.in_flight == CONCURRENCY):
        assert proc.poll() is None, "worker ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _bill_usd(server: FakeServer, cache_dir: Path | str) -> float:
    """What the provider billed: every request that arrived, each time, at its answer's cost."""
    cache = CallCache(str(cache_dir))
    costs = {call_id: cache.get(call_id) for call_id in server.state.requests}
    assert all(entry is not None for entry in costs.values())
    return math.fsum(n * costs[call_id]["cost_usd"] for call_id, n in server.state.requests.items())  # type: ignore[index]


@pytest.mark.usefixtures("fake_key")
def test_calls_in_flight_at_a_kill_are_recorded_lost_and_the_record_equals_the_bill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cache_dir = data / "cache" / "calls"
    env = {**os.environ, FAKE_KEY_ENV: os.environ[FAKE_KEY_ENV]}
    with FakeServer(Faults(latency_s=0.3)) as server:
        _kill_with_calls_in_flight(server, cache_dir, env)
        cached_before = _cached(cache_dir)
        in_flight = set(server.state.requests) - cached_before
        # Billed on arrival, in no cache entry: the calls at the server, and any answered but
        # not yet cached when the kill came.
        assert len(in_flight) >= CONCURRENCY

        rows = call_spend(data)
        lost = rows[rows["outcome"] == LOST_OUTCOME]
        assert set(lost["call_id"]) == in_flight and len(lost) == len(in_flight)
        assert lost["paid"].all() and lost["calls_table"].eq("killed run").all()
        assert lost["error"].str.startswith("cost unknown").all()  # said, not hidden, until rerun

        out = subprocess.run(
            [*WORKER, server.url, str(cache_dir), str(N)], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        bill = _bill_usd(server, cache_dir)

    rows = call_spend(data)
    lost = rows[rows["outcome"] == LOST_OUTCOME]
    # Once each, now at the cost of the same call's answer (the rerun paid for it again).
    assert set(lost["call_id"]) == in_flight and len(lost) == len(in_flight)
    assert lost["error"].str.startswith("cost estimated").all() and (lost["paid_usd"] > 0).all()
    paid = rows[rows["paid"]]
    assert len(paid) == sum(server.state.requests.values()) == N + len(in_flight)
    assert round(math.fsum(paid["paid_usd"]), 9) == round(bill, 9)
    # Only the killed run's log is left: the rerun's calls were all cached, so its log went.
    (killed_log,) = (cache_dir / "_intents").glob("*.log")
    # An answer the killed run cached names its log: were the kill to come between the entry
    # and the log's answered line, the call is still a payment on record, not a lost one.
    senders = {CallCache(str(cache_dir)).get(call_id)["sent_by"] for call_id in cached_before}  # type: ignore[index]
    assert senders == {killed_log.stem}


@pytest.mark.usefixtures("fake_key")
def test_an_object_store_caches_calls_lost_at_a_kill_are_recorded_on_the_host(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``s3://`` cache (no appends, no locks): the intent log is kept in the host's
    coordination folder for the cache URL, so the spend built on that host shows the calls in
    flight at the kill as lost, and after the rerun equals the bill to the cent."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CLCG_COORD_DIR", raising=False)
    data = f"s3://{bucket}/clcg"
    cache_dir = f"{data}/cache/calls"
    env = {**os.environ, FAKE_KEY_ENV: os.environ[FAKE_KEY_ENV]}
    with FakeServer(Faults(latency_s=0.3)) as server:
        proc = subprocess.Popen([*WORKER, server.url, cache_dir, str(N)], env=env)
        deadline = time.monotonic() + 60
        # A round answered (and being cached), the next at the server: calls are in flight.
        while not (
            sum(server.state.requests.values()) > CONCURRENCY and server.state.in_flight == CONCURRENCY
        ):
            assert proc.poll() is None, "worker ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert list((tmp_path / "xdg" / "clcg" / "coord").glob("*/_intents/*.log"))
        lost_now = call_spend(data)
        assert (lost_now["outcome"] == LOST_OUTCOME).sum() >= CONCURRENCY
        out = subprocess.run(
            [*WORKER, server.url, cache_dir, str(N)], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        bill = _bill_usd(server, cache_dir)
        requests = sum(server.state.requests.values())
    rows = call_spend(data)
    paid = rows[rows["paid"]]
    assert (paid["outcome"] == LOST_OUTCOME).sum() == requests - N
    assert len(paid) == requests
    assert round(math.fsum(paid["paid_usd"]), 9) == round(bill, 9)


# Every request waits this long at the server before its answer or fault: the 401 comes back
# once the three slow requests sent with it are all at the server.
ALL_SENT_FIRST = Faults(latency_s=0.5)


async def _refused_with_calls_in_flight(session: CallSession, tag: str) -> None:
    """A 401 for one call while three slow ones are in flight: the run fails, the three are
    cancelled (their requests at the server, never answered); then the session closes."""
    slow = [make_request("[[fault:slowx1]]", rep=i, tag=tag) for i in range(3)]
    with pytest.raises(ProviderConfigError):
        await session.run([*slow, make_request("[[fault:401x1]]", tag=tag)])
    await session.aclose()


@pytest.mark.usefixtures("fake_key")
def test_calls_cancelled_by_a_refused_configuration_are_not_lost(tmp_path: Path) -> None:
    """A provider refusing the key or model before it answered any call of the run refused
    the calls cancelled in flight too: they end, none is counted lost once the process is gone."""
    with FakeServer(ALL_SENT_FIRST) as server:
        spec = spec_for("openai", server.url, concurrency=4, timeout_s=30.0)
        session = CallSession(spec, CallOptions(cache_dir=str(tmp_path), policy=FAST))
        asyncio.run(_refused_with_calls_in_flight(session, "refused"))
        assert server.state.requests.total() == 4
    assert lost_at_kill(tmp_path) == []


@pytest.mark.usefixtures("fake_key")
def test_calls_cancelled_after_an_answer_stay_lost(tmp_path: Path) -> None:
    """Once the provider answered a call of the run (the key worked), a later refusal (a revoked
    key, no credit left) says nothing of the requests in flight: they may be billed, so they
    stay open, counted lost once the process is gone, as a Ctrl-C's are."""

    async def answered_then_refused(session: CallSession) -> None:
        await session.run([make_request(tag="first")])
        await _refused_with_calls_in_flight(session, "later")

    with FakeServer(ALL_SENT_FIRST) as server:
        spec = spec_for("openai", server.url, concurrency=4, timeout_s=30.0)
        asyncio.run(
            answered_then_refused(CallSession(spec, CallOptions(cache_dir=str(tmp_path), policy=FAST)))
        )
        assert server.state.requests.total() == 5
    assert len(lost_at_kill(tmp_path)) == 3
