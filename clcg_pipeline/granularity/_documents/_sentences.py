"""Sentences, the same way in every language, so a blank's ``sentence_index`` finds the aligned
sentence wherever the counts agree (validated).

A boundary is proposed by either of two rule sets and kept only if it passes the same checks:

- ``sentencex`` (Wikimedia's multilingual segmenter: a compiled wheel with its rules built
  in, no dependencies, no download at run time) knows the terminators of every script: the
  Devanagari danda ``।``, the Ethiopic ``።`` and ``፧``, the Arabic ``؟``, CJK ``。！？`` with no
  space after them, and more. It is called with one fixed
  language code (:data:`SEGMENTER_LANGUAGE`): callers pass text only, and one rule set for
  every language is what keeps counts comparable.
- the project's own rule, kept alongside because sentencex alone would move boundaries in
  prose it already splits well (its quote pairing reads the Maltese elision ``'l`` as an open
  quote, its English initials rule joins Haitian one-letter words such as ``l.``), and a stored
  task bank's sentence indices were picked with it: a sentence ends at . ! ? … (optionally
  closed by quotes or brackets) followed by whitespace, or at 。！？ followed by anything.

The checks: the next sentence opens with an upper-case letter, a digit or a caseless script's
letter, and a full stop is followed by whitespace, does not follow an Ethiopic letter (that
script's full stop is ``።``; its ``.`` marks abbreviations) and does not follow one of a few
abbreviations or a single initial. ``nltk``'s punkt is not used: it needs a data download,
which is never done at run time.
"""

from __future__ import annotations

import re
from itertools import accumulate, pairwise

import sentencex

# sentencex's rules are chosen by language; one code for every language (see the docstring).
SEGMENTER_LANGUAGE = "en"
# Full-width stops end a sentence with no space after them (CJK is written without spaces).
_SENTENCE_END = re.compile(r"[.!?…][\"'”’»“)\]]*\s+|[。！？][\"'”’»“)\]」』]*\s*")
_OPENERS = "\"'“‘«„([ "
_CLOSERS = "\"'”’»“)]"
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
    head = rest.lstrip(_OPENERS).lstrip()
    if not head:
        return False
    ch = head[0]
    # Georgian Mkhedruli is caseless in use but "lowercase" in Unicode.
    return ch.isdigit() or (ch.isalpha() and (not ch.islower() or "\u10d0" <= ch <= "\u10ff"))


def _after_abbreviation(before: str) -> bool:
    """Does ``before`` (the text up to a boundary) end in an abbreviation or an initial's full stop?"""
    head = before.rstrip().rstrip(_CLOSERS)
    if not head.endswith("."):
        return False
    # A full stop glued to what follows (``4.6``, ``e.g``) never ends a sentence; nor one after an
    # Ethiopic letter: Ethiopic ends sentences with ``።``, so its ``.`` marks abbreviations (ዓ.ም.).
    if not before[-1:].isspace() or "\u1200" <= head[-2:-1] <= "\u137f":
        return True
    words = head[:-1].split()
    last = words[-1] if words else ""
    return last.lower() in _ABBREVIATIONS or (len(last) == 1 and last.isupper())


def _candidates(text: str) -> list[int]:
    """Boundary offsets proposed by either rule set, in order, the text's ends excluded."""
    ends = {m.end() for m in _SENTENCE_END.finditer(text)}
    # segment() is non-destructive (its pieces concatenate to the text), so running lengths are
    # character offsets into ``text``.
    ends.update(accumulate(len(piece) for piece in sentencex.segment(SEGMENTER_LANGUAGE, text)))
    return sorted(e for e in ends if 0 < e < len(text))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``, whitespace excluded."""
    cuts = [0]
    for end in _candidates(text):
        before = text[cuts[-1] : end]
        if before.strip() and _starts_sentence(text[end:]) and not _after_abbreviation(before):
            cuts.append(end)
    cuts.append(len(text))
    spans: list[tuple[int, int]] = []
    for a, b in pairwise(cuts):
        piece = text[a:b]
        stripped = piece.strip()
        if stripped:
            start = a + piece.index(stripped)
            spans.append((start, start + len(stripped)))
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
