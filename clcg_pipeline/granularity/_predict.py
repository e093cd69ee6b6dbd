"""Plan and run one language x model partition of the granularity tasks, and parse the answers.

Every task of every long document present in the language is rendered on that language's
paragraphs (the tasks were built once from English; paragraph ids are shared), in every
configured context (``full``, and the no-context ablation ``none``) and repetition, and sent
through the same runner as the responses (cache, coordination, budget, study budget, batch
mode, progress). A cloze group (one option set, several blanks) is one request; every other
task is its own request. The replies are parsed by ``_parse``.

A request whose prompt (in the language's own tokens) plus output cap exceeds the model's
``context_window`` is refused before anything is sent: its tasks get status ``too_long``, the
error names model, document, language, bucket and sizes, a warning is logged, and ``clcg plan``
counts such calls (``too_long_calls``) and names them (docs/GRANULARITY.md, "Length up to 128K").
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from clcg_pipeline.calls import (
    REFUSAL_REASONS,
    TOKENIZER,
    TRUNCATED_REASONS,
    CallCache,
    CallOptions,
    CallResult,
    ChatRequest,
    bind,
    call_row,
    cost_usd,
    count_tokens,
    resolve_settings,
    run_requests,
)
from clcg_pipeline.config import ConditionSettings, GranularitySettings, ModelSpec
from clcg_pipeline.granularity._parse import Status, parse_cloze, parse_text, parse_word
from clcg_pipeline.granularity._prompts import (
    OPTION_LETTERS,
    PROMPT_VERSIONS,
    Blank,
    PromptSize,
    blank_document,
    family,
    prompt_size,
    render_task_request,
    split_sentences,
    too_long_reason,
)
from clcg_pipeline.inference import string_list
from clcg_pipeline.storage import TABLES

log = logging.getLogger(__name__)
#: Status of a task whose prompt cannot fit the model's context window (never sent).
TOO_LONG = "too_long"
PARAGRAPH_COLUMNS = ("doc_id", "language", "pid", "ordinal", "text")
TASK_COLUMNS = ("task_id", "group_id", "doc_id", "task", "question", "gold", "options", "blank_pids")
PREDICTION_COLUMNS = [
    *("model", "language", "doc_id", "task_id", "group_id", "task", "context", "rep"),
    *("answer", "status", "call_id", "truncated", "error"),
]
CALL_COLUMNS = list(TABLES["task_calls"].names)  # the data contract is the one list
#: A word answer may be a short name ("New York"); longer replies are not single words.
_TEXT_TASKS = frozenset({"paragraph_fill", "summary", "translation"})


@dataclass(frozen=True)
class PartitionResult:
    """Rows of ``task_predictions`` and ``task_calls`` for one language x model."""

    predictions: pd.DataFrame
    calls: pd.DataFrame


@dataclass(frozen=True)
class TaskSlot:
    """One planned request and the tasks it answers (cloze: in blank-number order)."""

    request: ChatRequest
    doc_id: str
    group_id: str
    task: str
    context: str
    rep: int
    task_ids: tuple[str, ...]
    options: tuple[str, ...] = ()
    #: Why the request is not sent (its prompt cannot fit the model's context window), else None.
    refused: str | None = None


def _require(frame: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}")


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and pd.isna(value)) and value is not pd.NA


def _where(row: Mapping[str, Any]) -> str:
    return f"granularity_tasks: task {row.get('task_id')!r} (doc {row.get('doc_id')!r})"


def _sentence_index(row: Mapping[str, Any], pid: str, english: Mapping[str, str]) -> int:
    """The blanked sentence's index in its paragraph: the task's ``sentence_index`` when the
    builder recorded it, else the gold sentence's place in the English paragraph."""
    recorded: Any = row.get("sentence_index")  # a table cell: None, NaN or a number
    if _present(recorded):
        return int(recorded)
    text = english.get(pid)
    gold = " ".join(str(row.get("gold") or "").split())
    if text is not None:
        for k, sentence in enumerate(split_sentences(text)):
            if " ".join(sentence.split()) == gold:
                return k
    raise ValueError(
        f"{_where(row)}: field 'sentence_index' is missing and the gold sentence is not in {pid!r}"
    )


def token_factor(document: Sequence[tuple[str, str]], english: Sequence[tuple[str, str]]) -> float:
    """How many times the English version's tokens this version of a document takes (at least 1)."""
    english_tokens = sum(count_tokens(text) for _, text in english)
    own = sum(count_tokens(text) for _, text in document)
    return max(1.0, own / english_tokens) if english_tokens else 1.0


