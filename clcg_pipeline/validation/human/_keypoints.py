"""The keypoint checklist: a gold answer's atomic facts, written once and frozen (seed 0.4.9).

For a multi-fact gold answer the annotator ticks which facts the response recovered, which
gives ``keypoint_recall`` (a fluent but incomplete answer stays distinguishable from a complete
one). The checklist is written by the model named in ``human_validation.keypoint_writer`` from
the English question and gold answer only, at temperature 0, through the shared judge machinery
(cached, budgeted, strict JSON ``{"keypoints": [...]}``), before collection; the asset keeps
what is stored (frozen) and only writes checklists for items that have none.

An item whose writer returns a single fact gets no checklist (recall is not applicable there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pydantic

from clcg_pipeline.calls import CallOptions, ChatRequest, JudgeTemplate, run_judge
from clcg_pipeline.config import ModelSpec

KEYPOINT_COLUMNS = ["item_id", "keypoint_id", "text", "writer", "call_id", "prompt_version", "template_hash"]
MAX_KEYPOINTS = 8


class KeypointsReply(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    keypoints: list[pydantic.constr(strip_whitespace=True, min_length=1)] = pydantic.Field(  # type: ignore[valid-type]
        min_length=1, max_length=MAX_KEYPOINTS
    )


_GOLD_MARK = "Gold answer:"

KEYPOINTS_TEMPLATE = JudgeTemplate(
    version="keypoints-v1",
    system=(
        "You decompose the reference answer of a reading-comprehension question into its atomic "
        "facts: the smallest self-contained statements a complete answer must contain. Use only "
        "the reference answer; add nothing, merge nothing, keep each fact's wording close to the "
        'reference. Reply with one JSON object only: {"keypoints": ["fact 1", "fact 2", ...]} '
        f"(1 to {MAX_KEYPOINTS} facts; a single-fact answer gives a list of one)."
    ),
    user="Question: {question}\n" + _GOLD_MARK + " {gold_answer}",
    schema=KeypointsReply,
)

# Clause boundaries of the rule-based writer: sentence ends, semicolons and colons, commas that
# are not thousands separators, and coordinating "and"/"but"/"while" between clauses.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_CLAUSE = re.compile(r"\s*;\s*|:\s+|,?\s+(?:and|but|while|plus)\s+|(?<!\d),\s*|,(?!\d)\s*", re.IGNORECASE)
_CONTENT = re.compile(r"\w")


def split_facts(answer: str) -> list[str]:
    """Deterministic clause split of a gold answer; a fragment with no word joins its neighbour."""
    facts: list[str] = []
    for sentence in _SENTENCE.split(answer.strip()):
        for part in _CLAUSE.split(sentence):
            part = part.strip().strip(".").strip()
            if not part:
                continue
            if facts and not _CONTENT.search(part):
                facts[-1] = f"{facts[-1]} {part}"
            else:
                facts.append(part)
    return facts[:MAX_KEYPOINTS] or [answer.strip()]


def write_keypoints_offline(request: ChatRequest, spec: ModelSpec) -> str:
    """rule-writer-v1's answer to ``keypoints-v1``: the gold answer split by clause rules (not an LLM)."""
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    at = user.rfind(_GOLD_MARK)
    if at < 0:
        raise ValueError(f"model {spec.id!r}: keypoints request without a {_GOLD_MARK!r} line")
    return json.dumps({"keypoints": split_facts(user[at + len(_GOLD_MARK) :])}, ensure_ascii=False)


def checklist_items(sample: pd.DataFrame) -> pd.DataFrame:
    """Distinct items of the sample's single and pair tasks that can have a checklist (free answers)."""
    if sample.empty:
        return pd.DataFrame(columns=["item_id", "doc_id", "question", "gold_answer"])
    rated = sample[sample["kind"].isin(["single", "pair"])]
    frame = rated[["item_id", "doc_id", "question", "gold_answer", "level"]].drop_duplicates("item_id")
    # Yes / No / Not stated answers (L0) are one fact by construction.
    frame = frame[frame["level"] != "L0"]
    return frame.drop(columns="level").sort_values("item_id").reset_index(drop=True)


def write_keypoints(
    writer: ModelSpec,
    items: pd.DataFrame,
    options: CallOptions,
    *,
    existing: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(keypoints, judgements, calls)`` for ``items`` lacking a frozen checklist in ``existing``.

    ``keypoints`` holds the existing rows plus the new ones (only items with two or more facts);
    ``judgements`` has one status row per item asked (ok / unparseable / refused / missing).
    An item skipped by the budget or still in a pending batch has no checklist and is asked
    again next run. ``options.budget``: the run's (``run_budget``), shared with its other ops.
    """
    kept = existing if existing is not None and len(existing) else pd.DataFrame(columns=KEYPOINT_COLUMNS)
    asked_before = set(kept["item_id"])
    todo = items[~items["item_id"].isin(asked_before)]
    subjects: Sequence[tuple[dict[str, Any], dict[str, str]]] = [
        (
            {"item_id": r["item_id"], "doc_id": r["doc_id"]},
            {"question": r["question"], "gold_answer": r["gold_answer"]},
        )
        for r in todo.to_dict("records")
    ]
    judgements, calls = run_judge(
        writer,
        KEYPOINTS_TEMPLATE,
        subjects,
        options,
    )
    rows: list[dict[str, Any]] = []
    for j in judgements.to_dict("records") if len(judgements) else []:
        if j["status"] != "ok":
            continue
        facts = json.loads(j["judgement"])["keypoints"]
        if len(facts) < 2:
            continue
        for n, text in enumerate(facts, start=1):
            rows.append(
                {
                    "item_id": j["item_id"],
                    "keypoint_id": f"k{n}",
                    "text": text,
                    "writer": writer.id,
                    "call_id": j["call_id"],
                    "prompt_version": j["prompt_version"],
                    "template_hash": j["template_hash"],
                }
            )
    new = pd.DataFrame(rows, columns=KEYPOINT_COLUMNS)
    frames = [f for f in (kept[KEYPOINT_COLUMNS], new) if len(f)]
    out = pd.concat(frames, ignore_index=True) if frames else new
    return out.sort_values(["item_id", "keypoint_id"]).reset_index(drop=True), judgements, calls


def keypoints_by_item(keypoints: pd.DataFrame) -> dict[str, list[tuple[str, str]]]:
    """item_id -> [(keypoint_id, text), ...] in checklist order."""
    out: dict[str, list[tuple[str, str]]] = {}
    if keypoints.empty:
        return out
    ordered = keypoints.assign(_n=keypoints["keypoint_id"].str[1:].astype(int)).sort_values(["item_id", "_n"])
    for item_id, kid, text in zip(ordered["item_id"], ordered["keypoint_id"], ordered["text"], strict=True):
        out.setdefault(str(item_id), []).append((str(kid), str(text)))
    return out
