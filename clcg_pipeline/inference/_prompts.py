"""Versioned prompt templates and the exact provider request.

A template id names the wording; changing a single character of a template must bump its
version, because the version and the rendered text both enter the call's content hash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from clcg_pipeline.calls import (
    NOT_STATED,
    OPTIONS_HINT,
    PARAGRAPH_MARK,
    POLAR_HINT,
    PROMPT_VERSIONS,
    ChatRequest,
)
from clcg_pipeline.config import ConditionSettings

Scope = Literal["full_body", "closed_book", "item_grounded"]

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