def _settings(model: ModelSpec, gran: GranularitySettings, cap: Any) -> ConditionSettings:
    max_tokens = int(cap) if _present(cap) else None
    return resolve_settings(
        model, ConditionSettings(temperature=gran.temperature, seed=gran.seed, max_output_tokens=max_tokens)
    )


def partition_paragraphs(long_paragraphs: pd.DataFrame, language: str, reference: str) -> pd.DataFrame:
    """The long paragraphs one partition reads: its language's and the reference's (see ``plan_tasks``)."""
    return long_paragraphs[long_paragraphs["language"].isin([language, reference])]


def plan_tasks(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    tasks: pd.DataFrame,
    settings: GranularitySettings,
    reference: str = "en",
    language_name: str | None = None,
) -> list[TaskSlot]:
    """Every request of one partition, bound to ``model``; calls nothing.

    ``paragraphs`` is ``long_paragraphs`` of the partition's language and of the reference
    language (translation reads the English source; a cloze task without ``sentence_index``
    finds its sentence in English). A document absent in the language is skipped (its tasks
    have no row, as a responses partition has none for a missing article). Translation
    (English into the language, ``language_name`` in the prompt) is not asked in the
    reference language itself.
    """
    _require(paragraphs, PARAGRAPH_COLUMNS, "long_paragraphs")
    _require(tasks, TASK_COLUMNS, "granularity_tasks")
    dup = tasks[tasks.duplicated("task_id")]
    if len(dup):
        raise ValueError(f"granularity_tasks: task_id {dup.iloc[0]['task_id']!r} appears more than once")
    ordered = paragraphs.sort_values(["doc_id", "ordinal"], kind="stable")
    docs: dict[str, list[tuple[str, str]]] = {}
    english: dict[str, dict[str, str]] = {}
    english_docs: dict[str, list[tuple[str, str]]] = {}
    for (doc_id, lang), group in ordered.groupby(["doc_id", "language"], sort=True):
        pairs = [(str(p), str(t)) for p, t in zip(group["pid"], group["text"], strict=True)]
        if lang == language:
            docs[str(doc_id)] = pairs
        if lang == reference:
            english[str(doc_id)] = dict(pairs)
            english_docs[str(doc_id)] = pairs
    slots: list[TaskSlot] = []
    rows = sorted(
        tasks.to_dict("records"), key=lambda r: (str(r["doc_id"]), str(r["group_id"]), str(r["task_id"]))
    )
    cloze_groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    factors: dict[str, float] = {}
    for row in rows:
        task = str(row["task"])
        family(task)  # an unknown kind is named
        if str(row["doc_id"]) not in docs or (task == "translation" and language == reference):
            continue
        if task == "cloze":
            cloze_groups.setdefault((str(row["doc_id"]), str(row["group_id"])), []).append(row)
            continue
        doc_id = str(row["doc_id"])
        if doc_id not in factors:
            factors[doc_id] = token_factor(docs[doc_id], english_docs.get(doc_id, []))
        slots.extend(
            _single(
                model,
                language,
                row,
                docs[doc_id],
                english_docs.get(doc_id, []),
                settings,
                language_name,
                factors[doc_id],
            )
        )
    for (doc_id, group_id), group in sorted(cloze_groups.items()):
        slots.extend(
            _cloze(model, language, doc_id, group_id, group, docs[doc_id], english.get(doc_id, {}), settings)
        )
    bound = bind(model, [s.request for s in slots])
    return [_fitted(model, replace(s, request=r)) for r, s in zip(bound, slots, strict=True)]


def _fitted(model: ModelSpec, slot: TaskSlot) -> TaskSlot:
    """``slot``, refused when its prompt and output cap cannot fit ``model``'s context window."""
    if model.context_window is None:
        return slot
    size = prompt_size(model, slot.request)
    return slot if size.fits else replace(slot, refused=too_long_reason(model, slot.request, size))


def _meta(language: str, row: Mapping[str, Any], context: str, task_ids: Sequence[str]) -> dict[str, str]:
    return {
        "doc_id": str(row["doc_id"]),
        "language": language,
        "context": context,
        "task": str(row["task"]),
        "group_id": str(row["group_id"]),
        "task_ids": ",".join(task_ids),
        "bucket": str(row["bucket"]) if _present(row.get("bucket")) else "",
    }


