"""The offline lexical reader (``provider: offline``, model ``lexical-overlap-v1``).

It reads the same rendered prompt a hosted model gets, finds the ``¶<pid>`` paragraphs and
the numbered questions, and answers each question with the passage sentence that shares
the largest share of the question's content words. It is English-centric by construction
(English stopwords, exact word match), so it loses accuracy on other languages: a real,
if crude, cross-lingual gap that makes the demo meaningful without a network or a key.

That natural gap is the same for every language (an answer in the passage's language scores
about 0 against the English gold answer), so the demo SIMULATES a language-dependent one.
On the bundled demo corpus (``clcg_pipeline/corpus/demo_data``) the reader "understands" a
target-language passage by reading its English original, paragraph by paragraph, except for a
share ``options.simulated_drop_<iso>`` of that language's questions (e.g.
``simulated_drop_ht: 0.75``), which it answers from the untranslated passage as the plain
reader would. Which questions drop is a seeded coin on (language, question), so the result is
deterministic whatever the order, repetition or cache. Articles outside the demo corpus, and
languages without the option, get the plain reader. The rates are invented for the demo
(assets_config/models.yaml); they measure no real model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import re
import unicodedata
from dataclasses import dataclass

from clcg_pipeline.calls._requests import NOT_STATED, OPTIONS_HINT, PARAGRAPH_MARK, POLAR_HINT

# A fixed list (the usual English function words) instead of nltk's, whose corpus needs a
# download at run time; fixed also keeps the reader's output stable across installs.
_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves s t don according
    passage article text"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SENTENCE_END = re.compile(r"(?<=[.!?。؟።])\s+")
_QUESTION = re.compile(r"^(\d+)\.\s+(.*)$")
_OPTION = re.compile(r"^\s+-\s+(.*)$")


def content_words(text: str) -> list[str]:
    """Lowercased words with punctuation removed and English stopwords dropped."""
    folded = unicodedata.normalize("NFKC", text).lower()
    words = re.sub(r"[^\w\s]", " ", folded).split()
    return [w for w in words if w not in STOPWORDS]


@dataclass(frozen=True)
class _Q:
    text: str
    polar: bool
    options: tuple[str, ...]


def _parse_prompt(prompt: str) -> tuple[list[str], list[_Q]]:
    """(passage sentences, questions) from a rendered user message."""
    # The last header is the template's: a paragraph may itself end in "Questions:".
    if prompt.startswith("Questions:\n"):
        passage_part, question_part = "", prompt
    else:
        passage_part, _, question_part = prompt.rpartition("\n\nQuestions:\n")
    sentences: list[str] = []
    for line in passage_part.splitlines():
        if line.startswith(PARAGRAPH_MARK):
            _, _, body = line.partition(" ")
            sentences.extend(s.strip() for s in _SENTENCE_END.split(body) if s.strip())
    questions: list[_Q] = []
    for line in question_part.splitlines():
        q = _QUESTION.match(line)
        if q:
            text = q.group(2)
            polar = text.endswith(POLAR_HINT)
            questions.append(_Q(text.removesuffix(POLAR_HINT).strip(), polar, ()))
            continue
        o = _OPTION.match(line)
        if o and questions and OPTIONS_HINT not in line:
            last = questions[-1]
            questions[-1] = _Q(last.text, last.polar, (*last.options, o.group(1).strip()))
    return sentences, questions


def _overlap(question_words: set[str], sentence: str) -> float:
    if not question_words:
        return 0.0
    return len(question_words & set(content_words(sentence))) / len(question_words)


def answer_question(question: _Q, sentences: list[str], threshold: float) -> str:
    """The reader's answer to one question given the passage sentences."""
    if not sentences:
        return NOT_STATED
    q_words = set(content_words(question.text))
    scored = [(_overlap(q_words, s), -i, s) for i, s in enumerate(sentences)]
    best_score, _, best = max(scored)
    if best_score < threshold or best_score == 0.0:
        return NOT_STATED
    if question.polar:
        return "Yes"
    if question.options:
        best_words = set(content_words(best))
        ranked = [
            (len(set(content_words(opt)) & best_words), -i, opt) for i, opt in enumerate(question.options)
        ]
        return max(ranked)[2]
    return best


#: Option-name prefix of the simulated per-language drop rate (``simulated_drop_ht``).
SIMULATED_DROP_PREFIX = "simulated_drop_"


def simulated_drop_rate(options: dict[str, float | int | str | bool], language: str, model: str) -> float:
    """The simulated share of ``language``'s questions dropped; 0 when the option is absent."""
    key = SIMULATED_DROP_PREFIX + language
    value = options.get(key, 0.0)
    # bool is an int: reject it explicitly so `simulated_drop_ht: true` is not read as 1.0.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(
            f"models.yaml: model {model!r}, options.{key}: {value!r} is not a share between 0 and 1"
        )
    return float(value)


def simulated_drop(language: str, question: str, rate: float) -> bool:
    """True when the simulation drops this (language, question): a seeded coin."""
    if rate <= 0.0:
        return False
    digest = hashlib.sha256(f"{language}\x1f{question}".encode()).digest()
    # The first 8 bytes as a uniform draw in [0, 1): fixed per pair, whatever the call order.
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def lexical_answers(prompt: str, *, threshold: float) -> str:
    """A JSON array of answers, one per numbered question in ``prompt``."""
    sentences, questions = _parse_prompt(prompt)
    return json.dumps([answer_question(q, sentences, threshold) for q in questions], ensure_ascii=False)


@functools.cache
def _demo_english() -> dict[tuple[str, str], str]:
    """(doc_id, pid) -> English paragraph text of the bundled demo corpus."""
    # Read as package data (not through the corpus package) so the calls layer imports nothing.
    path = importlib.resources.files("clcg_pipeline.corpus") / "demo_data" / "articles" / "en.jsonl"
    texts: dict[tuple[str, str], str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            article = json.loads(line)
            for paragraph in article["paragraphs"]:
                texts[(article["doc_id"], paragraph["pid"])] = paragraph["text"]
    return texts


def _english_original(prompt: str, doc_id: str) -> str | None:
    """``prompt`` with each paragraph replaced by its demo English original; None if not demo."""
    english = _demo_english()
    lines = prompt.split("\n")
    found = False
    for i, line in enumerate(lines):
        if line.startswith(PARAGRAPH_MARK):
            mark, _, _ = line.partition(" ")
            text = english.get((doc_id, mark.removeprefix(PARAGRAPH_MARK)))
            if text is None:
                return None  # not a demo article (or a pid the demo lacks): no simulation
            lines[i], found = f"{mark} {text}", True
    return "\n".join(lines) if found else None


def simulated_answers(prompt: str, *, threshold: float, language: str, doc_id: str, drop_rate: float) -> str:
    """The demo's simulated reader: answers from the English original except dropped questions.

    Falls back to :func:`lexical_answers` when ``prompt`` is not a demo article (module docstring).
    """
    english_prompt = _english_original(prompt, doc_id)
    if english_prompt is None:
        return lexical_answers(prompt, threshold=threshold)
    sentences, questions = _parse_prompt(prompt)
    english_sentences, _ = _parse_prompt(english_prompt)
    answers = [
        answer_question(
            q, sentences if simulated_drop(language, q.text, drop_rate) else english_sentences, threshold
        )
        for q in questions
    ]
    return json.dumps(answers, ensure_ascii=False)
