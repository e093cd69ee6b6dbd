"""Versioned, hashed prompts of the granularity tasks (after the MGAL benchmark).

One prompt family per task kind. The document is shown in its own language; instructions,
answer formats and the options are English, as in the responses' prompts. Every family has a
no-context ablation (``context="none"``): the same family and version, with the document
withheld and the withholding said in the rendered text, so the two never share a call id.

A template's wording is part of its version: :data:`TEMPLATE_HASHES` pins a hash of every
constant text of a family, and a test pins the hashes, so changing a character without
bumping the version fails. The rendered text and the version both enter the call id
(:class:`~clcg_pipeline.inference._prompts.ChatRequest`), exactly like the responses.

The offline reader (``_offline``) and the offline judges parse these layouts, so the
headers and markers below are part of the template contract.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

import pydantic

from clcg_pipeline.calls import PARAGRAPH_MARK, TOKENIZER, ChatRequest, JudgeTemplate, estimate_input_tokens
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.granularity._documents import blank_sentence
from clcg_pipeline.granularity._documents import split_sentences as split_sentences

TaskKind = Literal["word_single_qa", "word_multi_qa", "cloze", "paragraph_fill", "summary", "translation"]
Context = Literal["full", "none"]

TASK_KINDS: tuple[str, ...] = (
    "word_single_qa",
    "word_multi_qa",
    "cloze",
    "paragraph_fill",
    "summary",
    "translation",
)
CONTEXTS: tuple[str, ...] = ("full", "none")
#: task kind -> prompt version; the offline provider routes on the family (version minus -vN).
PROMPT_VERSIONS: dict[str, str] = {
    "word_single_qa": "gran-word-qa-v1",
    "word_multi_qa": "gran-word-qa-v1",
    "cloze": "gran-cloze-v1",
    "paragraph_fill": "gran-fill-v1",
    "summary": "gran-summary-v1",
    "translation": "gran-translate-v1",
}
GRANULARITY: dict[str, str] = {
    "word_single_qa": "word",
    "word_multi_qa": "word",
    "cloze": "sentence",
    "paragraph_fill": "paragraph",
    "summary": "document",
    "translation": "document",
}

# Layout markers (the offline reader and judges parse them).
DOCUMENT_HEADER = "Document:"
WITHHELD = "Document: (withheld for this task; answer without it)"
WHOLE_SOURCE = "Document: (the text to translate below is the whole document)"
TASK_HEADER = "Task:"
QUESTION_HEADER = "Question:"
OPTIONS_HEADER = "Options:"
SOURCE_HEADER = "Text to translate:"
FORMAT_HEADER = "Answer format:"
BLANK = "[BLANK {n}]"
BLANK_RE = re.compile(r"\[BLANK (\d+)\]")
OPTION_LETTERS = string.ascii_uppercase

_SYSTEM = {
    "full": (
        "You are a careful reader working on a long document. Rely solely on the text given: do not "
        "use outside knowledge, tools, browsing or retrieval. Follow the answer format exactly and "
        "write nothing else."
    ),
    "none": (
        "You are answering a task about a document that is not shown to you. Answer from your own "
        "knowledge alone; no tools, browsing or retrieval are available. Follow the answer format "
        "exactly and write nothing else."
    ),
}
_INSTRUCTIONS = {
    "gran-word-qa-v1": "Answer the question about the document with a single word.",
    "gran-cloze-v1": (
        "Each [BLANK n] in the document marks a removed sentence. For every blank, choose the option "
        "that best fits its place in the local context. An option fits at most one blank; some "
        "options fit none."
    ),
    "gran-fill-v1": (
        "The paragraph marked [BLANK 1] was removed from the document. Write the missing paragraph so "
        "that it fits between its neighbours, in the language of the document."
    ),
    "gran-summary-v1": "Summarise the document in the language of the document.",
    "gran-translate-v1": "Translate the text below into {target}, keeping its paragraph breaks.",
}
_FORMATS = {
    "gran-word-qa-v1": "one English word (numbers in digits), with no other text.",
    "gran-cloze-v1": (
        "a JSON object mapping each blank number (1 to {n}) to one option letter, e.g. {example}, "
        "with no other text."
    ),
    "gran-fill-v1": (
        "one paragraph of plain text (no heading, list or quotation marks), at most {words} words."
    ),
    "gran-summary-v1": "one paragraph of plain text (no heading or list), at most {words} words.",
    "gran-translate-v1": "the translation only, one paragraph per source paragraph, with no other text.",
}


def _template_hash(version: str) -> str:
    blob = json.dumps(
        {
            "version": version,
            "system": _SYSTEM,
            "instruction": _INSTRUCTIONS[version],
            "format": _FORMATS[version],
            "markers": [DOCUMENT_HEADER, WITHHELD, TASK_HEADER, QUESTION_HEADER, OPTIONS_HEADER],
            "more_markers": [SOURCE_HEADER, FORMAT_HEADER, BLANK, PARAGRAPH_MARK, WHOLE_SOURCE],
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


#: prompt version -> sha256 of its constant texts (pinned by the tests).
TEMPLATE_HASHES: dict[str, str] = {v: _template_hash(v) for v in sorted(set(PROMPT_VERSIONS.values()))}


def family(task: str) -> str:
    """The prompt version of a task kind; an unknown kind is named."""
    if task not in PROMPT_VERSIONS:
        raise ValueError(f"granularity_tasks: unknown task {task!r}; expected one of {list(TASK_KINDS)}")
    return PROMPT_VERSIONS[task]


def option_letter(index: int) -> str:
    if not 0 <= index < len(OPTION_LETTERS):
        raise ValueError(f"option index {index} out of range: at most {len(OPTION_LETTERS)} options")
    return OPTION_LETTERS[index]


@dataclass(frozen=True)
class Blank:
    """A blank of the rendered document: a whole paragraph (``sentence`` None) or one sentence."""

    number: int
    pid: str
    sentence: int | None = None


def blank_document(paragraphs: Sequence[tuple[str, str]], blanks: Sequence[Blank]) -> list[tuple[str, str]]:
    """(pid, text) paragraphs with each blank's paragraph or sentence replaced by its marker.

    A sentence index past the paragraph's last sentence is an error naming the paragraph:
    a blank at the wrong place would silently test something else.
    """
    by_pid: dict[str, list[Blank]] = {}
    for b in blanks:
        by_pid.setdefault(b.pid, []).append(b)
    known = {pid for pid, _ in paragraphs}
    unknown = sorted(set(by_pid) - known)
    if unknown:
        raise ValueError(f"blank paragraph(s) {unknown} are not in the document")
    out: list[tuple[str, str]] = []
    for pid, text in paragraphs:
        chosen = by_pid.get(pid)
        if not chosen:
            out.append((pid, text))
            continue
        whole = [b for b in chosen if b.sentence is None]
        if whole:
            out.append((pid, BLANK.format(n=whole[0].number)))
            continue
        # Last sentence first: a marker merges with the sentence after it when re-split, so
        # blanking in descending order keeps every earlier index valid. The splitter is the
        # one the task builder used to pick the sentence (``_documents``).
        for b in sorted(chosen, key=lambda b: -int(b.sentence or 0)):
            try:
                text = blank_sentence(text, int(b.sentence or 0), BLANK.format(n=b.number))
            except IndexError as exc:
                raise ValueError(f"paragraph {pid!r}: blank {b.number}: {exc}") from None
        out.append((pid, text))
    return out


def _render_paragraphs(paragraphs: Sequence[tuple[str, str]]) -> str:
    return "\n\n".join(f"{PARAGRAPH_MARK}{pid} {' '.join(text.split())}" for pid, text in paragraphs)


def _words(max_output_tokens: int | None) -> int:
    # About 0.6 words per token for English prose under cl100k_base; words are what models count.
    return max(1, int((max_output_tokens or 256) * 0.6))


def render_task_request(
    task: str,
    *,
    context: str,
    paragraphs: Sequence[tuple[str, str]],
    settings: ConditionSettings,
    rep: int = 0,
    question: str | None = None,
    options: Sequence[str] = (),
    n_blanks: int = 0,
    source: Sequence[tuple[str, str]] = (),
    target_language: str = "English",
    metadata: Mapping[str, str] | None = None,
) -> ChatRequest:
    """The exact request of one task (or cloze group) in one context.

    ``paragraphs`` is the document in reading order, already blanked (:func:`blank_document`);
    withheld when ``context`` is ``none``. ``source`` is the text to translate (shown in both
    contexts: it is the task's input, not its context). ``settings.max_output_tokens`` is
    the task's output cap and also bounds the word limit the prompt states.
    """
    version = family(task)
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {list(CONTEXTS)}, got {context!r}")
    where = dict(metadata or {})
    if context == "full" and not paragraphs and version != "gran-translate-v1":
        raise ValueError(f"{version} request for {where} has no document paragraphs")
    if context == "none":
        parts = [WITHHELD]
    elif paragraphs:
        parts = [f"{DOCUMENT_HEADER}\n{_render_paragraphs(paragraphs)}"]
    else:  # translation of the whole document: the source is the document, shown once
        parts = [WHOLE_SOURCE]
    instruction = _INSTRUCTIONS[version]
    fmt = _FORMATS[version]
    words = _words(settings.max_output_tokens)
    if version == "gran-word-qa-v1":
        if not question or not question.strip():
            raise ValueError(f"{version} request for {where} has no question")
        parts.append(f"{TASK_HEADER} {instruction}\n{QUESTION_HEADER} {' '.join(question.split())}")
    elif version == "gran-cloze-v1":
        if n_blanks < 1 or not options:
            raise ValueError(f"{version} request for {where} needs blanks and options")
        lines = [f"{option_letter(i)}. {' '.join(o.split())}" for i, o in enumerate(options)]
        example = json.dumps({str(n): option_letter(n - 1) for n in range(1, min(n_blanks, 2) + 1)})
        parts.append(f"{TASK_HEADER} {instruction}\n{OPTIONS_HEADER}\n" + "\n".join(lines))
        fmt = fmt.format(n=n_blanks, example=example)
    elif version == "gran-translate-v1":
        if not source:
            raise ValueError(f"{version} request for {where} has no text to translate")
        parts.append(
            f"{TASK_HEADER} {instruction.format(target=target_language)}\n"
            f"{SOURCE_HEADER}\n{_render_paragraphs(source)}"
        )
    else:
        parts.append(f"{TASK_HEADER} {instruction}")
        fmt = fmt.format(words=words)
    parts.append(f"{FORMAT_HEADER} {fmt}")
    return ChatRequest(
        messages=[
            {"role": "system", "content": _SYSTEM[context]},
            {"role": "user", "content": "\n\n".join(parts)},
        ],
        settings=settings,
        rep=rep,
        prompt_version=version,
        metadata=where,
    )


@dataclass(frozen=True)
class PromptSize:
    """A request's size against its model's context window (``ModelSpec.context_window``).

    ``input_tokens`` is the cl100k_base estimate of the prompt in the document's own language
    (a Georgian version of a document takes several times its English tokens); ``output_cap``
    is the reply's cap, which the provider reserves beside the prompt.
    """

    input_tokens: int
    output_cap: int
    context_window: int | None

    @property
    def fits(self) -> bool:
        return self.context_window is None or self.input_tokens + self.output_cap <= self.context_window


def prompt_size(model: ModelSpec, request: ChatRequest) -> PromptSize:
    """How many tokens ``request`` needs of ``model``'s context window."""
    cap = request.settings.max_output_tokens or 0
    return PromptSize(estimate_input_tokens(request.messages), cap, model.context_window)


def too_long_reason(model: ModelSpec, request: ChatRequest, size: PromptSize) -> str:
    """Why a request is refused before it is sent: model, document, language, bucket, task, sizes."""
    meta = request.metadata
    return (
        f"prompt too long for model {model.id!r}: document {meta.get('doc_id')!r} in "
        f"{meta.get('language')!r} (bucket {meta.get('bucket')!r}), task {meta.get('task')} "
        f"({meta.get('context')} context) needs about {size.input_tokens:,} prompt tokens ({TOKENIZER} "
        f"estimate) + {size.output_cap:,} output > context_window {size.context_window:,}"
    )


# -- judges ------------------------------------------------------------------------------
FILL_DIMENSIONS: tuple[str, ...] = (
    "topic_fidelity",
    "local_coherence",
    "entity_consistency",
    "instruction_following",
    "format_compliance",
)
MAIN_CLASSES: tuple[str, ...] = ("M1", "M2", "M3")
SECONDARY_TAGS: tuple[str, ...] = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8")

# Constrained types as Annotated aliases (pydantic's recommended form; conint()/conlist() are
# calls, which a type checker cannot read as a type).
_Score = Annotated[int, pydantic.Field(ge=0, le=20, strict=True)]
_Total = Annotated[int, pydantic.Field(ge=0, le=100, strict=True)]
_Quotes = Annotated[list[str], pydantic.Field(min_length=1, max_length=6)]


class FillJudgement(pydantic.BaseModel):
    """The paragraph judge's verdict: five 0-20 scores, their sum, quoted evidence."""

    model_config = pydantic.ConfigDict(extra="forbid")

    topic_fidelity: _Score
    local_coherence: _Score
    entity_consistency: _Score
    instruction_following: _Score
    format_compliance: _Score
    total: _Total
    evidence: _Quotes
    reasons: str

    @pydantic.model_validator(mode="after")
    def _total_is_the_sum(self) -> FillJudgement:
        parts = sum(int(getattr(self, d)) for d in FILL_DIMENSIONS)
        if int(self.total) != parts:
            raise ValueError(f"total {self.total} is not the sum of the five dimensions ({parts})")
        return self


class ClozeErrorJudgement(pydantic.BaseModel):
    """One wrong cloze choice: exactly one main class (M1-M3), optional secondary tags."""

    model_config = pydantic.ConfigDict(extra="forbid")

    main_class: Literal["M1", "M2", "M3"]
    secondary: list[Literal["S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"]]
    confidence: Literal["high", "medium", "low"]
    evidence: _Quotes
    reasons: str

    @pydantic.model_validator(mode="after")
    def _s1_only_with_m1(self) -> ClozeErrorJudgement:
        if "S1" in self.secondary and self.main_class != "M1":
            raise ValueError("secondary tag S1 (discourse-role misidentification) is reserved for M1")
        if len(set(self.secondary)) != len(self.secondary):
            raise ValueError("secondary tags repeat")
        return self


FILL_JUDGE = JudgeTemplate(
    version="fill-judge-v1",
    system=(
        "You are an impartial judge of a paragraph-filling task: a paragraph was removed from a "
        "document and a system wrote a replacement from the surrounding context. Ground every "
        "decision in the texts given here; use no outside knowledge and write no chain of thought. "
        "Reply with one JSON object only."
    ),
    user=(
        "Score the generated paragraph against the reference paragraph and its neighbours on five "
        "dimensions, each an integer from 0 to 20:\n"
        "- topic_fidelity: keeps the central topic and key claims of the reference, without narrowing "
        "or widening its scope or adding unsupported assertions.\n"
        "- local_coherence: logical and temporal continuity with the previous and next paragraphs "
        "(transitions, pronouns, tense, causal or contrastive links).\n"
        "- entity_consistency: subjects, events, times, places, organisations, numbers and "
        "coreference match the reference and the context, with no invented attributes.\n"
        "- instruction_following: one paragraph in the language of the document, about the length "
        "of the reference, nothing the task prohibits.\n"
        "- format_compliance: plain text of exactly one paragraph, no heading, list, tags or "
        "quotation marks, within the length limit.\n"
        "total is the sum of the five (0 to 100). evidence lists short verbatim quotes (a few words "
        "each) from the previous paragraph, the reference and the next paragraph that justify the "
        "scores; reasons is one or two sentences.\n\n"
        "<previous>\n{previous}\n</previous>\n<reference>\n{reference}\n</reference>\n"
        "<generated>\n{generated}\n</generated>\n<next>\n{next}\n</next>\n\n"
        'Reply with exactly this JSON object: {{"topic_fidelity": int, "local_coherence": int, '
        '"entity_consistency": int, "instruction_following": int, "format_compliance": int, '
        '"total": int, "evidence": [str], "reasons": str}}'
    ),
    schema=FillJudgement,
)
FILL_EVIDENCE_FIELDS: tuple[str, ...] = ("previous", "reference", "next", "generated")

CLOZE_ERROR_JUDGE = JudgeTemplate(
    version="cloze-error-judge-v1",
    system=(
        "You are an impartial judge of sentence-level cloze errors: a reader chose the wrong "
        "sentence for a blank. Read the local context and the two sentences, ground every decision "
        "in these texts, use no outside knowledge and reply with one JSON object only."
    ),
    user=(
        "Classify why the chosen sentence was picked instead of the gold sentence. Exactly one main "
        "class:\n"
        "- M1 discourse-role underuse: the chosen sentence does not fill the reasoning role the "
        "surrounding chain implies (it is a parallel, rephrasing or background statement) while the "
        "gold sentence uniquely completes it.\n"
        "- M2 surface-cue overuse: the choice is better explained by surface signals (connectives, "
        "repeated entities, lexical overlap, length, format) than by fit with the context.\n"
        "- M3 context or knowledge deficit: the chosen sentence conflicts with constraints evident "
        "in the context (topic, entities, time, causal direction) or presupposes unsupported "
        "knowledge.\n"
        "Prefer M1 when the gold uniquely fills the role, default to M2 when surface cues explain the "
        "choice, otherwise M3; when unsure, lower the confidence. Optional secondary tags: S1 "
        "discourse-role misidentification (only with M1), S2 coreference drift, S3 connective or "
        "overlap lure, S4 temporal or ordinal misread, S5 negation or scope error, S6 locally "
        "coherent but globally incoherent, S7 world-knowledge gap, S8 format or fluency bias. "
        "evidence lists short verbatim quotes from the texts below.\n\n"
        "<previous>\n{previous}\n</previous>\n<current>\n{current}\n</current>\n"
        "<next>\n{next}\n</next>\n<gold>\n{gold}\n</gold>\n<chosen>\n{chosen}\n</chosen>\n\n"
        'Reply with exactly this JSON object: {{"main_class": "M1" | "M2" | "M3", "secondary": '
        '["S1".."S8"], "confidence": "high" | "medium" | "low", "evidence": [str], "reasons": str}}'
    ),
    schema=ClozeErrorJudgement,
)
CLOZE_EVIDENCE_FIELDS: tuple[str, ...] = ("previous", "current", "next", "gold", "chosen")

__all__ = [
    "BLANK",
    "BLANK_RE",
    "CLOZE_ERROR_JUDGE",
    "CLOZE_EVIDENCE_FIELDS",
    "CONTEXTS",
    "FILL_DIMENSIONS",
    "FILL_EVIDENCE_FIELDS",
    "FILL_JUDGE",
    "GRANULARITY",
    "MAIN_CLASSES",
    "PROMPT_VERSIONS",
    "SECONDARY_TAGS",
    "TASK_KINDS",
    "TEMPLATE_HASHES",
    "Blank",
    "ClozeErrorJudgement",
    "FillJudgement",
    "PromptSize",
    "blank_document",
    "family",
    "option_letter",
    "prompt_size",
    "render_task_request",
    "split_sentences",
    "too_long_reason",
]