def _single(
    model: ModelSpec,
    language: str,
    row: Mapping[str, Any],
    document: list[tuple[str, str]],
    english: list[tuple[str, str]],
    gran: GranularitySettings,
    language_name: str | None,
    factor: float = 1.0,
) -> list[TaskSlot]:
    task, task_id = str(row["task"]), str(row["task_id"])
    base_cap: Any = row.get("max_output_tokens")  # a table cell: None, NaN or a number
    scaled_cap = base_cap
    if task in _TEXT_TASKS and _present(base_cap):
        # Caps are set in English tokens; a reply written in this language takes ``factor`` times
        # as many (Georgian about 9x with cl100k_base), so an unscaled cap would cut it off. Without
        # the document the request stays the same in every language (one shared call).
        scaled_cap = math.ceil(int(base_cap) * factor)
    pids = {pid for pid, _ in document}
    paragraphs: list[tuple[str, str]] = document
    source: list[tuple[str, str]] = []
    if task == "paragraph_fill":
        blanks = string_list(row.get("blank_pids"))
        if len(blanks) != 1 or blanks[0] not in pids:
            raise ValueError(
                f"{_where(row)}: field 'blank_pids' must name one paragraph of the document, got {blanks}"
            )
        paragraphs = blank_document(document, [Blank(1, blanks[0])])
    elif task == "translation":
        # English into the partition's language: the source is the English excerpt and the
        # context the English document (the language's own version would hold the answer).
        wanted = string_list(row.get("evidence_pids"))
        by_pid = dict(english)
        unknown = [p for p in wanted if p not in by_pid]
        if not wanted or unknown:
            raise ValueError(
                f"{_where(row)}: field 'evidence_pids' must name English paragraphs of the document, "
                f"got {wanted} (unknown: {unknown})"
            )
        source = [(p, by_pid[p]) for p in wanted]
        paragraphs = english
    out: list[TaskSlot] = []
    for context in gran.contexts:
        for rep in range(gran.repetitions):
            request = render_task_request(
                task,
                context=context,
                paragraphs=paragraphs,
                settings=_settings(model, gran, scaled_cap if context == "full" else base_cap),
                rep=rep,
                question=str(row["question"]) if _present(row.get("question")) else None,
                source=source,
                target_language=language_name or language,
                metadata=_meta(language, row, context, [task_id]),
            )
            out.append(
                TaskSlot(request, str(row["doc_id"]), str(row["group_id"]), task, context, rep, (task_id,))
            )
    return out


def _cloze(
    model: ModelSpec,
    language: str,
    doc_id: str,
    group_id: str,
    group: list[dict[str, Any]],
    document: list[tuple[str, str]],
    english: Mapping[str, str],
    gran: GranularitySettings,
) -> list[TaskSlot]:
    options = tuple(string_list(group[0].get("options")))
    if not options:
        raise ValueError(f"{_where(group[0])}: field 'options' is empty")
    if len(options) > len(OPTION_LETTERS):
        raise ValueError(f"{_where(group[0])}: {len(options)} options; at most {len(OPTION_LETTERS)}")
    for row in group[1:]:
        if tuple(string_list(row.get("options"))) != options:
            raise ValueError(f"{_where(row)}: field 'options' differs within cloze group {group_id!r}")
    ordinal = {pid: k for k, (pid, _) in enumerate(document)}
    placed: list[tuple[int, int, dict[str, Any]]] = []
    for row in group:
        pids = string_list(row.get("blank_pids"))
        if len(pids) != 1 or pids[0] not in ordinal:
            raise ValueError(
                f"{_where(row)}: field 'blank_pids' must name one paragraph of the document, got {pids}"
            )
        placed.append((ordinal[pids[0]], _sentence_index(row, pids[0], english), row))
    placed.sort(key=lambda p: (p[0], p[1]))  # blanks numbered in reading order
    blanks = [Blank(n, document[k][0], s) for n, (k, s, _) in enumerate(placed, start=1)]
    task_ids = tuple(str(r["task_id"]) for _, _, r in placed)
    # Each row's cap is per blank; the group's one reply answers them all.
    caps = [int(r["max_output_tokens"]) for r in group if _present(r.get("max_output_tokens"))]
    paragraphs = blank_document(document, blanks)
    out: list[TaskSlot] = []
    for context in gran.contexts:
        for rep in range(gran.repetitions):
            request = render_task_request(
                "cloze",
                context=context,
                paragraphs=paragraphs,
                settings=_settings(model, gran, sum(caps) if caps else None),
                rep=rep,
                options=options,
                n_blanks=len(blanks),
                metadata=_meta(language, group[0], context, task_ids),
            )
            out.append(TaskSlot(request, doc_id, group_id, "cloze", context, rep, task_ids, options))
    return out


