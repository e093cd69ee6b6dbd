"""Pydantic models of the canonical JSONL format (one article x language per line; item bank).

``canonical.schema.json`` beside this module is generated from these models
(:func:`canonical_json_schema`) and a test keeps the two in step.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import models_json_schema

from clcg_pipeline.config import Level

AnswerFormat = Literal["polar", "span", "free", "mc"]


class _Strict(BaseModel):
    # Unknown keys are errors: a misspelt optional field would otherwise vanish silently.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParagraphRecord(_Strict):
    """One body paragraph; its position in the list is its ordinal (1-based)."""

    pid: str = Field(min_length=1, description="Paragraph id, the same in every language version.")
    text: str


class QuestionRecord(_Strict):
    """A human-authored study question (English), linked to paragraphs of its article."""

    question_id: str = Field(min_length=1, description="Unique across the source; becomes the item_id.")
    question: str = Field(min_length=1)
    answer: str | None = Field(description="Reference answer; null when the text does not answer it.")
    pids: list[str] = Field(default_factory=list, description="Paragraphs the question is about.")
    answerable: bool = True
    level: Level | None = Field(
        default=None, description="Comprehension level, only when the source assigns one; else 'H'."
    )


class ArticleRecord(_Strict):
    """One language version of one article."""

    doc_id: str = Field(min_length=1)
    language: str = Field(min_length=1, description="Panel ISO code (languages.yaml iso).")
    title: str | None = None
    published: dt.date | None = Field(default=None, description="First publication date, YYYY-MM-DD.")
    paragraphs: list[ParagraphRecord] = Field(min_length=1)
    questions: list[QuestionRecord] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pids_consistent(self) -> ArticleRecord:
        pids = [p.pid for p in self.paragraphs]
        dupes = sorted({p for p in pids if pids.count(p) > 1})
        if dupes:
            raise ValueError(f"paragraphs: duplicate pid(s) {dupes}")
        known = set(pids)
        for i, q in enumerate(self.questions):
            unknown = [p for p in q.pids if p not in known]
            if unknown:
                raise ValueError(f"questions[{i}] ({q.question_id}).pids: unknown pid(s) {unknown}")
        return self


class ItemRecord(_Strict):
    """One item of a frozen bank (``items.jsonl``), in the ``items`` table's fields."""

    item_id: str = Field(min_length=1)
    doc_id: str = Field(min_length=1)
    level: Level
    question: str = Field(min_length=1)
    gold_answer: str | None
    answer_format: AnswerFormat
    options: list[str] | None = Field(default=None, description="Choices of an 'mc' item.")
    target_pids: list[str] = Field(default_factory=list)
    supporting_pids: list[str] = Field(default_factory=list)
    gold_answerable: bool = True
    item_source: str = "llm"
    generator: str | None = Field(default=None, description="Defaults to 'frozen:<source name>'.")
    prompt_hash: str | None = None
    level_label_validated: bool = False


def canonical_json_schema() -> dict[str, Any]:
    """The JSON Schema of both record kinds (``canonical.schema.json`` is this, serialized)."""
    refs, defs = models_json_schema(
        [(ArticleRecord, "validation"), (ItemRecord, "validation")], ref_template="#/$defs/{model}"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/clcg-pipeline/clcg-pipeline/corpus/canonical.schema.json",
        "title": "clcg-pipeline canonical corpus format",
        "description": (
            "A source folder holds articles/<lang>.jsonl (any *.jsonl under articles/, read sorted), "
            "one ArticleRecord per line, and optionally items.jsonl, one ItemRecord per line."
        ),
        "oneOf": [refs[(ArticleRecord, "validation")], refs[(ItemRecord, "validation")]],
        "$defs": defs["$defs"],
    }
