"""Long documents of configured token lengths, split into regions and paragraph positions.

Two sources (``study.granularity.source``):

- ``assembled``: the study's aligned articles, in a seeded order, concatenated until a
  bucket's length. Only articles complete in every included language (``corpus_audit``) are
  used, and only paragraph ids present in every included language are kept, so every
  language version of a document has the same ``pid``s (``"<source_doc_id>:<source_pid>"``)
  and a task built once from English applies to every language. Assembled documents have no
  summary of their own.
- a path: a long-document corpus in the canonical JSONL (``articles/<lang>.jsonl``, one
  record per document x language, paragraph-aligned by ``pid``), each record optionally with
  a ``summary``. Each document falls in the first bucket its English token count fits.

Tokens are counted on the English version with the study's tokenizer
(``study.fertility.tokenizer``). Regions (begin / middle / end) are thirds of the English
document, by tokens (a paragraph belongs to the third holding its token midpoint) or by
paragraphs; a paragraph's ``position`` is its third within its region (by paragraph count).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import ValidationError

from clcg_pipeline.config import GranularityBucket, GranularitySettings
from clcg_pipeline.corpus import (
    ArticleRecord,
    CorpusError,
    audit_corpus,
    count_tokens,
    filesystem,
    glob,
    join,
    read_jsonl,
    where,
)

THIRDS: tuple[str, str, str] = ("begin", "middle", "end")
ASSEMBLED = "assembled"

LONG_DOCUMENT_COLUMNS = [
    "doc_id",
    "language",
    "bucket",
    "n_tokens",
    "n_paragraphs",
    "source",
    "assembly",
    "member_doc_ids",
    "summary",
    "n_tokens_reference",
]
LONG_PARAGRAPH_COLUMNS = [
    "doc_id",
    "language",
    "pid",
    "ordinal",
    "region",
    "position",
    "text",
    "source_doc_id",
    "source_pid",
    "n_tokens",
]


class DocumentError(ValueError):
    """A long-document source is malformed; the message names file, record (line) and field."""


class LongDocumentRecord(ArticleRecord):
    """One language version of one long document: a canonical article record plus ``summary``."""

    summary: str | None = None


@dataclass
class BucketReport:
    """What one bucket got: ``status`` ok | short | empty, with the reason when not ok."""

    bucket: str
    min_tokens: int
    max_tokens: int
    wanted: int
    built: int
    reason: str | None = None

    @property
    def status(self) -> str:
        if self.built >= self.wanted:
            return "ok"
        return "empty" if self.built == 0 else "short"


@dataclass
class LongDocuments:
    """The two tables, plus a report per bucket and notes on what was left out."""

    documents: pd.DataFrame
    paragraphs: pd.DataFrame
    buckets: list[BucketReport]
    notes: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [
            f"bucket {b.bucket}: {b.status}, {b.built} of {b.wanted} document(s): {b.reason}"
            for b in self.buckets
            if b.status != "ok"
        ]


# ---------------------------------------------------------------------------------------------
# Sentences. Hand-written: nltk's punkt needs a data download (never done at run time) and
# the documents are plain prose; a sentence ends at . ! ? (optionally closed by quotes or
# brackets) followed by whitespace and an upper-case letter or digit, except after a few
# abbreviations and single initials. The same splitter is used for every language, so a
# blank's ``sentence_index`` finds the aligned sentence where the counts agree (validated).
_SENTENCE_END = re.compile(r"[.!?…。][\"'”’»“)\]]*\s+")
_OPENERS = "\"'“‘«„([ "
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "nos",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "fig",
        "sr",
        "jr",
        "co",
        "ltd",
        "inc",
        "dept",
        "approx",
        "sra",
        "dra",
    ]
)


def _starts_sentence(rest: str) -> bool:
    """Does ``rest`` (the text after a full stop and spaces) open a sentence?"""
    head = rest.lstrip(_OPENERS)
    if not head:
        return False
    ch = head[0]
    # Georgian Mkhedruli is caseless in use but "lowercase" in Unicode.
    return ch.isdigit() or (ch.isalpha() and (not ch.islower() or "\u10d0" <= ch <= "\u10ff"))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``, whitespace excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if not _starts_sentence(text[match.end() :]):
            continue
        words = text[start : match.start()].split()
        last_word = words[-1].lower() if words else ""
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and text[match.start() - 1].isupper()):
            continue
        piece = text[start : match.end()].strip()
        if piece:
            offset = text.index(piece, start)
            spans.append((offset, offset + len(piece)))
        start = match.end()
    rest = text[start:].strip()
    if rest:
        offset = text.index(rest, start)
        spans.append((offset, offset + len(rest)))
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see :func:`sentence_spans`)."""
    return [text[a:b] for a, b in sentence_spans(text)]


