"""Plan and run one partition (a model on a language) and turn responses into rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pandas.api.types import is_list_like

from clcg_pipeline.calls import (
    PROMPT_VERSIONS,
    TOKENIZER,
    CallCache,
    CallOptions,
    CallResult,
    ChatRequest,
    bind,
    call_row,
    cost_usd,
    estimate_input_tokens,
    estimate_output_tokens,
    resolve_settings,
    run_requests,
)
from clcg_pipeline.config import ConditionSettings, ContextScope, ModelSpec
from clcg_pipeline.inference._parse import Status, parse_answers
from clcg_pipeline.inference._prompts import Question, is_polar, render_request
from clcg_pipeline.storage import TABLES

_PARAGRAPH_COLUMNS = ("doc_id", "pid", "ordinal", "text")
# The ``calls`` contract and what the responses stage keeps beyond it, in the table's order.
CALL_COLUMNS = [*TABLES["calls"].names, "item_id", "request_hash", "finish_reason", "n_questions"]
_ITEM_COLUMNS = ("item_id", "doc_id", "question")


@dataclass(frozen=True)
class InferenceResult:
    """Rows of the ``predictions`` and ``calls`` contracts for one partition."""

    predictions: pd.DataFrame
    calls: pd.DataFrame


@dataclass(frozen=True)
class _Slot:
    """One planned request and the items it answers, in prompt order."""

    request: ChatRequest
    doc_id: str
    scope: str
    rep: int
    item_ids: tuple[str, ...]


def _require(frame: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} frame is missing column(s) {missing}")


def string_list(value: Any) -> list[str]:
    """A list cell (list, array or missing) as a list of strings."""
    if isinstance(value, str):
        return [value]
    if not is_list_like(value):
        return []  # None, NaN, pd.NA: no entries
    return [str(v) for v in value]


def _question(row: Mapping[str, Any]) -> Question:
    options = string_list(row.get("options"))
    text = row.get("question")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"items: item {row.get('item_id')!r} field 'question' is empty")
    return Question(
        item_id=str(row["item_id"]),
        text=text,
        options=tuple(options),
        polar=is_polar(row.get("level"), row.get("answer_format")),
    )


def _plan(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    items: pd.DataFrame,
    reps: Mapping[str, int],
    conditions: Mapping[ContextScope, ConditionSettings],
) -> list[_Slot]:
    _require(paragraphs, _PARAGRAPH_COLUMNS, "paragraphs")
    _require(items, _ITEM_COLUMNS, "items")
    unknown = sorted(set(conditions) - set(PROMPT_VERSIONS))
    if unknown:
        raise ValueError(
            f"conditions: unknown context_scope(s) {unknown}; expected {sorted(PROMPT_VERSIONS)}"
        )
    if "language" in paragraphs.columns:
        paragraphs = paragraphs[paragraphs["language"] == language]
    passages: dict[str, list[tuple[str, str]]] = {}
    for doc_id, group in paragraphs.sort_values(["doc_id", "ordinal"]).groupby("doc_id", sort=True):
        passages[str(doc_id)] = [(str(p), str(t)) for p, t in zip(group["pid"], group["text"], strict=True)]
    by_doc: dict[str, list[dict[str, Any]]] = {}
    # Items are put in item_id order so the rendered request (and its hash) is independent of
    # the input frame's row order.
    duplicated = items[items.duplicated(["doc_id", "item_id"])]
    if len(duplicated):
        first = duplicated.iloc[0]
        raise ValueError(
            f"items: item_id {first['item_id']!r} of doc_id {first['doc_id']!r} appears more than once"
        )
    for row in items.sort_values(["doc_id", "item_id"]).to_dict("records"):
        by_doc.setdefault(str(row["doc_id"]), []).append(row)
    slots: list[_Slot] = []
    for doc_id in sorted(reps):
        n_reps = int(reps[doc_id])
        if n_reps < 1:
            raise ValueError(f"reps: doc_id {doc_id!r} has {n_reps} repetitions; need >= 1")
        if doc_id not in passages or doc_id not in by_doc:
            continue
        rows = by_doc[doc_id]
        questions = [_question(r) for r in rows]
        for scope in PROMPT_VERSIONS:
            if scope not in conditions:
                continue
            settings = resolve_settings(model, conditions[scope])
            for rep in range(n_reps):
                meta = {"doc_id": doc_id, "language": language, "context_scope": scope}
                if scope == "item_grounded":
                    ordinal = {pid: i for i, (pid, _) in enumerate(passages[doc_id])}
                    for row, question in zip(rows, questions, strict=True):
                        linked = set(string_list(row.get("supporting_pids"))) | set(
                            string_list(row.get("target_pids"))
                        )
                        # An item without links (e.g. a global L5 question) gets the whole body.
                        chosen = [p for p in passages[doc_id] if p[0] in linked] or passages[doc_id]
                        chosen.sort(key=lambda p: ordinal[p[0]])
                        request = render_request(
                            "item_grounded",
                            questions=[question],
                            paragraphs=chosen,
                            settings=settings,
                            rep=rep,
                            metadata={**meta, "item_id": question.item_id},
                        )
                        slots.append(_Slot(request, doc_id, scope, rep, (question.item_id,)))
                else:
                    request = render_request(
                        scope,
                        questions=questions,
                        paragraphs=passages[doc_id] if scope == "full_body" else (),
                        settings=settings,
                        rep=rep,
                        metadata=meta,
                    )
                    slots.append(_Slot(request, doc_id, scope, rep, tuple(q.item_id for q in questions)))
    bound = bind(model, [s.request for s in slots])
    return [_Slot(r, s.doc_id, s.scope, s.rep, s.item_ids) for r, s in zip(bound, slots, strict=True)]


def sampled_inputs(
    paragraphs: pd.DataFrame, items: pd.DataFrame, study_sample: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """A responses partition's paragraphs and items, cut to the sampled articles, and their repetitions."""
    reps = dict(zip(study_sample["doc_id"], study_sample["n_reps"].astype(int), strict=True))
    return paragraphs[paragraphs["doc_id"].isin(reps)], items[items["doc_id"].isin(reps)], reps


