"""One CallSession over several request lists: no drain between them, duplicates sent once,
and the ``origin`` that lets a partition's run count calls sent ahead for it as its own."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from clcg_pipeline.calls import CallOptions, CallSession, ChatRequest, arun_requests, call_origin
from clcg_pipeline.calls._providers._base import ModelAPI, ModelOutput
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for


class _HeldAPI(ModelAPI):
    """Answers at once, except the held call ids: those wait until ``release`` is set."""

    def __init__(self, held: set[str]) -> None:
        super().__init__(spec_for("openai", "http://unused"), None)
        self.held = held
        self.release = asyncio.Event()
        self.started: list[str] = []
        self.sent: Counter[str] = Counter()

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        self.started.append(request.call_id)
        self.sent[request.call_id] += 1
        if request.call_id in self.held:
            await self.release.wait()
        else:
            await asyncio.sleep(0.001)
        return ModelOutput(text="1. yes\n2. no", finish_reason="stop", input_tokens=10, output_tokens=4)


def _bound(requests: list[ChatRequest]) -> list[ChatRequest]:
    from clcg_pipeline.calls._results import bind

    return bind(spec_for("openai", "http://unused"), requests)


def test_a_second_list_is_sent_while_the_first_still_waits(tmp_path: Path) -> None:
    """The next partition's calls start before the previous one's last answer: no drain."""
    first = _bound([make_request(tag=f"a{i}") for i in range(6)])
    second = _bound([make_request(tag=f"b{i}") for i in range(6)])
    last_of_first = first[-1].call_id

    async def scenario() -> tuple[list, list, _HeldAPI]:
        api = _HeldAPI({last_of_first})
        session = CallSession(api.spec, CallOptions(cache_dir=str(tmp_path), policy=FAST), api=api)
        try:
            one = asyncio.ensure_future(session.run(first))
            await asyncio.sleep(0.05)
            two = asyncio.ensure_future(session.run(second))
            # A session that drained between lists would never start the second list here.
            async with asyncio.timeout(10):
                while not any(cid in api.started for cid in (r.call_id for r in second)):
                    await asyncio.sleep(0.01)
            assert not one.done()
            api.release.set()
            return await one, await two, api
        finally:
            await session.aclose()

    results_one, results_two, api = asyncio.run(scenario())
    assert [r.outcome for r in results_one + results_two] == ["ok"] * 12
    assert set(api.sent.values()) == {1}


def test_a_request_in_two_lists_is_sent_once_and_new_in_the_first_only(tmp_path: Path) -> None:
    shared = make_request(tag="closed-book, the same in every language")
    first = _bound([shared, make_request(tag="en only")])
    second = _bound([shared, make_request(tag="pt only")])

    async def scenario() -> tuple[list, list, _HeldAPI]:
        api = _HeldAPI({first[0].call_id})  # still in flight when the second list asks for it
        session = CallSession(api.spec, CallOptions(cache_dir=str(tmp_path), policy=FAST), api=api)
        try:
            one = asyncio.ensure_future(session.run(first, origin="t/en"))
            two = asyncio.ensure_future(session.run(second, origin="t/pt"))
            await asyncio.sleep(0.1)
            api.release.set()
            return await one, await two, api
        finally:
            await session.aclose()

    one, two, api = asyncio.run(scenario())
    assert api.sent[first[0].call_id] == 1
    assert (one[0].cached, two[0].cached) == (False, True)
    assert (one[1].cached, two[1].cached) == (False, False)


def test_calls_sent_ahead_are_new_for_their_origin_only(tmp_path: Path) -> None:
    requests = _bound([make_request(tag=f"r{i}") for i in range(3)])
    origin = call_origin("token-1", "en|fake-openai")
    other = call_origin("token-1", "pt|fake-openai")

    async def send(api: ModelAPI | None, origin: str | None) -> list:
        return await arun_requests(
            spec_for("openai", "http://unused"),
            requests,
            CallOptions(cache_dir=str(tmp_path), policy=FAST, origin=origin),
            api=api,
        )

    api = _HeldAPI(set())
    api.release.set()
    ahead = asyncio.run(send(api, origin))
    assert [r.cached for r in ahead] == [False] * 3
    # The partition's own run: nothing sent, every call recorded as its new call, cost and all.
    own = asyncio.run(send(None, origin))
    assert [r.cached for r in own] == [False] * 3
    assert [r.cost_usd for r in own] == [r.cost_usd for r in ahead]
    assert [r.text for r in own] == [r.text for r in ahead]
    # Any other reader (another partition, a later clcg run, a plain run) finds them cached.
    assert all(r.cached for r in asyncio.run(send(None, other)))
    assert all(r.cached for r in asyncio.run(send(None, call_origin("token-2", "en|fake-openai"))))
    assert all(r.cached for r in asyncio.run(send(None, None)))
    assert sum(api.sent.values()) == 3
    assert call_origin(None, "en|m") is None and call_origin("t", None) is None
