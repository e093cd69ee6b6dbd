"""Versioned prompt templates and the exact provider request (STUDY.md section 4).

A template id names the wording; changing a single character of a template must bump its
version, because the version and the rendered text both enter the call's content hash.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from clcg_pipeline.config import ConditionSettings, ModelSpec

Scope = Literal["full_body", "closed_book", "item_grounded"]

PROMPT_VERSIONS: dict[str, str] = {
    "full_body": "full_body-v1",
    "closed_book": "closed_book-v1",
    "item_grounded": "item_grounded-v1",
}

# Marker that opens every passage paragraph; the offline reader and the fake test server
# find paragraphs by it, so it is part of the template contract.
PARAGRAPH_MARK = "¶"
NOT_STATED = "Not stated"
POLAR_HINT = "(answer Yes, No or Not stated)"
OPTIONS_HINT = "Options (answer with the text of exactly one option):"

_SYSTEM_PASSAGE = (
    "You are a careful reader taking a reading-comprehension test. Answer every question using "
    "only the passage given; do not use outside knowledge, tools or browsing. Write every answer "
    f'in English, briefly. When the passage does not support an answer, answer "{NOT_STATED}". '
    "Reply with a JSON array of strings only: one answer per question, in question order, "
    "with no other text."
)
_SYSTEM_CLOSED = (
    "You are taking a knowledge test. Answer every question from your own knowledge; no passage "
    "is given and no tools or browsing are available. Write every answer in English, briefly. "
    f'When you do not know, answer "{NOT_STATED}". Reply with a JSON array of strings only: one '
    "answer per question, in question order, with no other text."
)

_POLAR_LEVELS = {"L0"}
_POLAR_FORMATS = {"yes_no", "polar", "yes_no_not_stated", "yes_no_ns"}


@dataclass(frozen=True)
class Question:
    """One question as it enters a prompt."""

    item_id: str
    text: str
    options: tuple[str, ...] = ()
    polar: bool = False


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


def is_polar(level: object, answer_format: object) -> bool:
    """L0 items (or a yes/no answer format) take the Yes / No / Not stated answer set."""
    level_ok = isinstance(level, str) and level in _POLAR_LEVELS
    return level_ok or (isinstance(answer_format, str) and answer_format.lower() in _POLAR_FORMATS)


def _render_questions(questions: Sequence[Question]) -> str:
    lines: list[str] = []
    for n, q in enumerate(questions, start=1):
        text = " ".join(q.text.split())
        lines.append(f"{n}. {text} {POLAR_HINT}" if q.polar else f"{n}. {text}")
        if q.options:
            lines.append(f"   {OPTIONS_HINT}")
            lines.extend(f"   - {' '.join(o.split())}" for o in q.options)
    return "\n".join(lines)


def _render_passage(paragraphs: Sequence[tuple[str, str]]) -> str:
    return "\n\n".join(f"{PARAGRAPH_MARK}{pid} {' '.join(text.split())}" for pid, text in paragraphs)


def _closing(n: int) -> str:
    noun = "string" if n == 1 else "strings"
    return f"Reply with a JSON array of exactly {n} {noun}, one answer per question, in order."


def render_request(
    scope: Scope,
    *,
    questions: Sequence[Question],
    paragraphs: Sequence[tuple[str, str]] = (),
    settings: ConditionSettings,
    rep: int,
    metadata: Mapping[str, str] | None = None,
) -> ChatRequest:
    """Render one request of ``scope`` from (pid, text) paragraphs in ordinal order."""
    if scope not in PROMPT_VERSIONS:
        raise ValueError(f"unknown context_scope {scope!r}; expected one of {sorted(PROMPT_VERSIONS)}")
    if not questions:
        raise ValueError(f"{scope} request for {dict(metadata or {})} has no questions")
    n = len(questions)
    if scope == "closed_book":
        system = _SYSTEM_CLOSED
        user = f"Questions:\n{_render_questions(questions)}\n\n{_closing(n)}"
    else:
        if not paragraphs:
            raise ValueError(f"{scope} request for {dict(metadata or {})} has no passage paragraphs")
        system = _SYSTEM_PASSAGE
        user = (
            f"Passage:\n{_render_passage(paragraphs)}\n\n"
            f"Questions:\n{_render_questions(questions)}\n\n{_closing(n)}"
        )
    return ChatRequest(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        settings=settings,
        rep=rep,
        prompt_version=PROMPT_VERSIONS[scope],
        metadata=dict(metadata or {}),
    )
