"""The release's own leak check: no article text, annotator id, secret or local path in any file.

Every file's bytes are searched for every id and secret. The strings the study wrote (Parquet
cells, the documents' JSON string values) are searched with the release's one rule
(``SpanFinder``): no run of ``width`` characters of a redacted text, and no value that is a
whole one. Identifier columns and keys, and the files the release writes itself (config,
manifest, Data Package, card), are searched for whole texts. Hits name the file and the hash
(and span) of what was found, never the text itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pyarrow.parquet as pq

from clcg_pipeline.release._documents import document_strings
from clcg_pipeline.release._lists import item_values, json_columns
from clcg_pipeline.release._redact import is_text
from clcg_pipeline.release._spans import SpanFinder, is_identifier
from clcg_pipeline.release._texts import text_hash

#: root files the release writes itself (not the study's documents)
_GENERATED = ("manifest.json", "datapackage.json")


def scan_release(
    root: Path,
    texts: Iterable[str],
    secrets: Mapping[str, Iterable[str]],
    *,
    width: int,
    kept: Iterable[str] = (),
) -> list[str]:
    """Every leak found under ``root``: ``path: what`` (``secrets``: kind -> values; ``kept``:
    the ``table.column`` homes of article text the publisher keeps, searched for whole texts)."""
    kept = set(kept)
    finder = SpanFinder.of(texts, width)
    needles = [(kind, value.encode("utf-8")) for kind, values in secrets.items() for value in values if value]
    hits: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        data = path.read_bytes()
        hits.extend(f"{name}: {kind} {text_hash(v.decode())[:12]}" for kind, v in needles if v in data)
        # Each distinct string once: a column repeats its labels, a table its answers.
        for value, spans in set(_strings(root, path, data, kept)):
            found = finder.leaks(value) if spans else finder.wholes(value)
            hits.extend(f"{name}: redacted text sha256 {what}" for what in found)
    return sorted(set(hits))


def _strings(root: Path, path: Path, data: bytes, kept: set[str]) -> Iterator[tuple[str, bool]]:
    """The strings a reader of the file sees, and whether the span rule applies to each."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        name = path.relative_to(root).parts[0]
        encoded = json_columns(table.schema)  # list columns as JSON text: their items, unescaped
        for index, column in enumerate(table.column_names):
            if is_text(table.schema.field(index).type):
                spans = not is_identifier(column) and f"{name}.{column}" not in kept
                in_json = column in encoded
                for value in table.column(index).to_pylist():
                    yield from ((v, spans) for v in item_values(value, in_json) if isinstance(v, str))
        return
    text = data.decode("utf-8", errors="replace")
    yield text, False
    if path.parent == root and path.suffix in (".json", ".csv") and path.name not in _GENERATED:
        yield from document_strings(path, text)
