"""OpenAI Batch: one JSONL file of chat-completion bodies, uploaded, then read back."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from clcg_pipeline.calls._batch._base import CONTROL_RETRIES, BatchBackend
from clcg_pipeline.calls._credentials import api_key
from clcg_pipeline.calls._providers._base import ModelOutput, ProviderError
from clcg_pipeline.calls._providers.openai import OpenAIAPI, output_from_completion
from clcg_pipeline.calls._requests import ChatRequest
from clcg_pipeline.config import ModelSpec

_ENDED = ("completed", "failed", "expired", "cancelled")


class OpenAIBatch(BatchBackend):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        key = api_key(spec)
        self.client = openai.OpenAI(
            api_key=key or "unused", base_url=spec.base_url, max_retries=CONTROL_RETRIES, timeout=120
        )
        self.adapter = OpenAIAPI(spec, key)

    def submit(self, requests: Sequence[ChatRequest]) -> str:
        lines = [
            json.dumps(
                {
                    "custom_id": r.call_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": self.adapter.body(r),
                },
                ensure_ascii=False,
            )
            for r in requests
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        upload = self.client.files.create(file=("clcg-batch.jsonl", io.BytesIO(data)), purpose="batch")
        batch = self.client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        return batch.id

    def ended(self, batch_id: str) -> bool:
        return self.client.batches.retrieve(batch_id).status in _ENDED

    def collect(self, batch_id: str) -> Iterator[tuple[str, ModelOutput | str]]:
        batch = self.client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for line in self.client.files.content(file_id).text.splitlines():
                if line.strip():
                    yield _outcome(json.loads(line))


def _outcome(record: dict[str, Any]) -> tuple[str, ModelOutput | str]:
    """(call id, output or error class) of one line of a batch's output or error file."""
    response = record.get("response") or {}
    if record.get("error") or response.get("status_code") != 200:
        return record["custom_id"], f"BatchError:{response.get('status_code', 'failed')}"
    try:
        return record["custom_id"], output_from_completion(ChatCompletion.model_validate(response["body"]))
    except (ProviderError, ValueError):
        return record["custom_id"], "MalformedResponse"
