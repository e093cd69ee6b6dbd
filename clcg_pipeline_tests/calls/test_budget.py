"""One rule for both budgets: wait while calls in flight hold the budget, stop only when what is
spent plus a call's worst case would pass the limit. The same calls pass whatever the timing."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from clcg_pipeline.calls import Budget, CallOptions, ChatRequest, Grant, arun_requests, bind
from clcg_pipeline.calls._providers._base import ModelAPI, ModelOutput
from clcg_pipeline.calls._results import estimate_cost
from clcg_pipeline.calls._tokens import estimate_input_tokens
from clcg_pipeline.config import ModelSpec
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

N_REQUESTS = 12


class _TimedAPI(ModelAPI):
    """Answers each call after its own latency, with half the output cap: it costs half its worst case."""

    def __init__(self, spec: ModelSpec, latencies: dict[str, float]) -> None:
        super().__init__(spec, None)
        self.latencies = latencies
        self.sent: list[str] = []

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        self.sent.append(request.call_id)
        await asyncio.sleep(self.latencies.get(request.call_id, 0.0))
        cap = request.settings.max_output_tokens or 0
        return ModelOutput(
            text="1. yes\n2. no",
            finish_reason="stop",
            input_tokens=estimate_input_tokens(request.messages),
            output_tokens=cap // 2,
        )


def _spec(concurrency: int) -> ModelSpec:
    # Output only is priced: each call costs exactly half its worst case.
    return spec_for(
        "openai",
        "http://unused",
        concurrency=concurrency,
        price_input_per_mtok=0.0,
        price_output_per_mtok=4.0,
    )


def _run(
    spec: ModelSpec, limit: float, latencies: dict[str, float], tmp: Path
) -> tuple[list[str], _TimedAPI]:
    requests = bind(spec, [make_request(tag=f"b{i}") for i in range(N_REQUESTS)])
    api = _TimedAPI(spec, latencies)
    options = CallOptions(cache_dir=str(tmp), policy=FAST, budget_usd=limit)
    results = asyncio.run(arun_requests(spec, requests, options, api=api))
    return [r.outcome for r in results], api


def test_budget_grants_waits_and_refuses_for_good() -> None:
    budget = Budget(3.0)
    assert budget.reserve(2.0) is Grant.GRANTED
    assert budget.reserve(2.0) is Grant.WAIT  # only the call in flight stands in the way
    budget.settle(2.0, 1.0)
    assert budget.reserve(2.0) is Grant.GRANTED  # it cost less than reserved: room again
    budget.settle(2.0, 1.0)
    assert budget.reserve(1.5) is Grant.REFUSED  # spent 2.0 + 1.5 > 3.0
    assert budget.reserve(0.1) is Grant.REFUSED  # for good: no smaller call sneaks past
    assert Budget(None).reserve(1e9) is Grant.GRANTED


@pytest.mark.parametrize("concurrency", [1, 3, 12])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_number_of_calls_pass_whatever_the_timing(
    concurrency: int, seed: int, tmp_path: Path
) -> None:
    spec = _spec(concurrency)
    requests = bind(spec, [make_request(tag=f"b{i}") for i in range(N_REQUESTS)])
    worst = estimate_cost(spec, requests[0])
    assert all(estimate_cost(spec, r) == pytest.approx(worst) for r in requests)
    # Room for 3.25 worst cases. Each call costs half of one, so calls pass while
    # spent + worst <= limit: k/2 + 1 <= 3.25, k = 0..4, five calls. The old rule (stop once
    # spent + reserved + worst passes the limit) let three through when they ran side by side.
    limit = 3.25 * worst
    rng = random.Random(seed)
    latencies = {r.call_id: rng.choice([0.0, 0.002, 0.01, 0.03]) for r in requests}
    outcomes, api = _run(spec, limit, latencies, tmp_path)
    assert outcomes.count("ok") == 5 and outcomes.count("skipped_budget") == N_REQUESTS - 5
    assert len(api.sent) == 5


def test_a_wait_for_the_budget_holds_no_concurrency_slot(tmp_path: Path) -> None:
    """With one slot, calls waiting for the budget must not keep the call in flight from settling."""
    spec = _spec(1)
    requests = bind(spec, [make_request(tag=f"b{i}") for i in range(N_REQUESTS)])
    limit = 3.25 * estimate_cost(spec, requests[0])
    outcomes, _ = _run(spec, limit, {r.call_id: 0.005 for r in requests}, tmp_path)
    assert outcomes.count("ok") == 5
