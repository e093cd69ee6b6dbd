"""The release's own leak check: no redacted text, annotator id or secret in any file.

Every file's bytes are searched for every id and secret; every string value inside the Parquet
files and JSON documents, and every other file's text, for every redacted text (quoted texts
from ``quote_min_chars`` on, shorter ones as whole values). Hits name the file and the hash of
what was found, never the text itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from clcg_pipeline.release._redact import TextFinder, is_text
from clcg_pipeline.release._texts import text_hash


def scan_release(
    root: Path, texts: Iterable[str], secrets: Mapping[str, Iterable[str]], *, width: int
) -> list[str]:
    """Every leak found under ``root``: ``path: what`` (``secrets``: kind -> values)."""
    texts = set(texts)
    finder = TextFinder.of(texts, width)
    short = {t for t in texts if len(t) < width}
    needles = [(kind, value.encode("utf-8")) for kind, values in secrets.items() for value in values if value]
    hits: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        data = path.read_bytes()
        hits.extend(f"{name}: {kind} {text_hash(v.decode())[:12]}" for kind, v in needles if v in data)
        for value in _strings(path, data):
            found = finder.found(value) + ([value] if value in short else [])
            hits.extend(f"{name}: redacted text sha256 {text_hash(text)}" for text in found)
    return sorted(set(hits))


def _strings(path: Path, data: bytes) -> Iterator[str]:
    """The strings a reader of the file sees: cell values, JSON string values, or the text."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        for index in range(table.num_columns):
            if is_text(table.schema.field(index).type):
                for value in table.column(index).to_pylist():
                    yield from (
                        v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)
                    )
        return
    text = data.decode("utf-8", errors="replace")
    yield text
    if path.suffix == ".json":
        yield from _json_strings(json.loads(text))


def _json_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)
