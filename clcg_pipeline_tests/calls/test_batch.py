"""Batch mode (OpenAI Batch, Anthropic Message Batches, Gemini batch) against the fake server."""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, run_batch, run_requests
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import FAKE_KEY, make_request, spec_for

pytestmark = pytest.mark.usefixtures("fake_key")
MARKERS = ["", "[[answer:refusal]]", "[[answer:truncated]]", "[[fault:500x9]]", "[[answer:non_json]]"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_batch_submit_poll_collect_into_cache(provider: str, server: FakeServer, tmp_path: Path) -> None:
    server.set_faults(Faults(batch_polls=2))
    spec = spec_for(provider, server.url)
    requests = [make_request(m, tag=f"batch{i}") for i, m in enumerate(MARKERS)]
    results = run_requests(
        spec, requests, CallOptions(cache_dir=str(tmp_path), mode="batch", batch_poll_s=0.01)
    )
    assert [r.outcome for r in results] == ["ok", "refused", "truncated", "error", "ok"]
    assert results[0].text == '["answer 1", "answer 2"]' and results[0].input_tokens > 0
    assert results[0].cost_usd > 0 and not results[0].cached
    assert server.state.batch_creates == 1 and sum(server.state.requests.values()) == 0
    assert FAKE_KEY not in "".join(p.read_text() for p in tmp_path.rglob("*.json"))
    # Collected into the same cache: online mode now sends nothing for the completed calls.
    again = run_requests(spec, requests[:3] + requests[4:], CallOptions(cache_dir=str(tmp_path)))
    assert all(r.cached for r in again) and sum(server.state.requests.values()) == 0
    assert not list((tmp_path / "_meta").glob("*.json"))  # nothing left pending


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_run_resumes_while_batch_is_pending(provider: str, server: FakeServer, tmp_path: Path) -> None:
    server.set_faults(Faults(batch_polls=10_000))
    spec = spec_for(provider, server.url)
    requests = [make_request(tag=f"pending{i}") for i in range(4)]
    first = run_batch(
        spec, requests, CallOptions(cache_dir=str(tmp_path), batch_poll_s=0.01, batch_max_wait_s=0.05)
    )
    assert {r.outcome for r in first} == {"batch_pending"}
    assert server.state.batch_creates == 1
    [batch_id] = server.state.batches
    server.state.batches[batch_id]["polls_left"] = 0  # the provider finishes it meanwhile
    second = run_batch(spec, requests, CallOptions(cache_dir=str(tmp_path), batch_poll_s=0.01))
    assert [r.outcome for r in second] == ["ok"] * 4
    assert server.state.batch_creates == 1  # collected, not resubmitted
    assert max(server.state.batch_requests.values()) == 1


def test_batch_rejects_providers_without_support(server: FakeServer, tmp_path: Path) -> None:
    spec = spec_for("openai_compatible", server.url)
    with pytest.raises(ValueError, match="batch mode supports"):
        run_requests(spec, [make_request()], CallOptions(cache_dir=str(tmp_path), mode="batch"))


def test_batch_budget_waits_for_collected_spend_like_online(server: FakeServer, tmp_path: Path) -> None:
    """A request that fits only once the submitted ones settle goes in the next batch: the same
    requests pass as online, and a refused one stops the rest for good."""
    from clcg_pipeline.calls import bind
    from clcg_pipeline.calls._results import estimate_cost

    spec = spec_for("anthropic", server.url)
    requests = [make_request(tag=f"round{i}") for i in range(5)]
    [priced] = run_requests(
        spec, requests[:1], CallOptions(cache_dir=str(tmp_path / "priced"), mode="batch", batch_poll_s=0.01)
    )
    creates = server.state.batch_creates
    worst = max(estimate_cost(spec, r) for r in bind(spec, requests))
    limit = worst + 1.5 * priced.cost_usd  # the second call fits once the first has cost less
    options = CallOptions(cache_dir=str(tmp_path), mode="batch", batch_poll_s=0.01, budget_usd=limit)
    results = run_requests(spec, requests, options)
    assert [r.outcome for r in results] == ["ok", "ok", "skipped_budget", "skipped_budget", "skipped_budget"]
    assert {r.error for r in results[2:]} == {"BudgetExceeded"}
    assert server.state.batch_creates - creates == 2  # one round per call that had to wait
