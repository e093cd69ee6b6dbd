"""The edges of ``clcg compare``: read a run (a data folder, a scores Parquet file or a
study_results.json), say what the comparison rests on, and write it as JSON and as one offline
HTML page."""

from __future__ import annotations

import html
import json
import os
from typing import Any

import pandas as pd
from upath import UPath

from clcg_pipeline.results._compare import RunSide
from clcg_pipeline.results._compare_document import (
    COMPARE_COLUMNS,
    ComparisonDocument,
    ComparisonInfo,
    OnlyIn,
)
from clcg_pipeline.results._inputs import drop_incomplete_versions
from clcg_pipeline.storage import (
    model_json,
    partition_dir,
    read_all_partitions,
    read_frame,
    validate_document,
    validate_model,
    write_bytes_atomic,
)

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


_PARQUET_MAGIC = b"PAR1"


def _is_parquet(target: UPath) -> bool:
    with target.open("rb") as handle:
        return handle.read(4) == _PARQUET_MAGIC


def _load_file(target: UPath) -> RunSide:
    """A scores file (Parquet: the H1 family, recomputed) or a study_results.json (unpaired)."""
    try:
        if _is_parquet(target):
            return RunSide(str(target), _estimates_from_document({}), read_frame(target))
        document = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{target}: neither a scores Parquet file nor a readable study_results.json ({exc})"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("estimands"), dict):
        raise ValueError(f"{target}: not a study_results.json (no 'estimands' object at its top level)")
    # A document that does not fit its shape is refused here, by field, before any comparison.
    validate_document(document, source=str(target))
    return RunSide(str(target), _estimates_from_document(document), document=str(target))


def _folder_scores(target: UPath) -> pd.DataFrame | None:
    """A data folder's scores as its analysis read them: incomplete versions left out."""
    scores = read_all_partitions(str(target), "scores")
    if not len(scores):
        return None
    audit = read_all_partitions(str(target), "corpus_audit")
    return drop_incomplete_versions(scores, audit)[0] if len(audit) else scores


def load_run(path: str | os.PathLike[str]) -> RunSide:
    """A run to compare: a data folder (its scores, and its estimates table or study_results.json),
    a scores Parquet file, or a study_results.json. A path with none of them is a clear error."""
    target = UPath(path)
    if target.is_file():
        return _load_file(target)
    table = partition_dir(str(target), "estimates", None) / "data.parquet"
    scores = _folder_scores(target) if target.exists() else None
    if table.exists():
        return RunSide(str(target), read_frame(table), scores, document=str(table))
    if (target / _RESULTS).exists():
        document = _load_file(target / _RESULTS)
        return RunSide(str(target), document.estimates, scores, document=document.document)
    if scores is not None:
        return RunSide(str(target), _estimates_from_document({}), scores)
    raise ValueError(
        f"{target}: no scores, no estimates table and no {_RESULTS}: not a finished run's data folder"
    )


def comparison_document(
    table: pd.DataFrame, info: dict[str, Any] | ComparisonInfo, *, source: str = "clcg compare"
) -> ComparisonDocument:
    """The comparison as its typed document; ``DocumentError`` naming ``source`` and the field
    when a value does not fit its shape."""
    facts = info.model_dump() if isinstance(info, ComparisonInfo) else info
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    return validate_model(
        ComparisonDocument, {**facts, "columns": COMPARE_COLUMNS, "rows": rows}, source=source
    )


def write_comparison_json(table: pd.DataFrame, info: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """``clcg compare --json``: checked against ``ComparisonDocument`` before it is written."""
    document = comparison_document(table, info, source=str(path))
    write_bytes_atomic(UPath(path), model_json(document))


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "\u2014"
    return f"{value:.4f}" if isinstance(value, float) else html.escape(str(value))


def _names(entry: OnlyIn) -> list[str]:
    named = (("models", entry.models), ("languages", entry.languages))
    said = [f"{kind} {', '.join(names)}" for kind, names in named if names]
    if entry.items:
        cells = ", ".join(f"{c.model}/{c.language} {c.items}" for c in entry.items_by_model_language)
        said.append(f"{entry.items} items the other run never answered, by model/language ({cells})")
    if entry.rows:
        said.append(f"{entry.rows:,} scored rows in all with no counterpart in the other run")
    return said


def _facts(info: dict[str, Any] | ComparisonInfo) -> ComparisonInfo:
    if isinstance(info, ComparisonInfo):
        return info
    return validate_model(ComparisonInfo, info, source="clcg compare")


def comparison_lines(info: dict[str, Any] | ComparisonInfo) -> list[str]:
    """What the comparison rests on, one line each: pairing, what one run alone has, the
    documents rows come from (and which are stale), the p rule."""
    facts = _facts(info)
    if facts.paired:
        lines = [
            f"H1 paired on {facts.common_rows or 0:,} rows of {facts.common_articles} articles answered in "
            "both runs (same model, language, article, item, repetition; the same article draws for both)"
        ]
    else:
        lines = ["nothing paired (no scores of both runs, or no rows in common): every row is unpaired"]
    for side, entry in (facts.only_in or {}).items():
        said = _names(entry)
        lines.append(f"only in run {side}: " + ("; ".join(said) if said else "nothing"))
    for side, document in facts.documents.items():
        if document:
            lines.append(f"run {side}: rows outside the recomputed H1 family come from {document}")
    for side, why in facts.stale.items():
        lines.append(f"run {side}: its document is stale, its rows are withheld: {why}")
    lines.append(f"p: {facts.p_rule}")
    return lines


def comparison_html(table: pd.DataFrame, info: dict[str, Any] | ComparisonInfo) -> str:
    """One self-contained page (no script, no external resource)."""
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in COMPARE_COLUMNS)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in COMPARE_COLUMNS) + "</tr>"
        for row in table.to_dict("records")
    )
    facts = _facts(info)
    said = "".join(f"<li>{html.escape(line)}</li>" for line in comparison_lines(facts))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>clcg compare</title>'
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em;font-size:13px}td{text-align:right}"
        "td:first-child,td:nth-child(2),td:nth-last-child(-n+4){text-align:left}</style></head><body>"
        f"<h1>Run B minus run A</h1><p>A: {html.escape(facts.a)}<br>"
        f"B: {html.escape(facts.b)}</p><ul>{said}</ul>"
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></body></html>\n"
    )


def write_comparison_html(table: pd.DataFrame, info: dict[str, Any], path: str | os.PathLike[str]) -> None:
    write_bytes_atomic(UPath(path), comparison_html(table, info).encode("utf-8"))
