"""Offline, rule-based stand-ins for the granularity reader and judges (no network, no key).

``answer`` is the granularity side of the English-centric lexical reader
(``lexical-overlap-v1``, see ``calls/_lexical.py``): it reads the same rendered prompt a
hosted model gets and answers by English word overlap, so it does well on English documents
and poorly on the others, a real (if crude) cross-lingual gap for the demo:

- word QA: the document sentence sharing most of the question's content words, and from it
  the first word the question does not contain (a number when the question asks for one);
- cloze: each option scored by its overlap with the sentences next to each blank (and, at
  half weight, with the blank's paragraph and the paragraphs either side), words weighted by
  their rarity in the document; assigned greedily (best pair first, each option once);
- paragraph filling: the neighbour sentences nearest the blank, echoed;
- summary: the lead sentences; translation: the source copied (an honest baseline).

``judge_fill`` and ``judge_cloze_error`` (``rule-judge-v1``) score by simple, stated rules and
quote their evidence verbatim from the inputs, so their output passes the same strict
parsing a hosted judge's must. ``options.variant: strict`` is a little harsher, so two
offline judges disagree a little, as real judges do. None of this pretends to be an LLM.
"""

from __future__ import annotations

import json
import math
import re

from clcg_pipeline.calls import PARAGRAPH_MARK, ChatRequest, content_words
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.granularity._prompts import (
    BLANK_RE,
    DOCUMENT_HEADER,
    FORMAT_HEADER,
    OPTIONS_HEADER,
    QUESTION_HEADER,
    SOURCE_HEADER,
    TASK_HEADER,
    option_letter,
    split_sentences,
)
from clcg_pipeline.granularity._tasks import GAP

UNKNOWN = "unknown"
NO_DOCUMENT = "No document was given, so this cannot be answered from it."
_WORD = re.compile(r"\w+", re.UNICODE)
# Words with numbers kept whole ("3,200", "4.6"), as the task builder tokenises them.
_TOKEN = re.compile(r"\w+(?:[.,]\d+)*", re.UNICODE)
_QUOTED_GAP = re.compile(r'"([^"]*____[^"]*)"')
_MAX_WORDS = re.compile(r"at most (\d+) words")
_CONNECTIVES = frozenset(
    [
        "however",
        "therefore",
        "thus",
        "moreover",
        "furthermore",
        "meanwhile",
        "nevertheless",
        "consequently",
        "instead",
        "also",
        "but",
        "so",
        "then",
        "hence",
        "still",
        "yet",
        "besides",
    ]
)
_NEGATIONS = frozenset(
    ["not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"]
)


def _user(request: ChatRequest) -> str:
    return "\n".join(m["content"] for m in request.messages if m["role"] == "user")


def _section(text: str, header: str) -> str:
    """The block after ``header`` up to the next blank line that starts another header."""
    start = text.find(header)
    if start == -1:
        return ""
    body = text[start + len(header) :]
    for nxt in (f"\n\n{TASK_HEADER}", f"\n\n{FORMAT_HEADER}", f"\n\n{SOURCE_HEADER}"):
        cut = body.find(nxt)
        if cut != -1:
            body = body[:cut]
    return body.strip("\n")


def _paragraphs(block: str) -> list[tuple[str, str]]:
    """(pid, text) of every ``¶pid text`` line of a block."""
    out: list[tuple[str, str]] = []
    for line in block.splitlines():
        if line.startswith(PARAGRAPH_MARK):
            pid, _, body = line[len(PARAGRAPH_MARK) :].partition(" ")
            out.append((pid, body.strip()))
    return out


def _document(user: str) -> list[tuple[str, str]]:
    if not user.startswith(f"{DOCUMENT_HEADER}\n"):
        return []  # withheld (no-context ablation) or the whole document is the source
    return _paragraphs(_section(user, f"{DOCUMENT_HEADER}\n"))


def _line_after(user: str, header: str) -> str:
    for line in user.splitlines():
        if line.startswith(header):
            return line[len(header) :].strip()
    return ""


def _max_words(user: str, default: int = 120) -> int:
    found = _MAX_WORDS.search(_line_after(user, FORMAT_HEADER))
    return int(found.group(1)) if found else default


