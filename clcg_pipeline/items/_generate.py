"""Item-bank generation: requests per article x level, parsing, validation.

Generation is pure up to :func:`generate_items_with_calls`, which is the one place that calls a
model, through ``clcg_pipeline.calls.run_requests`` (cache, retries, budget are its concern),
and returns the ``item_calls`` rows of what was paid beside the items. The bank is frozen by
the caller: this module never decides whether to regenerate.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from clcg_pipeline.calls import CallOptions, ChatRequest, call_row, run_requests
from clcg_pipeline.config import LEVELS, ConditionSettings, ModelSpec, StudyConfig
from clcg_pipeline.items._prompts import (
    LEVEL_FORMAT,
    NOT_STATED,
    POLAR_LABELS,
    prompt_version,
    render_messages,
    template_hash,
)
from clcg_pipeline.items._validate import REJECTION_COLUMNS, validate_items
from clcg_pipeline.storage import empty_frame

# Generation is a one-off authoring step: deterministic decoding, room for 4 items with pids.
GENERATION_SETTINGS = ConditionSettings(temperature=0.0, max_output_tokens=2048)
PROVENANCE_COLUMNS = [
    "prompt_version",
    "template_hash",
    "created_at",
    "generation_call_id",
    "requested_level",
]


class _Result(Protocol):
    """What :func:`parse_generated` reads from a ``CallResult`` (read-only: it is frozen)."""

    @property
    def call_id(self) -> str: ...
    @property
    def text(self) -> str | None: ...
    @property
    def outcome(self) -> str: ...
    @property
    def error(self) -> str | None: ...


@dataclass(frozen=True)
class GeneratedBank:
    """Valid items (``items`` contract + provenance), rejections, per article x level counts
    (``yield_``: doc_id, level, n_returned, n_valid), the raw call results and their
    ``item_calls`` rows (``calls``)."""

    items: pd.DataFrame
    rejections: pd.DataFrame
    yield_: pd.DataFrame = field(default_factory=pd.DataFrame)
    results: list[Any] = field(default_factory=list)
    calls: pd.DataFrame = field(default_factory=lambda: empty_frame("item_calls"))


def generation_requests(
    articles_en: pd.DataFrame,
    paragraphs_en: pd.DataFrame,
    study: StudyConfig,
    *,
    settings: ConditionSettings | None = None,
    levels: Sequence[str] = LEVELS,
) -> list[ChatRequest]:
    """One request per English article x level, asking for up to ``study.items_per_level`` items.

    Articles are taken in doc_id order and paragraphs in ordinal order, so the request list
    (and every call id) is the same for the same input whatever its row order.
    """
    base = settings or GENERATION_SETTINGS
    if base.seed is None:
        base = base.model_copy(update={"seed": study.seed})
    titles = dict(zip(articles_en["doc_id"].astype(str), articles_en["title"], strict=True))
    paras = paragraphs_en.sort_values(["doc_id", "ordinal"], kind="stable")
    bodies: dict[str, list[tuple[str, str]]] = {}
    for doc_id, pid, text in zip(paras["doc_id"], paras["pid"], paras["text"], strict=True):
        bodies.setdefault(str(doc_id), []).append((str(pid), str(text)))
    requests: list[ChatRequest] = []
    for doc_id in sorted(titles):
        body = bodies.get(doc_id)
        if not body:
            continue  # nothing to ask about; the article simply gets no items
        title = titles[doc_id]
        for level in levels:
            requests.append(
                ChatRequest(
                    messages=render_messages(
                        level,
                        title=None if pd.isna(title) else str(title),
                        paragraphs=body,
                        n=study.items_per_level,
                    ),
                    settings=base,
                    rep=0,
                    prompt_version=prompt_version(level),
                    metadata={"doc_id": doc_id, "level": level, "template_hash": template_hash(level)},
                )
            )
    return requests


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _json_payload(text: str) -> Any:
    """The JSON value in a reply, tolerating a code fence or prose around one object/array."""
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        raise ValueError("no JSON object or array in the reply")
    value, _ = json.JSONDecoder().raw_decode(stripped[min(starts) :])
    return value


def _polar(answer: str) -> str:
    """Canonical spelling of a Yes / No / Not stated label (case and a final period ignored)."""
    folded = answer.strip().rstrip(".").strip().casefold()
    for label in POLAR_LABELS:
        if folded == label.casefold():
            return label
    return answer.strip()


def _as_pids(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | int):
        return [str(value)]
    return [str(v) for v in value]


def _base_row(result: _Result, request: ChatRequest, generator: str, created: str) -> dict[str, Any]:
    """The columns every item of one reply shares (provenance included)."""
    level = request.metadata["level"]
    return {
        "doc_id": request.metadata["doc_id"],
        "item_source": "llm",
        "level": level,
        "answer_format": LEVEL_FORMAT[level],
        "options": None,
        "gold_answerable": True,
        "generator": generator,
        "prompt_hash": request.request_hash,
        "level_label_validated": False,
        "prompt_version": request.prompt_version,
        "template_hash": request.metadata.get("template_hash", template_hash(level)),
        "created_at": created,
        "generation_call_id": result.call_id,
        "requested_level": level,
        "parse_error": None,
    }


def _reply_entries(result: _Result) -> tuple[list[Any], str | None]:
    """The reply's item entries, or why there are none (a failed call, an unreadable reply)."""
    failed = _failure(result)
    if failed is not None:
        return [], failed
    try:
        payload = _json_payload(result.text or "")
        entries = payload.get("items") if isinstance(payload, dict) else payload
        if not isinstance(entries, list):
            raise ValueError("expected a list of items (or {'items': [...]})")
    except ValueError as exc:
        return [], f"unreadable reply: {exc}"
    return entries, None


