"""Settings of the granularity- and position-aware task family (``study.yaml`` ``granularity:``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from clcg_pipeline.config._base import _Strict


class GranularityBucket(_Strict):
    """A long-document length bucket: English token count in [min_tokens, max_tokens]."""

    name: str = Field(min_length=1)
    min_tokens: int = Field(ge=1)
    max_tokens: int = Field(ge=1)
    documents: int | None = Field(
        default=None, ge=1, description="Documents wanted in this bucket; null = documents_per_bucket."
    )

    @model_validator(mode="after")
    def _ordered(self) -> GranularityBucket:
        if self.max_tokens < self.min_tokens:
            raise ValueError(
                f"bucket {self.name!r}: max_tokens {self.max_tokens} < min_tokens {self.min_tokens}"
            )
        return self


def _default_buckets() -> list[GranularityBucket]:
    # The study's (MGAL) lengths; the demo's study.yaml sets small ones.
    return [
        GranularityBucket(name="8K-16K", min_tokens=8000, max_tokens=16000),
        GranularityBucket(name="16K-32K", min_tokens=16000, max_tokens=32000),
    ]


# ``source`` for documents assembled from the study's own aligned articles.
ASSEMBLED_SOURCE = "assembled"


def _both_contexts() -> list[Literal["full", "none"]]:
    # A named factory, not a lambda: mypy infers a lambda's list as list[str] inside Field().
    return ["full", "none"]


class GranularitySettings(_Strict):
    """The granularity- and position-aware task family (docs/GRANULARITY.md)."""

    # Documents and task bank (G1, granularity/_documents.py and _tasks.py).
    buckets: list[GranularityBucket] = Field(default_factory=_default_buckets, min_length=1)
    documents_per_bucket: int = Field(default=10, ge=1)
    source: str = Field(
        default=ASSEMBLED_SOURCE,
        description="'assembled' = documents concatenated from the study's aligned articles (seeded "
        "order); else the path of a long-document corpus in the canonical JSONL (optional summary).",
    )
    region_split: Literal["tokens", "paragraphs"] = Field(
        default="tokens",
        description="Begin/Middle/End regions: thirds of the English tokens (a paragraph goes to the "
        "third holding its token midpoint) or thirds of the paragraphs.",
    )
    translation_excerpt_tokens: int = Field(default=300, ge=20)
    near_duplicate_overlap: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="A confusion whose content tokens overlap a gold option's this much is a near-duplicate.",
    )

    enabled: bool = False
    judges: list[str] = Field(
        default_factory=list, description="Model ids that score paragraph filling and label cloze errors."
    )
    confusion_writer: str | None = Field(
        default=None, description="Model id that writes cloze confusion sentences."
    )
    word_question_writer: str | None = Field(
        default=None,
        description="Model id that writes the word-level questions (Single-QA, Multi-QA) with their "
        "evidence; null = the rule-based gap questions.",
    )
    seed: int = 42
    # Task inference and scoring (G2, granularity/_predict.py and _scoring.py).
    contexts: list[Literal["full", "none"]] = Field(
        default_factory=_both_contexts,
        min_length=1,
        description="full = the document is given; none = the no-context ablation (document withheld).",
    )
    repetitions: int = Field(default=1, ge=1, description="Answers per task x context (rep 0..n-1).")
    temperature: float = Field(
        default=0.0, ge=0, le=2, description="Sampling temperature of the task calls (the judges use 0)."
    )

    @field_validator("contexts")
    @classmethod
    def _distinct_contexts(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"contexts {value} repeat an entry; each is answered once")
        return value
