"""``provider: offline``: local models that need no network and no key.

Each offline model answers the prompt families it knows; a family is the request's
``prompt_version`` without its ``-vN`` suffix (``error-judge-v1`` -> ``error-judge``). The
handlers live beside the prompts they answer and are imported on first use, so this module
stays the one place that says which offline model can answer what.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from clcg_pipeline.calls._lexical import (
    SIMULATED_DROP_PREFIX,
    lexical_answers,
    simulated_answers,
    simulated_drop_rate,
)
from clcg_pipeline.calls._providers._base import ModelAPI, ModelOutput
from clcg_pipeline.calls._requests import PROMPT_VERSIONS, ChatRequest
from clcg_pipeline.calls._tokens import count_tokens
from clcg_pipeline.config import ModelSpec

#: handler(request, spec) -> the model's reply text
OfflineHandler = Callable[[ChatRequest, ModelSpec], str]


def _reader(request: ChatRequest, spec: ModelSpec) -> str:
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    threshold = float(spec.options.get("threshold", 0.2))
    # The demo's simulated per-language gap (calls/_lexical.py): only for a passage in a
    # language that has a simulated_drop_<iso> option.
    language, doc_id = request.metadata.get("language", ""), request.metadata.get("doc_id", "")
    if language and doc_id and SIMULATED_DROP_PREFIX + language in spec.options:
        drop_rate = simulated_drop_rate(spec.options, language, spec.id)
        return simulated_answers(
            user, threshold=threshold, language=language, doc_id=doc_id, drop_rate=drop_rate
        )
    return lexical_answers(user, threshold=threshold)


_READER_FAMILIES = {version.rsplit("-v", 1)[0] for version in PROMPT_VERSIONS.values()}

# model name -> prompt family -> handler ("module:function" is imported on first use).
# lexical-overlap-v1 is the English-centric reader of the responses; rule-judge-v1 a
# rule-based stand-in for hosted judges; rule-writer-v1 a rule-based stand-in for the models
# that write auxiliary material (keypoint checklists, cloze confusions, word-level questions).
_ROUTES: dict[str, dict[str, OfflineHandler | str]] = {
    "lexical-overlap-v1": {
        # "*": any other prompt (item generation, level audits) gets the reader's lexical answer,
        # as before families existed; what it writes is then validated like any model's output.
        "*": _reader,
        **dict.fromkeys(_READER_FAMILIES, _reader),
        **dict.fromkeys(
            (
                "gran-word-qa",
                "gran-cloze",
                "gran-fill",
                "gran-summary",
                "gran-translate",
            ),
            "clcg_pipeline.granularity._offline:answer",
        ),
    },
    "rule-judge-v1": {
        "error-judge": "clcg_pipeline.validation.taxonomy._offline_judge:judge",
        "error-judge-pair": "clcg_pipeline.validation.taxonomy._offline_judge:judge_pair",
        "fill-judge": "clcg_pipeline.granularity._offline:judge_fill",
        "cloze-error-judge": "clcg_pipeline.granularity._offline:judge_cloze_error",
    },
    "rule-writer-v1": {
        "keypoints": "clcg_pipeline.validation.human._keypoints:write_keypoints_offline",
        "cloze-confusion": "clcg_pipeline.granularity._tasks:write_confusion_offline",
        "gran-word-question": "clcg_pipeline.granularity._tasks:write_word_questions_offline",
    },
}


def prompt_family(prompt_version: str) -> str:
    """``error-judge-v1`` -> ``error-judge``."""
    return prompt_version.rsplit("-v", 1)[0]


def _resolve(handler: OfflineHandler | str) -> OfflineHandler:
    if callable(handler):
        return handler
    module, name = handler.split(":")
    resolved: Any = getattr(importlib.import_module(module), name)
    return resolved  # type: ignore[no-any-return]


class OfflineAPI(ModelAPI):
    provider = "offline"

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        super().__init__(spec, api_key)
        if spec.model not in _ROUTES:
            raise ValueError(
                f"model {spec.id!r}: offline model {spec.model!r} unknown; expected one of {sorted(_ROUTES)}"
            )
        threshold = spec.options.get("threshold", 0.2)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise ValueError(
                f"model {spec.id!r}: options.threshold must be a number in [0, 1], got {threshold!r}"
            )
        self.threshold = float(threshold)
        # A bad simulated_drop_<iso> is refused here, before the first call, not mid-run.
        for key in spec.options:
            if key.startswith(SIMULATED_DROP_PREFIX):
                simulated_drop_rate(spec.options, key.removeprefix(SIMULATED_DROP_PREFIX), spec.id)

    async def generate(self, request: ChatRequest, *, timeout_s: float) -> ModelOutput:
        family = prompt_family(request.prompt_version)
        routes = _ROUTES[self.spec.model]
        if family not in routes and "*" not in routes:
            raise ValueError(
                f"model {self.spec.id!r}: offline model {self.spec.model!r} cannot answer prompt "
                f"{request.prompt_version!r}; it answers {sorted(routes)}"
            )
        text = _resolve(routes.get(family, routes.get("*")))(request, self.spec)  # type: ignore[arg-type]
        return ModelOutput(
            text=text,
            finish_reason="stop",
            input_tokens=count_tokens(request.text),
            output_tokens=count_tokens(text),
        )


__all__ = ["OfflineAPI", "OfflineHandler", "prompt_family"]
