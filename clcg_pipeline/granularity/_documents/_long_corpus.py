"""The long-document JSONL source: one record per document x language, paragraph-aligned by pid."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pydantic import ValidationError

from clcg_pipeline.config import GranularitySettings
from clcg_pipeline.corpus import (
    ArticleRecord,
    CorpusError,
    audit_corpus,
    count_tokens,
    empty_language_file,
    filesystem,
    layout_files,
    read_jsonl,
    where,
)
from clcg_pipeline.granularity._documents._alignment import Alignment, align_pids, alignment_clause
from clcg_pipeline.granularity._documents._contract import (
    BucketReport,
    DocumentError,
    LongDocuments,
    frames,
    seeded_order,
    wanted_documents,
)
from clcg_pipeline.granularity._documents._regions import layout


class LongDocumentRecord(ArticleRecord):
    """One language version of one long document: a canonical article record plus ``summary``."""

    summary: str | None = None


def _validate_record(obj: dict[str, Any], file: str, line: int) -> LongDocumentRecord:
    try:
        return LongDocumentRecord.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "<record>"
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise DocumentError(f"{where(file, line, loc)}: {err['msg']}{more}") from None


def read_long_corpus(path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(versions, paragraphs) of a long-document JSONL folder; a bad record raises
    :class:`DocumentError` naming language, file, line and field, and so does a language file
    with no records (0 bytes or blank lines only), before anything is built or stored."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise DocumentError(f"{path}: long-document source folder not found")
    files = layout_files(fs, root, "jsonl")
    if not files:
        raise DocumentError(f"{path}: no document files (expected articles/<lang>.jsonl)")
    versions: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}
    for file in files:
        # Files are named by language (articles/<iso>.jsonl), as in the study corpus.
        label = file.rsplit("/", 1)[-1].removesuffix(".jsonl")
        try:
            n_before = len(versions)
            _read_file(fs, file, seen, versions, rows)
            if len(versions) == n_before:
                raise empty_language_file(
                    file,
                    label,
                    int(fs.size(file) or 0),
                    left="out of the long documents",
                    error=DocumentError,
                )
        except DocumentError as exc:
            if exc.language is not None:
                raise
            raise DocumentError(f"language {label!r}: {exc}", language=label, file=file) from None
    return pd.DataFrame(versions), pd.DataFrame(
        rows, columns=["doc_id", "language", "pid", "ordinal", "text"]
    )


def _read_file(
    fs: Any,
    file: str,
    seen: dict[tuple[str, str], str],
    versions: list[dict[str, Any]],
    rows: list[dict[str, Any]],
) -> None:
    """Append one language file's versions and paragraph rows; ``seen`` catches repeated documents."""
    found: list[str] = []
    try:
        records = list(read_jsonl(fs, file, found=found))
    except CorpusError as exc:
        raise DocumentError(str(exc)) from None
    for line, obj in records:
        record = _validate_record(obj, file, line)
        key = (record.doc_id, record.language)
        if key in seen:
            raise DocumentError(
                f"{where(file, line, 'doc_id')}: document {record.doc_id!r} in {record.language!r} "
                f"repeats {seen[key]}"
            )
        seen[key] = where(file, line)
        versions.append(
            {
                "doc_id": record.doc_id,
                "language": record.language,
                "title": record.title,
                "summary": record.summary,
            }
        )
        rows.extend(
            {
                "doc_id": record.doc_id,
                "language": record.language,
                "pid": p.pid,
                "ordinal": i,
                "text": p.text,
            }
            for i, p in enumerate(record.paragraphs, start=1)
        )