def _unusable(row: dict[str, Any], error: str) -> dict[str, Any]:
    """A row that validation rejects as ``unparseable``, with ``error`` as the reason."""
    return {
        **row,
        "question": None,
        "gold_answer": None,
        "target_pids": [],
        "supporting_pids": [],
        "parse_error": error,
    }


def _entry_row(row: dict[str, Any], entry: Any, n: int, level: str) -> dict[str, Any]:
    """The item row of the reply's ``n``-th entry."""
    if not isinstance(entry, dict):
        return _unusable(row, f"item {n} is not an object")
    answer = entry.get("answer", entry.get("gold_answer"))
    answer = None if answer is None else str(answer)
    if level == "L0" and answer is not None:
        answer = _polar(answer)
    question = entry.get("question")
    try:
        target, support = _as_pids(entry.get("target_pids")), _as_pids(entry.get("supporting_pids"))
    except TypeError:
        target, support = [], []
        row["parse_error"] = f"item {n}: pids are not lists"
    return {
        **row,
        "question": None if question is None else str(question).strip(),
        "gold_answer": answer,
        "target_pids": target,
        "supporting_pids": support,
        # L0 "Not stated" is itself the correct answer, so the item stays answerable.
        "gold_answerable": level == "L0" or (answer or "").strip().rstrip(".") != NOT_STATED,
    }


def parse_generated(
    results: Sequence[_Result],
    requests: Sequence[ChatRequest],
    *,
    generator: str,
    created_at: dt.datetime | None = None,
) -> pd.DataFrame:
    """Items from the generator's replies, in the ``items`` contract plus provenance columns.

    Item ids are ``<doc_id>-<level>-<n>`` by position in the reply, before validation, so a
    rejected item leaves a visible gap. A failed call or an unreadable reply yields one row
    with ``parse_error`` set (item id ``<doc_id>-<level>-0``), which validation rejects as
    ``unparseable``: every failure is counted, none is silently lost.
    """
    if len(results) != len(requests):
        raise ValueError(f"{len(results)} results for {len(requests)} requests")
    created = (created_at or dt.datetime.now(dt.UTC)).isoformat()
    rows: list[dict[str, Any]] = []
    for result, request in zip(results, requests, strict=True):
        doc_id, level = request.metadata["doc_id"], request.metadata["level"]
        base = _base_row(result, request, generator, created)
        entries, failed = _reply_entries(result)
        if failed is not None:
            rows.append(_unusable({**base, "item_id": f"{doc_id}-{level}-0"}, failed))
            continue
        for n, entry in enumerate(entries, start=1):
            rows.append(_entry_row({**base, "item_id": f"{doc_id}-{level}-{n}"}, entry, n, level))
    if not rows:
        return empty_frame("items").assign(
            **{c: pd.Series(dtype=object) for c in [*PROVENANCE_COLUMNS, "parse_error"]}
        )
    frame = pd.DataFrame(rows)
    order = [*empty_frame("items").columns, *PROVENANCE_COLUMNS, "parse_error"]
    return frame[order]


