"""Per-answer metrics: small pure functions, one concern each.

Every function takes plain strings and is safe on empty input. The SQuAD normalization and
Token-F1 are a few lines of well-known arithmetic; they are written here (rather than taken
from a package) because the one maintained implementation that ships them (``evaluate``) pulls
in a download-at-run-time framework that the pipeline must not depend on. ROUGE-L uses the
``rouge-score`` package's tokenizer and formula, with the LCS computed by ``rapidfuzz`` (C++).
"""

from __future__ import annotations

import functools
import itertools
import re
import string
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from rapidfuzz import process
from rapidfuzz.distance import LCSseq

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
def _rouge_tokenize() -> Callable[[str], list[str]]:
    """rouge-score's ROUGE-L tokenizer with the settings ``RougeScorer(["rougeL"])`` uses.

    Lowercase, runs of ASCII a-z0-9 only, no stemming (``use_stemmer=False``, its default).
    """
    # Imported lazily: rouge-score pulls in nltk, which costs most of a second at start-up.
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=False).tokenize


# Batch tokenization (why hand-written: once the LCS runs in C, per-text calls of rouge-score's
# tokenizer and of normalize_answer cost more than everything else, issue 12). All texts are
# joined with a separator character and lowered, translated and split in a few C-level passes.
# That gives the same tokens as the per-text functions because the separator is a control
# character that occurs in no text and is no letter, digit, punctuation, whitespace or cased or
# case-ignorable character: it ends a regex word (\b), blocks Python's only context-dependent
# lowering (final sigma), and survives every step as its own token. Tests pin the equivalence.
_SEPARATORS = tuple(c for c in map(chr, range(0xA0)) if unicodedata.category(c) == "Cc" and not c.isspace())
# Token codes: each token is one character, so a tokenized text is a str, which rapidfuzz
# compares in C++ without hashing. 0 ends a text, 1 stands for any token in no gold; surrogates
# are skipped.
_END, _SENTINEL = "\x00", "\x01"
_CODE_POINTS = (range(2, 0xD800), range(0xE000, sys.maxunicode + 1))
_MAX_CODES = sum(len(r) for r in _CODE_POINTS)


def _free_separator(texts: list[str]) -> str | None:
    probe = "".join(texts)
    return next((c for c in _SEPARATORS if c not in probe), None)


def _per_text(texts: list[str], tokenize: Callable[[str], list[str]]) -> list[str]:
    # Fallback when every separator occurs in the texts: "" (which no tokenizer yields) ends a text.
    stream: list[str] = []
    for i, text in enumerate(texts):
        if i:
            stream.append("")
        stream.extend(tokenize(text))
    return stream


def _squad_stream(texts: list[str]) -> tuple[list[str], str]:
    """Every text's ``normalize_answer(text).split()`` in one list, and the token between texts."""
    sep = _free_separator(texts)
    if sep is None:
        return _per_text(texts, lambda text: normalize_answer(text).split()), ""
    joined = sep.join(texts).lower().translate(_punctuation_table())
    return _ARTICLES.sub(" ", joined).replace(sep, f" {sep} ").split(), sep


@functools.cache
def _rouge_pattern(sep: str) -> re.Pattern[str]:
    # rouge-score's tokenizer: lower, [^a-z0-9]+ -> " ", split on spaces, keep ^[a-z0-9]+$ tokens;
    # that is, the maximal runs of [a-z0-9] in the lowered text.
    return re.compile(f"[a-z0-9]+|{re.escape(sep)}")


def _rouge_stream(texts: list[str]) -> tuple[list[str], str]:
    """Every text's rouge-score tokens in one list, and the token between texts."""
    sep = _free_separator(texts)
    if sep is None:
        return _per_text(texts, _rouge_tokenize()), ""
    return _rouge_pattern(sep).findall(sep.join(texts).lower()), sep


def _codebook(gold_stream: list[str], sep: str) -> dict[str, str] | None:
    """A code for each gold token, or None when there are more gold tokens than code points.

    Only gold tokens get their own code: a prediction token that is in no gold can match
    nothing it is compared with, so all such tokens share _SENTINEL (which no gold contains)
    and overlap counts, LCS lengths and equality stay the same.
    """
    vocab = dict.fromkeys(gold_stream)
    vocab.pop(sep, None)
    if len(vocab) > _MAX_CODES:
        return None
    return dict(zip(vocab, map(chr, itertools.chain(*_CODE_POINTS)), strict=False))


def _encode(stream: tuple[list[str], str], book: dict[str, str], n_texts: int) -> list[str]:
    """One code string per text."""
    tokens, sep = stream
    codes = {**book, sep: _END}
    encoded = "".join(map(codes.get, tokens, itertools.repeat(_SENTINEL))).split(_END)
    if len(encoded) != n_texts:  # a broken separator would misalign every later row
        raise RuntimeError(f"score_pairs: tokenized {len(encoded)} texts, expected {n_texts}")
    return encoded


