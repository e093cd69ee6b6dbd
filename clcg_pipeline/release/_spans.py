"""The one rule for article text outside its home columns: every run of ``width`` or more
characters that reproduces a redacted text is replaced by a reference to that text.

A run that is the whole text becomes ``[[clcg-redacted:<sha256>]]`` (as in the home column); a
part of it ``[[clcg-quote:<sha256>:<start>-<end>]]``, the character offsets of the span in the
text whose sha256 the release's text index keys (table, article, language, paragraph).
``clcg reconstruct`` puts both back from the local corpus.

Runs are found with a sampled q-gram index: every text's ``q``-grams at every ``step``-th
position, ``q + step = width + 1``, so any run of ``width`` characters contains an indexed
gram; each gram found in a string is extended both ways to the whole run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from clcg_pipeline.release._texts import marker, text_hash

QUOTE_PREFIX = "[[clcg-quote:"
QUOTE = re.compile(r"\[\[clcg-quote:([0-9a-f]{64}):(\d+)-(\d+)\]\]")
#: a value that is a whole redacted text this long or longer is referenced even below ``width``
#: (a title copied whole); shorter ones (an option "2", "yes") are not text anyone owns
SHORTEST = 8
#: columns (and JSON keys) holding identifiers, never prose: left as they are
_IDENTIFIER = re.compile(r"(^|_)(id|ids|pid|pids|hash|sha256|language|model|doc_id)$")


def is_identifier(name: str) -> bool:
    return bool(_IDENTIFIER.search(name))


def quote_marker(digest: str, start: int, end: int) -> str:
    return f"{QUOTE_PREFIX}{digest}:{start}-{end}]]"


@dataclass(frozen=True)
class Run:
    """``value[start:end]`` is ``text[offset:offset + end - start]``."""

    start: int
    end: int
    text: str
    offset: int


@dataclass
class SpanFinder:
    width: int
    _q: int = 1
    _texts: list[str] = field(default_factory=list)
    _whole: set[str] = field(default_factory=set)
    _grams: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _memo: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, texts: Iterable[str], width: int) -> SpanFinder:
        finder = cls(width, max(1, width // 2))
        unique = sorted({t for t in texts if t})
        finder._whole = {t for t in unique if len(t) >= min(SHORTEST, width)}
        finder._texts = [t for t in unique if len(t) >= width]
        q, step = finder._q, width - finder._q + 1
        for number, text in enumerate(finder._texts):
            for position in range(0, len(text) - q + 1, step):
                finder._grams.setdefault(text[position : position + q], []).append((number, position))
        return finder

    def runs(self, value: str) -> list[Run]:
        """The runs of ``width`` or more characters of a text in ``value``, left to right."""
        q, grams = self._q, self._grams
        found: list[Run] = []
        i, cursor = 0, 0
        while i <= len(value) - q:
            candidates = grams.get(value[i : i + q])
            best = self._longest(value, i, cursor, candidates) if candidates else None
            if best is None:
                i += 1
                continue
            found.append(best)
            i = cursor = best.end
        return found

    def _longest(self, value: str, i: int, cursor: int, candidates: Iterable[tuple[int, int]]) -> Run | None:
        q = self._q
        best: Run | None = None
        for number, position in candidates:
            text = self._texts[number]
            left = 0
            while (
                i - left > cursor and position - left > 0 and value[i - left - 1] == text[position - left - 1]
            ):
                left += 1
            right = q
            while (
                i + right < len(value)
                and position + right < len(text)
                and value[i + right] == text[position + right]
            ):
                right += 1
            if left + right >= self.width and (best is None or left + right > best.end - best.start):
                best = Run(i - left, i + right, text, position - left)
        return best

    def replace(self, value: str) -> str:
        """``value`` with every run (and a value that is a whole text of ``SHORTEST`` on) referenced."""
        if value in self._whole:
            return marker(text_hash(value))
        if len(value) < self.width or not self._grams:
            return value
        done = self._memo.get(value)
        if done is None:
            done = self._memo[value] = self._referenced(value)
        return done

    def _referenced(self, value: str) -> str:
        pieces, start = [], 0
        for run in self.runs(value):
            pieces.append(value[start : run.start])
            digest = text_hash(run.text)
            whole = run.offset == 0 and run.end - run.start == len(run.text)
            pieces.append(
                marker(digest)
                if whole
                else quote_marker(digest, run.offset, run.offset + run.end - run.start)
            )
            start = run.end
        return "".join(pieces) + value[start:] if pieces else value

    def wholes(self, value: str) -> list[str]:
        """The sha256 of each whole text inside ``value`` (or that ``value`` is)."""
        if value in self._whole:
            return [text_hash(value)]
        return [
            text_hash(r.text) for r in self.runs(value) if r.offset == 0 and r.end - r.start == len(r.text)
        ]

    def leaks(self, value: str) -> list[str]:
        """What of the texts ``value`` shows: ``sha256[start:end]`` per run, whole texts whole."""
        if value in self._whole:
            return [text_hash(value)]
        return [f"{text_hash(r.text)}[{r.offset}:{r.offset + r.end - r.start}]" for r in self.runs(value)]
