"""The release's manifest: its source versions, what the pipeline did to each, code and models.

Pure: it is given the data folder's tables as frames and returns JSON-ready dicts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.release._texts import text_hash
from clcg_pipeline.storage import CALL_TABLE_STEPS

# Every calls table, the one list the spend view reads (item generator and writers included).
CALL_TABLES = tuple(CALL_TABLE_STEPS)
_PROMPT_COLUMNS = ("prompt_version", "template_hash", "prompt_hash")
_AUDIT = ("coverage", "usable_coverage", "n_empty", "n_duplicated", "n_invalid_utf8", "complete")


def version_checksum(paragraphs: pd.DataFrame) -> str:
    """sha256 over one version's (pid, paragraph sha256) lines in body order: its text, by content."""
    ordered = paragraphs.sort_values("ordinal") if "ordinal" in paragraphs else paragraphs
    lines = "".join(
        f"{pid}\t{text_hash(text)}\n" for pid, text in zip(ordered["pid"], ordered["text"], strict=True)
    )
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def source_versions(tables: Mapping[str, pd.DataFrame], redact: list[str]) -> list[dict[str, Any]]:
    """One entry per article x language version: identifiers, checksum and what the pipeline did."""
    articles, paragraphs = tables.get("articles", pd.DataFrame()), tables.get("paragraphs", pd.DataFrame())
    if articles.empty:
        return []
    audit = _by_version(tables.get("corpus_audit", pd.DataFrame()))
    sampled = set(tables.get("study_sample", pd.DataFrame()).get("doc_id", pd.Series(dtype=str)))
    long_docs = _long_documents_of(tables.get("long_documents", pd.DataFrame()))
    texts = (
        {key: frame for key, frame in paragraphs.groupby(["doc_id", "language"])} if len(paragraphs) else {}
    )
    out = []
    for row in articles.sort_values(["doc_id", "language"]).to_dict("records"):
        key = (row["doc_id"], row["language"])
        checks = audit.get(key, {})
        version = texts.get(key, pd.DataFrame(columns=["pid", "text", "ordinal"]))
        out.append(
            {
                "corpus": row.get("source"),
                "article": row["doc_id"],
                "language": row["language"],
                "revision": _plain(row.get("revision")),
                "published": _plain(row.get("published")),
                "n_paragraphs": len(version),
                "text_sha256": version_checksum(version),
                "pipeline": {
                    "audit": {name: _plain(checks.get(name)) for name in _AUDIT if name in checks},
                    "in_study_sample": row["doc_id"] in sampled,
                    "in_estimates": row["doc_id"] in sampled and bool(checks.get("complete", True)),
                    "long_documents": long_docs.get(row["doc_id"], []),
                    "redacted": [e for e in redact if e.split(".")[0] in ("paragraphs", "articles")],
                },
            }
        )
    return out


def _by_version(audit: pd.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    if audit.empty:
        return {}
    return {(r["doc_id"], r["language"]): r for r in audit.to_dict("records")}


def _long_documents_of(long_documents: pd.DataFrame) -> dict[str, list[str]]:
    """article -> the long (granularity) documents assembled from it."""
    found: dict[str, set[str]] = {}
    if long_documents.empty or "member_doc_ids" not in long_documents:
        return {}
    for doc_id, members in zip(long_documents["doc_id"], long_documents["member_doc_ids"], strict=True):
        for member in list(members) if members is not None else []:
            found.setdefault(str(member), set()).add(str(doc_id))
    return {article: sorted(docs) for article, docs in found.items()}


def prompt_hashes(tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Every (table, prompt version, template hash) the stored rows name, with how many rows."""
    found = []
    for name, frame in sorted(tables.items()):
        columns = [c for c in _PROMPT_COLUMNS if c in frame]
        if frame.empty or not columns:
            continue
        counts = frame[columns].astype("string").fillna("").value_counts().reset_index(name="rows")
        for row in counts.to_dict("records"):
            if any(row[c] for c in columns):
                found.append(
                    {"table": name, **{c: row[c] or None for c in columns}, "rows": int(row["rows"])}
                )
    return found


def model_entries(config: ProjectConfig, tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Each model of the config, and per calls table when its calls were made (first, last) and how many."""
    out = []
    for model in config.models.models:
        calls = []
        for name in CALL_TABLES:
            frame = tables.get(name, pd.DataFrame())
            if frame.empty or "model" not in frame:
                continue
            mine = frame[frame["model"] == model.id]
            if len(mine):
                stamps = (
                    pd.to_datetime(mine["paid_at"], utc=True, errors="coerce") if "paid_at" in mine else None
                )
                calls.append(
                    {
                        "table": name,
                        "calls": len(mine),
                        "first": None if stamps is None or stamps.isna().all() else stamps.min().isoformat(),
                        "last": None if stamps is None or stamps.isna().all() else stamps.max().isoformat(),
                    }
                )
        out.append(
            {
                "id": model.id,
                "provider": model.provider,
                "model": model.model,
                "knowledge_cutoff": _plain(model.knowledge_cutoff),
                "evaluated": model.evaluated,
                "calls": calls,
            }
        )
    return out


def _plain(value: Any) -> Any:
    """A JSON-ready scalar (dates as ISO strings, missing as None)."""
    if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()[:10] if getattr(value, "hour", 0) == 0 else value.isoformat()
    if hasattr(value, "item"):
        return value.item()
    return value