def blank_sentence(text: str, index: int, marker: str) -> str:
    """``text`` with its ``index``-th sentence replaced in place by ``marker``."""
    spans = sentence_spans(text)
    if not 0 <= index < len(spans):
        raise IndexError(f"sentence {index} of a paragraph with {len(spans)} sentence(s)")
    a, b = spans[index]
    return text[:a] + marker + text[b:]


def third(index: int, n: int) -> str:
    """begin / middle / end of item ``index`` among ``n`` (equal thirds by count)."""
    if n <= 0:
        raise ValueError("third of an empty sequence")
    return THIRDS[min(2, (3 * index) // n)]


def assign_regions(token_counts: Sequence[int], rule: str = "tokens") -> list[str]:
    """Region of each paragraph: thirds by tokens (token midpoint) or by paragraph count."""
    n = len(token_counts)
    if rule == "paragraphs":
        return [third(i, n) for i in range(n)]
    if rule != "tokens":
        raise ValueError(f"region_split must be 'tokens' or 'paragraphs', got {rule!r}")
    total = sum(token_counts) or 1
    out: list[str] = []
    seen = 0
    for count in token_counts:
        mid = (seen + count / 2) / total
        out.append(THIRDS[min(2, int(mid * 3))])
        seen += count
    return out


def assign_positions(regions: Sequence[str]) -> list[str]:
    """Position of each paragraph within its region (thirds of the region's paragraphs)."""
    sizes = {r: regions.count(r) for r in THIRDS}
    seen = dict.fromkeys(THIRDS, 0)
    out: list[str] = []
    for region in regions:
        out.append(third(seen[region], sizes[region]))
        seen[region] += 1
    return out


def _seeded_order(ids: Sequence[str], seed: int, salt: str) -> list[str]:
    # A string seed makes the order independent of the bucket's place in the config.
    order = sorted(ids)
    random.Random(f"{seed}:{salt}").shuffle(order)
    return order


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "bucket"


def _wanted(bucket: GranularityBucket, settings: GranularitySettings) -> int:
    return bucket.documents if bucket.documents is not None else settings.documents_per_bucket


def included_languages(paragraphs: pd.DataFrame, languages: Sequence[str], reference: str) -> list[str]:
    """Panel languages that have paragraphs, reference first (the panel's order otherwise)."""
    present = set(paragraphs["language"])
    out = [reference] if reference in present else []
    return out + [lang for lang in languages if lang in present and lang != reference]


def complete_articles(audit: pd.DataFrame, languages: Sequence[str]) -> list[str]:
    """Articles whose audit says complete in every one of ``languages``."""
    ok = audit[audit["language"].isin(languages) & audit["complete"].astype(bool)]
    counts = ok.groupby("doc_id")["language"].nunique()
    return sorted(counts[counts == len(set(languages))].index)


def _common_pids(paragraphs: pd.DataFrame, languages: Sequence[str], reference: str) -> dict[str, list[str]]:
    """doc_id -> the reference's pids (in order) that have non-blank text in every language."""
    text_ok = paragraphs["text"].fillna("").astype(str).str.strip() != ""
    usable = paragraphs[text_ok & paragraphs["language"].isin(languages)]
    per = (
        usable.drop_duplicates(["doc_id", "language", "pid"]).groupby(["doc_id", "pid"])["language"].nunique()
    )
    full = {key for key, n in per.items() if n == len(set(languages))}
    ref = paragraphs[paragraphs["language"] == reference].sort_values(["doc_id", "ordinal"], kind="stable")
    out: dict[str, list[str]] = {}
    for doc_id, group in ref.groupby("doc_id", sort=True):
        out[str(doc_id)] = [p for p in group["pid"].drop_duplicates() if (doc_id, p) in full]
    return out


def _layout(
    doc_id: str,
    members: list[tuple[str, str]],
    by_key: dict[tuple[str, str, str], str],
    languages: Sequence[str],
    reference: str,
    tokenizer: str,
    rule: str,
    pid_of: Any,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """long_paragraphs rows of one document (every language) and its token count per language."""
    ref_texts = [by_key[(src_doc, reference, src_pid)] for src_doc, src_pid in members]
    ref_tokens = count_tokens(ref_texts, tokenizer)
    regions = assign_regions(ref_tokens, rule)
    positions = assign_positions(regions)
    rows: list[dict[str, Any]] = []
    totals: dict[str, int] = {}
    for language in languages:
        texts = [by_key[(src_doc, language, src_pid)] for src_doc, src_pid in members]
        tokens = ref_tokens if language == reference else count_tokens(texts, tokenizer)
        totals[language] = int(sum(tokens))
        for ordinal, ((src_doc, src_pid), text, n, region, position) in enumerate(
            zip(members, texts, tokens, regions, positions, strict=True), start=1
        ):
            rows.append(
                {
                    "doc_id": doc_id,
                    "language": language,
                    "pid": pid_of(src_doc, src_pid),
                    "ordinal": ordinal,
                    "region": region,
                    "position": position,
                    "text": text,
                    "source_doc_id": src_doc,
                    "source_pid": src_pid,
                    "n_tokens": int(n),
                }
            )
    return rows, totals


def _frames(
    doc_rows: list[dict[str, Any]], para_rows: list[dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    documents = pd.DataFrame(doc_rows, columns=LONG_DOCUMENT_COLUMNS)
    paragraphs = pd.DataFrame(para_rows, columns=LONG_PARAGRAPH_COLUMNS)
    for column in ("n_tokens", "n_paragraphs", "n_tokens_reference"):
        documents[column] = documents[column].astype("int64")
    for column in ("ordinal", "n_tokens"):
        paragraphs[column] = paragraphs[column].astype("int64")
    documents["member_doc_ids"] = documents["member_doc_ids"].map(list)
    return documents, paragraphs


def assemble_documents(
    paragraphs: pd.DataFrame,
    audit: pd.DataFrame,
    settings: GranularitySettings,
    *,
    languages: Sequence[str],
    reference: str,
    tokenizer: str = "cl100k_base",
) -> LongDocuments:
    """Documents concatenated from whole aligned articles, ``documents`` per bucket (disjoint
    within a bucket; a bucket may reuse articles another bucket used)."""
    included = included_languages(paragraphs, languages, reference)
    notes: list[str] = []
    if reference not in included:
        reports = [
            BucketReport(b.name, b.min_tokens, b.max_tokens, _wanted(b, settings), 0, "no English paragraphs")
            for b in settings.buckets
        ]
        return LongDocuments(*_frames([], []), reports, ["no English paragraphs"])
    complete = complete_articles(audit, included)
    dropped = sorted(set(paragraphs.loc[paragraphs["language"] == reference, "doc_id"]) - set(complete))
    if dropped:
        notes.append(f"articles not complete in every included language {included}, left out: {dropped}")
    pids = _common_pids(paragraphs[paragraphs["doc_id"].isin(complete)], included, reference)
    by_key = {
        (str(d), str(lang), str(p)): str(t)
        for d, lang, p, t in paragraphs[["doc_id", "language", "pid", "text"]].itertuples(index=False)
    }
    ref_paras = paragraphs[paragraphs["language"] == reference]
    for doc_id, kept in pids.items():
        lost = len(ref_paras[ref_paras["doc_id"] == doc_id]) - len(kept)
        if lost:
            notes.append(f"article {doc_id}: {lost} paragraph(s) missing in some language, left out")
    article_tokens = {
        doc_id: int(sum(count_tokens([by_key[(doc_id, reference, p)] for p in kept], tokenizer)))
        for doc_id, kept in pids.items()
        if kept
    }
    doc_rows: list[dict[str, Any]] = []
    para_rows: list[dict[str, Any]] = []
    reports: list[BucketReport] = []
    for bucket in settings.buckets:
        wanted = _wanted(bucket, settings)
        order = _seeded_order(list(article_tokens), settings.seed, bucket.name)
        used: set[str] = set()
        built: list[list[str]] = []
        while len(built) < wanted:
            members: list[str] = []
            total = 0
            for doc_id in order:
                if doc_id in used or total + article_tokens[doc_id] > bucket.max_tokens:
                    continue
                members.append(doc_id)
                total += article_tokens[doc_id]
                if total >= bucket.min_tokens:
                    break
            if total < bucket.min_tokens:
                break
            used.update(members)
            built.append(members)
        reason = None
        if len(built) < wanted:
            left = [d for d in order if d not in used]
            reason = (
                f"{len(article_tokens)} complete article(s) hold {sum(article_tokens.values())} English "
                f"tokens in all; the {len(left)} unused hold {sum(article_tokens[d] for d in left)}, "
                f"not enough for another document of {bucket.min_tokens}-{bucket.max_tokens} tokens "
                "(articles are whole and not reused within a bucket)"
            )
        reports.append(
            BucketReport(bucket.name, bucket.min_tokens, bucket.max_tokens, wanted, len(built), reason)
        )
        for k, members in enumerate(built, start=1):
            doc_id = f"long-{_slug(bucket.name)}-{k:02d}"
            flat = [(m, p) for m in members for p in pids[m]]
            rows, totals = _layout(
                doc_id,
                flat,
                by_key,
                included,
                reference,
                tokenizer,
                settings.region_split,
                lambda src_doc, src_pid: f"{src_doc}:{src_pid}",
            )
            para_rows.extend(rows)
            assembly = f"assembled from {len(members)} articles ({', '.join(members)}), seed {settings.seed}"
            for language in included:
                doc_rows.append(
                    {
                        "doc_id": doc_id,
                        "language": language,
                        "bucket": bucket.name,
                        "n_tokens": totals[language],
                        "n_paragraphs": len(flat),
                        "source": ASSEMBLED,
                        "assembly": assembly,
                        "member_doc_ids": list(members),
                        "summary": None,
                        "n_tokens_reference": totals[reference],
                    }
                )
    return LongDocuments(*_frames(doc_rows, para_rows), reports, notes)


# ---------------------------------------------------------------------------------------------
# The long-document JSONL source.


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
    :class:`DocumentError` naming file, line and field."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise DocumentError(f"{path}: long-document source folder not found")
    files = glob(fs, join(root, "articles", "*.jsonl")) or glob(fs, join(root, "*.jsonl"))
    if not files:
        raise DocumentError(f"{path}: no document files (expected articles/<lang>.jsonl)")
    versions: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}
    for file in files:
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
    return pd.DataFrame(versions), pd.DataFrame(
        rows, columns=["doc_id", "language", "pid", "ordinal", "text"]
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
    note says so); the kept versions share the English pids present in all of them.
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
    summaries = {
        (d, lang): s for d, lang, s in versions[["doc_id", "language", "summary"]].itertuples(index=False)
    }
    by_key = {
        (str(d), str(lang), str(p)): str(t)
        for d, lang, p, t in paragraphs[["doc_id", "language", "pid", "text"]].itertuples(index=False)
    }
    doc_ids = sorted(set(versions.loc[versions["language"] == reference, "doc_id"]))
    no_reference = sorted(set(versions["doc_id"]) - set(doc_ids))
    if no_reference:
        notes.append(f"documents without an English version ignored: {no_reference}")
    # Bucket by English length first, then keep the wanted number per bucket in seeded order.
    lengths: dict[str, int] = {}
    for doc_id in doc_ids:
        texts = paragraphs[(paragraphs["doc_id"] == doc_id) & (paragraphs["language"] == reference)]
        lengths[doc_id] = int(sum(count_tokens(list(texts.sort_values("ordinal")["text"]), tokenizer)))
    doc_rows: list[dict[str, Any]] = []
    para_rows: list[dict[str, Any]] = []
    reports: list[BucketReport] = []
    placed: set[str] = set()
    for bucket in settings.buckets:
        wanted = _wanted(bucket, settings)
        fits = [
            d for d in doc_ids if d not in placed and bucket.min_tokens <= lengths[d] <= bucket.max_tokens
        ]
        chosen = _seeded_order(fits, settings.seed, bucket.name)[:wanted]
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
            versions_ok = audit[(audit["doc_id"] == doc_id) & audit["complete"].astype(bool)]
            kept = [reference] + [
                lang for lang in languages if lang != reference and lang in set(versions_ok["language"])
            ]
            left = sorted(set(versions.loc[versions["doc_id"] == doc_id, "language"]) - set(kept))
            if left:
                notes.append(f"document {doc_id}: language version(s) {left} below completeness, left out")
            doc_paras = paragraphs[paragraphs["doc_id"] == doc_id]
            common = _common_pids(doc_paras, kept, reference).get(doc_id, [])
            rows, totals = _layout(
                doc_id,
                [(doc_id, p) for p in common],
                by_key,
                kept,
                reference,
                tokenizer,
                settings.region_split,
                lambda _doc, src_pid: src_pid,
            )
            para_rows.extend(rows)
            for language in kept:
                doc_rows.append(
                    {
                        "doc_id": doc_id,
                        "language": language,
                        "bucket": bucket.name,
                        "n_tokens": totals[language],
                        "n_paragraphs": len(common),
                        "source": path,
                        "assembly": f"long-document source {path}",
                        "member_doc_ids": [doc_id],
                        "summary": summaries.get((doc_id, language)),
                        "n_tokens_reference": totals[reference],
                    }
                )
    unplaced = sorted(set(doc_ids) - placed)
    if unplaced:
        notes.append(
            f"{len(unplaced)} document(s) outside every bucket or beyond the wanted number: {unplaced[:20]}"
        )
    return LongDocuments(*_frames(doc_rows, para_rows), reports, notes)


def build_long_documents(
    settings: GranularitySettings,
    *,
    paragraphs: pd.DataFrame,
    audit: pd.DataFrame,
    languages: Sequence[str],
    reference: str,
    threshold: float,
    tokenizer: str = "cl100k_base",
) -> LongDocuments:
    """The configured source's documents (``assembled`` reads ``paragraphs`` and ``audit``)."""
    if settings.source == ASSEMBLED:
        return assemble_documents(
            paragraphs, audit, settings, languages=languages, reference=reference, tokenizer=tokenizer
        )
    return load_long_documents(
        settings.source,
        settings,
        languages=languages,
        reference=reference,
        threshold=threshold,
        tokenizer=tokenizer,
    )


def text_hash(texts: Sequence[str]) -> str:
    """sha256 of paragraph texts in order (a document's English content, for freezing)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()
