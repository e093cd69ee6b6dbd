"""The release's tables as a Frictionless Data Package (``datapackage.json``), checked by frictionless."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

PARQUET_MEDIATYPE = "application/vnd.apache.parquet"
_NAME = re.compile(r"[^a-z0-9._-]")
#: how a null arrives through pandas, per Table Schema type: an integer column with nulls is
#: a float column there (null: NaN), a timestamp's null is NaT; declared as missing, they are
#: read as null, never as a NaN the integer type refuses
MISSING = {"integer": ("", "nan"), "number": ("", "nan"), "datetime": ("", "NaT"), "date": ("", "NaT")}


def field_type(kind: pa.DataType) -> str:
    """The Table Schema type of an Arrow type."""
    checks = (
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_integer, "integer"),
        (pa.types.is_floating, "number"),
        (pa.types.is_timestamp, "datetime"),
        (pa.types.is_date, "date"),
        (pa.types.is_string, "string"),
        (pa.types.is_large_string, "string"),
        (pa.types.is_list, "array"),
        (pa.types.is_large_list, "array"),
        (pa.types.is_struct, "object"),
    )
    return next((name for check, name in checks if check(kind)), "any")


def _field(f: pa.Field, lists: Mapping[str, str], notes: Mapping[str, str]) -> dict[str, Any]:
    """One Table Schema field, with the missing values pandas (the validator's reader) shows."""
    entry: dict[str, Any] = {"name": f.name, "type": field_type(f.type)}
    if f.name in lists:  # a JSON array in a string cell (``_lists``): what the array type reads
        entry["type"] = "array"
        entry["description"] = f"JSON array (Arrow type {lists[f.name]}); clcg reconstruct restores the list"
    if entry["type"] in MISSING:
        entry["missingValues"] = list(MISSING[entry["type"]])
    if f.name in notes:
        entry["description"] = notes[f.name]
    return entry


def resource(
    name: str,
    path: str,
    schema: pa.Schema,
    lists: Mapping[str, str],
    notes: Mapping[str, str],
    description: str,
) -> dict[str, Any]:
    """One Parquet file of a table (one resource per file: the validator reads one file per path).

    No ``bytes`` or ``hash``: frictionless reads Parquet through pyarrow and measures neither, so
    a declared value is reported as wrong; the manifest has every file's size and sha256.
    """
    return {
        "name": _NAME.sub("-", name.lower()),
        "path": path,
        "format": "parquet",
        "mediatype": PARQUET_MEDIATYPE,
        "description": description,
        "schema": {"fields": [_field(f, lists, notes) for f in schema]},
    }


def descriptor(
    *, name: str, version: str, title: str, licence: str, created: str, resources: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "name": _NAME.sub("-", name.lower()),
        "title": title,
        "version": version,
        "created": created,
        "licenses": [{"name": licence}],
        "resources": resources,
    }


def validate(document: dict[str, Any]) -> list[str]:
    """What frictionless finds wrong with the descriptor (empty: valid)."""
    try:
        from frictionless import Package
    except ImportError as exc:  # a declared dependency: missing means a broken install
        raise RuntimeError(
            "the frictionless package is needed to check datapackage.json (pip install frictionless==5.21.0)"
        ) from exc
    report = Package.validate_descriptor(document)
    return [f"{error.type}: {error.message}" for error in report.errors]
