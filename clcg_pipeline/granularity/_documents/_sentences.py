"""Sentences. Hand-written: nltk's punkt needs a data download (never done at run time) and
the documents are plain prose; a sentence ends at . ! ? (optionally closed by quotes or
brackets) followed by whitespace and an upper-case letter or digit, except after a few
abbreviations and single initials. The same splitter is used for every language, so a
blank's ``sentence_index`` finds the aligned sentence where the counts agree (validated)."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?…。][\"'”’»“)\]]*\s+")
_OPENERS = "\"'“‘«„([ "
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "nos",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "fig",
        "sr",
        "jr",
        "co",
        "ltd",
        "inc",
        "dept",
        "approx",
        "sra",
        "dra",
    ]
)


def _starts_sentence(rest: str) -> bool:
    """Does ``rest`` (the text after a full stop and spaces) open a sentence?"""
    head = rest.lstrip(_OPENERS)
    if not head:
        return False
    ch = head[0]
    # Georgian Mkhedruli is caseless in use but "lowercase" in Unicode.
    return ch.isdigit() or (ch.isalpha() and (not ch.islower() or "\u10d0" <= ch <= "\u10ff"))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``, whitespace excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if not _starts_sentence(text[match.end() :]):
            continue
        words = text[start : match.start()].split()
        last_word = words[-1].lower() if words else ""
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and text[match.start() - 1].isupper()):
            continue
        piece = text[start : match.end()].strip()
        if piece:
            offset = text.index(piece, start)
            spans.append((offset, offset + len(piece)))
        start = match.end()
    rest = text[start:].strip()
    if rest:
        offset = text.index(rest, start)
        spans.append((offset, offset + len(rest)))
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see :func:`sentence_spans`)."""
    return [text[a:b] for a, b in sentence_spans(text)]


def blank_sentence(text: str, index: int, marker: str) -> str:
    """``text`` with its ``index``-th sentence replaced in place by ``marker``."""
    spans = sentence_spans(text)
    if not 0 <= index < len(spans):
        raise IndexError(f"sentence {index} of a paragraph with {len(spans)} sentence(s)")
    a, b = spans[index]
    return text[:a] + marker + text[b:]
