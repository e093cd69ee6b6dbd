"""From parsed language versions to the ``articles`` / ``paragraphs`` / ``items`` tables."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.config import LanguagesConfig
from clcg_pipeline.corpus._errors import CorpusError, CorpusWarning
from clcg_pipeline.corpus._io import clean, is_valid_utf8
from clcg_pipeline.corpus._tokens import count_tokens
from clcg_pipeline.storage import empty_frame

TRANSLATION_COLUMNS = ["item_id", "doc_id", "language", "question_original", "options_original"]


@dataclass(frozen=True)
class CorpusTables:
    """What one source contributes: the three contract tables plus per-language question texts.

    ``item_translations`` holds, for sources whose questions exist in each language (Belebele),
    the original-language question and options per item and language; the ``items`` table
    itself always carries the English text, which is what every language is asked.
    """

    articles: pd.DataFrame
    paragraphs: pd.DataFrame
    items: pd.DataFrame
    item_translations: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=TRANSLATION_COLUMNS))
    dropped_languages: tuple[str, ...] = ()
    # (language, "file:line: field 'x'") of every field whose bytes were not valid UTF-8 (made
    # storable with U+FFFD); language is "" for a file every language shares (FLORES metadata).
    invalid_utf8: tuple[tuple[str, str], ...] = ()

    def invalid_utf8_for(self, language: str) -> list[str]:
        """Locations of undecodable text that reached ``language``'s tables."""
        return [location for lang, location in self.invalid_utf8 if lang in (language, "")]


@dataclass
class Version:
    """One language version of one article, as an adapter parsed it."""

    doc_id: str
    language: str
    paragraphs: list[tuple[str, str]]  # (pid, text) in body order
    title: str | None = None
    published: dt.date | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # "file:line", for error messages


def keep_panel(versions: Iterable[Version], languages: LanguagesConfig) -> tuple[list[Version], list[str]]:
    """Drop versions in languages outside the panel and warn once, listing them."""
    panel = set(languages.isos)
    kept: list[Version] = []
    dropped: set[str] = set()
    for version in versions:
        if version.language in panel:
            kept.append(version)
        else:
            dropped.add(version.language)
    if dropped:
        warnings.warn(
            f"languages not in the panel were dropped: {sorted(dropped)}", CorpusWarning, stacklevel=3
        )
    return kept, sorted(dropped)


def build_tables(
    versions: Sequence[Version],
    *,
    source: str,
    reference: str,
    items: pd.DataFrame | None = None,
    item_translations: pd.DataFrame | None = None,
    dropped_languages: Sequence[str] = (),
    invalid_utf8: Iterable[tuple[str, str]] = (),
) -> CorpusTables:
    """Assemble the contract tables; duplicate (doc_id, language) versions are an error."""
    panel = {v.language for v in versions} | {reference}
    seen: dict[tuple[str, str], str] = {}
    for v in versions:
        key = (v.doc_id, v.language)
        if key in seen:
            raise CorpusError(
                f"language {v.language!r}: {v.origin}: article {v.doc_id!r} appears twice "
                f"(first at {seen[key]})",
                language=v.language,
                file=v.origin,
            )
        seen[key] = v.origin

    english = {v.doc_id: {pid for pid, _ in v.paragraphs} for v in versions if v.language == reference}
    para_rows: list[dict[str, Any]] = []
    article_rows: list[dict[str, Any]] = []
    for v in versions:
        for ordinal, (pid, text) in enumerate(v.paragraphs, start=1):
            para_rows.append(
                {
                    "doc_id": v.doc_id,
                    "language": v.language,
                    "pid": pid,
                    "ordinal": ordinal,
                    "text": clean(text),
                    # Kept so the audit can count undecodable text after it was made storable.
                    "utf8_valid": is_valid_utf8(text),
                }
            )
        en_pids = english.get(v.doc_id)
        present = {pid for pid, _ in v.paragraphs}
        coverage = len(present & en_pids) / len(en_pids) if en_pids else float("nan")
        article_rows.append(
            {
                "doc_id": v.doc_id,
                "language": v.language,
                "title": clean(v.title) if v.title is not None else None,
                "published": v.published,
                "n_paragraphs": len(v.paragraphs),
                "coverage": coverage,
                "source": source,
                # Adapters scrub every decoded field; cleaning again keeps a new adapter's
                # metadata from ever reaching Parquet as unencodable text.
                **{k: clean(x) if isinstance(x, str) else x for k, x in v.extra.items()},
            }
        )

    paragraphs = pd.DataFrame(para_rows) if para_rows else empty_frame("paragraphs").assign(utf8_valid=True)
    if article_rows:
        articles = pd.DataFrame(article_rows)
        tokens = count_tokens(paragraphs["text"].tolist())
        per_version = paragraphs.assign(_n=tokens).groupby(["doc_id", "language"], sort=False)["_n"].sum()
        articles["n_tokens"] = [
            int(per_version.get((d, lang), 0))
            for d, lang in zip(articles["doc_id"], articles["language"], strict=True)
        ]
        order = list(empty_frame("articles").columns)
        articles = articles[order + [c for c in articles.columns if c not in order]]
    else:
        articles = empty_frame("articles")
    articles = articles.sort_values(["doc_id", "language"], kind="stable").reset_index(drop=True)
    paragraphs = paragraphs.sort_values(["doc_id", "language", "ordinal"], kind="stable").reset_index(
        drop=True
    )
    invalid = tuple((lang, loc) for lang, loc in invalid_utf8 if lang in panel or lang == "")
    if invalid:
        shown = "; ".join(loc for _, loc in invalid[:5]) + (" ..." if len(invalid) > 5 else "")
        warnings.warn(
            f"{len(invalid)} field(s) were not valid UTF-8 and are stored with U+FFFD: {shown}",
            CorpusWarning,
            stacklevel=3,
        )
    items = items if items is not None else empty_frame("items")
    translations = (
        item_translations if item_translations is not None else pd.DataFrame(columns=TRANSLATION_COLUMNS)
    )
    return CorpusTables(
        articles=articles,
        paragraphs=paragraphs,
        items=items.reset_index(drop=True),
        item_translations=translations.reset_index(drop=True),
        dropped_languages=tuple(dropped_languages),
        invalid_utf8=invalid,
    )


def items_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """An ``items`` table from row dicts, with the contract's columns first and list columns as lists."""
    if not rows:
        return empty_frame("items")
    frame = pd.DataFrame(list(rows))
    order = list(empty_frame("items").columns)
    for column in order:
        if column not in frame.columns:
            frame[column] = None
    return frame[order + [c for c in frame.columns if c not in order]]
