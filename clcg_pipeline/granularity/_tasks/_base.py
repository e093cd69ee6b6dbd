"""What every task builder shares: the bank's columns, sizes by length, one document's
English paragraphs and aligned texts, and the row and rejection records of its tasks."""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from clcg_pipeline.config import GranularitySettings
from clcg_pipeline.granularity._documents import split_sentences, text_hash
from clcg_pipeline.granularity._validate import answer_in_text

TASK_COLUMNS = [
    "task_id",
    "group_id",
    "doc_id",
    "task",
    "granularity",
    "region",
    "position",
    "question",
    "gold",
    "options",
    "blank_pids",
    "evidence_pids",
    "max_output_tokens",
    "builder",
    "frozen_hash",
    # beyond the contract
    "bucket",
    "sentence_index",
    "sentence_position",
    "marker",
    "context_pids",
    "answer_type",
    "doc_hash",
    # added later; they enter the frozen hash only when set (see ``_freeze.LATER_COLUMNS``)
    "role",
    "evidence",
]
GRANULARITY = {
    "word_single_qa": "word",
    "word_multi_qa": "word",
    "cloze": "sentence",
    "paragraph_fill": "paragraph",
    "summary": "document",
    "translation": "document",
}
GAP = "____"
WORD_MAX_OUTPUT_TOKENS = 16
CLOZE_MAX_OUTPUT_TOKENS = 16  # per blank; a group's prompt gets the sum
# Generated text is capped at this many times its English reference's tokens. The cap is in
# English tokens: other scripts take several times the tokens for the same text (Georgian
# ~9x in cl100k_base on the demo), so a call in another language should scale it by that
# language's tokenizer fertility (tokenizer_fertility_by_language), or Georgian is truncated.
OUTPUT_FACTOR = 4
#: A number as English writes it (1,200 or 3.5), and a capitalised name.
NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,]*\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w]|[.,]\d)")
NAME = re.compile(r"(?<![\w'’-])[A-Z][a-z]{2,}(?![\w'’-])")


def sha(obj: object) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def rng(seed: int, *parts: object) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))


def size_class(n_tokens: int) -> str:
    return "long" if n_tokens > 16000 else "mid" if n_tokens >= 8000 else "short"


def cloze_counts(n_tokens: int) -> tuple[int, int]:
    """(gold targets, confusions) of a document of ``n_tokens`` English tokens (see module doc)."""
    size = size_class(n_tokens)
    if size == "long":
        return 12, 2
    if size == "mid":
        return 9, 1
    return max(3, round(9 * n_tokens / 12000)), 1


def fill_per_region(n_tokens: int) -> int:
    return {"long": 3, "mid": 2, "short": 1}[size_class(n_tokens)]


def sentence_position(index: int, n: int) -> str:
    return "begin" if index == 0 else "end" if index == n - 1 else "middle"


def number_value(number: str) -> float:
    return float(number.replace(",", ""))


@dataclass
class Document:
    doc_id: str
    bucket: str
    n_tokens: int
    summary: str | None
    paras: pd.DataFrame  # English rows, by ordinal
    texts: dict[tuple[str, str], str]  # (language, pid) -> text
    languages: list[str]
    doc_hash: str

    def sentences(self) -> list[str]:
        return [s for t in self.paras["text"] for s in split_sentences(t)]


class TaskBuilder:
    """One document's task rows and rejections, with the lookups every task type uses."""

    def __init__(self, doc: Document, settings: GranularitySettings, tokenizer: str) -> None:
        self.doc = doc
        self.settings = settings
        self.tokenizer = tokenizer
        self.tasks: list[dict[str, Any]] = []
        self.rejections: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.all_sentences = [" ".join(s.split()) for s in doc.sentences()]

    def task(self, task: str, key: object, **fields: Any) -> dict[str, Any]:
        task_id = f"{self.doc.doc_id}:{task}:{sha([self.doc.doc_id, task, key])[:12]}"
        row: dict[str, Any] = {
            "task_id": task_id,
            "group_id": task_id,
            "doc_id": self.doc.doc_id,
            "task": task,
            "granularity": GRANULARITY[task],
            "region": None,
            "position": None,
            "question": "",
            "gold": None,
            "options": [],
            "blank_pids": [],
            "evidence_pids": [],
            "max_output_tokens": WORD_MAX_OUTPUT_TOKENS,
            "builder": "",
            "frozen_hash": "",
            "bucket": self.doc.bucket,
            "sentence_index": None,
            "sentence_position": None,
            "marker": None,
            "context_pids": [],
            "answer_type": None,
            "doc_hash": self.doc.doc_hash,
            "role": None,
            "evidence": [],
        }
        row.update(fields)
        return row

    def reject(
        self, task: str, key: object, region: str | None, position: str | None, rule: str, detail: str
    ) -> None:
        self.rejections.append(
            {
                "task_id": f"{self.doc.doc_id}:{task}:{sha([self.doc.doc_id, task, key])[:12]}",
                "doc_id": self.doc.doc_id,
                "task": task,
                "granularity": GRANULARITY[task],
                "region": region,
                "position": position,
                "rule": rule,
                "detail": detail,
            }
        )

    def cell(self, region: str, position: str | None = None) -> pd.DataFrame:
        p = self.doc.paras
        mask = p["region"] == region
        if position is not None:
            mask &= p["position"] == position
        return p[mask]

    def ordered(self, frame: pd.DataFrame, *salt: object) -> list[dict[str, Any]]:
        rows = frame.to_dict("records")
        rng(self.settings.seed, self.doc.doc_id, *salt).shuffle(rows)
        return rows

    def missing_languages(self, pid: str, answer: str) -> list[str]:
        return [
            lang for lang in self.doc.languages if not answer_in_text(answer, self.doc.texts[(lang, pid)])
        ]

    def ordinal(self, pid: str) -> int:
        p = self.doc.paras
        return int(p.loc[p["pid"] == pid, "ordinal"].iloc[0])

    def neighbour(self, ordinal: int, step: int) -> dict[str, Any] | None:
        p = self.doc.paras
        hit = p[p["ordinal"] == ordinal + step]
        return hit.iloc[0].to_dict() if len(hit) else None


def documents_of(documents: pd.DataFrame, paragraphs: pd.DataFrame, reference: str) -> list[Document]:
    ref_docs = documents[documents["language"] == reference].sort_values("doc_id")
    out: list[Document] = []
    for doc in ref_docs.itertuples(index=False):
        rows = paragraphs[paragraphs["doc_id"] == doc.doc_id]
        en = rows[rows["language"] == reference].sort_values("ordinal").reset_index(drop=True)
        languages = [reference, *sorted(set(rows["language"]) - {reference})]
        texts = {
            (str(lang), str(pid)): str(t)
            for lang, pid, t in rows[["language", "pid", "text"]].itertuples(index=False)
        }
        summary = doc.summary if isinstance(doc.summary, str) and doc.summary.strip() else None
        out.append(
            Document(
                doc_id=str(doc.doc_id),
                bucket=str(doc.bucket),
                n_tokens=int(doc.n_tokens),
                summary=summary,
                paras=en,
                texts=texts,
                languages=languages,
                doc_hash=text_hash([*en["pid"], *en["text"], summary or ""]),
            )
        )
    return out
