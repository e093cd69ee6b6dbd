"""Deterministic item validation: malformed items are rejected, never repaired."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

from clcg_pipeline.config import LEVELS
from clcg_pipeline.items._prompts import LEVEL_FORMAT, NOT_STATED, POLAR_LABELS

REJECTION_COLUMNS = ["item_id", "doc_id", "level", "rule", "detail"]
# Rules in the order they are checked; an item is rejected under the first that fails, so
# counts per rule add up to the number of rejected items.
RULES = (
    "unparseable",
    "unknown_article",
    "missing_field",
    "unknown_level",
    "answer_format",
    "polar_label",
    "not_answerable",
    "unknown_pid",
    "span_not_found",
    "missing_support",
    "l4_two_pids",
    "duplicate",
    "over_quota",
)
_WS = re.compile(r"\s+")


def _norm_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _missing(value: Any) -> bool:
    """None, NaN, NaT or pd.NA (a list or array is never missing)."""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _is_blank(value: Any) -> bool:
    return _missing(value) or (isinstance(value, str) and not value.strip())


def _pids(value: Any) -> list[str]:
    if _missing(value):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _is_false(value: Any) -> bool:
    return not _missing(value) and not bool(value)


def _check(
    item: dict[str, Any], passage: dict[str, str] | None, seen: set[tuple[str, str]]
) -> tuple[str, str] | None:
    """(rule, detail) of the first failed rule, or None."""
    if not _is_blank(item.get("parse_error")):
        return "unparseable", str(item["parse_error"])
    if passage is None:
        return "unknown_article", f"no English paragraphs for doc_id {item.get('doc_id')!r}"
    source = item.get("item_source")
    generated = _is_blank(source) or source == "llm"
    # Human and benchmark items are the source's own: they keep their level label and may be
    # unanswerable (null gold, counted then dropped at scoring), so only structure is checked.
    required: tuple[str, ...] = ("item_id", "doc_id", "level", "question", "answer_format")
    if generated or not _is_false(item.get("gold_answerable")):
        required = (*required, "gold_answer")
    for name in required:
        if _is_blank(item.get(name)):
            return "missing_field", f"{name} is empty"
    target, support = _pids(item.get("target_pids")), _pids(item.get("supporting_pids"))
    level = str(item["level"])
    if generated:
        failure = _check_level(item, level, support)
        if failure is not None:
            return failure
    elif item["answer_format"] == "mc":
        options = _pids(item.get("options"))
        if len(options) < 2 or str(item["gold_answer"]) not in options:
            return "answer_format", "an mc item needs two or more options, the gold answer among them"
    unknown = sorted({p for p in target + support if p not in passage})
    if unknown:
        return "unknown_pid", f"pid(s) {unknown} are not paragraphs of {item['doc_id']}"
    if generated and level == "L1":
        gold = str(item["gold_answer"]).strip()
        where = [passage[p] for p in support if p in passage] or list(passage.values())
        if not any(_norm_ws(gold) in _norm_ws(text) for text in where):
            return "span_not_found", f"answer {gold!r} is not a span of the supporting paragraph(s)"
    if generated and level in ("L3", "L4") and not support:
        return "missing_support", f"{level} needs supporting_pids"
    if generated and level == "L4" and len(set(support)) < 2:
        return "l4_two_pids", f"L4 needs two distinct supporting pids, got {sorted(set(support))}"
    key = (str(item["doc_id"]), _norm_ws(str(item["question"])).casefold()) if generated else ("", "")
    id_key = ("\0id", str(item["item_id"]))
    if id_key in seen:
        return "duplicate", f"item_id {item['item_id']!r} repeats"
    if generated and key in seen:
        return "duplicate", "the same question is already in this article's bank"
    seen.update({id_key, key} if generated else {id_key})
    return None


def _check_level(item: dict[str, Any], level: str, support: list[str]) -> tuple[str, str] | None:
    """The per-level contract of generated items: level, answer format, polar labels, answerability."""
    if level not in LEVELS:
        return "unknown_level", f"level {level!r} is not one of {list(LEVELS)}"
    if item["answer_format"] != LEVEL_FORMAT[level]:
        return (
            "answer_format",
            f"{level} needs answer_format {LEVEL_FORMAT[level]!r}, got {item['answer_format']!r}",
        )
    gold = str(item["gold_answer"]).strip()
    if level == "L0" and gold not in POLAR_LABELS:
        return "polar_label", f"L0 answer must be one of {list(POLAR_LABELS)}, got {gold!r}"
    if level != "L0" and (
        gold.rstrip(".").casefold() == NOT_STATED.casefold() or _is_false(item.get("gold_answerable"))
    ):
        return "not_answerable", f"{level} items must be answerable from the article"
    return None


def validate_items(
    items: pd.DataFrame,
    paragraphs_en: pd.DataFrame,
    *,
    reference: str | None = None,
    items_per_level: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``items`` into (valid items, rejections with item_id, doc_id, level, rule, detail).

    Rules (first failure wins): unparseable generator output; article without English
    paragraphs; missing field; level outside L0-L5; answer format not the level's
    (L0 polar, L1 span, L2-L5 free); L0 answer not Yes/No/Not stated; an L1-L5 item that is
    not answerable; unknown target/supporting pid; L1 answer not a span of its supporting
    paragraph(s) (whitespace-normalized, case-sensitive; whole article when none given);
    L3/L4 without supporting pids; L4 with fewer than two distinct pids; a repeated item_id
    or the same question twice in one article; more than ``items_per_level`` valid items for
    one article x level (the later ones). Nothing is padded: an article keeps only its valid
    items.

    The level rules apply to generated items (``item_source`` "llm" or absent). Human and
    benchmark items (other sources) keep their own level label ("H", "MC", ...) and may be
    unanswerable; for them only fields, pids, repeats and (mc) options are checked, so the
    whole bank can be validated in one call.

    ``paragraphs_en`` is the English paragraphs table; pass ``reference`` to filter a
    multi-language table to that language.
    """
    paras = paragraphs_en
    if reference is not None and "language" in paras.columns:
        paras = paras[paras["language"] == reference]
    passages: dict[str, dict[str, str]] = {}
    for doc_id, pid, text in zip(paras["doc_id"], paras["pid"], paras["text"], strict=True):
        passages.setdefault(str(doc_id), {})[str(pid)] = "" if text is None else str(text)

    keep: list[int] = []
    rejected: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    quota: dict[tuple[str, str], int] = {}
    records = items.to_dict("records")
    for index, item in zip(items.index, records, strict=True):
        failure = _check(item, passages.get(str(item.get("doc_id"))), seen)
        generated = _is_blank(item.get("item_source")) or item.get("item_source") == "llm"
        if failure is None and items_per_level is not None and generated:
            key = (str(item["doc_id"]), str(item["level"]))
            quota[key] = quota.get(key, 0) + 1
            if quota[key] > items_per_level:
                failure = ("over_quota", f"more than {items_per_level} valid {key[1]} items for {key[0]}")
        if failure is None:
            keep.append(index)
        else:
            rejected.append(
                {
                    "item_id": item.get("item_id"),
                    "doc_id": item.get("doc_id"),
                    "level": item.get("level"),
                    "rule": failure[0],
                    "detail": failure[1],
                }
            )
    valid = items.loc[keep]
    if "parse_error" in valid.columns:
        valid = valid.drop(columns="parse_error")
    return valid.reset_index(drop=True), pd.DataFrame(rejected, columns=REJECTION_COLUMNS)


def rejection_summary(rejections: pd.DataFrame, levels: Iterable[str] = LEVELS) -> pd.DataFrame:
    """Counts per rule x level (every level a column, zeros included), for the report."""
    table = pd.crosstab(rejections["rule"], rejections["level"]) if len(rejections) else pd.DataFrame()
    table = table.reindex(columns=list(levels), fill_value=0)
    table = table.reindex(index=[r for r in RULES if r in table.index], fill_value=0)
    table["total"] = table.sum(axis=1)
    return table.rename_axis(index="rule", columns=None).reset_index()
