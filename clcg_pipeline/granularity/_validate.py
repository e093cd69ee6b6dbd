"""Deterministic validation of granularity tasks (every rejection has a rule and a detail).

Rules (the ``rule`` column of ``task_rejections``):

- ``sentence_too_short``: a QA or cloze sentence of fewer than :data:`MIN_WORDS` words;
- ``answer_repeated``: the answer word occurs more than once in its sentence (ambiguous gap);
- ``sentence_not_unique``: the question's sentence occurs more than once in the document;
- ``gold_missing_in_language``: a word answer absent from the aligned paragraph of some
  language (a task built from English must be answerable from every language version);
- ``sentence_count_mismatch``: a cloze paragraph splits into a different number of sentences
  in some language, so the blank cannot be placed at the aligned sentence;
- ``confusion_*``: a confusion sentence identical to, or a near-duplicate of, a gold option,
  present in the document, empty or too short; ``too_few_confusions``: a cloze group without
  the confusion sentences its option set needs;
- ``no_neighbours``: a paragraph to fill without a paragraph before and after it;
- ``no_source_summary``: summarisation on a document without a summary of its own;
- ``excerpt_too_long``: no paragraph of a region fits the translation excerpt's token limit;
- ``no_candidate``: no sentence or paragraph of a region x position cell qualifies;
- ``role_not_covered``: no cloze or filling target of the document has the requested role
  (core, transitional, summary);
- a model-written word question (``_tasks/_word_writer.py``) is also rejected when its answer
  is not one word (``answer_not_one_word``), the question is malformed or holds the answer
  (``question_malformed``, ``answer_in_question``), or its evidence is not in the paragraph(s),
  spans too few paragraphs for Multi-QA, or lacks the answer (``evidence_not_in_document``,
  ``evidence_too_few_paragraphs``, ``answer_not_in_evidence``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

MIN_WORDS = 6
REJECTION_COLUMNS = ["task_id", "doc_id", "task", "granularity", "region", "position", "rule", "detail"]

# Function words left out of the overlap test: a confusion must change a content word or a
# number of every gold option, not only an article or a preposition. Negations stay content.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "which",
        "who",
        "whom",
        "whose",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "we",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "can",
        "could",
        "should",
        "may",
        "might",
        "must",
        "so",
        "such",
        "into",
        "over",
        "under",
        "about",
        "after",
        "before",
        "during",
        "while",
        "also",
        "just",
        "only",
        "very",
    ]
)
_TOKEN = re.compile(r"\w+(?:[.,]\d+)*", re.UNICODE)


def normalise_answer(text: str) -> str:
    """Lower case, accents kept, punctuation and outer spaces dropped; numbers to their digits."""
    text = unicodedata.normalize("NFKC", text).strip().lower()
    if re.fullmatch(r"[\d.,\s]+", text):
        return re.sub(r"\D", "", text)
    return re.sub(r"[^\w]+", " ", text).strip()


def tokens(text: str) -> list[str]:
    """Lower-cased word and number tokens (``3,200`` and ``4.6`` stay one token)."""
    return [t.lower() for t in _TOKEN.findall(unicodedata.normalize("NFKC", text))]


def content_tokens(text: str) -> Counter[str]:
    return Counter(t for t in tokens(text) if t not in _STOPWORDS)


def overlap(a: str, b: str) -> float:
    """Shared content tokens over the larger content-token multiset (1.0 = same content words)."""
    ca, cb = content_tokens(a), content_tokens(b)
    size = max(sum(ca.values()), sum(cb.values()))
    return sum((ca & cb).values()) / size if size else 1.0


def answer_in_text(answer: str, text: str) -> bool:
    """Is the normalised ``answer`` a whole token of ``text`` (numbers compared by digits)?"""
    norm = normalise_answer(answer)
    if not norm:
        return False
    if norm.isdigit():
        return norm in {re.sub(r"\D", "", t) for t in re.findall(r"\d[\d.,\s]*\d|\d", text)}
    return norm in {normalise_answer(t) for t in tokens(text)}


def confusion_problem(
    confusion: str, golds: Sequence[str], document_sentences: Sequence[str], *, max_overlap: float = 1.0
) -> tuple[str, str] | None:
    """(rule, detail) when ``confusion`` may not enter an option set with ``golds``, else None.

    It must be a real sentence, appear nowhere in the document (else it is true, not a
    distractor), and differ from every gold option: not identical after whitespace and case
    normalisation, and sharing less than ``max_overlap`` of its content tokens with each.
    """
    text = " ".join(confusion.split())
    if not text:
        return ("confusion_empty", "empty confusion sentence")
    if len(tokens(text)) < MIN_WORDS:
        return ("confusion_too_short", f"{len(tokens(text))} words: {text[:80]!r}")
    key = text.casefold()
    for i, gold in enumerate(golds):
        if " ".join(gold.split()).casefold() == key:
            return ("confusion_identical", f"identical to gold option {i + 1}: {text[:80]!r}")
    for i, gold in enumerate(golds):
        share = overlap(text, gold)
        if share >= max_overlap:
            return (
                "confusion_near_duplicate",
                f"shares {share:.2f} of its content tokens with gold option {i + 1}: {text[:80]!r}",
            )
    if any(" ".join(s.split()).casefold() == key for s in document_sentences):
        return ("confusion_in_document", f"the sentence occurs in the document: {text[:80]!r}")
    return None
