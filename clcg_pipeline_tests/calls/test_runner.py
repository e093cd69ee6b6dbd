"""The runner against the fake server, through each real SDK."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from clcg_pipeline.calls import (
    AdaptiveLimiter,
    CallOptions,
    MissingCredentialsError,
    ProviderConfigError,
    run_requests,
)
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV, FAST, PROVIDERS, make_request, spec_for

pytestmark = pytest.mark.usefixtures("fake_key")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_faults_are_retried_bounded_and_every_slot_accounted(
    provider: str, server: FakeServer, tmp_path: Path
) -> None:
    markers = {
        "plain": "",
        "rate": "[[fault:429x2]]",
        "unavailable": "[[fault:503x1]]",
        "malformed": "[[fault:malformedx2]]",
        "dead": "[[fault:500x99]]",
        "truncated": "[[answer:truncated]]",
        "refusal": "[[answer:refusal]]",
        "non_json": "[[answer:non_json]]",
        "overflow": "[[fault:400x9]]",
    }
    requests = [make_request(m, tag=name) for name, m in markers.items()]
    # A timeout no answer of the fake server comes near, even on a loaded machine: each scripted
    # fault then costs exactly one attempt (a tight timeout made an answer slowed by CPU
    # contention time out, and that extra attempt looked like a retry too many).
    spec = spec_for(provider, server.url, timeout_s=5.0, max_attempts=4)
    results = run_requests(spec, requests, CallOptions(cache_dir=str(tmp_path), policy=FAST))
    by = dict(zip(markers, results, strict=True))
    assert len(results) == len(requests)
    assert [by[k].outcome for k in ("plain", "rate", "unavailable", "malformed")] == ["ok"] * 4
    assert (by["plain"].attempts, by["rate"].attempts, by["unavailable"].attempts) == (1, 3, 2)
    assert by["malformed"].attempts == 3
    # Every attempt is one HTTP request (the SDKs' own retries are off).
    for key in ("plain", "rate", "unavailable", "malformed"):
        assert server.state.requests[by[key].call_id] == by[key].attempts, key
    # Attempts are bounded: the dead call stops at max_attempts with its error class.
    assert by["dead"].outcome == "error" and by["dead"].attempts == 4 and by["dead"].error
    assert server.state.requests[_cid(spec, requests[4])] == 4
    assert by["truncated"].outcome == "truncated"
    assert by["refusal"].outcome == "refused"
    assert by["non_json"].outcome == "ok" and by["non_json"].text
    # A rejected request is an outcome row with its reason, tried once, not a crash.
    assert (by["overflow"].outcome, by["overflow"].error, by["overflow"].attempts) == (
        "error",
        "ContextOverflow",
        1,
    )
    assert by["plain"].input_tokens > 0 and by["plain"].cost_usd > 0 and by["plain"].latency_s > 0
    # A second run sends nothing for cached outcomes and retries only the failed call.
    before = server.state.requests.copy()
    again = run_requests(spec, requests, CallOptions(cache_dir=str(tmp_path), policy=FAST))
    sent = server.state.requests - before
    assert set(sent) == {_cid(spec, requests[4]), _cid(spec, requests[-1])}
    assert all(r.cached for r, k in zip(again, markers, strict=True) if k not in ("dead", "overflow"))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_past_its_timeout_is_retried(provider: str, server: FakeServer, tmp_path: Path) -> None:
    spec = spec_for(provider, server.url, timeout_s=0.3, max_attempts=4)
    server.set_faults(Faults(slow_s=1.0))
    [result] = run_requests(
        spec, [make_request("[[fault:slowx1]]")], CallOptions(cache_dir=str(tmp_path), policy=FAST)
    )
    # The first attempt sleeps past the timeout. A later one may too on a loaded machine, so
    # only the bounds are exact here.
    assert result.outcome == "ok" and 2 <= result.attempts <= spec.max_attempts


def _cid(spec: object, request: object) -> str:
    from clcg_pipeline.calls import bind

    return bind(spec, [request])[0].call_id  # type: ignore[arg-type]


def test_retry_after_is_honoured(server: FakeServer, tmp_path: Path) -> None:
    server.set_faults(Faults(retry_after_s=0.25))
    spec = spec_for("openai", server.url)
    start = time.perf_counter()
    [result] = run_requests(
        spec, [make_request("[[fault:429x2]]")], CallOptions(cache_dir=str(tmp_path), policy=FAST)
    )
    elapsed = time.perf_counter() - start
    assert result.outcome == "ok" and result.attempts == 3
    # Backoff alone would wait ~0.03 s; two Retry-After waits of 0.25 s must show.
    assert elapsed >= 0.5


def test_concurrency_is_cut_on_429_and_grows_back() -> None:
    async def scenario() -> AdaptiveLimiter:
        limiter = AdaptiveLimiter(16)
        epochs = [await limiter.acquire() for _ in range(8)]
        for e in epochs:  # a burst of 429s from one round cuts once
            limiter.on_rate_limit(e)
            await limiter.release()
        assert limiter.limit == 8 and limiter.cuts == 1
        e = await limiter.acquire()
        limiter.on_rate_limit(e)
        await limiter.release()
        assert limiter.limit == 4 and limiter.cuts == 2
        for _ in range(4 + 5 + 6):
            limiter.on_success()
        assert limiter.limit == 7
        return limiter

    asyncio.run(scenario())


def test_runner_limits_in_flight_requests_under_429s(
    server: FakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="clcg_pipeline.calls")
    server.set_faults(Faults(latency_s=0.02, p429=0.3, retry_after_s=None, seed=3))
    spec = spec_for("anthropic", server.url, concurrency=6, max_attempts=10)
    requests = [make_request(tag=f"r{i}") for i in range(60)]
    results = run_requests(spec, requests, CallOptions(cache_dir=str(tmp_path), policy=FAST))
    assert all(r.outcome == "ok" for r in results)
    assert server.state.max_in_flight <= 6
    assert server.state.injected["429"] > 0
    assert sum(server.state.completed.values()) == 60  # no completed call was repeated
    [summary] = [r.getMessage() for r in caplog.records if "cut(s)" in r.getMessage()]
    cuts = int(summary.split(" after ")[1].split()[0])
    assert cuts >= 1


def test_missing_key_fails_before_any_call(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FAKE_KEY_ENV)
    with pytest.raises(MissingCredentialsError, match=FAKE_KEY_ENV):
        run_requests(spec_for("gemini", server.url), [make_request()], CallOptions(cache_dir=str(tmp_path)))
    assert sum(server.state.requests.values()) == 0


def test_cached_results_need_no_key(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_for("openai", server.url)
    run_requests(spec, [make_request()], CallOptions(cache_dir=str(tmp_path), policy=FAST))
    monkeypatch.delenv(FAKE_KEY_ENV)
    [again] = run_requests(spec, [make_request()], CallOptions(cache_dir=str(tmp_path), policy=FAST))
    assert again.cached and again.outcome == "ok"


def test_budget_stops_cleanly_and_keeps_partial_results(server: FakeServer, tmp_path: Path) -> None:
    spec = spec_for("openai", server.url, concurrency=1, max_output_tokens=100)
    requests = [make_request(tag=f"b{i}") for i in range(10)]
    from clcg_pipeline.calls._results import estimate_cost

    per_call = estimate_cost(spec, requests[0])
    budget = per_call * 2
    results = run_requests(
        spec, requests, CallOptions(cache_dir=str(tmp_path), policy=FAST, budget_usd=budget)
    )
    outcomes = [r.outcome for r in results]
    spent = sum(r.cost_usd for r in results)
    # Estimates are worst case (output at its cap), so the stop comes before the budget is hit.
    assert spent <= budget < spent + per_call
    assert "skipped_budget" in outcomes and outcomes.count("ok") >= 2
    # One sequence: once a call is skipped, no later call is issued.
    first_skip = outcomes.index("skipped_budget")
    assert set(outcomes[first_skip:]) == {"skipped_budget"}
    assert sum(server.state.requests.values()) == outcomes.count("ok")
    # Kept: a rerun with more budget sends only what was skipped.
    before = sum(server.state.requests.values())
    rerun = run_requests(spec, requests, CallOptions(cache_dir=str(tmp_path), policy=FAST, budget_usd=1.0))
    assert all(r.outcome == "ok" for r in rerun)
    assert sum(server.state.requests.values()) - before == outcomes.count("skipped_budget")


def test_bad_key_stops_the_run_and_never_leaks(
    server: FakeServer, tmp_path: Path, fake_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    spec = spec_for("openai", server.url)
    with pytest.raises(ProviderConfigError) as info:
        run_requests(
            spec, [make_request("[[fault:401x1]]")], CallOptions(cache_dir=str(tmp_path), policy=FAST)
        )
    assert fake_key not in str(info.value) and "***" in str(info.value)
    assert fake_key not in caplog.text


def test_duplicate_requests_are_sent_once(server: FakeServer, tmp_path: Path) -> None:
    spec = spec_for("gemini", server.url)
    results = run_requests(
        spec, [make_request(), make_request(), make_request(rep=1)], CallOptions(cache_dir=str(tmp_path))
    )
    assert results[0].call_id == results[1].call_id != results[2].call_id
    assert sum(server.state.requests.values()) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_key_reaches_the_server_but_no_log_or_cache_file(
    provider: str, server: FakeServer, tmp_path: Path, fake_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # SDK and HTTP client debug logs included
    spec = spec_for(provider, server.url)
    results = run_requests(
        spec, [make_request("[[fault:503x1]]")], CallOptions(cache_dir=str(tmp_path), policy=FAST)
    )
    assert results[0].outcome == "ok"
    assert any(fake_key in seen for seen in server.state.auth_seen)  # the SDK did send it
    assert fake_key not in caplog.text
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and fake_key.encode() in p.read_bytes()]


def test_each_adapter_sends_the_resolved_settings(server: FakeServer, tmp_path: Path) -> None:
    request = make_request()  # temperature 0.2, seed 42, max_output_tokens 200
    sent = {}
    for provider in PROVIDERS:
        spec = spec_for(provider, server.url)
        [result] = run_requests(spec, [request], CallOptions(cache_dir=str(tmp_path), policy=FAST))
        sent[provider] = server.state.bodies[result.call_id]
    openai_body, anthropic_body, gemini_body = sent["openai"], sent["anthropic"], sent["gemini"]
    assert (openai_body["temperature"], openai_body["seed"], openai_body["max_completion_tokens"]) == (
        0.2,
        42,
        200,
    )
    assert [m["role"] for m in openai_body["messages"]] == ["system", "user"]
    assert "tools" not in openai_body and "tools" not in anthropic_body and "tools" not in gemini_body
    # Anthropic: system apart, no seed (the API has none), sampling through extra_body.
    assert anthropic_body["temperature"] == 0.2 and anthropic_body["max_tokens"] == 200
    assert "seed" not in anthropic_body and "English" in anthropic_body["system"]
    assert [m["role"] for m in anthropic_body["messages"]] == ["user"]
    config = gemini_body["generationConfig"]
    assert (config["temperature"], config["seed"], config["maxOutputTokens"]) == (0.2, 42, 200)
    assert "English" in gemini_body["systemInstruction"]["parts"][0]["text"]