def load_long_documents(
    path: str,
    settings: GranularitySettings,
    *,
    languages: Sequence[str],
    reference: str,
    threshold: float,
    tokenizer: str = "cl100k_base",
) -> LongDocuments:
    """Documents of a long-document JSONL corpus, each in the first bucket its English length fits.

    A language version below the completeness ``threshold`` is left out of that document (a
    note says so); the kept versions share the English pids present in all of them. The length
    that decides the bucket is that of the document as built: the English paragraphs of those
    common pids (a paragraph some version lacks leaves English too, see ``_alignment``).
    """
    versions, paragraphs = read_long_corpus(path)
    notes: list[str] = []
    outside = sorted(set(versions["language"]) - set(languages))
    if outside:
        notes.append(f"languages outside the panel ignored: {outside}")
    versions = versions[versions["language"].isin(languages)]
    paragraphs = paragraphs[paragraphs["language"].isin(languages)]
    audit = audit_corpus(
        versions[["doc_id", "language"]], paragraphs, reference=reference, threshold=threshold
    )
    doc_ids = sorted(set(versions.loc[versions["language"] == reference, "doc_id"]))
    no_reference = sorted(set(versions["doc_id"]) - set(doc_ids))
    if no_reference:
        notes.append(f"documents without an English version ignored: {no_reference}")
    source = _Source(
        path, versions, paragraphs, audit, languages, reference, tokenizer, settings.region_split
    )
    # Bucket by the built document's English length, then keep the wanted number per bucket.
    lengths = {doc_id: source.english_tokens(doc_id) for doc_id in doc_ids}
    doc_rows: list[dict[str, Any]] = []
    para_rows: list[dict[str, Any]] = []
    reports: list[BucketReport] = []
    placed: set[str] = set()
    for bucket in settings.buckets:
        wanted = wanted_documents(bucket, settings)
        fits = [
            d for d in doc_ids if d not in placed and bucket.min_tokens <= lengths[d] <= bucket.max_tokens
        ]
        chosen = seeded_order(fits, settings.seed, bucket.name)[:wanted]
        placed.update(chosen)
        reason = None
        if len(chosen) < wanted:
            reason = (
                f"the source {path} has {len(fits)} document(s) of {bucket.min_tokens}-{bucket.max_tokens} "
                f"English tokens (lengths: {sorted(lengths.values())})"
            )
        reports.append(
            BucketReport(bucket.name, bucket.min_tokens, bucket.max_tokens, wanted, len(chosen), reason)
        )
        for doc_id in sorted(chosen):
            docs, paras, note = source.document(doc_id, bucket.name)
            doc_rows.extend(docs)
            para_rows.extend(paras)
            notes.extend(note)
    unplaced = sorted(set(doc_ids) - placed)
    if unplaced:
        notes.append(
            f"{len(unplaced)} document(s) outside every bucket or beyond the wanted number: {unplaced[:20]}"
        )
    return LongDocuments(*frames(doc_rows, para_rows), reports, notes)


class _Source:
    """The corpus read once, with lookups by key: turns one chosen document into its rows."""

    def __init__(
        self,
        path: str,
        versions: pd.DataFrame,
        paragraphs: pd.DataFrame,
        audit: pd.DataFrame,
        languages: Sequence[str],
        reference: str,
        tokenizer: str,
        region_split: str,
    ) -> None:
        self.path = path
        self.versions = versions
        self.paragraphs = paragraphs
        self.audit = audit
        self.languages = languages
        self.reference = reference
        self.tokenizer = tokenizer
        self.region_split = region_split
        self.summaries = {
            (d, lang): s for d, lang, s in versions[["doc_id", "language", "summary"]].itertuples(index=False)
        }
        self.by_key = {
            (str(d), str(lang), str(p)): str(t)
            for d, lang, p, t in paragraphs[["doc_id", "language", "pid", "text"]].itertuples(index=False)
        }
        self.by_doc = {str(d): group for d, group in paragraphs.groupby("doc_id", sort=False)}
        self._aligned: dict[str, tuple[list[str], Alignment, list[str]]] = {}

    def aligned(self, doc_id: str) -> tuple[list[str], Alignment, list[str]]:
        """(kept languages, their alignment, notes) of one document, decided once (not yet warned)."""
        if doc_id not in self._aligned:
            complete = self.audit[(self.audit["doc_id"] == doc_id) & self.audit["complete"].astype(bool)]
            kept = [self.reference] + [
                lang
                for lang in self.languages
                if lang != self.reference and lang in set(complete["language"])
            ]
            listed = set(self.versions.loc[self.versions["doc_id"] == doc_id, "language"])
            left = sorted(listed - set(kept))
            notes = (
                [f"document {doc_id}: language version(s) {left} below completeness, left out"]
                if left
                else []
            )
            alignment = align_pids(
                self.by_doc.get(doc_id, self.paragraphs.iloc[:0]), kept, self.reference, warn=False
            )
            self._aligned[doc_id] = (kept, alignment, notes)
        return self._aligned[doc_id]

    def english_tokens(self, doc_id: str) -> int:
        """English tokens of the document as built: its common pids only."""
        _, alignment, _ = self.aligned(doc_id)
        texts = [self.by_key[(doc_id, self.reference, pid)] for pid in alignment.pids.get(doc_id, [])]
        return int(sum(count_tokens(texts, self.tokenizer)))

    def document(
        self, doc_id: str, bucket: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        """(long_documents rows, long_paragraphs rows, notes) of one document: its complete versions."""
        reference = self.reference
        kept, alignment, notes = self.aligned(doc_id)
        notes = [*notes, *alignment.notes()]
        alignment.warn()
        common = alignment.pids.get(doc_id, [])
        rows, totals = layout(
            doc_id,
            [(doc_id, p) for p in common],
            self.by_key,
            kept,
            reference,
            self.tokenizer,
            self.region_split,
            lambda _doc, src_pid: src_pid,
        )
        doc_rows = [
            {
                "doc_id": doc_id,
                "language": language,
                "bucket": bucket,
                "n_tokens": totals[language],
                "n_paragraphs": len(common),
                "source": self.path,
                "assembly": f"long-document source {self.path}"
                + alignment_clause(alignment.missing, lambda _doc, pid: pid),
                "member_doc_ids": [doc_id],
                "summary": self.summaries.get((doc_id, language)),
                "n_tokens_reference": totals[reference],
            }
            for language in kept
        ]
        return doc_rows, rows, notes
