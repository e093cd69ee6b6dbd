"""Anthropic Message Batches: the Messages API's params per request, results streamed back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast

import anthropic
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

from clcg_pipeline.calls._batch._base import CONTROL_RETRIES, BatchBackend
from clcg_pipeline.calls._credentials import api_key
from clcg_pipeline.calls._providers._base import ModelOutput, ProviderError
from clcg_pipeline.calls._providers.anthropic import AnthropicAPI, output_from_message
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.config import ModelSpec


class AnthropicBatch(BatchBackend):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        key = api_key(spec)
        self.client = anthropic.Anthropic(
            api_key=key, base_url=spec.base_url, max_retries=CONTROL_RETRIES, timeout=120
        )
        self.adapter = AnthropicAPI(spec, key)

    def submit(self, requests: Sequence[ChatRequest]) -> str:
        # The body is the online call's JSON (a plain dict, as the API takes it); the SDK types it as
        # a TypedDict, which a dict built key by key cannot be without restating every field.
        batch = self.client.messages.batches.create(
            requests=[
                {
                    "custom_id": r.call_id,
                    "params": cast(MessageCreateParamsNonStreaming, self.adapter.params(r)),
                }
                for r in requests
            ]
        )
        return batch.id

    def ended(self, batch_id: str) -> bool:
        return self.client.messages.batches.retrieve(batch_id).processing_status == "ended"

    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        for entry in self.client.messages.batches.results(batch_id):
            result = entry.result
            if result.type != "succeeded":
                yield entry.custom_id, f"Batch{result.type.capitalize()}"
                continue
            try:
                yield entry.custom_id, output_from_message(result.message)
            except ProviderError:
                yield entry.custom_id, "MalformedResponse"
