"""Provider registry: each SDK is imported only when a model of its provider is used."""

from __future__ import annotations

import importlib

from clcg_pipeline.calls._credentials import api_key
from clcg_pipeline.calls._providers._base import ModelAPI
from clcg_pipeline.config import ModelSpec

_ADAPTERS: dict[str, tuple[str, str]] = {
    "openai": ("clcg_pipeline.calls._providers.openai", "OpenAIAPI"),
    "openai_compatible": ("clcg_pipeline.calls._providers.openai", "OpenAIAPI"),
    "anthropic": ("clcg_pipeline.calls._providers.anthropic", "AnthropicAPI"),
    "gemini": ("clcg_pipeline.calls._providers.google", "GoogleAPI"),
    "offline": ("clcg_pipeline.calls._providers.offline", "OfflineAPI"),
}


def get_api(spec: ModelSpec) -> ModelAPI:
    """The adapter for ``spec`` (checks its credentials first)."""
    try:
        module_name, class_name = _ADAPTERS[spec.provider]
    except KeyError:
        raise ValueError(f"model {spec.id!r}: no adapter for provider {spec.provider!r}") from None
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(spec, api_key(spec))
