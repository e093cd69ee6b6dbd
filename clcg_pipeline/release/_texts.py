"""The source texts a release redacts: the cells that hold them, their keys and content hashes.

A redacted cell holds a marker ``[[clcg-redacted:<sha256 of the text>]]`` instead of the text;
the release's text index says whose text each hash is (table, column, article, language, pid,
item), so ``clcg reconstruct`` can put it back from a local copy of the corpus and check it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

MARKER_PREFIX = "[[clcg-redacted:"
MARKER = re.compile(r"\[\[clcg-redacted:([0-9a-f]{64})\]\]")

#: "table.column" a release can redact -> the columns that key one of its texts
HOMES: dict[str, tuple[str, ...]] = {
    "paragraphs.text": ("doc_id", "language", "pid"),
    "articles.title": ("doc_id", "language"),
    "items.question": ("doc_id", "item_id"),
    "items.options": ("doc_id", "item_id"),
    "item_translations.question_original": ("doc_id", "item_id", "language"),
    "item_translations.options_original": ("doc_id", "item_id", "language"),
}
KEY_COLUMNS = ["doc_id", "language", "pid", "item_id", "position"]
INDEX_COLUMNS = ["table", "column", *KEY_COLUMNS, "sha256", "n_chars"]
#: the tables the source texts come from (the corpus loaders' tables)
SOURCE_TABLES = ("paragraphs", "articles", "items", "item_translations")
# Items a source wrote (human or Belebele questions) say so in ``generator``; generated items
# (``llm``, frozen or written by the item generator) are the study's own and kept whole.
_SOURCE_GENERATOR = "source:"


def text_hash(text: str) -> str:
    """sha256 of the text's UTF-8 bytes (what the release publishes instead of the text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def marker(digest: str) -> str:
    return f"{MARKER_PREFIX}{digest}]]"


def check_redact(entries: Iterable[str]) -> list[str]:
    """The ``release.redact`` entries, or a ValueError naming any the release cannot rebuild."""
    chosen = list(entries)
    unknown = [entry for entry in chosen if entry not in HOMES]
    if unknown:
        raise ValueError(
            f"study.yaml release.redact: {', '.join(unknown)} cannot be redacted (reconstruct could not "
            f"rebuild it); known: {', '.join(HOMES)}"
        )
    return chosen


def source_rows(table: str, frame: pd.DataFrame) -> pd.Series:
    """Which rows of ``table`` hold source text: for items the source-authored ones only."""
    if table == "items":
        generator = frame["generator"] if "generator" in frame else pd.Series("", index=frame.index)
        return generator.fillna("").astype(str).str.startswith(_SOURCE_GENERATOR)
    return pd.Series(True, index=frame.index)


def collect_texts(tables: Mapping[str, pd.DataFrame], redact: Iterable[str]) -> pd.DataFrame:
    """One row per redacted text (list cells: one per element), with its key, hash and text.

    Used on the data folder (to build the release) and on the corpus (to rebuild it): the same
    rule on both sides, so a text is found again by its key.
    """
    rows: list[dict[str, Any]] = []
    for entry in redact:
        table, column = entry.split(".", 1)
        frame = tables.get(table)
        if frame is None or frame.empty or column not in frame:
            continue
        keys = HOMES[entry]
        for record in frame.loc[source_rows(table, frame), [*keys, column]].to_dict("records"):
            for position, text in _texts_of(record[column]):
                key = {name: (None if pd.isna(record[name]) else str(record[name])) for name in keys}
                rows.append({"table": table, "column": column, **key, "position": position, "text": text})
    frame = pd.DataFrame(rows, columns=["table", "column", *KEY_COLUMNS, "text"])
    frame["sha256"] = [text_hash(text) for text in frame["text"]]
    frame["n_chars"] = frame["text"].str.len().astype("int64")
    frame["position"] = frame["position"].astype("int64")
    return frame[[*INDEX_COLUMNS, "text"]]


def _texts_of(value: Any) -> list[tuple[int, str]]:
    """(position, text) of a cell: -1 for a plain string, the index of each element of a list."""
    if isinstance(value, str):
        return [(-1, value)]
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, str)]


def key_label(row: Mapping[str, Any]) -> str:
    """``paragraphs.text demo-001/en/p03``: a text's place, as errors name it."""
    parts = [row.get(name) for name in ("doc_id", "language", "pid", "item_id")]
    where = "/".join(str(part) for part in parts if part is not None and not pd.isna(part))
    position = row.get("position")
    suffix = f"[{position}]" if position is not None and int(position) >= 0 else ""
    return f"{row['table']}.{row['column']} {where}{suffix}"
