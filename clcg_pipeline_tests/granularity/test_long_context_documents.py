"""Long documents for big buckets: a 128K bucket assembled from short articles, or a caveat; and a
JSONL document bucketed by the length it is built with (after the common pids), issue 20 item 5."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from clcg_pipeline.config import GranularityBucket, GranularitySettings
from clcg_pipeline.corpus import audit_corpus
from clcg_pipeline.granularity._documents import BucketReport, assemble_documents, load_long_documents
from clcg_pipeline_tests.granularity.test_long_context import _paragraph

BIG = GranularityBucket(name="64K-128K", min_tokens=64_000, max_tokens=128_000)


def _articles(n_articles: int, paragraphs_each: int = 5) -> pd.DataFrame:
    """Short aligned articles (about 600 English tokens) in English and Georgian."""
    import random

    rng = random.Random(3)
    rows = []
    for a in range(n_articles):
        for i in range(1, paragraphs_each + 1):
            n_words = rng.randint(80, 120)
            for language, script in (("en", "Latn"), ("ka", "Geor")):
                text = _paragraph(rng, script, n_words)
                rows.append(
                    {"doc_id": f"a{a:03d}", "language": language, "pid": f"p{i}", "ordinal": i, "text": text}
                )
    return pd.DataFrame(rows)


def _assemble(paragraphs: pd.DataFrame, documents: int) -> tuple[pd.DataFrame, list[BucketReport]]:
    audit = audit_corpus(
        paragraphs[["doc_id", "language"]].drop_duplicates(), paragraphs, reference="en", threshold=0.9
    )
    settings = GranularitySettings(enabled=True, buckets=[BIG.model_copy(update={"documents": documents})])
    built = assemble_documents(paragraphs, audit, settings, languages=["en", "ka"], reference="en")
    return built.documents, built.buckets


def test_a_128k_bucket_is_assembled_from_short_articles_or_says_not_enough() -> None:
    paragraphs = _articles(170)  # about 100K English tokens: one document of 64K-128K, not two
    documents, reports = _assemble(paragraphs, documents=2)
    en = documents[documents["language"] == "en"]
    assert len(en) == 1 and BIG.min_tokens <= en["n_tokens"].item() <= BIG.max_tokens
    assert len(en["member_doc_ids"].item()) > 100  # many whole articles
    ka = documents[documents["language"] == "ka"]
    assert ka["n_tokens"].item() > 3 * en["n_tokens"].item()  # the bucket is by English tokens
    (report,) = reports
    assert (report.wanted, report.built, report.status) == (2, 1, "short")
    assert "not enough for another document of 64000-128000 tokens" in report.reason


def test_a_jsonl_document_is_bucketed_by_its_length_after_the_common_pids(tmp_path: Path) -> None:
    """English has 10 paragraphs (about 1,000 tokens); German lacks 3, so the built document (the
    common pids) has about 700: it belongs in the 600-800 bucket, not the 900-1,100 one."""
    (tmp_path / "articles").mkdir()
    words = " ".join(["word"] * 99)
    for lang in ("en", "de"):
        paras = [{"pid": f"p{i:02d}", "text": f"{words} {lang}{i}."} for i in range(1, 11)]
        if lang == "de":
            paras = [p for p in paras if p["pid"] not in ("p02", "p05", "p08")]
        record = {"doc_id": "un-1", "language": lang, "paragraphs": paras}
        (tmp_path / "articles" / f"{lang}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    buckets = [
        GranularityBucket(name="long", min_tokens=900, max_tokens=1100, documents=1),
        GranularityBucket(name="short", min_tokens=600, max_tokens=800, documents=1),
    ]
    settings = GranularitySettings(enabled=True, source=str(tmp_path), buckets=buckets)
    built = load_long_documents(
        str(tmp_path), settings, languages=["en", "de"], reference="en", threshold=0.6
    )
    english = built.documents[built.documents["language"] == "en"]
    assert english["bucket"].tolist() == ["short"]
    assert 600 <= english["n_tokens_reference"].item() <= 800
    long_report = next(r for r in built.buckets if r.bucket == "long")
    assert long_report.built == 0 and long_report.reason
