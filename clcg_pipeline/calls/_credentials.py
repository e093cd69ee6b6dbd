"""API keys: read from the environment at call time, never stored or logged."""

from __future__ import annotations

import os

from clcg_pipeline.config import ModelSpec


class MissingCredentialsError(RuntimeError):
    """A model's key variable is unset; the message names the variable, never a value."""


def _needs_key(model: ModelSpec) -> bool:
    if model.provider == "offline":
        return False
    # Local OpenAI-compatible servers (vLLM, Ollama, llama.cpp) often need no key.
    return model.provider != "openai_compatible" or bool(model.api_key_env)


def check_credentials(model: ModelSpec) -> None:
    """Raise :class:`MissingCredentialsError` before any call when the model's key is unset."""
    if not _needs_key(model):
        return
    if not model.api_key_env:
        raise MissingCredentialsError(f"model {model.id!r} (provider {model.provider}) has no api_key_env")
    if not os.environ.get(model.api_key_env, "").strip():
        raise MissingCredentialsError(
            f"model {model.id!r} needs its API key in environment variable {model.api_key_env}, which is "
            "unset or empty; export it (keys are never read from files)"
        )


def api_key(model: ModelSpec) -> str | None:
    """The key for ``model`` (None when it needs none). Callers must not store or log it."""
    check_credentials(model)
    if not model.api_key_env:
        return None
    value = os.environ.get(model.api_key_env, "").strip()
    return value or None
