"""The offline confusion writer (rule-writer-v1, prompt family cloze-confusion): no language model."""

from __future__ import annotations

import json
import re

from clcg_pipeline.calls import ChatRequest
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.granularity._tasks._base import NAME, NUMBER, number_value

_SECTION = re.compile(r"(?P<label>[^\n]+):\n<<<(?P<body>.*?)>>>", re.DOTALL)
_AUX = re.compile(r"\b(is|was|are|were|has|had|have|will|can|could|would|should)\b")


def _sections(request: ChatRequest) -> dict[str, str]:
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    return {m.group("label").strip(): m.group("body") for m in _SECTION.finditer(user)}


def write_confusion_offline(request: ChatRequest, spec: ModelSpec) -> str:
    """Rule-based distractors (not a language model): the target sentence with one detail
    changed, topical but wrong. In order: a number swapped for another number of the nearby
    paragraphs; a capitalised name swapped for another name there; a number shifted (years by
    3, other numbers doubled); a negation after the first auxiliary verb. Deterministic."""
    sections = _sections(request)
    target = next((v for k, v in sections.items() if k.startswith("Target sentence")), "").strip()
    context = " ".join(v for k, v in sections.items() if k.startswith("Paragraph"))
    if not target:
        return json.dumps({"confusions": []})
    out: list[str] = []
    numbers = [m for m in NUMBER.finditer(target)]
    in_target = {m.group(0) for m in numbers}
    others = sorted({m.group(0) for m in NUMBER.finditer(context)} - in_target, key=lambda x: (len(x), x))
    for m in numbers:
        for other in others:
            out.append(target[: m.start()] + other + target[m.end() :])
            break
    names = [m for m in NAME.finditer(target) if m.start() > 0]
    target_names = {m.group(0) for m in names}
    other_names = sorted({m.group(0) for m in NAME.finditer(context) if m.start() > 0} - target_names)
    for m in names:
        for other in other_names:
            out.append(target[: m.start()] + other + target[m.end() :])
            break
    for m in numbers:
        value = number_value(m.group(0))
        if value.is_integer():
            shifted = int(value) + 3 if 1900 <= value <= 2100 else int(value) * 2 if value else 7
            out.append(target[: m.start()] + str(shifted) + target[m.end() :])
    aux = _AUX.search(target)
    if aux:
        out.append(target[: aux.end()] + " not" + target[aux.end() :])
    seen: list[str] = []
    for sentence in out:
        if sentence != target and sentence not in seen:
            seen.append(sentence)
    return json.dumps({"confusions": seen}, ensure_ascii=False)
