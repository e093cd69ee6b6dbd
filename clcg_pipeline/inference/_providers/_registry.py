"""Provider registry: each SDK is imported only when a model of its provider is used."""

from __future__ import annotations

import importlib

from clcg_pipeline.config import ModelSpec
from clcg_pipeline.inference._credentials import api_key
from clcg_pipeline.inference._providers._base import ModelAPI

_ADAPTERS: dict[str, tuple[str, str]] = {
    "openai": ("clcg_pipeline.inference._providers.openai", "OpenAIAPI"),
    "openai_compatible": ("clcg_pipeline.inference._providers.openai", "OpenAIAPI"),
    "anthropic": ("clcg_pipeline.inference._providers.anthropic", "AnthropicAPI"),
    "gemini": ("clcg_pipeline.inference._providers.google", "GoogleAPI"),
    "offline": ("clcg_pipeline.inference._providers.offline", "OfflineAPI"),
}


def get_api(spec: ModelSpec) -> ModelAPI:
    """The adapter for ``spec`` (checks its credentials first)."""
    try:
        module_name, class_name = _ADAPTERS[spec.provider]
    except KeyError:
        raise ValueError(f"model {spec.id!r}: no adapter for provider {spec.provider!r}") from None
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(spec, api_key(spec))
