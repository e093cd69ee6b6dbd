"""Deidentifying the human-validation tables: pseudonyms for annotators, identifying columns out.

A pseudonym is ``anon-`` and 16 hex digits of HMAC-SHA256(key, id): the same annotator gets the
same pseudonym in every table (and in every release built with the same key), and nobody
without the key can tell who it is, nor test a guess. The key never enters the release.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from clcg_pipeline.release._redact import map_cell

PSEUDONYM_PREFIX = "anon-"


def pseudonym(key: bytes, value: str) -> str:
    return PSEUDONYM_PREFIX + hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def columns_of(name: str, entries: Iterable[str]) -> list[str]:
    """The columns of table ``name`` among ``table.column`` entries."""
    return [entry.split(".", 1)[1] for entry in entries if entry.split(".", 1)[0] == name]


@dataclass
class Deidentified:
    """What deidentification did to one table: its new form, the columns left out, the ids replaced."""

    table: pa.Table
    dropped: list[str] = field(default_factory=list)
    pseudonymized: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)


def deidentify(
    name: str, table: pa.Table, *, drop: Iterable[str], pseudonymize: Iterable[str], key: bytes
) -> Deidentified:
    """``table`` without its ``drop`` columns and with ``pseudonymize`` columns' ids replaced.

    Returns the raw ids too: the release is checked for every one of them afterwards.
    """
    gone = [column for column in columns_of(name, drop) if column in table.column_names]
    out = Deidentified(table.drop_columns(gone), dropped=gone)
    for column in columns_of(name, pseudonymize):
        if column not in out.table.column_names:
            continue
        index = out.table.column_names.index(column)
        kind = out.table.schema.field(index).type
        values = out.table.column(index).to_pylist()
        out.ids.update(_strings(values))
        new = [map_cell(value, lambda raw: pseudonym(key, raw)) for value in values]
        out.table = out.table.set_column(index, out.table.schema.field(index), pa.array(new, type=kind))
        out.pseudonymized.append(column)
    return out


def _strings(values: list[Any]) -> set[str]:
    found: set[str] = set()
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                found.add(item)
    return found
