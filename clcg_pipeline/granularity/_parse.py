"""Parsing the granularity tasks' replies: strict for the classification tasks (one word;
option letters as JSON), light for the generated text (fences stripped, empty = unparseable)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from clcg_pipeline.granularity._prompts import OPTION_LETTERS

Status = Literal["ok", "unparseable", "missing"]

MAX_WORD_ANSWER_WORDS = 3
_FENCE = re.compile(r"^\s*```[\w-]*[ \t]*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_ANSWER_PREFIX = re.compile(r"^\s*(final\s+)?(answer|option|choice|word)\s*[:=-]\s*", re.I)
_LETTER = re.compile(r"^\(?\s*(?:option\s+)?([A-Za-z])\s*[\).:]?\s*$", re.I)
_EDGE_PUNCT = " \t\n\"'`“”‘’«».,;:!?()[]{}*"


def _unfence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


def _json(text: str) -> Any:
    body = _unfence(text).strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if start != -1 and end > start:
            try:
                return json.loads(body[start : end + 1])
            except json.JSONDecodeError:
                return None
        return None


def parse_word(text: str) -> tuple[str | None, Status]:
    """One short answer: a bare word, a JSON string, a one-string array or {"answer": w}."""
    value: Any = _json(text)
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    raw = value if isinstance(value, str | int | float) and not isinstance(value, bool) else _unfence(text)
    word = _ANSWER_PREFIX.sub("", str(raw).strip()).strip(_EDGE_PUNCT)
    n = len(word.split())
    if n == 0 or n > MAX_WORD_ANSWER_WORDS:
        return None, "unparseable"
    return word, "ok"


def normalise_letter(value: Any, options: Sequence[str]) -> str | None:
    """An option letter from "C", "c", "(C)", "C.", "Option C" or the option's exact text."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _LETTER.match(text)
    if match:
        letter = match.group(1).upper()
        return letter if OPTION_LETTERS.index(letter) < len(options) else None
    folded = " ".join(text.split()).casefold()
    for k, option in enumerate(options):
        if " ".join(option.split()).casefold() == folded:
            return OPTION_LETTERS[k]
    return None


def parse_cloze(text: str, n_blanks: int, options: Sequence[str]) -> list[tuple[str | None, Status]]:
    """Option letters per blank from a JSON object {"1": "C", ...} (or an array in blank order).

    A blank with no valid letter is unparseable on its own; a reply that is not JSON makes
    every blank unparseable. Nothing is ever shifted from one blank to another.
    """
    value = _json(text)
    letters: dict[int, Any] = {}
    if isinstance(value, dict):
        for key, letter in value.items():
            found = re.search(r"\d+", str(key))
            if found:
                letters[int(found.group())] = letter
    elif isinstance(value, list) and len(value) == n_blanks:
        letters = dict(enumerate(value, start=1))
    out: list[tuple[str | None, Status]] = []
    for number in range(1, n_blanks + 1):
        letter = normalise_letter(letters.get(number), options)
        out.append((letter, "ok") if letter else (None, "unparseable"))
    return out


def parse_text(text: str) -> tuple[str | None, Status]:
    """Generated text: code fences stripped; an empty reply is unparseable."""
    body = _unfence(text).strip()
    return (body, "ok") if body else (None, "unparseable")


__all__ = ["MAX_WORD_ANSWER_WORDS", "Status", "normalise_letter", "parse_cloze", "parse_text", "parse_word"]
