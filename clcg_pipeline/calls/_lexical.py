"""The offline lexical reader (``provider: offline``, model ``lexical-overlap-v1``).

It reads the same rendered prompt a hosted model gets, finds the ``¶<pid>`` paragraphs and
the numbered questions, and answers each question with the passage sentence that shares
the largest share of the question's content words. It is English-centric by construction
(English stopwords, exact word match), so it loses accuracy on other languages: a real,
if crude, cross-lingual gap that makes the demo meaningful without a network or a key.
"""

from __future__ import annotations

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


def lexical_answers(prompt: str, *, threshold: float) -> str:
    """A JSON array of answers, one per numbered question in ``prompt``."""
    sentences, questions = _parse_prompt(prompt)
    return json.dumps([answer_question(q, sentences, threshold) for q in questions], ensure_ascii=False)
