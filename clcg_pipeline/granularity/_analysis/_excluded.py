"""What the estimates do not cover, made visible: rows without a reference in their language
(left out of the means, counted) and paragraphs left out of the documents so every language
version holds the same ones (recorded in ``long_documents.assembly`` when they were built)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from clcg_pipeline.granularity._analysis._estimates import records
from clcg_pipeline.granularity._analysis._rows import check_frame
from clcg_pipeline.granularity._documents._alignment import DECISION, parse_alignment
from clcg_pipeline.storage import AlignedParagraph

#: Entries listed in a caveat before "and N more" (the full list is the results' own key).
_SHOWN = 10

NO_REFERENCE_COLUMNS = ["task", "language", "model", "context", "n_no_reference", "n_documents"]
ALIGNMENT_COLUMNS = ["doc_id", "bucket", "pid", "missing_in", "decision"]


def no_reference_records(counts: pd.DataFrame) -> list[dict[str, Any]]:
    return records(counts, NO_REFERENCE_COLUMNS)


def with_no_reference(
    score_records: list[dict[str, Any]], cells: Mapping[tuple[str, str, str, str, str], int]
) -> list[dict[str, Any]]:
    """Score records with ``n_no_reference`` where their cell lost rows for want of a reference
    (set only there: the report shows it beside the score, and a 0 on every row would be noise)."""
    for rec in score_records:
        task, region, position, language, model = (
            str(rec.get(k)) for k in ("task", "region", "position", "language", "model")
        )
        n = cells.get((task, region, position, language, model), 0)
        if n:
            rec["n_no_reference"] = int(n)
    return score_records


def no_reference_caveat(counts: pd.DataFrame) -> str | None:
    if counts.empty:
        return None
    full = counts[counts["context"] == "full"]
    listed = [
        f"{r.task} in {r.language} ({r.model}: {int(r.n_no_reference)} rows)"
        for r in full.itertuples(index=False)
    ]
    more = f" and {len(listed) - _SHOWN} more" if len(listed) > _SHOWN else ""
    return (
        f"{int(counts['n_no_reference'].sum())} row(s) have no reference in their language (status "
        "no_reference, e.g. no summary of the document's own): left out of the scores, gaps and "
        "no-context drop, not scored 0, and counted in 'no_reference' and each score's n_no_reference"
        + (f"; with context: {', '.join(listed[:_SHOWN])}{more}" if listed else "")
    )


def alignment_records(documents: pd.DataFrame | None, reference: str) -> list[AlignedParagraph]:
    """Every paragraph left out of a built document because some language lacked it."""
    if documents is None or documents.empty:
        return []
    check_frame(documents, "long_documents", ["doc_id", "language", "bucket", "assembly"])
    # Every language row of a document carries the same assembly; the reference's row first.
    ordered = documents.assign(_ref=documents["language"].astype(str) != reference)
    ordered = ordered.sort_values(["_ref", "doc_id"], kind="stable").drop_duplicates("doc_id")
    ordered = ordered.sort_values("doc_id")[["doc_id", "bucket", "assembly"]]
    out: list[AlignedParagraph] = []
    for doc_id, bucket, assembly in ordered.itertuples(index=False):
        for entry in parse_alignment(assembly):
            pid, missing_in = entry["pid"], entry["missing_in"]
            out.append(
                {
                    "doc_id": str(doc_id),
                    "bucket": str(bucket),
                    "pid": pid,
                    "missing_in": missing_in,
                    "decision": DECISION,
                }
            )
    return out


def alignment_caveat(alignment: Sequence[AlignedParagraph]) -> str | None:
    if not alignment:
        return None
    listed = [f"{a['doc_id']} {a['pid']} (missing in {', '.join(a['missing_in'])})" for a in alignment]
    more = f" and {len(listed) - _SHOWN} more" if len(listed) > _SHOWN else ""
    n_docs = len({a["doc_id"] for a in alignment})
    return (
        f"{len(alignment)} paragraph(s) of {n_docs} document(s) were missing in some language version: "
        f"{DECISION} (see 'alignment'): {', '.join(listed[:_SHOWN])}{more}"
    )
