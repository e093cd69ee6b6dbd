"""Per-answer metrics (STUDY.md section 5): small pure functions, one concern each.

Every function takes plain strings and is safe on empty input. The SQuAD normalization and
Token-F1 are a few lines of well-known arithmetic; they are written here (rather than taken
from a package) because the one maintained implementation that ships them (``evaluate``) pulls
in a download-at-run-time framework that the pipeline must not depend on. ROUGE-L comes from
the ``rouge-score`` package.
"""

from __future__ import annotations

import functools
import re
import string
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rouge_score import rouge_scorer, tokenizers

PolarLabel = Literal["yes", "no", "not_stated", "invalid"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")


@functools.cache
def _punctuation_table() -> dict[int, str | None]:
    """Deletion table: ASCII punctuation (SQuAD's set) plus every Unicode punctuation mark.

    SQuAD strips only ``string.punctuation``; models also emit curly quotes, dashes and
    ellipses, which would otherwise glue onto tokens and turn a match into a miss. Built once,
    lazily, because scanning the code space costs a fraction of a second.
    """
    table: dict[int, str | None] = {ord(ch): None for ch in string.punctuation}
    for code in range(128, sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        if category.startswith("P"):
            # Non-ASCII dashes separate words ("cat\u2014ran"); SQuAD's ASCII "-" is deleted.
            table[code] = " " if category == "Pd" else None
    return table


def normalize_answer(text: str) -> str:
    """SQuAD-style normalization: lowercase, drop punctuation and a/an/the, collapse spaces."""
    if not text:
        return ""
    text = text.lower().translate(_punctuation_table())
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalized strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1_counts(pred: Counter[str], n_pred: int, gold: Counter[str], n_gold: int) -> float:
    # SQuAD v2 convention: if either side is empty the score is 1 only when both are.
    if not n_pred or not n_gold:
        return float(n_pred == n_gold)
    common = (pred & gold).total()
    if common == 0:
        return 0.0
    precision = common / n_pred
    recall = common / n_gold
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD Token-F1: harmonic mean of precision and recall of the bag-of-tokens overlap."""
    pred, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    return _f1_counts(Counter(pred), len(pred), Counter(gold_tokens), len(gold_tokens))


@functools.cache
def _rouge() -> tuple[rouge_scorer.RougeScorer, tokenizers.Tokenizer]:
    """rouge-score's ROUGE-L scorer on a memoized copy of its default tokenizer."""
    # Imported lazily: rouge-score pulls in nltk, which costs most of a second at start-up.
    from rouge_score import rouge_scorer, tokenizers

    class CachedTokenizer(tokenizers.Tokenizer):
        """rouge-score's default tokenizer, memoized: answers and golds repeat across rows."""

        def __init__(self) -> None:
            self._inner = tokenizers.DefaultTokenizer(use_stemmer=False)
            self._cache: dict[str, list[str]] = {}

        def tokenize(self, text: str) -> list[str]:
            tokens = self._cache.get(text)
            if tokens is None:
                tokens = self._inner.tokenize(text)
                if len(self._cache) >= 500_000:  # bound memory in long-lived processes
                    self._cache.clear()
                self._cache[text] = tokens
            return tokens

    tokenizer = CachedTokenizer()
    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer), tokenizer


def score_pairs(
    predictions: Sequence[str], golds: Sequence[str]
) -> tuple[list[float], list[float], list[float]]:
    """Token-F1, exact match and ROUGE-L for many pairs at once, with per-string caches.

    Equal to calling ``token_f1``, ``exact_match`` and ``rouge_l`` pair by pair; strings that
    recur (most golds, common answers) are normalized and tokenized once.
    """
    scorer, tokenizer = _rouge()
    tokenize = tokenizer.tokenize
    squad: dict[str, tuple[list[str], Counter[str]]] = {}
    rouge_sets: dict[str, frozenset[str]] = {}
    f1: list[float] = []
    em: list[float] = []
    rl: list[float] = []
    for pred, gold in zip(predictions, golds, strict=True):
        for text in (pred, gold):
            if text not in squad:
                tokens = normalize_answer(text).split()
                squad[text] = (tokens, Counter(tokens))
                rouge_sets[text] = frozenset(tokenize(text))
        (p_tokens, p_counts), (g_tokens, g_counts) = squad[pred], squad[gold]
        f1.append(_f1_counts(p_counts, len(p_tokens), g_counts, len(g_tokens)))
        em.append(float(p_tokens == g_tokens))
        # Disjoint token sets have an empty LCS: skip rouge-score's quadratic table.
        if rouge_sets[pred].isdisjoint(rouge_sets[gold]):
            rl.append(0.0)
        else:
            rl.append(float(scorer.score(gold, pred)["rougeL"].fmeasure))
    return f1, em, rl


def rouge_l(prediction: str, gold: str) -> float:
    """ROUGE-L F-measure (rouge-score's ``rougeL``; its tokenizer keeps ASCII a-z0-9 only)."""
    if not prediction or not gold:
        return 0.0
    return float(_rouge()[0].score(gold, prediction)["rougeL"].fmeasure)


# Label normalization for polar answers keeps articles and word order ("the passage does not
# say") and deletes apostrophes so "doesn't" and "doesnt" agree.
_APOSTROPHES = str.maketrans("", "", "'\u2019\u2018`")
_NON_WORD = re.compile(r"[^\w]+")
_NOT_STATED = re.compile(
    r"^(?:(?:it|this|that|answer) is |(?:answer )?)"
    r"(?:not (?:stated|mentioned|specified|given|provided|known|said|addressed|indicated|answerable)"
    r"|unknown|unanswerable|undetermined"
    r"|(?:cannot|can not|cant) (?:be )?(?:determined|determine|tell|say|answer|be answered)"
    r"|(?:not enough|insufficient|no) information"
    r"|(?:the )?(?:passage|text|article|context|document) (?:does not|doesnt|did not|do not) "
    r"(?:say|state|mention|specify|indicate|provide|contain|give|answer)"
    r")\b"
)
_YES_NO = re.compile(r"^(yes|no)\b")
_POLAR_TEXT: dict[str, str] = {"yes": "yes", "no": "no", "not_stated": "not stated", "invalid": ""}


def _label_text(text: str) -> str:
    text = text.lower().translate(_APOSTROPHES)
    return " ".join(_NON_WORD.sub(" ", text).split())


def polar_label(text: str) -> PolarLabel:
    """Map a free-text polar answer to yes / no / not_stated, or ``invalid``.

    "Yes.", "YES - the passage says ..." -> yes; "Not stated", "unknown", "The passage does
    not say" -> not_stated. Not-stated phrases are tested first because several begin with
    "no"/"not".
    """
    norm = _label_text(text or "")
    if not norm:
        return "invalid"
    if _NOT_STATED.match(norm):
        return "not_stated"
    found = _YES_NO.match(norm)
    if found:
        return "yes" if found.group(1) == "yes" else "no"
    return "invalid"


def polar_text(label: PolarLabel) -> str:
    """The canonical text of a polar label (``invalid`` -> ``""``), used for F1/EM/ROUGE-L."""
    return _POLAR_TEXT[label]


def polar_accuracy(prediction: str, gold: str) -> float:
    """1.0 when the prediction's label equals the gold label; an invalid label is wrong."""
    label = polar_label(prediction)
    return float(label != "invalid" and label == polar_label(gold))


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CHOICE_PREFIX = re.compile(r"^(?:(?:the )?(?:correct )?(?:option|answer|choice)(?: is)?\s*[:\-]?\s*)?", re.I)
# A bare letter must be delimited ("B", "B.", "(B)", "B) text") so that the English article in
# "A dog" is not read as option A.
_CHOICE_MARK = re.compile(r"^\(?([A-Za-z]|\d{1,2})(?:\)|\.|:|$)")


def choice_index(answer: str, options: Sequence[str]) -> int | None:
    """The 0-based option an answer names (by its text, letter or number), or None."""
    if not answer or not options:
        return None
    norm = normalize_answer(answer)
    for index, option in enumerate(options):
        if norm and norm == normalize_answer(option):
            return index
    stripped = _CHOICE_PREFIX.sub("", answer.strip(), count=1)
    found = _CHOICE_MARK.match(stripped)
    if not found:
        return None
    mark = found.group(1)
    if mark.isdigit():
        index = int(mark) - 1
    else:
        # A lone lower-case letter counts only as the whole answer ("b"), never as prose.
        if mark.islower() and stripped.strip("().:").strip() != mark:
            return None
        index = _LETTERS.index(mark.upper())
    return index if 0 <= index < len(options) else None


def choice_accuracy(prediction: str, gold: str, options: Sequence[str]) -> float:
    """1.0 when the prediction names the gold option (its text, letter A-D or number 1-4)."""
    picked = choice_index(prediction, options)
    return float(picked is not None and picked == choice_index(gold, options))
