"""``anthropic``: the Messages API."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pydantic

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

# The Messages API requires max_tokens; this is used when neither model nor condition sets one.
DEFAULT_MAX_TOKENS = 4096


def completion_config(spec: ModelSpec, settings: ConditionSettings) -> dict[str, Any]:
    """Messages parameters for ``settings``: the one place they are converted.

    The API has no seed, so a seed cannot be honoured and is left out; repetitions are still
    separate calls because the repetition index is part of the cache key. This SDK's typed
    ``create`` no longer lists temperature/top_p, so :meth:`AnthropicAPI.generate` sends them
    in ``extra_body`` (the HTTP API takes them for models that support them);
    ``options.send_sampling: false`` omits them for models that reject them.
    """
    if settings.temperature is not None and settings.temperature > 1:
        raise ValueError(
            f"model {spec.id!r}: anthropic accepts temperature in [0, 1], got {settings.temperature}"
        )
    config: dict[str, Any] = {"max_tokens": settings.max_output_tokens or DEFAULT_MAX_TOKENS}
    if spec.options.get("send_sampling", True):
        if settings.temperature is not None:
            config["temperature"] = settings.temperature
        if settings.top_p is not None:
            config["top_p"] = settings.top_p
    return config


SAMPLING_KEYS = ("temperature", "top_p")


def classify(exc: Exception) -> ProviderError:
    """Map an Anthropic SDK exception to a retry class."""
    status = (
        classify_status(exc.status_code, type(exc).__name__, str(exc.message), exc.response.headers)
        if isinstance(exc, anthropic.APIStatusError)
        else None
    )
    return classify_error(
        exc,
        status=status,
        timeout=(anthropic.APITimeoutError,),
        connection=(anthropic.APIConnectionError,),
        malformed=(anthropic.APIResponseValidationError, *DECODE_ERRORS),
    )


class AnthropicAPI(ModelAPI):
    provider = "anthropic"

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        super().__init__(spec, api_key)
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=spec.base_url, max_retries=0, timeout=spec.timeout_s
        )

    def params(self, request: ChatRequest) -> dict[str, Any]:
        """The Messages request body as JSON (the batch API takes it as is)."""
        system, messages = split_system(request.messages)
        params: dict[str, Any] = {
            "model": self.spec.model,
            "messages": messages,
            **completion_config(self.spec, request.settings),
        }
        if system:
            params["system"] = system
        return params

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        params = self.params(request)
        sampling = {k: params.pop(k) for k in SAMPLING_KEYS if k in params}
        try:
            response = await self.client.messages.create(
                **params,
                extra_body=sampling or None,
                extra_headers={CALL_ID_HEADER: request.call_id},
                timeout=timeout_s,
            )
        except (anthropic.AnthropicError, json.JSONDecodeError, pydantic.ValidationError) as exc:
            raise classify(exc) from None
        return output_from_message(response)

    async def aclose(self) -> None:
        await self.client.close()


def output_from_message(response: Any) -> ModelOutput:
    """A Messages response (object or dict) as a :class:`ModelOutput`."""
    get = (lambda o, k: o.get(k)) if isinstance(response, dict) else getattr
    blocks = get(response, "content") or []
    texts = [get(b, "text") for b in blocks if get(b, "type") == "text"]
    stop = get(response, "stop_reason")
    usage = get(response, "usage")
    if stop is None and not texts:
        raise ProviderError("transient", "MalformedResponse", "response has no content")
    return ModelOutput(
        text="".join(t for t in texts if t) if texts else None,
        finish_reason=stop,
        input_tokens=int(get(usage, "input_tokens") or 0) if usage else 0,
        output_tokens=int(get(usage, "output_tokens") or 0) if usage else 0,
        outcome=outcome_for(stop),
    )
