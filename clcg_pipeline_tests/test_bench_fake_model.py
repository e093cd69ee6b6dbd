"""bench/fake_model.py: the fake-server model and bare loop the runner benchmarks share."""

from __future__ import annotations

import asyncio
import tempfile

import pytest

from clcg_pipeline.calls import CallOptions, bind, run_requests
from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.config import ConditionSettings
from clcg_pipeline.inference import Question, render_request
from clcg_pipeline_tests.conftest import PROJECT_ROOT


def test_the_shared_model_answers_through_the_runner_and_the_bare_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))  # as the scripts find it
    from fake_model import KEY_ENV, bare_loop, fake_server_model

    monkeypatch.delenv(KEY_ENV, raising=False)  # the helper exports it; undone after the test
    settings = ConditionSettings(temperature=0.0, seed=1, max_output_tokens=32)
    requests = [
        render_request(
            "full_body",
            questions=[Question("q0", f"What does paragraph 0 say? ({i})")],
            paragraphs=[("p0", "Paragraph 0 says the bridge was built in 1932.")],
            settings=settings,
            rep=0,
        )
        for i in range(3)
    ]
    with ServerProcess(Faults(latency_s=0.0)) as server, tempfile.TemporaryDirectory() as cache:
        spec = fake_server_model(server.url, model_id="probe", concurrency=2)
        results = run_requests(spec, bind(spec, requests), CallOptions(cache_dir=cache))
        seconds = asyncio.run(
            bare_loop(server.url, [{"model": "m", "messages": r.messages} for r in requests])
        )
        sent = server.stats()["total_requests"]
    assert (spec.id, spec.base_url, spec.concurrency) == ("probe", server.url + "/v1", 2)
    assert [r.outcome for r in results] == ["ok"] * 3
    assert seconds > 0 and sent == 6  # three runner calls, three bare posts