def _failure(result: _Result) -> str | None:
    if result.outcome != "ok" and not (result.outcome == "truncated" and result.text):
        return f"call {result.outcome}: {result.error or 'no detail'}"
    if not result.text:
        return "empty reply"
    return None


def generation_calls(
    model: ModelSpec, requests: Sequence[ChatRequest], results: Sequence[Any]
) -> pd.DataFrame:
    """The ``item_calls`` rows of the generator's calls, one per article x level: what each
    paid (or that it was found in the cache), for the record of what the study paid."""
    rows = [
        call_row(model, request, result, doc_id=request.metadata["doc_id"], level=request.metadata["level"])
        for request, result in zip(requests, results, strict=True)
    ]
    return pd.DataFrame(rows) if rows else empty_frame("item_calls")


def generate_items_with_calls(
    model: ModelSpec,
    articles_en: pd.DataFrame,
    paragraphs_en: pd.DataFrame,
    study: StudyConfig,
    options: CallOptions,
    *,
    created_at: dt.datetime | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the items of :func:`generate_items`, UNVALIDATED; the ``item_calls`` rows of its calls)."""
    requests = generation_requests(articles_en, paragraphs_en, study)
    results = run_requests(model, requests, options) if requests else []
    items = parse_generated(results, requests, generator=model.id, created_at=created_at)
    return items, generation_calls(model, requests, results)


def generate_items(
    model: ModelSpec,
    articles_en: pd.DataFrame,
    paragraphs_en: pd.DataFrame,
    study: StudyConfig,
    options: CallOptions,
    *,
    created_at: dt.datetime | None = None,
) -> pd.DataFrame:
    """Call the generator for every (English) article x level and parse the replies, UNVALIDATED.

    The frame holds every parsed item and one ``parse_error`` row per failed call or reply;
    pass it (alone or with the rest of the bank) to :func:`validate_items` with
    ``items_per_level=study.items_per_level`` so every rejection is counted. Use
    :func:`generate_bank` for generation and validation in one step, and
    :func:`generate_items_with_calls` to record what the calls paid too.
    """
    items, _ = generate_items_with_calls(
        model, articles_en, paragraphs_en, study, options, created_at=created_at
    )
    return items


def generate_bank(
    model: ModelSpec,
    articles_en: pd.DataFrame,
    paragraphs_en: pd.DataFrame,
    study: StudyConfig,
    options: CallOptions,
    *,
    created_at: dt.datetime | None = None,
) -> GeneratedBank:
    """Generate, parse and validate the LLM item bank for the given (sampled, English) articles."""
    requests = generation_requests(articles_en, paragraphs_en, study)
    results = run_requests(model, requests, options) if requests else []
    raw = parse_generated(results, requests, generator=model.id, created_at=created_at)
    valid, rejections = validate_items(raw, paragraphs_en, items_per_level=study.items_per_level)
    return GeneratedBank(
        items=valid,
        rejections=rejections.reindex(columns=REJECTION_COLUMNS),
        yield_=_yield(requests, raw, valid),
        results=list(results),
        calls=generation_calls(model, requests, results),
    )


def _yield(requests: Sequence[ChatRequest], raw: pd.DataFrame, valid: pd.DataFrame) -> pd.DataFrame:
    """Items returned and kept per requested article x level (zeros included)."""
    keys = pd.DataFrame(
        [(r.metadata["doc_id"], r.metadata["level"]) for r in requests], columns=["doc_id", "level"]
    )
    returned = raw[raw["parse_error"].isna()].groupby(["doc_id", "level"]).size().rename("n_returned")
    kept = valid.groupby(["doc_id", "level"]).size().rename("n_valid")
    out = keys.merge(returned.reset_index(), how="left", on=["doc_id", "level"])
    out = out.merge(kept.reset_index(), how="left", on=["doc_id", "level"])
    return out.fillna({"n_returned": 0, "n_valid": 0}).astype({"n_returned": "int64", "n_valid": "int64"})
