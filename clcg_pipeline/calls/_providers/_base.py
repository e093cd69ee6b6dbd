"""The one model interface every provider adapter implements.

Adapters convert the request and generation settings in one place, call their SDK once
(SDK retries off: the runner owns retries), and classify what happened: expected outcomes
(refusal, truncation, a request the provider rejects) come back as a :class:`ModelOutput`
with a reason; transient trouble raises :class:`ProviderError` for the runner to retry.
"""

from __future__ import annotations

import email.utils
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.calls._results import REFUSAL_REASONS, TRUNCATED_REASONS
from clcg_pipeline.config import ModelSpec

Outcome = Literal["ok", "refused", "truncated", "error"]
ErrorKind = Literal["rate_limit", "transient", "timeout", "bad_request", "config"]

# Header that carries the call id to the server: harmless for real providers, and lets the
# fake test server count requests per call (repetitions share a body but not a call id).
CALL_ID_HEADER = "x-clcg-call-id"


@dataclass(frozen=True)
class ModelOutput:
    """What one successful HTTP exchange produced."""

    text: str | None
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    outcome: Outcome = "ok"
    error: str | None = None


class ProviderError(Exception):
    """A failed attempt, classified for the runner. ``message`` never contains a key."""

    def __init__(self, kind: ErrorKind, error_class: str, message: str, *, retry_after: float | None = None):
        super().__init__(f"{error_class}: {message}")
        self.kind = kind
        self.error_class = error_class
        self.retry_after = retry_after


def outcome_for(finish_reason: str | None, *, refused: bool = False) -> Outcome:
    if refused or finish_reason in REFUSAL_REASONS:
        return "refused"
    if finish_reason in TRUNCATED_REASONS:
        return "truncated"
    return "ok"


def retry_after_s(headers: Mapping[str, str] | Any | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except (AttributeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return None if parsed is None else max(0.0, parsed.timestamp() - time.time())


# Phrases the three providers use when a prompt exceeds the context window.
_OVERFLOW_HINTS = (
    "context length",
    "context window",
    "prompt is too long",
    "too many tokens",
    "input token count",
)


#: Body-decoding failures every SDK can raise on a malformed response.
DECODE_ERRORS: tuple[type[Exception], ...] = (json.JSONDecodeError, pydantic.ValidationError)


def classify_error(
    exc: Exception,
    *,
    status: ProviderError | None,
    timeout: tuple[type[Exception], ...],
    connection: tuple[type[Exception], ...],
    malformed: tuple[type[Exception], ...],
) -> ProviderError:
    """Map an SDK exception to a retry class, given which of the SDK's classes mean what.

    ``status`` is the adapter's :func:`classify_status` result when ``exc`` carries an HTTP
    status. Timeouts are tested before connection errors because some SDKs derive one from
    the other. Anything else is not ours to retry and is raised again.
    """
    name = type(exc).__name__
    if status is not None:
        return status
    if isinstance(exc, timeout):
        return ProviderError("timeout", name, "request timed out")
    if isinstance(exc, connection):
        return ProviderError("transient", name, "connection failed")
    if isinstance(exc, malformed):
        return ProviderError("transient", "MalformedResponse", f"{name}: unreadable response body")
    raise exc


def classify_status(status: int, error_class: str, message: str, headers: Any | None) -> ProviderError:
    """Map an HTTP status to a retry class; shared by the HTTP-based adapters."""
    if status == 429:
        return ProviderError("rate_limit", error_class, message, retry_after=retry_after_s(headers))
    if status == 408 or status >= 500:
        return ProviderError("transient", error_class, message, retry_after=retry_after_s(headers))
    if status in (400, 413, 422):
        # The provider rejects this request (context overflow, invalid input): a row, not a crash.
        lowered = message.lower()
        if any(hint in lowered for hint in _OVERFLOW_HINTS):
            return ProviderError("bad_request", "ContextOverflow", message)
        return ProviderError("bad_request", error_class, message)
    return ProviderError("config", error_class, message)


class ModelAPI(ABC):
    """One provider's model. ``generate`` makes exactly one attempt."""

    provider: str = ""

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        self.spec = spec
        self._secret = api_key

    def redact(self, text: str) -> str:
        """``text`` with the key masked, for the rare SDK message that echoes it."""
        return text.replace(self._secret, "***") if self._secret else text

    @abstractmethod
    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


def split_system(messages: list[dict[str, str]]) -> tuple[str | None, list[dict[str, str]]]:
    """The system prompt apart from the other messages (Anthropic and Gemini take it apart)."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
    return system, [m for m in messages if m["role"] != "system"]
