"""The release's tables as a Frictionless Data Package (``datapackage.json``), checked by frictionless."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

PARQUET_MEDIATYPE = "application/vnd.apache.parquet"
_NAME = re.compile(r"[^a-z0-9._-]")


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


def resource(
    name: str,
    paths: list[str],
    schema: pa.Schema,
    notes: Mapping[str, str],
    checksums: Mapping[str, tuple[int, str]],
    description: str,
) -> dict[str, Any]:
    """One table: its Parquet files (hive partitions), fields and what the release did to them."""
    fields = [
        {
            "name": f.name,
            "type": field_type(f.type),
            **({"description": notes[f.name]} if f.name in notes else {}),
        }
        for f in schema
    ]
    entry: dict[str, Any] = {
        "name": _NAME.sub("-", name.lower()),
        "path": paths if len(paths) > 1 else paths[0],
        "format": "parquet",
        "mediatype": PARQUET_MEDIATYPE,
        "description": description,
        "schema": {"fields": fields},
    }
    if len(paths) == 1:  # a Frictionless hash/bytes describe one file; the manifest lists them all
        entry["bytes"], digest = checksums[paths[0]]
        entry["hash"] = f"sha256:{digest}"
    return entry


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