def _parsed(slot: TaskSlot, result: CallResult) -> tuple[list[tuple[str | None, Status]], bool, str | None]:
    n = len(slot.task_ids)
    finish = result.finish_reason or ""
    if result.outcome == "refused" or finish in REFUSAL_REASONS:
        return [(None, "unparseable")] * n, False, "refused"
    if result.outcome not in ("ok", "truncated"):
        return (
            [(None, "missing")] * n,
            False,
            result.outcome if not result.error else f"{result.outcome}: {result.error}",
        )
    truncated = result.outcome == "truncated" or finish in TRUNCATED_REASONS
    text = result.text or ""
    if slot.task in _TEXT_TASKS:
        # A capped text is still the model's text (MGAL caps output on purpose); it is scored,
        # and flagged in the ``truncated`` column.
        return [parse_text(text)], truncated, None
    if truncated:
        return (
            [(None, "unparseable")] * n,
            True,
            f"truncated reply (finish_reason {finish or result.outcome})",
        )
    if slot.task == "cloze":
        return parse_cloze(text, n, slot.options), False, None
    return [parse_word(text)], False, None


def rows_from_results(
    *, model: ModelSpec, language: str, slots: Sequence[TaskSlot], results: Sequence[CallResult]
) -> PartitionResult:
    """One prediction row per task x context x rep and one call row per distinct request."""
    predictions: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for slot, result in zip(slots, results, strict=True):
        parsed, truncated, error = _parsed(slot, result)
        for task_id, (answer, status) in zip(slot.task_ids, parsed, strict=True):
            outcome = (answer, status, result.call_id, truncated, error if status != "ok" else None)
            predictions.append(_prediction(model, language, slot, task_id, *outcome))
        if result.call_id not in calls:
            calls[result.call_id] = call_row(
                model,
                slot.request,
                result,
                doc_id=slot.doc_id,
                language=language,
                context_scope=slot.context,
                task=slot.task,
                group_id=slot.group_id,
                n_tasks=len(slot.task_ids),
            )
    return PartitionResult(
        _prediction_frame(predictions), pd.DataFrame(list(calls.values()), columns=CALL_COLUMNS)
    )


def _prediction(
    model: ModelSpec,
    language: str,
    slot: TaskSlot,
    task_id: str,
    *outcome: Any,  # answer, status, call_id, truncated, error
) -> dict[str, Any]:
    keys = (model.id, language, slot.doc_id, task_id, slot.group_id, slot.task, slot.context, slot.rep)
    return dict(zip(PREDICTION_COLUMNS, (*keys, *outcome), strict=True))


