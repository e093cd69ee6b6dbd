"""``gemini``: generateContent through the google-genai SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pydantic
from google import genai
from google.genai import errors, types

from clcg_pipeline.calls._providers._base import (
    CALL_ID_HEADER,
    DECODE_ERRORS,
    ModelAPI,
    ModelOutput,
    ProviderError,
    classify_error,
    classify_status,
    outcome_for,
    split_system,
)
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.config import ConditionSettings, ModelSpec


def completion_config(spec: ModelSpec, settings: ConditionSettings, system: str | None) -> dict[str, Any]:
    """GenerateContentConfig fields for ``settings``: the one place they are converted."""
    # No tools, so automatic function calling has nothing to do; off keeps it one HTTP call.
    config: dict[str, Any] = {
        "candidate_count": 1,
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
    }
    if system:
        config["system_instruction"] = system
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.top_p is not None:
        config["top_p"] = settings.top_p
    if settings.seed is not None:
        config["seed"] = settings.seed
    if settings.max_output_tokens is not None:
        config["max_output_tokens"] = settings.max_output_tokens
    return config


def contents(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [
        {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
        for m in messages
    ]


def classify(exc: Exception) -> ProviderError:
    """Map a google-genai exception to a retry class."""
    status = None
    if isinstance(exc, errors.APIError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        error_class = f"{type(exc).__name__}:{exc.code}"
        status = classify_status(int(exc.code or 0), error_class, str(exc.message), headers)
    return classify_error(
        exc,
        status=status,
        timeout=(httpx2.TimeoutException, TimeoutError),
        connection=(httpx2.TransportError,),
        malformed=(errors.UnknownApiResponseError, *DECODE_ERRORS),
    )


def output_from_response(response: Any) -> ModelOutput:
    """A GenerateContentResponse as a :class:`ModelOutput`."""
    usage = response.usage_metadata
    candidates = response.candidates or []
    feedback = response.prompt_feedback
    if not candidates:
        if feedback is not None and feedback.block_reason is not None:
            # The prompt itself was blocked: an expected outcome with a reason.
            return ModelOutput(None, str(feedback.block_reason.value), 0, 0, "refused", "PromptBlocked")
        raise ProviderError("transient", "MalformedResponse", "response has no candidates")
    candidate = candidates[0]
    parts = (candidate.content.parts or []) if candidate.content else []
    text = "".join(p.text for p in parts if p.text) or None
    reason = candidate.finish_reason.value if candidate.finish_reason is not None else None
    return ModelOutput(
        text=text,
        finish_reason=reason,
        input_tokens=int(usage.prompt_token_count or 0) if usage else 0,
        output_tokens=int(usage.candidates_token_count or 0) if usage else 0,
        outcome=outcome_for(reason),
    )


class GoogleAPI(ModelAPI):
    provider = "gemini"

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        super().__init__(spec, api_key)
        # No retry_options: the SDK then makes one attempt and the runner owns retries.
        self.client = genai.Client(
            api_key=api_key,
            http_options=types.HttpOptions(base_url=spec.base_url, timeout=int(spec.timeout_s * 1000)),
        )

    def config(
        self, request: ChatRequest, *, headers: dict[str, str] | None = None
    ) -> types.GenerateContentConfig:
        system, _ = split_system(request.messages)
        http = types.HttpOptions(headers=headers) if headers else None
        return types.GenerateContentConfig(
            **completion_config(self.spec, request.settings, system), http_options=http
        )

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        _, messages = split_system(request.messages)
        try:
            response = await self.client.aio.models.generate_content(
                model=self.spec.model,
                contents=contents(messages),  # type: ignore[arg-type]
                config=self.config(request, headers={CALL_ID_HEADER: request.call_id}),
            )
        except (errors.APIError, httpx2.HTTPError, json.JSONDecodeError, pydantic.ValidationError) as exc:
            raise classify(exc) from None
        return output_from_response(response)

    async def aclose(self) -> None:
        await self.client.aio.aclose()
