"""Which offline model answers which prompt family (calls/_providers/offline.py)."""

from __future__ import annotations

import asyncio

import pytest

from clcg_pipeline.calls._providers.offline import OfflineAPI, prompt_family
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.inference._prompts import Question, render_request


def _request(version: str) -> ChatRequest:
    real = render_request(
        "full_body",
        questions=[Question("q1", "When did the bridge open?")],
        paragraphs=[("p1", "The bridge over the river opened in 1961.")],
        settings=ConditionSettings(),
        rep=0,
    )
    return ChatRequest(messages=real.messages, settings=real.settings, rep=0, prompt_version=version)


def _spec(model: str) -> ModelSpec:
    return ModelSpec(id="m", provider="offline", model=model)


def test_family_is_the_version_without_its_suffix() -> None:
    assert prompt_family("error-judge-v1") == "error-judge"
    assert prompt_family("gran-word-qa-v12") == "gran-word-qa"
    assert prompt_family("itemgen-v1-L0") == "itemgen"


def test_reader_answers_any_prompt_but_a_judge_refuses_what_it_cannot_judge() -> None:
    reader = OfflineAPI(_spec("lexical-overlap-v1"), None)
    assert "1961" in asyncio.run(reader.generate(_request("full_body-v1"), timeout_s=1)).text
    # Item generation and level audits have no handler of their own: the reader's answer, as before.
    assert asyncio.run(reader.generate(_request("itemgen-v1-L0"), timeout_s=1)).text
    judge = OfflineAPI(_spec("rule-judge-v1"), None)
    with pytest.raises(ValueError, match=r"'rule-judge-v1' cannot answer prompt 'full_body-v1'"):
        asyncio.run(judge.generate(_request("full_body-v1"), timeout_s=1))


def test_unknown_offline_model_is_refused() -> None:
    with pytest.raises(ValueError, match="offline model 'gpt-pretend' unknown"):
        OfflineAPI(_spec("gpt-pretend"), None)


def test_every_route_resolves_to_a_handler() -> None:
    """Routes name their handlers as text; a module moved elsewhere must not go unnoticed."""
    from clcg_pipeline.calls._providers.offline import _ROUTES, _resolve

    for routes in _ROUTES.values():
        for handler in routes.values():
            assert callable(_resolve(handler)), handler
