"""Shared fixtures: a fake provider server and model specs pointing at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clcg_pipeline.calls import RetryPolicy
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.inference import Question, render_request

FAKE_KEY_ENV = "CLCG_TEST_FAKE_KEY"
FAKE_KEY = "fake-clcg-test-7f3a9c1e-not-a-real-key"
FAST = RetryPolicy(backoff_base_s=0.005, backoff_cap_s=0.02, timeout_grace_s=0.5)
PROVIDERS = ("openai", "anthropic", "gemini")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    return FAKE_KEY


def spec_for(provider: str, url: str, **overrides: object) -> ModelSpec:
    base = f"{url}/v1" if provider in ("openai", "openai_compatible") else url
    fields: dict[str, object] = {
        "id": f"fake-{provider}",
        "provider": provider,
        "model": f"{provider}-model",
        "base_url": base,
        "api_key_env": FAKE_KEY_ENV,
        "timeout_s": 0.5,
        "max_attempts": 4,
        "concurrency": 8,
        "price_input_per_mtok": 1.0,
        "price_output_per_mtok": 4.0,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


def make_request(marker: str = "", *, n: int = 2, rep: int = 0, tag: str = "") -> ChatRequest:
    questions = [Question(f"q{i}", f"Question {i} {tag} {marker if i == 0 else ''}") for i in range(n)]
    return render_request(
        "full_body",
        questions=questions,
        paragraphs=[("p1", "The bridge was built in 1932."), ("p2", "Fishermen opposed it.")],
        settings=ConditionSettings(temperature=0.2, seed=42, max_output_tokens=200),
        rep=rep,
        metadata={"doc_id": "d1", "language": "en"},
    )
