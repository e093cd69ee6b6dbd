"""Which paragraphs a document's language versions keep, and which were left out, said aloud.

A task is built once from the English document and asked in every language, so every language
version of a document must hold the same paragraphs (``pid``s). When one version lacks a
paragraph (no row, or blank text) there are two ways to keep that promise:

- **keep the common pids** (chosen): the paragraph is left out of every language version,
  English included, and regions and positions are recomputed on the shortened English document;
- exclude that language version of the document.

Excluding the version would make the document set differ by language: a language's scores and
gaps, and the group and pooled gaps, would average over other documents than English and the
other languages, confounding the language with document difficulty; and because missing
paragraphs are commoner in the translations of low-resource languages, it would drop exactly
the languages the study is about (a missing-not-at-random loss). Large gaps are handled before
this step: a version below ``study.completeness_threshold`` is not complete and is already
left out by the audit (assembled: the whole article; JSONL: that version), so what reaches here
is a version short of a few paragraphs, which costs every language a few paragraphs rather than
one language a whole document. The price is that the English document is shorter than its
source; that is logged (a warning per document and language, naming the pids), written into the
document's ``assembly`` (:func:`alignment_clause`) and carried by the granularity analysis into
``study_results.json`` and the report (:func:`parse_alignment`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

#: What was done with a paragraph missing in some language (recorded beside every such pid).
DECISION = (
    "kept the paragraphs present in every language: the paragraph is left out of every language "
    "version, English included, and regions and positions are thirds of the shortened English document"
)
#: Opens the machine-readable clause appended to a document's ``assembly`` (JSON follows it).
ALIGNMENT_MARK = "; paragraphs left out to keep the languages aligned: "


@dataclass(frozen=True)
class MissingParagraph:
    """A reference paragraph of ``doc_id`` that the languages ``missing_in`` lack (or have blank)."""

    doc_id: str
    pid: str
    missing_in: tuple[str, ...]


@dataclass(frozen=True)
class Alignment:
    """doc_id -> the reference's pids (in order) present in every language, and what was left out."""

    pids: dict[str, list[str]]
    missing: tuple[MissingParagraph, ...]

    def missing_of(self, doc_ids: Iterable[str]) -> list[MissingParagraph]:
        """The left-out paragraphs of ``doc_ids`` (source documents), in their order."""
        wanted = list(doc_ids)
        return [m for d in wanted for m in self.missing if m.doc_id == d]

    def notes(self) -> list[str]:
        """One note per document and language naming the pids left out and the decision."""
        return [
            f"document {doc_id}: paragraph(s) {', '.join(pids)} missing in {language!r}; {DECISION}"
            for (doc_id, language), pids in _by_document_language(self.missing).items()
        ]

    def warn(self) -> None:
        """Log :meth:`notes` as warnings (once the document is built from these pids)."""
        for note in self.notes():
            log.warning("long documents: %s", note)


def _by_document_language(missing: Sequence[MissingParagraph]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for m in missing:
        for language in m.missing_in:
            out.setdefault((m.doc_id, language), []).append(m.pid)
    return out


def align_pids(
    paragraphs: pd.DataFrame, languages: Sequence[str], reference: str, *, warn: bool = True
) -> Alignment:
    """The reference's pids with non-blank text in every one of ``languages``, per document, and
    every reference paragraph left out (with the languages lacking it). Logs a warning per
    document and language that lost a paragraph, naming the pids (``warn=False``: the caller
    warns with :meth:`Alignment.warn` if it builds the document)."""
    text_ok = paragraphs["text"].fillna("").astype(str).str.strip() != ""
    usable = paragraphs[text_ok & paragraphs["language"].isin(languages)]
    have = {
        (str(d), str(p)): set(map(str, g))
        for (d, p), g in usable.drop_duplicates(["doc_id", "language", "pid"]).groupby(["doc_id", "pid"])[
            "language"
        ]
    }
    wanted = list(dict.fromkeys(languages))
    ref = paragraphs[paragraphs["language"] == reference].sort_values(["doc_id", "ordinal"], kind="stable")
    pids: dict[str, list[str]] = {}
    missing: list[MissingParagraph] = []
    for doc_id, group in ref.groupby("doc_id", sort=True):
        kept: list[str] = []
        for pid in map(str, group["pid"].drop_duplicates()):
            lacking = tuple(lang for lang in wanted if lang not in have.get((str(doc_id), pid), set()))
            if lacking:
                missing.append(MissingParagraph(str(doc_id), pid, lacking))
            else:
                kept.append(pid)
        pids[str(doc_id)] = kept
    alignment = Alignment(pids, tuple(missing))
    if warn:
        alignment.warn()
    return alignment


def alignment_clause(missing: Sequence[MissingParagraph], pid_of: Callable[[str, str], str]) -> str:
    """The clause appended to a built document's ``assembly`` ("" when nothing was left out):
    the document's pids (``pid_of(source_doc, source_pid)``) and the languages that lacked them."""
    if not missing:
        return ""
    entries = [{"pid": pid_of(m.doc_id, m.pid), "missing_in": list(m.missing_in)} for m in missing]
    return ALIGNMENT_MARK + json.dumps(entries, ensure_ascii=False)


def parse_alignment(assembly: Any) -> list[dict[str, Any]]:
    """The left-out paragraphs an ``assembly`` records (``pid``, ``missing_in``); [] when none.

    A clause that does not parse raises: a silently empty answer would hide the loss again."""
    if not isinstance(assembly, str) or ALIGNMENT_MARK not in assembly:
        return []
    text = assembly.split(ALIGNMENT_MARK, 1)[1]
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"long_documents: field 'assembly' has an unreadable alignment clause: {text!r}"
        ) from exc
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and "pid" in e and isinstance(e.get("missing_in"), list) for e in entries
    ):
        raise ValueError(f"long_documents: field 'assembly' has a malformed alignment clause: {text!r}")
    return [{"pid": str(e["pid"]), "missing_in": [str(x) for x in e["missing_in"]]} for e in entries]


__all__ = [
    "ALIGNMENT_MARK",
    "DECISION",
    "Alignment",
    "MissingParagraph",
    "align_pids",
    "alignment_clause",
    "parse_alignment",
]
