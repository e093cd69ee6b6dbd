"""Answer parsing: forgiving where it is safe, strict where a wrong answer could slip in.

Forgiving: code fences, prose around the array, trailing commas, an object wrapping the
array, ``{"answer": ...}`` elements, a bare JSON string for a one-question call.
Strict: a wrong-length array, a non-answer element, a refusal or a truncated response
never yields a shifted answer; the affected items get ``unparseable`` or ``missing``.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from clcg_pipeline.calls import REFUSAL_REASONS, TRUNCATED_REASONS

Status = Literal["ok", "unparseable", "missing"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[\]}])")
_WRAP_KEYS = ("answers", "answer", "responses", "results")


def _strip_fences(text: str) -> str:
    match = _FENCE.search(text)
    if match:
        return match.group(1)
    # An opening fence without its close (e.g. a truncated reply).
    return re.sub(r"^\s*```(?:json|JSON)?\s*", "", text)


def _loads(candidate: str) -> object:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        # A trailing comma is the commonest near-JSON slip; removing it cannot move an answer.
        return json.loads(_TRAILING_COMMA.sub(r"\1", candidate))


def _decode(text: str) -> object:
    """The JSON value in ``text`` or raises ValueError."""
    body = _strip_fences(text).strip()
    try:
        return _loads(body)
    except json.JSONDecodeError:
        pass
    # Leading or trailing prose: take the outermost [...] (or {...}) span.
    for open_, close in (("[", "]"), ("{", "}")):
        start, end = body.find(open_), body.rfind(close)
        if start != -1 and end > start:
            try:
                return _loads(body[start : end + 1])
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON value found")


def _unwrap(value: object) -> object:
    if isinstance(value, dict):
        for key in _WRAP_KEYS:
            if isinstance(value.get(key), list):
                return value[key]
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return value


def _element(value: object) -> tuple[str | None, Status]:
    if isinstance(value, dict) and len(value) == 1:
        (value,) = value.values()
    if value is None:
        return None, "missing"
    if isinstance(value, bool):
        return ("Yes" if value else "No"), "ok"
    if isinstance(value, int | float):
        return str(value), "ok"
    if isinstance(value, str):
        stripped = value.strip()
        return (stripped, "ok") if stripped else (None, "missing")
    return None, "unparseable"


def _truncated_prefix(text: str) -> list[str]:
    """Complete string elements before the cut of a truncated array."""
    body = _strip_fences(text)
    start = body.find("[")
    if start == -1:
        return []
    decoder = json.JSONDecoder()
    out: list[str] = []
    pos = start + 1
    while True:
        while pos < len(body) and body[pos] in " \t\r\n":
            pos += 1
        try:
            value, end = decoder.raw_decode(body, pos)
        except json.JSONDecodeError:
            return out
        rest = body[end:].lstrip()
        # Only an element followed by a comma is known to be complete and final.
        if not isinstance(value, str) or not rest.startswith(","):
            return out
        out.append(value)
        pos = body.index(",", end) + 1


def parse_answers(
    text: str | None, n_questions: int, *, finish_reason: str | None
) -> list[tuple[str | None, Status]]:
    """(answer, status) per question, in question order; always ``n_questions`` entries."""
    if n_questions < 0:
        raise ValueError(f"n_questions must be >= 0, got {n_questions}")
    if finish_reason in REFUSAL_REASONS:
        # A refusal is a response, just not an answer: unparseable, whatever text came with it.
        return [(None, "unparseable")] * n_questions
    if text is None or not text.strip():
        return [(None, "missing")] * n_questions
    if finish_reason in TRUNCATED_REASONS:
        try:
            whole = _unwrap(_decode(text))
        except ValueError:
            whole = None
        if isinstance(whole, list) and len(whole) == n_questions:
            # The cut fell after the closing bracket: the answer is complete.
            return [_element(v) for v in whole]
        prefix = _truncated_prefix(text)[:n_questions]
        done: list[tuple[str | None, Status]] = [_element(v) for v in prefix]
        if len(done) < n_questions:
            # The element being written when the cut came is unparseable; later ones never came.
            done.append((None, "unparseable"))
        return done + [(None, "missing")] * (n_questions - len(done))
    try:
        value = _unwrap(_decode(text))
    except ValueError:
        return [(None, "unparseable")] * n_questions
    if isinstance(value, str | int | float) and n_questions == 1:
        return [_element(value)]
    if not isinstance(value, list):
        return [(None, "unparseable")] * n_questions
    if len(value) < n_questions:
        # Which answer was skipped is unknowable, so none is trusted (the protocol: too short = missing).
        return [(None, "missing")] * n_questions
    if len(value) > n_questions:
        return [(None, "unparseable")] * n_questions
    return [_element(v) for v in value]
