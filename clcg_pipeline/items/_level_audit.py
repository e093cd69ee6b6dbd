"""Optional level audit: a judge model labels each item's level from its evidence only.

The judge sees the question, the gold answer and the evidence paragraphs, never the requested
level or the generator. Agreement with the requested level is reported; items are never
relabelled (``level_label_validated`` stays false: one judge is not a validation).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa

from clcg_pipeline.calls import CallOptions, ChatRequest, call_row, run_requests
from clcg_pipeline.config import LEVELS, ConditionSettings, ModelSpec
from clcg_pipeline.items._prompts import LEVEL_INSTRUCTIONS, PARAGRAPH_MARK
from clcg_pipeline.storage import empty_frame

LEVEL_AUDIT_VERSION = "levelaudit-v1"
AUDIT_SETTINGS = ConditionSettings(temperature=0.0, max_output_tokens=256)
LEVEL_AUDIT_COLUMNS = ["item_id", "doc_id", "requested_level", "judged_level", "status", "call_id"]
AGREEMENT_COLUMNS = ["requested_level", "n", "n_judged", "agreement", "kappa"]

_SYSTEM = (
    "You classify reading-comprehension items by the comprehension demand they make, using only "
    "the evidence shown. Levels:\n"
    + "\n".join(f"- {level}: {text}" for level, text in LEVEL_INSTRUCTIONS.items())
    + '\nReply with one JSON object and nothing else: {"level": "L0".."L5", "evidence": "<one short '
    'quote from the evidence that decides it>"}.'
)
_LEVEL = re.compile(r"\bL[0-5]\b")


def level_audit_requests(
    items: pd.DataFrame, paragraphs_en: pd.DataFrame, *, settings: ConditionSettings | None = None
) -> list[ChatRequest]:
    """One judge request per item (L0-L5 items only), in item_id order."""
    paras = paragraphs_en.sort_values(["doc_id", "ordinal"], kind="stable")
    bodies: dict[str, list[tuple[str, str]]] = {}
    for doc_id, pid, text in zip(paras["doc_id"], paras["pid"], paras["text"], strict=True):
        bodies.setdefault(str(doc_id), []).append((str(pid), str(text)))
    requests: list[ChatRequest] = []
    for row in items[items["level"].isin(LEVELS)].sort_values("item_id").to_dict("records"):
        body = bodies.get(str(row["doc_id"]), [])
        support = set(row.get("supporting_pids") if row.get("supporting_pids") is not None else [])
        evidence = [(p, t) for p, t in body if p in support] or body
        text = "\n\n".join(f"{PARAGRAPH_MARK}{p} {t}" for p, t in evidence)
        user = f"Evidence:\n{text}\n\nQuestion: {row['question']}\nAnswer: {row['gold_answer']}"
        requests.append(
            ChatRequest(
                messages=[{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
                settings=settings or AUDIT_SETTINGS,
                rep=0,
                prompt_version=LEVEL_AUDIT_VERSION,
                metadata={
                    "item_id": str(row["item_id"]),
                    "doc_id": str(row["doc_id"]),
                    "level": str(row["level"]),
                },
            )
        )
    return requests


def _judged(text: str | None) -> str | None:
    if not text:
        return None
    try:
        start = text.index("{")
        value, _ = json.JSONDecoder().raw_decode(text[start:])
        level = str(value.get("level", "")).strip().upper() if isinstance(value, dict) else ""
    except ValueError:
        match = _LEVEL.search(text)
        level = match.group(0) if match else ""
    return level if level in LEVELS else None


def parse_level_audit(results: Sequence[Any], requests: Sequence[ChatRequest]) -> pd.DataFrame:
    """One row per request: the judge's level, or status ``unparseable`` / ``missing`` (failed call)."""
    rows = []
    for result, request in zip(results, requests, strict=True):
        judged = _judged(result.text) if result.outcome == "ok" else None
        status = "ok" if judged else ("unparseable" if result.outcome == "ok" else "missing")
        rows.append(
            {
                "item_id": request.metadata["item_id"],
                "doc_id": request.metadata["doc_id"],
                "requested_level": request.metadata["level"],
                "judged_level": judged,
                "status": status,
                "call_id": result.call_id,
            }
        )
    return pd.DataFrame(rows, columns=LEVEL_AUDIT_COLUMNS)


def level_agreement(audit: pd.DataFrame) -> pd.DataFrame:
    """Share of judged items whose judged level equals the requested one, per level and overall.

    The overall row also carries Cohen's kappa (statsmodels) over the L0-L5 confusion table.
    """
    judged = audit[audit["status"] == "ok"]
    rows = []
    for level in [*LEVELS, "all"]:
        part = audit if level == "all" else audit[audit["requested_level"] == level]
        ok = judged if level == "all" else judged[judged["requested_level"] == level]
        if part.empty:
            continue
        agreement = float((ok["judged_level"] == ok["requested_level"]).mean()) if len(ok) else np.nan
        rows.append(
            {
                "requested_level": level,
                "n": len(part),
                "n_judged": len(ok),
                "agreement": agreement,
                "kappa": np.nan,
            }
        )
    out = pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
    if len(judged):
        table = pd.crosstab(judged["requested_level"], judged["judged_level"]).reindex(
            index=list(LEVELS), columns=list(LEVELS), fill_value=0
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = float(cohens_kappa(table.to_numpy(), return_results=False))
        out.loc[out["requested_level"] == "all", "kappa"] = kappa
    return out


def run_level_audit(
    model: ModelSpec, items: pd.DataFrame, paragraphs_en: pd.DataFrame, options: CallOptions
) -> pd.DataFrame:
    """Ask ``model`` for every item's level (cached through the runner) and parse the replies."""
    audit, _ = run_level_audit_with_calls(model, items, paragraphs_en, options)
    return audit


def run_level_audit_with_calls(
    model: ModelSpec, items: pd.DataFrame, paragraphs_en: pd.DataFrame, options: CallOptions
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the audit of :func:`run_level_audit`; its ``level_audit_calls`` rows: what each call
    paid, or that it was found in the cache, for the record of what the study paid)."""
    requests = level_audit_requests(items, paragraphs_en)
    results = run_requests(model, requests, options) if requests else []
    rows = [
        call_row(
            model, request, result, doc_id=request.metadata["doc_id"], item_id=request.metadata["item_id"]
        )
        for request, result in zip(requests, results, strict=True)
    ]
    calls = pd.DataFrame(rows) if rows else empty_frame("level_audit_calls")
    return parse_level_audit(results, requests), calls
