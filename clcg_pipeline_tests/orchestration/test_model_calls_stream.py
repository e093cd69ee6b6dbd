"""One model's stream keeps its limiter full across partition boundaries (issue 32 item 5).

A new model's partitions are a dozen calls each under a concurrency of 32: built two
partitions at a time, the stream never had more than two partitions' calls in flight and
drained at every boundary while the next partition was built. Measured here on the fake
server's own record of the calls in flight as each request arrives.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, CallSession, ChatRequest
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.orchestration._model_calls import Streamed, _Stream
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV, make_request, spec_for

LIMIT = 8
PER_PARTITION = 3  # under half the limit: two partitions at a time cannot fill it
PARTITIONS = 16
BUILD_S = 0.01  # each partition's build, in its thread (reading its paragraphs, rendering)


class _SmallPartitions:
    """The stream's inputs: ``PARTITIONS`` languages of ``PER_PARTITION`` requests each."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def requests(self, model_id: str, iso: str) -> list[ChatRequest]:
        time.sleep(BUILD_S)
        self.built.append(iso)
        return [make_request(tag=f"{model_id} {iso} {i}") for i in range(PER_PARTITION)]


def _stream(server: FakeServer, cache: Path, inputs: _SmallPartitions) -> Streamed:
    model = spec_for("openai", server.url, concurrency=LIMIT, timeout_s=10)
    session = CallSession(model, CallOptions(cache_dir=str(cache)))
    stream = _Stream(session, inputs, "token", lambda _text: None)  # type: ignore[arg-type]
    asyncio.run(stream.run(model.id, [f"l{i:02d}" for i in range(PARTITIONS)]))
    return stream.done


def test_calls_in_flight_stay_at_the_limit_across_partition_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, "fake-stream-not-real")
    inputs = _SmallPartitions()
    with FakeServer(Faults(latency_s=0.2)) as server:
        done = _stream(server, tmp_path / "cache", inputs)
        loads = list(server.state.in_flight_at_arrival)
    calls = PARTITIONS * PER_PARTITION
    assert done.sent == calls and done.failed == 0 and len(loads) == calls
    assert inputs.built == [f"l{i:02d}" for i in range(PARTITIONS)]
    # Two partitions at a time (the stream before) never had more than 6 calls in flight. The
    # limit is reached round after round, not only by the first one (timing on a shared
    # machine varies: the count, not the exact profile, is what is asserted).
    assert max(loads) == LIMIT, f"never {LIMIT} calls in flight: {loads}"
    assert loads.count(LIMIT) >= 3, f"the limiter drained between partitions: {loads}"


def test_a_partition_that_fails_stops_the_stream_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream builds ahead, but a failure (here: no key) is raised, not left behind."""
    monkeypatch.delenv(FAKE_KEY_ENV, raising=False)
    inputs = _SmallPartitions()
    with FakeServer() as server, pytest.raises(Exception, match=FAKE_KEY_ENV):
        _stream(server, tmp_path / "cache", inputs)
    assert not server.state.requests
    assert len(inputs.built) < PARTITIONS
