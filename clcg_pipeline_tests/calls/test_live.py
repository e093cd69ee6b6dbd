"""One real request per provider, for someone holding keys: `pytest -m live`.

Never runs by default (pyproject's addopts deselect `live`); each test also skips unless its
key variable is set. Model names can be overridden with CLCG_LIVE_<PROVIDER>_MODEL.
"""

import os

import pytest

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.inference import Question, parse_answers, render_request

pytestmark = pytest.mark.live

LIVE = {
    "openai": ("OPENAI_API_KEY", "gpt-4o-mini"),
    "anthropic": ("ANTHROPIC_API_KEY", "claude-3-5-haiku-latest"),
    "gemini": ("GEMINI_API_KEY", "gemini-2.0-flash"),
}


@pytest.mark.parametrize("provider", sorted(LIVE))
def test_one_real_call(provider: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    key_env, default_model = LIVE[provider]
    if not os.environ.get(key_env):
        pytest.skip(f"{key_env} is not set")
    model = ModelSpec(
        id=f"live-{provider}",
        provider=provider,  # type: ignore[arg-type]
        model=os.environ.get(f"CLCG_LIVE_{provider.upper()}_MODEL", default_model),
        api_key_env=key_env,
        max_output_tokens=100,
    )
    request = render_request(
        "full_body",
        questions=[Question("q1", "In which year was the bridge built?")],
        paragraphs=[("p1", "A ponte foi construída em 1932 pelos pescadores da vila.")],
        settings=ConditionSettings(temperature=0.0, max_output_tokens=100),
        rep=0,
    )
    [result] = run_requests(model, [request], CallOptions(cache_dir=str(tmp_path / "cache")))
    assert result.outcome == "ok", result.error
    [(answer, status)] = parse_answers(result.text, 1, finish_reason=result.finish_reason)
    assert status == "ok" and answer is not None and "1932" in answer
    cached = run_requests(model, [request], CallOptions(cache_dir=str(tmp_path / "cache")))
    assert cached[0].cached
    assert os.environ[key_env] not in "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
