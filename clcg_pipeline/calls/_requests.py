"""One exact provider request, its content hash (the call id) and the template contract.

The call id hashes only what changes the output (model key, messages, sampling settings,
repetition, prompt version), never timeouts, retries or concurrency.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field

from clcg_pipeline.config import ConditionSettings, ContextScope, ModelSpec

# The responses' prompt versions: the offline reader routes these prompt families to itself.
PROMPT_VERSIONS: dict[ContextScope, str] = {
    "full_body": "full_body-v1",
    "closed_book": "closed_book-v1",
    "item_grounded": "item_grounded-v1",
}

# The template contract shared by the responses' prompts (``inference``), the offline reader
# (``_lexical``) and the fake provider server.
# Marker that opens every passage paragraph; the offline reader and the fake server find
# paragraphs by it.
PARAGRAPH_MARK = "¶"
NOT_STATED = "Not stated"
POLAR_HINT = "(answer Yes, No or Not stated)"
OPTIONS_HINT = "Options (answer with the text of exactly one option):"


@dataclass(frozen=True)
class ChatRequest:
    """One exact provider request.

    ``metadata`` (doc id, language, scope, item ids) is never hashed, so identical closed-book
    requests in different languages share one cache entry. ``model_key`` is bound by the runner
    (see :func:`model_key`) so that the call id names the model as well as the request.
    """

    messages: list[dict[str, str]]
    settings: ConditionSettings
    rep: int
    prompt_version: str
    metadata: dict[str, str] = field(default_factory=dict)
    model_key: str = ""

    @functools.cached_property
    def request_hash(self) -> str:
        """sha256 of everything that changes the output except the model."""
        return _sha256(
            {
                "messages": self.messages,
                "settings": self.settings.model_dump(mode="json"),
                "rep": self.rep,
                "prompt_version": self.prompt_version,
            }
        )

    @functools.cached_property
    def call_id(self) -> str:
        """Content hash of the exact request for ``model_key`` (the cache key)."""
        return _sha256({"model": self.model_key, "request": self.request_hash})

    @property
    def text(self) -> str:
        """All message contents, for token estimates."""
        return "\n".join(m["content"] for m in self.messages)


def _sha256(obj: object) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def model_key(model: ModelSpec) -> str:
    """What identifies a model's outputs: provider, model name, endpoint and options.

    The model id (a label), key variable, timeouts, attempts and concurrency are left out:
    they do not change what the model answers.
    """
    return _sha256(
        {
            "provider": model.provider,
            "model": model.model,
            "base_url": model.base_url if model.provider == "openai_compatible" else None,
            "options": dict(sorted(model.options.items())),
        }
    )


def resolve_settings(model: ModelSpec, condition: ConditionSettings | None) -> ConditionSettings:
    """The condition's non-None settings override the model's defaults."""
    cond = condition or ConditionSettings()
    return ConditionSettings(
        temperature=cond.temperature if cond.temperature is not None else model.temperature,
        top_p=cond.top_p if cond.top_p is not None else model.top_p,
        seed=cond.seed if cond.seed is not None else model.seed,
        max_output_tokens=(
            cond.max_output_tokens if cond.max_output_tokens is not None else model.max_output_tokens
        ),
    )
