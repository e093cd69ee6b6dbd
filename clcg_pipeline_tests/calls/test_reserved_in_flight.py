"""A call reserves its worst case just before it is sent, once it has its concurrency slots:
what the budgets hold (and what the study ledger charges a process killed now) is the calls in
flight, never the calls queued behind them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clcg_pipeline.calls import Budget, CallOptions, ChatRequest, SpendLedger, arun_requests, bind
from clcg_pipeline.calls._coord import coord_backend
from clcg_pipeline.calls._providers._base import ModelAPI, ModelOutput
from clcg_pipeline.calls._results import estimate_cost
from clcg_pipeline.config import ModelSpec
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

CONCURRENCY = 2


class _HeldAPI(ModelAPI):
    """Holds every request until ``answer`` is set: the calls in flight stay in flight."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec, None)
        self.sent: list[str] = []
        self.answer = asyncio.Event()

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        self.sent.append(request.call_id)
        await self.answer.wait()
        return ModelOutput(text="1. yes", finish_reason="stop", input_tokens=10, output_tokens=5)


async def _reserved_while_held(options: CallOptions, reserved: object) -> tuple[float, float, int]:
    """(what ``reserved()`` says while the first calls are in flight, one call's worst case,
    calls answered in the end)."""
    spec = spec_for("openai", "http://unused", concurrency=CONCURRENCY, price_output_per_mtok=4.0)
    requests = bind(spec, [make_request(tag=f"r{i}") for i in range(4 * CONCURRENCY)])
    api = _HeldAPI(spec)
    run = asyncio.create_task(arun_requests(spec, requests, options, api=api))
    while len(api.sent) < CONCURRENCY:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # the queued calls reach whatever they wait on
    held = reserved()  # type: ignore[operator]
    assert len(api.sent) == CONCURRENCY
    api.answer.set()
    results = await run
    return held, estimate_cost(spec, requests[0]), sum(r.outcome == "ok" for r in results)


def test_the_run_budget_holds_only_the_calls_in_flight(tmp_path: Path) -> None:
    budget = Budget(100.0)
    options = CallOptions(cache_dir=str(tmp_path / "cache"), policy=FAST, budget=budget)
    held, worst, answered = asyncio.run(_reserved_while_held(options, lambda: budget.reserved))
    # Before: the calls waiting for a slot had reserved too (twice the concurrency limit).
    assert held == pytest.approx(CONCURRENCY * worst)
    assert answered == 4 * CONCURRENCY and budget.reserved == pytest.approx(0.0)


def test_the_study_ledger_holds_only_the_calls_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a kill -9 now would leave charged in the study ledger: the calls sent, no more."""
    monkeypatch.delenv("CLCG_COORD_URL", raising=False)
    monkeypatch.delenv("CLCG_COORD_DIR", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    cache = str(tmp_path / "cache")
    root = coord_backend(cache).root
    assert root is not None
    options = CallOptions(cache_dir=cache, policy=FAST, budget=Budget(None), study_budget_usd=100.0)

    def ledger_reserved() -> float:
        ledger = SpendLedger(root)
        try:
            return ledger.totals()[1]
        finally:
            ledger.close()

    held, worst, answered = asyncio.run(_reserved_while_held(options, ledger_reserved))
    assert held == pytest.approx(CONCURRENCY * worst)
    assert answered == 4 * CONCURRENCY and ledger_reserved() == pytest.approx(0.0)
