"""The offline writers of rule-writer-v1 (no language model): cloze confusions (prompt family
``cloze-confusion``) and word-level questions (``gran-word-question``)."""

from __future__ import annotations

import json
import re

from clcg_pipeline.calls import ChatRequest
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.granularity._documents import split_sentences
from clcg_pipeline.granularity._tasks._base import GAP, NAME, NUMBER, number_value

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


def write_word_questions_offline(request: ChatRequest, spec: ModelSpec) -> str:
    """Rule-based word questions (not a language model), the rule builder's questions written as a
    writer would: Single-QA, a sentence with one number or capitalised name gapped ("Which single
    word fills the gap ...?"), evidence the sentence; Multi-QA, a number gapped in a sentence of
    each paragraph, the answer the larger number, evidence both sentences. Deterministic; what it
    writes is validated like any writer's output."""
    sections = _sections(request)
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    paragraphs = [v for k, v in sections.items() if k.startswith("Paragraph")]
    gaps = [_gapped(" ".join(p.split())) for p in paragraphs]
    if "Category: word_multi_qa" in user:
        return json.dumps({"questions": _multi(gaps)}, ensure_ascii=False)
    single = [
        {
            "question": f'Which single word fills the gap in this sentence of the document: "{masked}"?',
            "answer": answer,
            "evidence": [sentence],
        }
        for sentence, masked, answer, _ in (gaps[0] if gaps else [])
    ]
    return json.dumps({"questions": single[:3]}, ensure_ascii=False)


def _gapped(paragraph: str) -> list[tuple[str, str, str, bool]]:
    """(sentence, sentence with the word gapped, word, is a number) per number, then per name."""
    out: list[tuple[str, str, str, bool]] = []
    names: list[tuple[str, str, str, bool]] = []
    for sentence in split_sentences(paragraph):
        for m in NUMBER.finditer(sentence):
            out.append((sentence, sentence[: m.start()] + GAP + sentence[m.end() :], m.group(0), True))
        for m in NAME.finditer(sentence):
            if m.start() > 0:
                names.append((sentence, sentence[: m.start()] + GAP + sentence[m.end() :], m.group(0), False))
    return out + names


def _multi(gaps: list[list[tuple[str, str, str, bool]]]) -> list[dict[str, object]]:
    """The larger of two gapped numbers, one from each paragraph (first distinct pair)."""
    if len(gaps) < 2:
        return []
    for s1, m1, a1, n1 in gaps[0]:
        for s2, m2, a2, n2 in gaps[1]:
            if n1 and n2 and number_value(a1) != number_value(a2):
                larger = a1 if number_value(a1) > number_value(a2) else a2
                question = (
                    f'Two sentences of the document each have a number replaced by a gap: (1) "{m1}" '
                    f'(2) "{m2}" Which is the larger of the two missing numbers?'
                )
                return [{"question": question, "answer": larger, "evidence": [s1, s2]}]
    return []
