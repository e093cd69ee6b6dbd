"""The study's documents (``study_results.json``, ``*_results.json``, the leaderboard) under the
same rule as the tables: runs of article text referenced on the way out, restored on the way back.

A JSON document is changed string by string in its own text, so everything else (layout,
number formatting, key order) stays byte for byte and a rebuilt document equals the study's.
Keys are names, not prose, and values under an identifier key are left as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from clcg_pipeline.release._spans import SpanFinder, is_identifier

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_COLON = re.compile(r"\s*:")


def json_values(text: str) -> Iterator[tuple[str, re.Match[str]]]:
    """Each string value of a JSON text and the key it was last seen under ('' at the top)."""
    key = ""
    for found in _STRING.finditer(text):
        if _COLON.match(text, found.end()):
            key = json.loads(found.group(0))
            continue
        yield key, found


def map_json(text: str, change: Callable[[str, str], str], ascii_only: bool) -> str:
    """``text`` with each string value ``v`` under key ``k`` replaced by ``change(k, v)``."""
    pieces, start = [], 0
    for key, found in json_values(text):
        value = json.loads(found.group(0))
        new = change(key, value)
        if new != value:
            pieces.append(text[start : found.start()])
            pieces.append(json.dumps(new, ensure_ascii=ascii_only))
            start = found.end()
    return "".join(pieces) + text[start:] if pieces else text


def redact_document(path: Path, text: str, finder: SpanFinder) -> tuple[str, int, bool]:
    """The document's text referenced, how many strings changed, and whether it was ASCII-escaped."""
    ascii_only = text.isascii()
    if path.suffix != ".json":
        new = finder.replace(text)
        return new, int(new != text), ascii_only
    changed = 0

    def one(key: str, value: str) -> str:
        nonlocal changed
        new = value if is_identifier(key) else finder.replace(value)
        changed += new != value
        return new

    return map_json(text, one, ascii_only), changed, ascii_only


def restore_document(path: Path, text: str, put_back: Callable[[str], str], ascii_only: bool) -> str:
    if path.suffix != ".json":
        return put_back(text)
    return map_json(text, lambda key, value: put_back(value), ascii_only)


def document_strings(path: Path, text: str) -> Iterator[tuple[str, bool]]:
    """The strings of a document a leak scan reads, and whether the span rule applies to them."""
    if path.suffix != ".json":
        yield text, True
        return
    for key, found in json_values(text):
        yield json.loads(found.group(0)), not is_identifier(key)
