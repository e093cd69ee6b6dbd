"""A paragraph one language version lacks: left out of every version, and said so (issue 20, item 3).

Two articles in English, German and French; German lacks a1:p3 and a2:p5, French has a2:p2
blank and also lacks a2:p5. The common pids are kept (see ``_documents/_alignment``), and the
loss is warned, noted, written into the document's ``assembly`` and carried into the
granularity results and report.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.config import (
    GranularityBucket,
    GranularitySettings,
    ProjectConfig,
)
from clcg_pipeline.corpus import audit_corpus
from clcg_pipeline.granularity._analysis import analyse_granularity
from clcg_pipeline.granularity._analysis_assets import exclusion_warnings
from clcg_pipeline.granularity._documents import LongDocuments, assemble_documents, load_long_documents
from clcg_pipeline.granularity._documents._alignment import ALIGNMENT_MARK, DECISION, parse_alignment
from clcg_pipeline.granularity.assets import granularity_results_check
from clcg_pipeline.report._granularity_section import granularity_section
from clcg_pipeline.synthetic import synthetic_task_scores
from clcg_pipeline_tests.granularity.analysis_world import granularity_config

LANGS = ["en", "de", "fr"]
N_PARAS = 6
LOST = {("a1", "p3"): ["de"], ("a2", "p2"): ["fr"], ("a2", "p5"): ["de", "fr"]}
LOGGER = "clcg_pipeline.granularity._documents._alignment"


def _text(article: str, pid: str, lang: str) -> str:
    return f"{lang} paragraph {pid} of {article} says " + " ".join([f"w{pid}"] * 40) + "."


def _paragraphs() -> pd.DataFrame:
    rows = []
    for article in ("a1", "a2"):
        for lang in LANGS:
            for i in range(1, N_PARAS + 1):
                pid = f"p{i}"
                lacking = LOST.get((article, pid), [])
                if lang in lacking and (article, pid) == ("a2", "p2"):
                    text = "   "  # present but blank
                elif lang in lacking:
                    continue  # no row at all
                else:
                    text = _text(article, pid, lang)
                rows.append({"doc_id": article, "language": lang, "pid": pid, "ordinal": i, "text": text})
    return pd.DataFrame(rows)


def _settings(**kw: Any) -> GranularitySettings:
    base: dict[str, Any] = {
        "enabled": True,
        # Both articles are needed to reach min_tokens: one document holding a1 and a2.
        "buckets": [GranularityBucket(name="small", min_tokens=600, max_tokens=5000, documents=1)],
    }
    base.update(kw)
    return GranularitySettings(**base)


@pytest.fixture()
def built(caplog: pytest.LogCaptureFixture) -> tuple[LongDocuments, list[logging.LogRecord]]:
    paragraphs = _paragraphs()
    articles = paragraphs[["doc_id", "language"]].drop_duplicates()
    audit = audit_corpus(articles, paragraphs, reference="en", threshold=0.6)
    assert audit["complete"].all()  # a few missing paragraphs: every version passes the audit
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = assemble_documents(paragraphs, audit, _settings(), languages=LANGS, reference="en")
    return result, [r for r in caplog.records if r.name == LOGGER]


def test_the_common_pids_are_kept_in_every_language_english_included(
    built: tuple[LongDocuments, list[logging.LogRecord]],
) -> None:
    result, _ = built
    (doc_id,) = result.documents["doc_id"].unique()
    paras = result.paragraphs
    expected = [f"{a}:p{i}" for a in ("a1", "a2") for i in range(1, N_PARAS + 1) if (a, f"p{i}") not in LOST]
    for lang in LANGS:
        own = paras[paras["language"] == lang].sort_values("ordinal")
        assert list(own["pid"]) == expected, lang
    assert set(result.documents["n_paragraphs"]) == {len(expected)}
    # Regions are recomputed on the shortened English: every third holds paragraphs.
    assert set(paras.loc[paras["language"] == "en", "region"]) == {"begin", "middle", "end"}
    assert doc_id.startswith("long-small-")


def test_a_warning_names_document_language_and_pid(
    built: tuple[LongDocuments, list[logging.LogRecord]],
) -> None:
    _, logged = built
    messages = [r.getMessage() for r in logged if r.levelno == logging.WARNING]
    assert any("document a1" in m and "p3" in m and "'de'" in m for m in messages), messages
    assert any("document a2" in m and "p5" in m and "'de'" in m for m in messages), messages
    assert any("document a2" in m and "p2, p5" in m and "'fr'" in m for m in messages), messages
    assert all(DECISION in m for m in messages)


def test_the_decision_is_noted_and_written_into_the_assembly(
    built: tuple[LongDocuments, list[logging.LogRecord]],
) -> None:
    result, _ = built
    assert any(n.startswith("document a1: paragraph(s) p3 missing in 'de'") for n in result.notes)
    assemblies = set(result.documents["assembly"])
    assert len(assemblies) == 1  # every language row of the document says the same
    (assembly,) = assemblies
    assert assembly.startswith("assembled from 2 articles") and ALIGNMENT_MARK in assembly
    assert parse_alignment(assembly) == [
        {"pid": "a1:p3", "missing_in": ["de"]},
        {"pid": "a2:p2", "missing_in": ["fr"]},
        {"pid": "a2:p5", "missing_in": ["de", "fr"]},
    ]


def test_a_complete_document_has_no_clause_and_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    paragraphs = _paragraphs()
    paragraphs = paragraphs[paragraphs["language"] == "en"]
    audit = audit_corpus(
        paragraphs[["doc_id", "language"]].drop_duplicates(), paragraphs, reference="en", threshold=0.6
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = assemble_documents(paragraphs, audit, _settings(), languages=["en"], reference="en")
    assert not [r for r in caplog.records if r.name == LOGGER]
    assert not any(ALIGNMENT_MARK in a for a in result.documents["assembly"])
    assert len(result.paragraphs) == 2 * N_PARAS


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    panel = (
        ("en", "English", 5, "reference"),
        ("de", "German", 5, "baseline"),
        ("fr", "French", 5, "target"),
    )
    return granularity_config(panel, min_articles=2)


def test_the_results_the_check_and_the_report_carry_it(
    built: tuple[LongDocuments, list[logging.LogRecord]], config: ProjectConfig
) -> None:
    result, _ = built
    (doc_id,) = result.documents["doc_id"].unique()
    scores = synthetic_task_scores(LANGS, n_documents=2)
    res = analyse_granularity(scores, config, documents=result.documents, replicates=5).results
    assert res["alignment"] == [
        {"doc_id": doc_id, "bucket": "small", "pid": "a1:p3", "missing_in": ["de"], "decision": DECISION},
        {"doc_id": doc_id, "bucket": "small", "pid": "a2:p2", "missing_in": ["fr"], "decision": DECISION},
        {
            "doc_id": doc_id,
            "bucket": "small",
            "pid": "a2:p5",
            "missing_in": ["de", "fr"],
            "decision": DECISION,
        },
    ]
    assert res["settings"]["paragraphs_left_out"] == 3
    assert any("a1:p3 (missing in de)" in c and "English included" in c for c in res["caveats"])
    json.dumps(res)  # plain JSON, as study_results.json stores it
    warnings = exclusion_warnings(res)
    assert f"document {doc_id}: paragraph(s) a1:p3, a2:p5 missing in 'de'" in warnings[0]
    assert "3 paragraph(s) missing in some language" in (granularity_results_check(res).description or "")
    section = granularity_section(res, lambda *args: None)  # type: ignore[arg-type]
    heading = "Paragraphs left out to keep the languages aligned"
    at = next(i for i, p in enumerate(section.parts) if p.kind == "heading" and p.text == heading)
    assert section.parts[at + 1].text == DECISION
    table = section.parts[at + 2]
    assert [r.cells[2] for r in table.rows] == ["a1:p3", "a2:p2", "a2:p5"]
    # Nothing scored yet: the documents' alignment is said all the same.
    empty = analyse_granularity(pd.DataFrame(), config, documents=result.documents).results
    assert len(empty["alignment"]) == 3 and any("a1:p3" in c for c in empty["caveats"])


def test_an_unreadable_alignment_clause_is_named() -> None:
    with pytest.raises(ValueError, match="long_documents: field 'assembly'"):
        parse_alignment("assembled from 1 articles" + ALIGNMENT_MARK + "[{not json")
    with pytest.raises(ValueError, match="malformed alignment clause"):
        parse_alignment("x" + ALIGNMENT_MARK + '[{"pid": "p1"}]')
    assert parse_alignment(None) == [] and parse_alignment("assembled from 2 articles, seed 1") == []


def test_the_jsonl_source_warns_too(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "articles"
    folder.mkdir()
    for lang in ("en", "de"):
        paras = [
            {"pid": f"p{i:02d}", "text": _text("un-1", f"p{i:02d}", lang)}
            for i in range(1, 11)
            if not (lang == "de" and i == 4)
        ]
        record = {"doc_id": "un-1", "language": lang, "paragraphs": paras}
        (folder / f"{lang}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    settings = _settings(source=str(tmp_path))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = load_long_documents(
            str(tmp_path), settings, languages=["en", "de"], reference="en", threshold=0.8
        )
    assert set(result.paragraphs["language"]) == {"en", "de"}  # the document was built
    assert "p04" not in set(result.paragraphs["pid"])
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any("document un-1" in m and "p04" in m and "'de'" in m for m in messages), messages


def test_a_jsonl_source_names_the_missing_paragraph_and_records_it(tmp_path: Path) -> None:
    """The JSONL long-document source: a version lacking p04 is said, and stored with each document."""
    from clcg_pipeline_tests.granularity.test_long_corpus_errors import _load, _record

    root = tmp_path / "long"
    (root / "articles").mkdir(parents=True)
    for lang in ("en", "pt", "de"):
        record = _record("un-1", lang)
        if lang == "de":
            record["paragraphs"] = [p for p in record["paragraphs"] if p["pid"] != "p04"]
        (root / "articles" / f"{lang}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    long = _load(root, ["en", "pt", "de"])
    assert any(note.startswith("document un-1: paragraph(s) p04 missing in 'de'") for note in long.notes)
    recorded = [parse_alignment(a) for a in long.documents["assembly"]]
    assert recorded and all(r == [{"pid": "p04", "missing_in": ["de"]}] for r in recorded)
    assert "p04" not in set(long.paragraphs["pid"])  # the common pids: gone from English too
