"""The edges of ``clcg compare``: read a run (a data folder or a study_results.json), write the
comparison as JSON and as one offline HTML page."""

from __future__ import annotations

import html
import json
import os
from typing import Any

import pandas as pd
from upath import UPath

from clcg_pipeline.results._compare import COMPARE_COLUMNS, RunSide
from clcg_pipeline.storage import jsonable, partition_dir, read_all_partitions, read_frame, write_bytes_atomic

_RESULTS = "study_results.json"


def _estimates_from_document(document: dict[str, Any]) -> pd.DataFrame:
    """The ``estimands`` block of a results document as an estimates table."""
    rows = []
    for key, block in (document.get("estimands") or {}).items():
        estimand, _, group = str(key).partition("/")
        if isinstance(block, dict):
            rows.append({"estimand": estimand, "group": group or "all", **block})
    frame = pd.DataFrame(rows)
    for column in ("estimand", "group", "estimate", "ci_low", "ci_high"):
        if column not in frame.columns:
            frame[column] = pd.Series(dtype=object)
    return frame


def load_run(path: str | os.PathLike[str]) -> RunSide:
    """A run to compare: a data folder (its estimates table and scores: pairs where it can), or a
    study_results.json (its estimands: unpaired only). A path with neither is a clear error."""
    target = UPath(path)
    if target.is_file():
        try:
            document = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{target}: not a readable study_results.json ({exc})") from None
        return RunSide(str(target), _estimates_from_document(document))
    table = partition_dir(str(target), "estimates", None) / "data.parquet"
    if not table.exists():
        if (target / _RESULTS).exists():
            return load_run(target / _RESULTS)
        raise ValueError(f"{target}: no estimates table and no {_RESULTS}: not a finished run's data folder")
    scores = read_all_partitions(str(target), "scores")
    return RunSide(str(target), read_frame(table), scores if len(scores) else None)


def comparison_document(table: pd.DataFrame, info: dict[str, Any]) -> dict[str, Any]:
    return jsonable({**info, "columns": COMPARE_COLUMNS, "rows": table.to_dict("records")})


def write_comparison_json(table: pd.DataFrame, info: dict[str, Any], path: str | os.PathLike[str]) -> None:
    payload = json.dumps(comparison_document(table, info), indent=2, ensure_ascii=False) + "\n"
    write_bytes_atomic(UPath(path), payload.encode("utf-8"))


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "\u2014"
    return f"{value:.4f}" if isinstance(value, float) else html.escape(str(value))


def comparison_html(table: pd.DataFrame, info: dict[str, Any]) -> str:
    """One self-contained page (no script, no external resource)."""
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in COMPARE_COLUMNS)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in COMPARE_COLUMNS) + "</tr>"
        for row in table.to_dict("records")
    )
    pairing = (
        f"H1 estimands paired on {info.get('common_rows', 0)} common rows of "
        f"{info.get('common_articles', 0)} articles (the same article draws for both runs)."
        if info.get("paired")
        else "No rows in common that could be paired: every difference is unpaired."
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>clcg compare</title>'
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em;font-size:13px}td{text-align:right}"
        "td:first-child,td:nth-child(2),td:nth-last-child(-n+2){text-align:left}</style></head><body>"
        f"<h1>Run B minus run A</h1><p>A: {html.escape(str(info.get('a')))}<br>"
        f"B: {html.escape(str(info.get('b')))}</p><p>{html.escape(pairing)}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></body></html>\n"
    )


def write_comparison_html(table: pd.DataFrame, info: dict[str, Any], path: str | os.PathLike[str]) -> None:
    write_bytes_atomic(UPath(path), comparison_html(table, info).encode("utf-8"))
