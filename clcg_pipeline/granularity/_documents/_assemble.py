"""Documents assembled from the study's aligned articles, whole and in a seeded order, per bucket."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from clcg_pipeline.config import ASSEMBLED_SOURCE, GranularityBucket, GranularitySettings
from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity._documents._alignment import align_pids, alignment_clause
from clcg_pipeline.granularity._documents._contract import (
    BucketReport,
    LongDocuments,
    frames,
    seeded_order,
    wanted_documents,
)
from clcg_pipeline.granularity._documents._regions import layout


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "bucket"


def _assembled_pid(src_doc: str, src_pid: str) -> str:
    """An assembled document's pid: the source article and its paragraph."""
    return f"{src_doc}:{src_pid}"


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
        empty = [
            BucketReport(
                b.name, b.min_tokens, b.max_tokens, wanted_documents(b, settings), 0, "no English paragraphs"
            )
            for b in settings.buckets
        ]
        return LongDocuments(*frames([], []), empty, ["no English paragraphs"])
    complete = complete_articles(audit, included)
    dropped = sorted(set(paragraphs.loc[paragraphs["language"] == reference, "doc_id"]) - set(complete))
    if dropped:
        notes.append(f"articles not complete in every included language {included}, left out: {dropped}")
    # A paragraph some language lacks leaves every language (see _alignment for why), warned.
    alignment = align_pids(paragraphs[paragraphs["doc_id"].isin(complete)], included, reference)
    pids = alignment.pids
    notes.extend(alignment.notes())
    by_key = {
        (str(d), str(lang), str(p)): str(t)
        for d, lang, p, t in paragraphs[["doc_id", "language", "pid", "text"]].itertuples(index=False)
    }
    article_tokens = {
        doc_id: int(sum(count_tokens([by_key[(doc_id, reference, p)] for p in kept], tokenizer)))
        for doc_id, kept in pids.items()
        if kept
    }
    doc_rows: list[dict[str, Any]] = []
    para_rows: list[dict[str, Any]] = []
    reports: list[BucketReport] = []
    for bucket in settings.buckets:
        wanted = wanted_documents(bucket, settings)
        built, report = _pack_bucket(article_tokens, bucket, wanted, settings.seed)
        reports.append(report)
        for k, members in enumerate(built, start=1):
            doc_id = f"long-{_slug(bucket.name)}-{k:02d}"
            flat = [(m, p) for m in members for p in pids[m]]
            rows, totals = layout(
                doc_id,
                flat,
                by_key,
                included,
                reference,
                tokenizer,
                settings.region_split,
                _assembled_pid,
            )
            para_rows.extend(rows)
            assembly = f"assembled from {len(members)} articles ({', '.join(members)}), seed {settings.seed}"
            assembly += alignment_clause(alignment.missing_of(members), _assembled_pid)
            for language in included:
                doc_rows.append(
                    {
                        "doc_id": doc_id,
                        "language": language,
                        "bucket": bucket.name,
                        "n_tokens": totals[language],
                        "n_paragraphs": len(flat),
                        "source": ASSEMBLED_SOURCE,
                        "assembly": assembly,
                        "member_doc_ids": list(members),
                        "summary": None,
                        "n_tokens_reference": totals[reference],
                    }
                )
    return LongDocuments(*frames(doc_rows, para_rows), reports, notes)


def _pack_bucket(
    article_tokens: dict[str, int], bucket: GranularityBucket, wanted: int, seed: int
) -> tuple[list[list[str]], BucketReport]:
    """Up to ``wanted`` disjoint member lists, each of whole articles in the bucket's length range."""
    order = seeded_order(list(article_tokens), seed, bucket.name)
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
    report = BucketReport(bucket.name, bucket.min_tokens, bucket.max_tokens, wanted, len(built), reason)
    return built, report
