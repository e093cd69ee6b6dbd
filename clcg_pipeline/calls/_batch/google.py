"""Gemini batch mode: inlined requests, each keyed by its call id in the metadata."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from google import genai
from google.genai import types

from clcg_pipeline.calls._batch._base import CONTROL_RETRIES, BatchBackend
from clcg_pipeline.calls._credentials import api_key
from clcg_pipeline.calls._providers._base import ModelOutput, ProviderError, split_system
from clcg_pipeline.calls._providers.google import completion_config, contents, output_from_response
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.config import ModelSpec

_ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")


class GeminiBatch(BatchBackend):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.client = genai.Client(
            api_key=api_key(spec),
            http_options=types.HttpOptions(
                base_url=spec.base_url, retry_options=types.HttpRetryOptions(attempts=CONTROL_RETRIES)
            ),
        )

    def _inlined(self, request: ChatRequest) -> types.InlinedRequest:
        system, messages = split_system(request.messages)
        config = completion_config(self.spec, request.settings, system)
        config.pop("automatic_function_calling", None)  # a client-side switch, not sent
        return types.InlinedRequest(
            contents=contents(messages),  # type: ignore[arg-type]
            metadata={"key": request.call_id},
            config=types.GenerateContentConfig(**config),
        )

    def submit(self, requests: Sequence[ChatRequest]) -> str:
        job = self.client.batches.create(model=self.spec.model, src=[self._inlined(r) for r in requests])
        if not job.name:
            raise RuntimeError(f"model {self.spec.id!r}: the batch API returned no job name")
        return job.name

    def ended(self, batch_id: str) -> bool:
        state = self.client.batches.get(name=batch_id).state
        return state is not None and state.value in _ENDED

    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        job = self.client.batches.get(name=batch_id)
        for entry in (job.dest.inlined_responses if job.dest else None) or []:
            key = (entry.metadata or {}).get("key")
            if not key:
                continue
            if entry.error is not None or entry.response is None:
                yield key, "BatchError"
                continue
            try:
                yield key, output_from_response(entry.response)
            except ProviderError:
                yield key, "MalformedResponse"
