"""The rule-based offline judge (``rule-judge-v1``): a stand-in for hosted judges, not an LLM.

It answers ``error-judge-v1`` and ``error-judge-pair-v1`` requests by reading the rendered
prompt's ``<<<SECTION>>>`` blocks back and applying fixed, documented rules on English
content words (the reader's stopword list), so the demo runs the whole taxonomy path with
no key. Its labels are lexical heuristics; the report names them as such.

``judge`` (one response), in order, first rule that fires:

1. empty response -> ``format_or_parse_failure``;
2. a refusal phrase ("I cannot", "as an AI", ...) -> ``refusal``;
3. "Not stated" -> ``correct`` when the gold answer is itself "Not stated", else
   ``unwarranted_not_stated`` (the rules cannot read a translated passage, so they trust the
   item bank: scored items are answerable);
4. mostly non-Latin letters, or at least four words none of which is an English function
   word and little gold overlap -> ``wrong_language``;
5. gold recall (share of the gold's content words in the response) >= ``hi``: ``correct``,
   unless more than ``extra`` of the response's content words occur in neither gold nor
   passage (``unsupported_addition``);
6. recall >= ``lo`` -> ``partial_or_omission``;
7. otherwise: a polar answer opposite to a polar gold, or numbers where the gold has other
   numbers -> ``contradiction``; mostly passage words -> ``wrong_target``; else
   ``unsupported_addition``.

``options.variant: strict`` (offline-judge-b) raises ``hi``/``lo`` and lowers ``extra``, so
the two offline judges disagree on borderline responses (their agreement is not trivially 1).

``judge_pair``: the response with the higher gold F1 wins; within ``tie_margin`` it is a tie,
except that the strict variant breaks near-ties toward response A - a deliberate, documented
primacy rule, so the order-bias estimator has a known effect to find in the demo.

The evidence quote is always the first words of the response (or of the gold answer or
question when the response is empty), so it really occurs in the inputs.
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from dataclasses import dataclass

from clcg_pipeline.calls import NOT_STATED, STOPWORDS, ChatRequest, content_words
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.validation.taxonomy._judging import (
    END,
    GOLD,
    PASSAGE,
    QUESTION,
    RESPONSE,
    RESPONSE_A,
    RESPONSE_B,
)

_HEADER = re.compile(r"^<<<([A-Z ]+)>>>$", re.MULTILINE)
_REFUSAL = re.compile(
    r"\b(i\s+can(?:not|'t|’t)|i\s+am\s+unable|i'm\s+unable|i\s+won't|as\s+an\s+ai|i\s+must\s+decline)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_POLAR = {"yes": "yes", "no": "no"}
_QUOTE_WORDS = 12


@dataclass(frozen=True)
class _Rules:
    hi: float  # gold recall for correct
    lo: float  # gold recall for partial_or_omission
    extra: float  # share of unsupported response words that makes an addition
    latin_letters: float  # below this share of Latin letters: wrong language
    tie_margin: float  # pair: F1 difference below this is a tie
    primacy: bool  # pair: near-ties go to response A


_VARIANTS = {
    "default": _Rules(hi=0.75, lo=0.3, extra=0.5, latin_letters=0.5, tie_margin=0.05, primacy=False),
    "strict": _Rules(hi=0.9, lo=0.45, extra=0.3, latin_letters=0.6, tie_margin=0.1, primacy=True),
}


def _rules(spec: ModelSpec) -> _Rules:
    variant = str(spec.options.get("variant", "default"))
    if variant not in _VARIANTS:
        raise ValueError(
            f"model {spec.id!r}: options.variant {variant!r} unknown; expected one of {sorted(_VARIANTS)}"
        )
    return _VARIANTS[variant]


def sections(request: ChatRequest) -> dict[str, str]:
    """The ``<<<NAME>>>`` blocks of the user message (field values cannot contain a header)."""
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    found = list(_HEADER.finditer(user))
    out: dict[str, str] = {}
    for this, following in itertools.pairwise(found):
        out[this.group(1)] = user[this.end() : following.start()].strip("\n")
    if not found or found[-1].group(1) != END:
        raise ValueError(f"offline judge: prompt {request.prompt_version!r} has no {END} section")
    return out


def _quote(*texts: str) -> str:
    """The first words of the first non-empty text: a span that occurs in it verbatim."""
    for text in texts:
        words = text.split()
        if words:
            return " ".join(words[:_QUOTE_WORDS])
    return ""


def _latin_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    latin = sum(1 for c in letters if "LATIN" in unicodedata.name(c, ""))
    return latin / len(letters)


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s]", " ", unicodedata.normalize("NFKC", text).lower()).split()


def _is_not_stated(text: str) -> bool:
    return " ".join(_words(text)) == " ".join(_words(NOT_STATED))


def _result(label: str, evidence: str, rationale: str) -> str:
    return json.dumps(
        {"label": label, "evidence": evidence, "rationale": f"rule-based: {rationale}"}, ensure_ascii=False
    )


def label_response(passage: str, question: str, gold: str, response: str, rules: _Rules) -> tuple[str, str]:
    """(label, rationale) by the rules of the module docstring."""
    if not response.strip():
        return "format_or_parse_failure", "empty response"
    if _REFUSAL.search(response):
        return "refusal", "refusal phrase"
    gold_words = set(content_words(gold))
    passage_words = set(content_words(passage))
    if _is_not_stated(response):
        # The rules cannot read a translated passage, so they trust the item bank: a gold answer
        # other than "Not stated" means the passage supports one.
        if _is_not_stated(gold) or not gold_words:
            return "correct", "gold is Not stated too"
        return "unwarranted_not_stated", "Not stated, but the item has a gold answer"
    resp_words = content_words(response)
    resp_set = set(resp_words)
    recall = len(gold_words & resp_set) / len(gold_words) if gold_words else 0.0
    words = _words(response)
    if _latin_share(response) < rules.latin_letters:
        return "wrong_language", f"Latin letters {_latin_share(response):.2f} < {rules.latin_letters}"
    if len(words) >= 4 and not any(w in STOPWORDS for w in words) and recall < rules.lo:
        return "wrong_language", "no English function word in four or more words"
    unsupported = [w for w in resp_set if w not in gold_words and w not in passage_words]
    unsupported_share = len(unsupported) / len(resp_set) if resp_set else 0.0
    if recall >= rules.hi:
        if unsupported_share > rules.extra:
            return (
                "unsupported_addition",
                f"recall {recall:.2f} but {unsupported_share:.2f} unsupported words",
            )
        return "correct", f"gold recall {recall:.2f} >= {rules.hi}"
    if recall >= rules.lo:
        return "partial_or_omission", f"gold recall {recall:.2f} in [{rules.lo}, {rules.hi})"
    gold_polar, resp_polar = _POLAR.get(" ".join(_words(gold))), _POLAR.get(" ".join(words))
    if gold_polar and resp_polar and gold_polar != resp_polar:
        return "contradiction", "opposite polar answer"
    gold_numbers, resp_numbers = set(_NUMBER.findall(gold)), set(_NUMBER.findall(response))
    if gold_numbers and resp_numbers and not gold_numbers & resp_numbers:
        return "contradiction", "numbers differ from the gold's"
    in_passage = len(resp_set & passage_words) / len(resp_set) if resp_set else 0.0
    if in_passage >= 0.5:
        return "wrong_target", f"gold recall {recall:.2f}; {in_passage:.2f} of its words are from the passage"
    return (
        "unsupported_addition",
        f"gold recall {recall:.2f}; {in_passage:.2f} of its words are from the passage",
    )


def judge(request: ChatRequest, spec: ModelSpec) -> str:
    """Route handler for ``error-judge``: one response -> the clcg-error-v1 JSON object."""
    rules = _rules(spec)
    blocks = sections(request)
    passage, question = blocks.get(PASSAGE, ""), blocks.get(QUESTION, "")
    gold, response = blocks.get(GOLD, ""), blocks.get(RESPONSE, "")
    label, rationale = label_response(passage, question, gold, response, rules)
    return _result(label, _quote(response, gold, question, passage), rationale)


def _f1(response: str, gold: str) -> float:
    r, g = content_words(response), content_words(gold)
    common = len(set(r) & set(g))
    if not r or not g or not common:
        return 0.0
    precision, recall = common / len(set(r)), common / len(set(g))
    return 2 * precision * recall / (precision + recall)


def judge_pair(request: ChatRequest, spec: ModelSpec) -> str:
    """Route handler for ``error-judge-pair``: which response is better supported, A, B or tie."""
    rules = _rules(spec)
    blocks = sections(request)
    question, gold = blocks.get(QUESTION, ""), blocks.get(GOLD, "")
    a, b = blocks.get(RESPONSE_A, ""), blocks.get(RESPONSE_B, "")
    fa, fb = _f1(a, gold), _f1(b, gold)
    if abs(fa - fb) < rules.tie_margin:
        preferred = "A" if rules.primacy and a.strip() else "tie"
    else:
        preferred = "A" if fa > fb else "B"
    chosen = {"A": a, "B": b}.get(preferred, "")
    rationale = f"rule-based: gold F1 A {fa:.2f} vs B {fb:.2f} (tie margin {rules.tie_margin})"
    evidence = _quote(chosen, gold, question)
    return json.dumps(
        {"preferred": preferred, "evidence": evidence, "rationale": rationale}, ensure_ascii=False
    )