def _prediction_frame(predictions: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(predictions, columns=PREDICTION_COLUMNS)
    frame["rep"] = frame["rep"].astype("int64")
    frame["truncated"] = frame["truncated"].astype(bool)
    return frame


def refused_rows(*, model: ModelSpec, language: str, slots: Sequence[TaskSlot]) -> pd.DataFrame:
    """``task_predictions`` rows (status ``too_long``, the reason as error) of requests never sent."""
    rows = [
        _prediction(model, language, slot, task_id, None, TOO_LONG, slot.request.call_id, False, slot.refused)
        for slot in slots
        for task_id in slot.task_ids
    ]
    return _prediction_frame(rows)


def _warn_refused(slots: Sequence[TaskSlot]) -> None:
    """One warning per document whose prompts cannot fit the model: the count and the first reason."""
    by_doc: dict[str, list[TaskSlot]] = {}
    for slot in slots:
        by_doc.setdefault(slot.doc_id, []).append(slot)
    for doc_id, refused in by_doc.items():
        first = refused[0].refused
        log.warning("granularity tasks: %d request(s) of %s not sent, e.g. %s", len(refused), doc_id, first)


def predict_tasks(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    tasks: pd.DataFrame,
    settings: GranularitySettings,
    options: CallOptions,
    reference: str = "en",
    language_name: str | None = None,
) -> PartitionResult:
    """Answer every task of every document of ``language`` with ``model`` (one partition).

    ``options``: cache, budgets (``budget``: the run's, shared with its other paid ops), mode,
    progress, and ``origin`` (calls ``clcg run`` sent ahead count as new).
    """
    slots = plan_tasks(
        model=model,
        language=language,
        paragraphs=paragraphs,
        tasks=tasks,
        settings=settings,
        reference=reference,
        language_name=language_name,
    )
    sent = [s for s in slots if s.refused is None]
    refused = [s for s in slots if s.refused is not None]
    _warn_refused(refused)
    results = run_requests(model, [s.request for s in sent], options) if sent else []
    answered = rows_from_results(model=model, language=language, slots=sent, results=results)
    if not refused:
        return answered
    too_long = refused_rows(model=model, language=language, slots=refused)
    predictions = pd.concat([answered.predictions, too_long], ignore_index=True) if sent else too_long
    return PartitionResult(predictions, answered.calls)


# -- planning (clcg plan) ----------------------------------------------------------------------
PLAN_COLUMNS = [
    *("model", "language", "task", "context", "calls", "cached_calls", "shared_calls"),
    *("too_long_calls", "input_tokens", "max_input_tokens", "output_tokens", "cost_usd", "tokenizer"),
]


@dataclass(frozen=True)
class TooLong:
    """A planned request that cannot fit its model's context window (``clcg plan`` names them)."""

    model: str
    language: str
    doc_id: str
    bucket: str
    task: str
    context: str
    size: PromptSize


def plan_task_calls(
    *,
    model: ModelSpec,
    language: str,
    paragraphs: pd.DataFrame,
    tasks: pd.DataFrame,
    settings: GranularitySettings,
    cache_dir: str,
    reference: str = "en",
    language_name: str | None = None,
    planned: set[str] | None = None,
    too_long: list[TooLong] | None = None,
) -> pd.DataFrame:
    """Calls, cache hits, estimated tokens and cost per task kind x context; calls nothing.

    Input tokens are cl100k_base estimates of the rendered prompt in the language's own text
    (long documents dominate, and a 128K-token English document can be several times longer in
    another script); output tokens are each task's cap (``max_output_tokens``, the worst case)
    or, uncapped, the model's cap or 1024; each call is priced at its prompt size's tier.
    Requests that cannot fit the model's ``context_window`` are counted in ``too_long_calls``,
    cost nothing (they are never sent) and are appended to ``too_long``. ``planned`` collects
    call ids across partitions, as for the responses.
    """
    slots = plan_tasks(
        model=model,
        language=language,
        paragraphs=paragraphs,
        tasks=tasks,
        settings=settings,
        reference=reference,
        language_name=language_name,
    )
    cache = CallCache(cache_dir)
    keys = sorted(
        {(s.task, s.context) for s in slots}, key=lambda k: (list(PROMPT_VERSIONS).index(k[0]), k[1])
    )
    rows = []
    for task, context in keys:
        chosen = [s for s in slots if s.task == task and s.context == context]
        refused = [s for s in chosen if s.refused is not None]
        if too_long is not None:
            too_long.extend(_too_long(model, language, s) for s in refused)
        row = _plan_row(model, [s for s in chosen if s.refused is None], cache, planned)
        rows.append(
            {"model": model.id, "language": language, "task": task, "context": context}
            | row
            | {"calls": len(chosen), "too_long_calls": len(refused), "tokenizer": TOKENIZER}
        )
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


def _too_long(model: ModelSpec, language: str, slot: TaskSlot) -> TooLong:
    meta = slot.request.metadata
    size = prompt_size(model, slot.request)
    return TooLong(model.id, language, slot.doc_id, meta.get("bucket", ""), slot.task, slot.context, size)


def _plan_row(
    model: ModelSpec, chosen: Sequence[TaskSlot], cache: CallCache, planned: set[str] | None
) -> dict[str, Any]:
    """Cache hits, shared calls, tokens and cost of the requests that fit (one task x context)."""
    unique = {s.request.call_id: s for s in chosen}
    cached = {cid for cid in unique if cache.exists(cid)}
    shared = {cid for cid in unique if planned is not None and cid in planned and cid not in cached}
    if planned is not None:
        planned.update(unique)
    in_tok = out_tok = top = 0
    cost = 0.0  # per call: a long prompt may fall in a higher price tier
    for cid, slot in unique.items():
        if cid in cached or cid in shared:
            continue
        call_in = prompt_size(model, slot.request).input_tokens
        call_out = slot.request.settings.max_output_tokens or model.max_output_tokens or 1024
        in_tok, out_tok, top = in_tok + call_in, out_tok + call_out, max(top, call_in)
        cost += cost_usd(model, call_in, call_out)
    return {
        "cached_calls": sum(1 for s in chosen if s.request.call_id in cached),
        "shared_calls": sum(1 for s in chosen if s.request.call_id in shared),
        "input_tokens": in_tok,
        "max_input_tokens": top,
        "output_tokens": out_tok,
        "cost_usd": cost,
    }


__all__ = [
    "CALL_COLUMNS",
    "PLAN_COLUMNS",
    "PREDICTION_COLUMNS",
    "TOO_LONG",
    "PartitionResult",
    "TaskSlot",
    "TooLong",
    "plan_task_calls",
    "plan_tasks",
    "predict_tasks",
    "refused_rows",
    "rows_from_results",
]
