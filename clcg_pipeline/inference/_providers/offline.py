"""``provider: offline``: local readers that need no network and no key."""

from __future__ import annotations

from clcg_pipeline.config import ModelSpec
from clcg_pipeline.inference._lexical import lexical_answers
from clcg_pipeline.inference._prompts import ChatRequest
from clcg_pipeline.inference._providers._base import ModelAPI, ModelOutput
from clcg_pipeline.inference._tokens import count_tokens

_MODELS = ("lexical-overlap-v1",)


class OfflineAPI(ModelAPI):
    provider = "offline"

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        super().__init__(spec, api_key)
        if spec.model not in _MODELS:
            raise ValueError(
                f"model {spec.id!r}: offline model {spec.model!r} unknown; expected one of {_MODELS}"
            )
        threshold = spec.options.get("threshold", 0.2)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise ValueError(
                f"model {spec.id!r}: options.threshold must be a number in [0, 1], got {threshold!r}"
            )
        self.threshold = float(threshold)

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
        text = lexical_answers(user, threshold=self.threshold)
        return ModelOutput(
            text=text,
            finish_reason="stop",
            input_tokens=count_tokens(request.text),
            output_tokens=count_tokens(text),
        )


__all__ = ["OfflineAPI"]