def partition_requests(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    items: pd.DataFrame,
    reps: Mapping[str, int],
    conditions: Mapping[ContextScope, ConditionSettings],
) -> list[ChatRequest]:
    """Every request :func:`predict_partition` sends for these inputs, in order; calls nothing."""
    slots = _plan(
        model=model, language=language, paragraphs=paragraphs, items=items, reps=reps, conditions=conditions
    )
    return [s.request for s in slots]


def plan_partition(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    items: pd.DataFrame,
    reps: Mapping[str, int],
    conditions: Mapping[ContextScope, ConditionSettings],
    cache_dir: str,
    planned: set[str] | None = None,
) -> pd.DataFrame:
    """Calls, cache hits, estimated tokens and cost per condition; calls no model.

    Tokens are cl100k_base estimates for every provider (``tokenizer`` column); output tokens
    are a per-answer guess capped by ``max_output_tokens``. Cached calls cost nothing.
    ``planned`` collects call ids across the partitions of one plan: a request already
    planned elsewhere (closed-book requests are identical in every language) is counted in
    ``shared_calls`` and costs nothing more here.
    """
    slots = _plan(
        model=model, language=language, paragraphs=paragraphs, items=items, reps=reps, conditions=conditions
    )
    cache = CallCache(cache_dir)
    rows: list[dict[str, Any]] = []
    for scope in PROMPT_VERSIONS:
        chosen = [s for s in slots if s.scope == scope]
        if scope not in conditions:
            continue
        unique = {s.request.call_id: s for s in chosen}
        cached = {cid for cid in unique if cache.exists(cid)}
        shared = {cid for cid in unique if planned is not None and cid in planned and cid not in cached}
        if planned is not None:
            planned.update(unique)
        in_tok = out_tok = 0
        cost = 0.0  # per call: a long prompt may fall in a higher price tier
        for cid, slot in unique.items():
            if cid in cached or cid in shared:
                continue
            call_in = estimate_input_tokens(slot.request.messages)
            call_out = estimate_output_tokens(len(slot.item_ids), slot.request.settings.max_output_tokens)
            in_tok, out_tok = in_tok + call_in, out_tok + call_out
            cost += cost_usd(model, call_in, call_out)
        rows.append(
            {
                "model": model.id,
                "language": language,
                "context_scope": scope,
                "calls": len(chosen),
                "cached_calls": sum(1 for s in chosen if s.request.call_id in cached),
                "shared_calls": sum(1 for s in chosen if s.request.call_id in shared),
                "input_tokens": in_tok,
                "output_tokens": out_tok,
                "cost_usd": cost,
                "tokenizer": TOKENIZER,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "model",
            "language",
            "context_scope",
            "calls",
            "cached_calls",
            "shared_calls",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "tokenizer",
        ],
    )


def _frame(table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    names = TABLES[table].names
    extra = [c for c in (rows[0] if rows else {}) if c not in names]
    return pd.DataFrame(rows, columns=[*names, *extra])


def rows_from_results(
    *, model: ModelSpec, language: str, slots: list[_Slot], results: list[CallResult]
) -> InferenceResult:
    """Exactly one prediction row per planned item slot and one call row per request."""
    predictions: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for slot, result in zip(slots, results, strict=True):
        n = len(slot.item_ids)
        parsed: list[tuple[str | None, Status]]
        if result.outcome == "refused":
            parsed = [(None, "unparseable")] * n
        elif result.outcome in ("ok", "truncated"):
            parsed = parse_answers(result.text, n, finish_reason=result.finish_reason)
        else:
            parsed = [(None, "missing")] * n
        for item_id, (answer, status) in zip(slot.item_ids, parsed, strict=True):
            predictions.append(
                {
                    "model": model.id,
                    "language": language,
                    "doc_id": slot.doc_id,
                    "item_id": item_id,
                    "rep": slot.rep,
                    "context_scope": slot.scope,
                    "answer": answer,
                    "status": status,
                    "call_id": result.call_id,
                }
            )
        calls.append(
            call_row(
                model,
                slot.request,
                result,
                doc_id=slot.doc_id,
                language=language,
                context_scope=slot.scope,
                item_id=slot.item_ids[0] if slot.scope == "item_grounded" else None,
                n_questions=n,
            )
        )
    # The columns beyond the contract come with the rows (an empty partition has the contract's).
    frame = pd.DataFrame(calls, columns=CALL_COLUMNS if calls else TABLES["calls"].names)
    return InferenceResult(predictions=_frame("predictions", predictions), calls=frame)


def predict_partition(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    items: pd.DataFrame,
    reps: Mapping[str, int],
    conditions: Mapping[ContextScope, ConditionSettings],
    options: CallOptions,
) -> InferenceResult:
    """Answer every item of every planned article x repetition x condition for one language.

    ``options``: the cache, this partition's budget (``budget_usd``, or ``budget``, the Dagster
    run's, shared with its other paid ops), the study's, the mode, the retry policy (tests
    shorten it; it never changes a call id), progress, and ``origin`` (calls ``clcg run`` sent
    ahead for this partition count as new).
    """
    slots = _plan(
        model=model, language=language, paragraphs=paragraphs, items=items, reps=reps, conditions=conditions
    )
    results = run_requests(model, [s.request for s in slots], options)
    return rows_from_results(model=model, language=language, slots=slots, results=results)
