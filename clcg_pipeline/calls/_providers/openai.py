"""``openai`` and ``openai_compatible`` (vLLM, Ollama, llama.cpp, DeepSeek, ...): chat completions."""

from __future__ import annotations

import json
from typing import Any

import openai
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
)
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.config import ConditionSettings, ModelSpec


def completion_config(spec: ModelSpec, settings: ConditionSettings) -> dict[str, Any]:
    """Chat-completions parameters for ``settings``: the one place they are converted."""
    config: dict[str, Any] = {}
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.top_p is not None:
        config["top_p"] = settings.top_p
    if settings.seed is not None:
        config["seed"] = settings.seed
    if settings.max_output_tokens is not None:
        # OpenAI's current models take max_completion_tokens; compatible servers know max_tokens.
        key = "max_completion_tokens" if spec.provider == "openai" else "max_tokens"
        config[key] = settings.max_output_tokens
    return config


def classify(exc: Exception) -> ProviderError:
    """Map an OpenAI SDK exception to a retry class."""
    status = (
        classify_status(exc.status_code, type(exc).__name__, str(exc.message), exc.response.headers)
        if isinstance(exc, openai.APIStatusError)
        else None
    )
    return classify_error(
        exc,
        status=status,
        timeout=(openai.APITimeoutError,),
        connection=(openai.APIConnectionError,),
        malformed=(openai.APIResponseValidationError, *DECODE_ERRORS),
    )


def output_from_completion(response: Any) -> ModelOutput:
    """A ChatCompletion as a :class:`ModelOutput`."""
    if not getattr(response, "choices", None):
        raise ProviderError("transient", "MalformedResponse", "response has no choices")
    choice = response.choices[0]
    message = choice.message
    usage = response.usage
    refused = bool(getattr(message, "refusal", None))
    return ModelOutput(
        text=message.content,
        finish_reason=choice.finish_reason,
        input_tokens=usage.prompt_tokens if usage else 0,
        output_tokens=usage.completion_tokens if usage else 0,
        outcome=outcome_for(choice.finish_reason, refused=refused),
    )


def output_from_body(data: Any) -> ModelOutput:
    """A chat-completions JSON body (as parsed by ``json.loads``) as a :class:`ModelOutput`.

    Reads what :func:`output_from_completion` reads, from the dict; a body of the wrong shape
    is a malformed response (retried), as the SDK's model would have made of it.
    """
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content")
        finish_reason = choice.get("finish_reason")
        usage = data.get("usage") or {}
        input_tokens = int(usage.get("prompt_tokens") or 0)
        output_tokens = int(usage.get("completion_tokens") or 0)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        raise ProviderError("transient", "MalformedResponse", "response has no choices") from None
    if not all(v is None or isinstance(v, str) for v in (text, finish_reason)):
        raise ProviderError("transient", "MalformedResponse", "response message is not text")
    return ModelOutput(
        text=text,
        finish_reason=finish_reason,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        outcome=outcome_for(finish_reason, refused=bool(message.get("refusal"))),
    )


class OpenAIAPI(ModelAPI):
    provider = "openai"

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        super().__init__(spec, api_key)
        # max_retries=0: retries belong to the runner, which sees every attempt.
        self.client = openai.AsyncOpenAI(
            api_key=api_key or "unused",
            base_url=spec.base_url,
            max_retries=0,
            timeout=spec.timeout_s,
        )

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        try:
            # The SDK's documented custom-request path with the body already in wire form:
            # `chat.completions.create` re-walks every message through its TypedDict
            # transform, which was a third of the runner's CPU per call. The reply comes back
            # as bytes (errors are still raised by the SDK) and only the five fields the runner
            # keeps are read: building the ChatCompletion model was another tenth of it.
            content = await self.client.post(
                "/chat/completions",
                cast_to=bytes,
                body=self.body(request),
                options={"headers": {CALL_ID_HEADER: request.call_id}, "timeout": timeout_s},
            )
        except (openai.OpenAIError, json.JSONDecodeError, pydantic.ValidationError) as exc:
            raise classify(exc) from None
        try:
            data = json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = f"{type(exc).__name__}: unreadable response body"
            raise ProviderError("transient", "MalformedResponse", reason) from None
        return output_from_body(data)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The chat-completions request body as JSON (one line of a batch file)."""
        return {
            "model": self.spec.model,
            "messages": request.messages,
            **completion_config(self.spec, request.settings),
        }

    async def aclose(self) -> None:
        await self.client.close()
