"""Prices by prompt size: a call past a tier's threshold is priced wholly at that tier, in the
budget's worst case, in the spend ledger (the call's cost_usd) and in the plan."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from clcg_pipeline.calls import CallOptions, arun_requests, bind
from clcg_pipeline.calls._results import cost_usd, estimate_cost
from clcg_pipeline.calls._tokens import estimate_input_tokens
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline.config import ModelsConfig, ModelSpec
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

TIERS = [
    {"above_input_tokens": 1_000, "price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0},
    {"above_input_tokens": 100_000, "price_input_per_mtok": 3.0, "price_output_per_mtok": 12.0},
]


def _tiered(url: str = "http://unused", **overrides: object) -> ModelSpec:
    return spec_for("openai", url, price_tiers=TIERS, **overrides)


def test_each_prompt_size_is_priced_at_its_tier() -> None:
    spec = _tiered()
    assert cost_usd(spec, 1_000, 100) == pytest.approx((1_000 * 1.0 + 100 * 4.0) / 1e6)  # not above
    assert cost_usd(spec, 1_001, 100) == pytest.approx((1_001 * 2.0 + 100 * 8.0) / 1e6)
    assert cost_usd(spec, 128_000, 100) == pytest.approx((128_000 * 3.0 + 100 * 12.0) / 1e6)
    untiered = spec_for("openai", "http://unused")
    assert cost_usd(untiered, 128_000, 100) == pytest.approx((128_000 * 1.0 + 100 * 4.0) / 1e6)


def test_tiers_out_of_order_are_refused_naming_the_field() -> None:
    document = yaml.safe_load(
        """
models:
  - id: long-context
    provider: offline
    model: lexical-overlap-v1
    price_tiers:
      - {above_input_tokens: 200000, price_input_per_mtok: 2.5, price_output_per_mtok: 15}
      - {above_input_tokens: 128000, price_input_per_mtok: 2.0, price_output_per_mtok: 12}
"""
    )
    with pytest.raises(ValidationError, match="price_tiers"):
        ModelsConfig.model_validate(document)
    document["models"][0]["price_tiers"][0]["above_tokens"] = 1  # a typo is an error, not ignored
    with pytest.raises(ValidationError, match="above_tokens"):
        ModelsConfig.model_validate(document)


def test_the_budget_and_the_ledger_use_the_tier(fake_key: str, tmp_path: Path) -> None:
    with FakeServer() as server:
        spec = _tiered(server.url)
        request = bind(spec, [make_request(tag="long " + "word " * 1_500)])[0]
        prompt = estimate_input_tokens(request.messages)
        assert prompt > 1_000  # past the first tier
        assert estimate_cost(spec, request) == pytest.approx((prompt * 2.0 + 200 * 8.0) / 1e6)
        options = CallOptions(cache_dir=str(tmp_path), policy=FAST)
        (result,) = asyncio.run(arun_requests(spec, [request], options))
    assert result.outcome == "ok"
    assert result.input_tokens > 1_000  # the provider's own count, past the first tier
    tier_price = (result.input_tokens * 2.0 + result.output_tokens * 8.0) / 1e6
    assert result.cost_usd == pytest.approx(tier_price)