def _clip(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words])


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a) if a else 0.0


# -- the reader --------------------------------------------------------------------------------
def _gap_fill(masked: str, sentence: str) -> str | None:
    """The token of ``sentence`` standing where ``masked`` has its gap, by exact neighbours."""
    head, _, tail = masked.partition(GAP)
    before = [t.lower() for t in _TOKEN.findall(head)]
    after = [t.lower() for t in _TOKEN.findall(tail)]
    words = _TOKEN.findall(sentence)
    for i, word in enumerate(words):
        left_ok = not before or (i > 0 and words[i - 1].lower() == before[-1])
        right_ok = not after or (i + 1 < len(words) and words[i + 1].lower() == after[0])
        if left_ok and right_ok and (before or after):
            return word
    return None


def _word_answer(user: str, threshold: float) -> str:
    """Each quoted gap sentence of the question is matched to its best-overlapping document
    sentence and the word at the gap read off by its exact English neighbours; with two
    gaps (Multi-QA) the larger number is the answer."""
    question = _line_after(user, QUESTION_HEADER)
    sentences = [s for _, text in _document(user) for s in split_sentences(text)]
    masked = _QUOTED_GAP.findall(question) or [question]
    if not sentences:
        return UNKNOWN
    found: list[str] = []
    for gap_sentence in masked:
        q_words = set(content_words(gap_sentence.replace(GAP, " ")))
        if not q_words:
            continue
        score, _, best = max(
            (_overlap(q_words, set(content_words(s))), -i, s) for i, s in enumerate(sentences)
        )
        if score < threshold or score == 0.0:
            continue
        word = _gap_fill(gap_sentence, best)
        if word is None:  # neighbours not found: the first new word, a number when one is asked for
            new = [w for w in _TOKEN.findall(best) if content_words(w) and w.lower() not in q_words]
            digits = [w for w in new if any(c.isdigit() for c in w)]
            word = (digits if digits and "number" in question.lower() else new or [None])[0]
        if word:
            found.append(word)
    if not found:
        return UNKNOWN
    if len(masked) > 1:
        numbers = [w for w in found if re.fullmatch(r"\d[\d,]*(\.\d+)?", w)]
        if numbers:
            return max(numbers, key=lambda w: float(w.replace(",", "")))
    return found[0]


def _neighbours(document: list[tuple[str, str]], number: int) -> tuple[list[str], str, list[str]]:
    """(sentences before, the blank's paragraph, sentences after) around ``[BLANK number]``."""
    marker = f"[BLANK {number}]"
    for k, (_, text) in enumerate(document):
        if marker not in text:
            continue
        head, _, tail = text.partition(marker)
        before = split_sentences(head)
        after = split_sentences(tail)
        if not before and k > 0:
            before = split_sentences(document[k - 1][1])
        if not after and k + 1 < len(document):
            after = split_sentences(document[k + 1][1])
        return before, text, after
    return [], "", []


def _cloze_answer(user: str) -> str:
    options: list[str] = []
    for line in _section(user, f"{OPTIONS_HEADER}\n").splitlines():
        letter, _, text = line.partition(". ")
        if len(letter) == 1 and letter.isupper():
            options.append(text)
    document = _document(user)
    # The answer format names the blanks "(1 to N)"; the document, when shown, holds them too.
    stated = re.search(r"\(1 to (\d+)\)", _line_after(user, FORMAT_HEADER))
    blanks = sorted(
        {int(n) for _, text in document for n in BLANK_RE.findall(text)}
        | set(range(1, int(stated.group(1)) + 1 if stated else 1))
    )
    option_words = [set(content_words(o)) for o in options]
    # Words rare in the document carry the evidence; common ones ("festival" in a festival
    # report) fit every blank. Inverse sentence frequency weighs them.
    sentences = [
        set(content_words(s)) for _, text in document for s in split_sentences(BLANK_RE.sub(" ", text))
    ]
    weight = {
        w: math.log((len(sentences) + 1) / (1 + sum(w in s for s in sentences))) + 0.1
        for w in set().union(*option_words)
    }
    pairs: list[tuple[float, int, int]] = []
    for number in blanks:
        before, paragraph, after = _neighbours(document, number)
        near = set(content_words(" ".join(before[-1:] + after[:1])))
        k = next((i for i, (_, text) in enumerate(document) if paragraph and text == paragraph), None)
        window = " ".join(t for _, t in document[max(0, k - 1) : k + 2]) if k is not None else ""
        around = set(content_words(BLANK_RE.sub(" ", window)))
        for j, words in enumerate(option_words):
            hit = sum(weight[w] for w in words & near) + 0.5 * sum(weight[w] for w in (words & around) - near)
            pairs.append((hit, -number, -j))
    chosen: dict[int, int] = {}
    used: set[int] = set()
    for _, neg_number, neg_j in sorted(pairs, reverse=True):
        number, j = -neg_number, -neg_j
        if number in chosen or j in used:
            continue
        chosen[number] = j
        used.add(j)
    return json.dumps({str(n): option_letter(chosen[n]) for n in sorted(chosen)})


