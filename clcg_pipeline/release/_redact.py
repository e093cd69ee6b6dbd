"""Redacting a table (texts -> markers) and restoring it (markers -> texts), at the Arrow level.

Only string cells (and the strings inside list cells) change, so every other column, and the
schema, pass through untouched: a rebuilt file holds the very values the study analysed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from clcg_pipeline.release._spans import QUOTE, SpanFinder, is_identifier
from clcg_pipeline.release._texts import HOMES, MARKER, marker, source_rows, text_hash

#: what a marker of either kind starts with: a cell holding it already is refused
_ANY_MARKER = "[[clcg-"
_EITHER = re.compile(f"{MARKER.pattern}|{QUOTE.pattern}")


def is_text(kind: pa.DataType) -> bool:
    """A column whose cells are strings, or lists of strings."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return True
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and is_text(kind.value_type)


def map_cell(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [change(item) if isinstance(item, str) else item for item in value]
    return value


def redact_table(
    name: str, table: pa.Table, redact: Iterable[str], finder: SpanFinder
) -> tuple[pa.Table, dict[str, int]]:
    """Home cells of ``redact`` become markers; runs of redacted texts elsewhere references
    (``SpanFinder``; identifier columns are left as they are).

    Returns the table and, per column, how many cells changed. A cell that already holds
    something shaped like a marker is refused: it could not be told from one on the way back.
    """
    redact = list(redact)
    homes = {entry.split(".", 1)[1] for entry in redact if entry.split(".", 1)[0] == name}
    # A home column the publisher keeps (its licence allows it) is released whole, runs and all.
    kept = {e.split(".", 1)[1] for e in HOMES if e.split(".", 1)[0] == name and e not in redact}
    has_generator = "generator" in table.column_names
    frame = (
        table.select(["generator"]).to_pandas()
        if has_generator
        else pd.DataFrame(index=range(table.num_rows))
    )
    rows = source_rows(name, frame)
    changed: dict[str, int] = {}
    for index, column in enumerate(table.column_names):
        kind = table.schema.field(index).type
        if not is_text(kind) or column in kept or (column not in homes and is_identifier(column)):
            continue
        values = table.column(index).to_pylist()
        _refuse_markers(name, column, values)
        home = rows.to_numpy() if column in homes else None
        new = [
            map_cell(v, _hide) if home is not None and home[i] else map_cell(v, finder.replace)
            for i, v in enumerate(values)
        ]
        count = sum(a != b for a, b in zip(values, new, strict=True))
        if count:
            changed[column] = count
            table = table.set_column(index, table.schema.field(index), pa.array(new, type=kind))
    return table, changed


def _hide(text: str) -> str:
    return marker(text_hash(text))


def _refuse_markers(name: str, column: str, values: list[Any]) -> None:
    for row, value in enumerate(values):
        cells = value if isinstance(value, list) else [value]
        if any(isinstance(cell, str) and _ANY_MARKER in cell for cell in cells):
            raise ValueError(
                f"{name}.{column} row {row}: already holds {_ANY_MARKER!r}..., which a release uses "
                "for redacted text; it could not be restored unambiguously"
            )


def restore_text(value: str, texts: Mapping[str, str], missing: list[str]) -> str:
    """``value`` with its markers replaced by the texts (or spans of them) they stand for."""
    if _ANY_MARKER not in value:
        return value

    def put_back(found: re.Match[str]) -> str:
        digest = found.group(1) or found.group(2)
        if digest not in texts:
            missing.append(found.group(0))
            return found.group(0)
        if found.group(1):
            return texts[digest]
        return texts[digest][int(found.group(3)) : int(found.group(4))]

    return _EITHER.sub(put_back, value)


def restore_table(name: str, table: pa.Table, texts: Mapping[str, str]) -> tuple[pa.Table, list[str]]:
    """Markers replaced by their texts; returns the table and each marker with no text."""
    missing: list[str] = []
    for index in range(table.num_columns):
        kind = table.schema.field(index).type
        if not is_text(kind):
            continue
        values = table.column(index).to_pylist()
        new = [map_cell(v, lambda value: restore_text(value, texts, missing)) for v in values]
        if new != values:
            table = table.set_column(index, table.schema.field(index), pa.array(new, type=kind))
    return table, [f"{name}: no text for {m}" for m in missing]