def factorize(values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Codes mapping each value to its first occurrence in the list of distinct values.

    A dict, not ``pd.factorize``: pandas 2.3 treats all strings with lone surrogates (which
    decoded JSON can hold) as one value.
    """
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), np.int64, len(values))
    return codes, list(index)


def _lcs_lengths(left: list[str], right: list[str]) -> np.ndarray:
    """Longest-common-subsequence length of each (left[i], right[i]) pair of code strings.

    rapidfuzz's C++ bit-parallel LCS replaces rouge-score's pure-Python O(n*m) table, which
    dominated scoring when answers do not repeat (issue 12); the length is the same integer.
    """
    if not left:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(process.cpdist(left, right, scorer=LCSseq.similarity, dtype=np.int64, workers=1))


def harmonic_mean(hits: np.ndarray, n_pred: np.ndarray, n_gold: np.ndarray) -> np.ndarray:
    """F-measure per element: ``2PR / (P + R)`` with ``P = hits / n_pred``, ``R = hits / n_gold``.

    The same float operations (and so the same bits) as SQuAD's and rouge-score's scalar code,
    which is why Token-F1, ROUGE-L and the granularity scorers all use it; 0 where there are
    no hits (including empty sides, where P or R would be 0/0).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = hits / n_pred
        recall = hits / n_gold
        f = 2 * precision * recall / (precision + recall)
    return np.where(hits > 0, f, 0.0)


def score_pairs(
    predictions: Sequence[str], golds: Sequence[str]
) -> tuple[list[float], list[float], list[float]]:
    """Token-F1, exact match and ROUGE-L for many pairs at once.

    Equal to calling ``token_f1``, ``exact_match`` and rouge-score's ``RougeScorer(["rougeL"])``
    pair by pair. Each distinct string is tokenized once and the overlaps are counted in
    rapidfuzz's C++: the LCS of the rouge tokens for ROUGE-L, and for Token-F1 the LCS of the
    *sorted* SQuAD tokens, which for sorted sequences is exactly the size of their multiset
    intersection (SQuAD's ``common``).
    """
    if len(predictions) != len(golds):
        raise ValueError(f"score_pairs: {len(predictions)} predictions but {len(golds)} golds")
    if not predictions:
        return [], [], []
    pred_codes, pred_texts = factorize(predictions)
    gold_codes, gold_texts = factorize(golds)
    squad_gold, rouge_gold = _squad_stream(gold_texts), _rouge_stream(gold_texts)
    squad_book, rouge_book = _codebook(*squad_gold), _codebook(*rouge_gold)
    if squad_book is None or rouge_book is None:
        # More distinct gold tokens than code points: score in halves (fewer golds each).
        if len(gold_texts) == 1:
            raise ValueError(f"score_pairs: a gold answer has more than {_MAX_CODES} distinct tokens")
        half = len(predictions) // 2
        first = score_pairs(predictions[:half], golds[:half])
        second = score_pairs(predictions[half:], golds[half:])
        return first[0] + second[0], first[1] + second[1], first[2] + second[2]

    squad_p = _encode(_squad_stream(pred_texts), squad_book, len(pred_texts))
    squad_g = _encode(squad_gold, squad_book, len(gold_texts))
    rouge_p = _encode(_rouge_stream(pred_texts), rouge_book, len(pred_texts))
    rouge_g = _encode(rouge_gold, rouge_book, len(gold_texts))

    # Exact match: equal token sequences (normalize_answer joins them with single spaces).
    em = np.asarray(squad_p, dtype=object)[pred_codes] == np.asarray(squad_g, dtype=object)[gold_codes]
    bags_p, bags_g = ["".join(sorted(s)) for s in squad_p], ["".join(sorted(s)) for s in squad_g]
    rows, unique_pairs = pd.factorize(pred_codes * len(gold_texts) + gold_codes)
    up, ug = (unique_pairs // len(gold_texts)).tolist(), (unique_pairs % len(gold_texts)).tolist()

    common = _lcs_lengths([bags_p[i] for i in up], [bags_g[i] for i in ug])[rows]
    n_pred = np.fromiter(map(len, squad_p), np.int64, len(squad_p))[pred_codes]
    n_gold = np.fromiter(map(len, squad_g), np.int64, len(squad_g))[gold_codes]
    # SQuAD v2 convention: if either side is empty the score is 1 only when both are.
    either_empty = (n_pred == 0) | (n_gold == 0)
    f1 = np.where(either_empty, (n_pred == n_gold).astype(float), harmonic_mean(common, n_pred, n_gold))

    lcs = _lcs_lengths([rouge_p[i] for i in up], [rouge_g[i] for i in ug])[rows]
    r_pred = np.fromiter(map(len, rouge_p), np.int64, len(rouge_p))[pred_codes]
    r_gold = np.fromiter(map(len, rouge_g), np.int64, len(rouge_g))[gold_codes]
    # rouge-score scores an empty side 0; otherwise P = LCS/|pred|, R = LCS/|gold|.
    rl = harmonic_mean(lcs, r_pred, r_gold)
    return f1.tolist(), em.astype(float).tolist(), rl.tolist()


def rouge_l(prediction: str, gold: str) -> float:
    """ROUGE-L F-measure (rouge-score's ``rougeL``; its tokenizer keeps ASCII a-z0-9 only)."""
    return score_pairs([prediction], [gold])[2][0]


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
