"""The shape of ``clcg compare``'s output (``--json``): one pydantic model, checked when the
comparison is written and when it is read back (issue 34).

``compare_runs`` builds the comparison's facts (``info``) and its table; ``ComparisonDocument``
is both in one document: the facts, the column names and one ``ComparisonRow`` per estimand.
Unknown keys and values of another type are refused (``extra="forbid"``, ``strict``), with the
file and the field named (``storage.validate_model``).
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from clcg_pipeline.storage import read_model

Side = Literal["A", "B"]


class _Shape(BaseModel):
    # Strict (no "0.1" for a number), closed (no key the shape does not declare), read-only.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ComparisonRow(_Shape):
    """One estimand: run A's and run B's value and interval, B - A, and why an interval is missing."""

    estimand: str
    group: str
    a_estimate: float | None
    a_ci_low: float | None
    a_ci_high: float | None
    b_estimate: float | None
    b_ci_low: float | None
    b_ci_high: float | None
    difference: float | None
    difference_ci_low: float | None
    difference_ci_high: float | None
    p: float | None  # paired rows only: the suite's bootstrap p
    pairing: Literal["paired", "unpaired"]
    source: str  # "scores", "document", "stale document", or per run ("A: scores; B: document")
    reason: str | None  # why the difference has no interval (None when it has one)
    note: str | None


#: The comparison table's columns, in order: the fields of ``ComparisonRow``.
COMPARE_COLUMNS: list[str] = list(ComparisonRow.model_fields)


class ItemCount(_Shape):
    """Items of one model in one language that only one run answered."""

    model: str
    language: str
    items: int


class ItemKey(_Shape):
    """One item of one model in one language (``results._compare.ITEM_KEY``)."""

    model: str
    language: str
    doc_id: str
    item_id: str


class OnlyIn(_Shape):
    """What one run has that the other lacks: models, languages, items, and its unpaired rows."""

    models: list[str]
    languages: list[str]
    rows: int
    items: int
    items_by_model_language: list[ItemCount]
    item_list: list[ItemKey]


class ComparisonInfo(_Shape):
    """What a comparison rests on: the runs, the pairing, what one run alone has, the documents
    rows come from (and which are stale), the p rule. The pairing counts are there only when
    both runs were given with their scores."""

    a: str
    b: str
    paired: bool
    documents: dict[Side, str | None]
    stale: dict[Side, str]
    p_rule: str
    only_in: dict[Side, OnlyIn] | None = None
    common_rows: int | None = None
    common_articles: int | None = None
    rows_a: int | None = None
    rows_b: int | None = None


class ComparisonDocument(ComparisonInfo):
    """``clcg compare --json``: the facts, the columns and the rows."""

    columns: list[str]
    rows: list[ComparisonRow]

    @field_validator("columns")
    @classmethod
    def _the_rows_columns(cls, columns: list[str]) -> list[str]:
        if columns != COMPARE_COLUMNS:
            raise ValueError(f"the columns must be {COMPARE_COLUMNS}")
        return columns


def read_comparison(path: str | os.PathLike[str]) -> ComparisonDocument:
    """A comparison written by ``clcg compare --json``, read back and checked against its shape
    (``storage.DocumentError`` naming the file and the field when it does not fit)."""
    return read_model(ComparisonDocument, path)
