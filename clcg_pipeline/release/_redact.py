"""Redacting a table (texts -> markers) and restoring it (markers -> texts), at the Arrow level.

Only string cells (and the strings inside list cells) change, so every other column, and the
schema, pass through untouched: a rebuilt file holds the very values the study analysed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from clcg_pipeline.release._texts import MARKER, MARKER_PREFIX, marker, source_rows, text_hash


@dataclass
class TextFinder:
    """Finds the redacted texts quoted inside longer strings in one pass over each string.

    Texts are indexed by their first ``width`` characters; at each position of a string the
    longest text starting there is taken (a paragraph before a title it contains).
    """

    width: int
    _by_prefix: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, texts: Iterable[str], width: int) -> TextFinder:
        finder = cls(width)
        for text in sorted({t for t in texts if len(t) >= width}, key=len, reverse=True):
            finder._by_prefix.setdefault(text[:width], []).append(text)
        return finder

    def __bool__(self) -> bool:
        return bool(self._by_prefix)

    def found(self, value: str) -> list[str]:
        """The texts that occur in ``value`` (leftmost-longest, not overlapping)."""
        hits: list[str] = []
        self._walk(value, hits.append)
        return hits

    def replace(self, value: str) -> str:
        """``value`` with every occurrence of a text replaced by its marker."""
        if len(value) < self.width or not self._by_prefix:
            return value
        pieces: list[str] = []
        start = self._walk(value, lambda text: None, pieces)
        return "".join(pieces) + value[start:] if pieces else value

    def _walk(self, value: str, hit: Callable[[str], None], pieces: list[str] | None = None) -> int:
        width, table, i, start = self.width, self._by_prefix, 0, 0
        end = len(value) - width
        while i <= end:
            candidates = table.get(value[i : i + width])
            text = next((t for t in candidates if value.startswith(t, i)), None) if candidates else None
            if text is None:
                i += 1
                continue
            hit(text)
            if pieces is not None:
                pieces.append(value[start:i] + marker(text_hash(text)))
            i += len(text)
            start = i
        return start


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
    name: str, table: pa.Table, redact: Iterable[str], finder: TextFinder
) -> tuple[pa.Table, dict[str, int]]:
    """Home cells of ``redact`` become markers; quotes of redacted texts elsewhere too.

    Returns the table and, per column, how many cells changed. A cell that already holds
    something shaped like a marker is refused: it could not be told from one on the way back.
    """
    homes = {entry.split(".", 1)[1] for entry in redact if entry.split(".", 1)[0] == name}
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
        if not is_text(kind):
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
        if any(isinstance(cell, str) and MARKER_PREFIX in cell for cell in cells):
            raise ValueError(
                f"{name}.{column} row {row}: already holds {MARKER_PREFIX!r}..., which a release uses "
                "for redacted text; it could not be restored unambiguously"
            )


def restore_table(name: str, table: pa.Table, texts: Mapping[str, str]) -> tuple[pa.Table, list[str]]:
    """Markers replaced by their texts; returns the table and each marker with no text."""
    missing: list[str] = []

    def put_back(value: str) -> str:
        if MARKER_PREFIX not in value:
            return value
        return MARKER.sub(lambda m: texts[m.group(1)] if m.group(1) in texts else _missing(m.group(0)), value)

    def _missing(found: str) -> str:
        missing.append(found)
        return found

    for index in range(table.num_columns):
        kind = table.schema.field(index).type
        if not is_text(kind):
            continue
        values = table.column(index).to_pylist()
        new = [map_cell(v, put_back) for v in values]
        if new != values:
            table = table.set_column(index, table.schema.field(index), pa.array(new, type=kind))
    return table, [f"{name}: no text for {m}" for m in missing]