def _fill_answer(user: str) -> str:
    document = _document(user)
    if not document:
        return NO_DOCUMENT
    before, _, after = _neighbours(document, 1)
    echoed = " ".join(before[-1:] + after[:1])
    return _clip(echoed, _max_words(user)) or NO_DOCUMENT


def _summary_answer(user: str) -> str:
    document = _document(user)
    if not document:
        return NO_DOCUMENT
    lead = [s for _, text in document for s in split_sentences(text)][:3]
    return _clip(" ".join(lead), _max_words(user))


def _translation_answer(user: str) -> str:
    source = _paragraphs(_section(user, f"{SOURCE_HEADER}\n"))
    return "\n\n".join(text for _, text in source) or NO_DOCUMENT


def answer(request: ChatRequest, spec: ModelSpec) -> str:
    """The lexical reader's reply to one granularity task prompt (deterministic)."""
    user = _user(request)
    family = request.prompt_version.rsplit("-v", 1)[0]
    if family == "gran-word-qa":
        return _word_answer(user, float(spec.options.get("threshold", 0.2)))
    if family == "gran-cloze":
        return _cloze_answer(user)
    if family == "gran-fill":
        return _fill_answer(user)
    if family == "gran-summary":
        return _summary_answer(user)
    if family == "gran-translate":
        return _translation_answer(user)
    raise ValueError(f"offline reader: no granularity handler for prompt {request.prompt_version!r}")


# -- the judges --------------------------------------------------------------------------------
def _tag(user: str, name: str) -> str:
    found = re.search(rf"<{name}>\n(.*?)\n</{name}>", user, re.DOTALL)
    return found.group(1).strip() if found else ""


def _quote(text: str, words: int = 8) -> str | None:
    """The first ``words`` words of ``text``, a verbatim span after whitespace normalisation."""
    parts = text.split()
    return " ".join(parts[:words]) if parts else None


def _entities(text: str) -> set[str]:
    """Numbers and capitalised words after the first of each sentence (crude named entities)."""
    out: set[str] = set()
    for sentence in split_sentences(text):
        words = _WORD.findall(sentence)
        for k, w in enumerate(words):
            if any(c.isdigit() for c in w) or (k > 0 and w[:1].isupper()):
                out.add(w)
    return out


