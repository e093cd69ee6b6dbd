"""What the fake server counts and how it answers a prompt: faults, markers, scripted replies."""

from __future__ import annotations

import base64
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from clcg_pipeline.calls._tokens import count_text_tokens

MARK_FAULT = re.compile(r"\[\[fault:(400|401|429|500|503|slow|malformed)x(\d+)\]\]")
_MARK_ANSWER = re.compile(r"\[\[answer:(\w+)\]\]")
# A scripted reply, returned verbatim (judge tests: malformed JSON, extra keys, bad evidence).
_MARK_REPLY = re.compile(r"\[\[reply:([A-Za-z0-9_=-]+)\]\]")
_QUESTION = re.compile(r"^\d+\.\s", re.MULTILINE)
CALL_ID_HEADER = "x-clcg-call-id"


@dataclass
class Faults:
    """Random fault probabilities (each request draws once) and their parameters."""

    latency_s: float = 0.0
    p429: float = 0.0
    p5xx: float = 0.0
    ptimeout: float = 0.0
    pmalformed: float = 0.0
    retry_after_s: float | None = 0.01
    slow_s: float = 2.0
    seed: int = 0
    batch_polls: int = 1  # retrievals that still report a batch in progress


@dataclass
class State:
    faults: Faults = field(default_factory=Faults)
    rng: random.Random = field(default_factory=random.Random)
    requests: Counter[str] = field(default_factory=Counter)
    completed: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(default_factory=Counter)
    auth_seen: set[str] = field(default_factory=set)
    in_flight: int = 0
    max_in_flight: int = 0
    # For benchmarks: when calls were in flight (first arrival, last departure, busy seconds).
    first_t: float | None = None
    last_t: float | None = None
    busy_s: float = 0.0
    busy_since: float = 0.0
    departures: list[float] = field(default_factory=list)  # monotonic times, for a calls/s timeline
    arrivals: list[float] = field(default_factory=list)  # monotonic times, as departures
    # The calls in flight as each request arrives (itself included): a stream that keeps its
    # limiter full finds its concurrency limit here after the first round, partition after partition.
    in_flight_at_arrival: list[int] = field(default_factory=list)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  # last body per call id
    batch_creates: int = 0
    batch_requests: Counter[str] = field(default_factory=Counter)


def usage_tokens(text: str | None) -> int:
    """Tokens the server reports as used: cl100k_base counts, like a provider's own (a character
    share would under-count scripts that take a token per character, and miss price tiers)."""
    return count_text_tokens(text or "")


def _n_questions(text: str) -> int:
    return len(_QUESTION.findall(text))


def scripted_answer(text: str) -> tuple[str | None, str]:
    """(reply text, kind) for a prompt: kind is normal, wrong_length, non_json, truncated, refusal."""
    n = _n_questions(text)
    mode = _MARK_ANSWER.search(text)
    kind = mode.group(1) if mode else "normal"
    scripted = _MARK_REPLY.search(text)
    if scripted and kind == "normal":
        return base64.urlsafe_b64decode(scripted.group(1)).decode("utf-8"), kind
    answers = [f"answer {i + 1}" for i in range(n)]
    if kind == "wrong_length":
        return json.dumps(answers[:-1] if n > 1 else [*answers, "extra"]), kind
    if kind == "non_json":
        return "I think the first answer is probably the bridge.", kind
    if kind == "truncated":
        full = json.dumps(answers)
        return full[: max(2, len(full) * 2 // 3)], kind
    if kind == "refusal":
        return None, kind
    if kind == "prose":
        return "Here are the answers:\n```json\n" + json.dumps(answers) + ",\n```", "normal"
    return json.dumps(answers), kind


def reply_marker(text: str) -> str:
    """The prompt marker that makes the server reply exactly ``text`` (urlsafe base64 inside)."""
    return f"[[reply:{base64.urlsafe_b64encode(text.encode('utf-8')).decode('ascii')}]]"
