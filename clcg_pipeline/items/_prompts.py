"""Versioned item-generation prompts: one template per level.

A template's wording is frozen under its version: changing a character must bump
``GENERATION_VERSION``, because the version and the template's hash are stored with every item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from clcg_pipeline.config import LEVELS

GENERATION_VERSION = "itemgen-v1"
PARAGRAPH_MARK = "¶"
NOT_STATED = "Not stated"
POLAR_LABELS = ("Yes", "No", NOT_STATED)

SYSTEM = (
    "You write reading-comprehension test items about one English article. Every item must be "
    "answerable from the article alone (no outside knowledge, no opinion). Paragraphs are marked "
    f"{PARAGRAPH_MARK}<pid>. Reply with one JSON object and nothing else: "
    '{"items": [{"question": str, "answer": str, "target_pids": [pid, ...], '
    '"supporting_pids": [pid, ...]}]}. target_pids are the paragraphs the question is about; '
    "supporting_pids are the paragraphs whose text is needed to answer it. Use only pids that "
    "appear in the article. Write questions and answers in English; keep answers short. "
    "Write at most {n} items; write fewer rather than items that do not fit the level."
)

# The comprehension demand of each level, and its structural contract.
LEVEL_INSTRUCTIONS: dict[str, str] = {
    "L0": (
        "Level L0, polar verification: yes/no questions about single statements. The answer is "
        f'exactly "Yes", "No" or "{NOT_STATED}" (use "{NOT_STATED}" when the article neither '
        "confirms nor denies it; at most one such item)."
    ),
    "L1": (
        "Level L1, literal extraction: the answer is a short span copied verbatim (same characters, "
        "same case) from one supporting paragraph."
    ),
    "L2": (
        "Level L2, reorganization: the answer restates, lists or groups content that is explicit in "
        "the article, possibly from more than one place, in your own words."
    ),
    "L3": (
        "Level L3, local inference: the answer is not stated in any single sentence; it follows from "
        "combining two or more sentences within one or a few paragraphs. Give every supporting pid."
    ),
    "L4": (
        "Level L4, multi-hop: answering needs facts from at least two different paragraphs combined. "
        "supporting_pids must list at least two distinct pids."
    ),
    "L5": (
        "Level L5, global: the purpose, central argument or main point of the whole article, "
        "supported by the article as a whole."
    ),
}
assert set(LEVEL_INSTRUCTIONS) == set(LEVELS)

# The answer format each level's items carry (the ``items`` contract's answer_format).
LEVEL_FORMAT: dict[str, str] = {
    "L0": "polar",
    "L1": "span",
    "L2": "free",
    "L3": "free",
    "L4": "free",
    "L5": "free",
}


def template_hash(level: str) -> str:
    """sha256 of the template wording for ``level`` (system + level instruction + version)."""
    blob = json.dumps([GENERATION_VERSION, SYSTEM, LEVEL_INSTRUCTIONS[level]], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def prompt_version(level: str) -> str:
    return f"{GENERATION_VERSION}-{level}"


def render_messages(
    level: str, *, title: str | None, paragraphs: Sequence[tuple[str, str]], n: int
) -> list[dict[str, str]]:
    """The exact chat messages asking for up to ``n`` items of ``level`` about one article."""
    body = "\n\n".join(f"{PARAGRAPH_MARK}{pid} {text}" for pid, text in paragraphs)
    head = f"Title: {title}\n\n" if title else ""
    user = f"{LEVEL_INSTRUCTIONS[level]}\n\nArticle:\n{head}{body}\n\nWrite up to {n} items of level {level}."
    return [{"role": "system", "content": SYSTEM.replace("{n}", str(n))}, {"role": "user", "content": user}]