def _f1(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    hits = len(a & b)
    return 0.0 if hits == 0 else 2 * hits / (len(a) + len(b))


def judge_fill(request: ChatRequest, spec: ModelSpec) -> str:
    """fill-judge-v1 by rules: overlap with the reference (topic) and neighbours (coherence),
    entities found in the inputs, length and single-paragraph checks; quotes the reference."""
    user = _user(request)
    previous, reference = _tag(user, "previous"), _tag(user, "reference")
    generated, following = _tag(user, "generated"), _tag(user, "next")
    strict = spec.options.get("variant") == "strict"
    gen = set(content_words(generated))
    ref = set(content_words(reference))
    ctx = set(content_words(f"{previous} {following}"))
    n_gen, n_ref = len(generated.split()), max(1, len(reference.split()))
    if not generated.strip():
        scores = dict.fromkeys(
            ("topic_fidelity", "local_coherence", "entity_consistency", "instruction_following"), 0
        )
        scores["format_compliance"] = 0
    else:
        ratio = n_gen / n_ref
        entities = _entities(generated)
        known = _entities(f"{previous} {reference} {following}") | set(
            _WORD.findall(f"{previous} {reference} {following}")
        )
        entity_share = len(entities & known) / len(entities) if entities else 0.5
        instruction = 20 - (5 if not 0.5 <= ratio <= 2.0 else 0) - (5 if not 0.25 <= ratio <= 3.0 else 0)
        bad_format = sum(
            (
                "\n" in generated.strip(),
                bool(re.match(r"^\s*([-*•]|\d+\.|#)", generated)),
                generated.strip()[:1] in "\"'“«",
            )
        )
        scores = {
            "topic_fidelity": round(20 * _f1(gen, ref)),
            "local_coherence": round(20 * min(1.0, 2 * _overlap(gen, ctx))),
            "entity_consistency": round(20 * entity_share),
            "instruction_following": instruction,
            "format_compliance": max(0, 20 - 6 * bad_format),
        }
    if strict:  # a harsher reader of the same rules: judges must not agree by construction
        scores = {k: max(0, v - 2) if k != "topic_fidelity" else int(v * 0.85) for k, v in scores.items()}
    quotes = [q for q in (_quote(reference), _quote(following if strict else previous)) if q]
    if not quotes:
        quotes = [q for q in (_quote(previous), _quote(following), _quote(generated)) if q][:1]
    reasons = (
        f"rule-based: {round(100 * _f1(gen, ref))}% content-word F1 with the reference, "
        f"{round(100 * _overlap(gen, ctx))}% of its words in the neighbours, {n_gen} words vs {n_ref}."
    )
    return json.dumps(
        {**scores, "total": sum(scores.values()), "evidence": quotes or [""], "reasons": reasons},
        ensure_ascii=False,
    )


def judge_cloze_error(request: ChatRequest, spec: ModelSpec) -> str:
    """cloze-error-judge-v1 by rules, in the taxonomy's priority order (M2 surface cues when
    they explain the choice, M3 on a contradicted number or negation, else M1)."""
    user = _user(request)
    previous, current, following = _tag(user, "previous"), _tag(user, "current"), _tag(user, "next")
    gold, chosen = _tag(user, "gold"), _tag(user, "chosen")
    strict = spec.options.get("variant") == "strict"
    context_text = f"{previous} {current} {following}"
    context = set(content_words(context_text))
    chosen_words, gold_words = set(content_words(chosen)), set(content_words(gold))
    first = (_WORD.findall(chosen.lower()) or [""])[0]
    lure = _overlap(chosen_words, context) > _overlap(gold_words, context)
    secondary: list[str] = []
    unknown_numbers = {w for w in _WORD.findall(chosen) if any(c.isdigit() for c in w)} - set(
        _WORD.findall(context_text)
    )
    negation_flip = bool(set(chosen.lower().split()) & _NEGATIONS) != bool(
        set(gold.lower().split()) & _NEGATIONS
    )
    if first in _CONNECTIVES or lure:
        main = "M2"
        secondary.append("S3")
        if len(chosen.split()) > 1.5 * max(1, len(gold.split())):
            secondary.append("S8")
    elif unknown_numbers or negation_flip:
        main = "M3"
        secondary.extend((["S4"] if unknown_numbers else []) + (["S5"] if negation_flip else []))
    else:
        main = "M1"
        secondary.append("S1")
        if _overlap(chosen_words, set(content_words(current))) > 0 and not (
            chosen_words & set(content_words(f"{previous} {following}"))
        ):
            secondary.append("S6")
    confidence = "medium" if strict or main == "M1" else "high"
    quotes = [q for q in (_quote(chosen), _quote(gold)) if q] or [""]
    reasons = f"rule-based: main class {main} from connectives, overlap, numbers and negation."
    return json.dumps(
        {
            "main_class": main,
            "secondary": secondary,
            "confidence": confidence,
            "evidence": quotes,
            "reasons": reasons,
        },
        ensure_ascii=False,
    )


__all__ = ["NO_DOCUMENT", "UNKNOWN", "answer", "judge_cloze_error", "judge_fill"]
