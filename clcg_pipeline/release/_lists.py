"""List columns as JSON text in a release's Parquet files, and back.

The Data Package validator (frictionless) reads Parquet through pandas, where a list cell
arrives as a numpy array that its ``array`` type refuses; a JSON array in a string cell is what
the Table Schema ``array`` type reads. So the release stores each list column of JSON-ready
items (strings, numbers, booleans) as JSON text, and keeps the original Arrow schema in the
file's metadata, from which ``clcg reconstruct`` restores the very column the study wrote.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pyarrow as pa

#: file-metadata keys: the list columns stored as JSON, and the schema the study wrote
JSON_COLUMNS_KEY = b"clcg.release.json_columns"
SCHEMA_KEY = b"clcg.release.original_schema"


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def json_ready(kind: pa.DataType) -> bool:
    """A list type whose items JSON writes and Arrow reads back unchanged."""
    if not _is_list(kind):
        return False
    item = kind.value_type
    scalar = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer, pa.types.is_boolean)
    return any(check(item) for check in scalar) or pa.types.is_floating(item) or json_ready(item)


def encode_lists(table: pa.Table) -> pa.Table:
    """``table`` with its JSON-ready list columns as JSON strings (unchanged if it has none)."""
    columns = [f.name for f in table.schema if json_ready(f.type)]
    if not columns:
        return table
    original = table.schema
    for name in columns:
        index = table.column_names.index(name)
        values = [
            None if v is None else json.dumps(v, ensure_ascii=False) for v in table.column(index).to_pylist()
        ]
        table = table.set_column(index, pa.field(name, pa.string()), pa.array(values, type=pa.string()))
    metadata = dict(table.schema.metadata or {})
    metadata[JSON_COLUMNS_KEY] = json.dumps({n: str(original.field(n).type) for n in columns}).encode()
    metadata[SCHEMA_KEY] = base64.b64encode(original.serialize().to_pybytes())
    return table.replace_schema_metadata(metadata)


def json_columns(schema: pa.Schema) -> dict[str, str]:
    """The columns of a release file stored as JSON text -> their original Arrow type."""
    raw = (schema.metadata or {}).get(JSON_COLUMNS_KEY)
    return dict(json.loads(raw)) if raw else {}


def original_schema(schema: pa.Schema) -> pa.Schema | None:
    raw = (schema.metadata or {}).get(SCHEMA_KEY)
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw))) if raw else None


def decode_lists(table: pa.Table) -> pa.Table:
    """A release file's table with its JSON list columns (and schema) as the study wrote them."""
    original = original_schema(table.schema)
    if original is None:
        return table
    arrays = []
    for field in original:
        column = table.column(field.name)
        if field.name in json_columns(table.schema):
            values = [None if v is None else json.loads(v) for v in column.to_pylist()]
            column = pa.array(values, type=field.type)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=original)


def item_values(value: Any, encoded: bool) -> list[Any]:
    """The values a cell holds: a list's items, a JSON list's items when ``encoded``, else itself."""
    if encoded and isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, list) else [value]
