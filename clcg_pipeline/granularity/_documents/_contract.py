"""The long-document tables' columns, what a build reports, and the helpers every source shares."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.config import GranularityBucket, GranularitySettings
from clcg_pipeline.corpus import CorpusError

THIRDS: tuple[str, str, str] = ("begin", "middle", "end")

LONG_DOCUMENT_COLUMNS = [
    "doc_id",
    "language",
    "bucket",
    "n_tokens",
    "n_paragraphs",
    "source",
    "assembly",
    "member_doc_ids",
    "summary",
    "n_tokens_reference",
]
LONG_PARAGRAPH_COLUMNS = [
    "doc_id",
    "language",
    "pid",
    "ordinal",
    "region",
    "position",
    "text",
    "source_doc_id",
    "source_pid",
    "n_tokens",
]


class DocumentError(CorpusError):
    """A long-document source is malformed; the message names language, file, record (line) and field.

    A :class:`CorpusError` (the study corpus's error), so ``language`` and ``file`` are set once
    the error is known to belong to one language's file, and whoever reports corpus errors can
    report this one the same way.
    """


@dataclass
class BucketReport:
    """What one bucket got: ``status`` ok | short | empty, with the reason when not ok."""

    bucket: str
    min_tokens: int
    max_tokens: int
    wanted: int
    built: int
    reason: str | None = None

    @property
    def status(self) -> str:
        if self.built >= self.wanted:
            return "ok"
        return "empty" if self.built == 0 else "short"


@dataclass
class LongDocuments:
    """The two tables, plus a report per bucket and notes on what was left out."""

    documents: pd.DataFrame
    paragraphs: pd.DataFrame
    buckets: list[BucketReport]
    notes: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [
            f"bucket {b.bucket}: {b.status}, {b.built} of {b.wanted} document(s): {b.reason}"
            for b in self.buckets
            if b.status != "ok"
        ]


def seeded_order(ids: Sequence[str], seed: int, salt: str) -> list[str]:
    # A string seed makes the order independent of the bucket's place in the config.
    order = sorted(ids)
    random.Random(f"{seed}:{salt}").shuffle(order)
    return order


def wanted_documents(bucket: GranularityBucket, settings: GranularitySettings) -> int:
    return bucket.documents if bucket.documents is not None else settings.documents_per_bucket


def frames(
    doc_rows: list[dict[str, Any]], para_rows: list[dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    documents = pd.DataFrame(doc_rows, columns=LONG_DOCUMENT_COLUMNS)
    paragraphs = pd.DataFrame(para_rows, columns=LONG_PARAGRAPH_COLUMNS)
    for column in ("n_tokens", "n_paragraphs", "n_tokens_reference"):
        documents[column] = documents[column].astype("int64")
    for column in ("ordinal", "n_tokens"):
        paragraphs[column] = paragraphs[column].astype("int64")
    documents["member_doc_ids"] = documents["member_doc_ids"].map(list)
    return documents, paragraphs


def text_hash(texts: Sequence[str]) -> str:
    """sha256 of paragraph texts in order (a document's English content, for freezing)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()
