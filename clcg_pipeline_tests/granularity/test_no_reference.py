"""Rows without a reference in their language leave the means and are counted (issue 20, item 1).

Swahili has its own summary for half of the documents only; its other summary rows are
``no_reference``. Scoring them 0 (as the analysis used to) pulls the summary score, its gaps
per language, group and pooled targets, and the no-context drop toward 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis import analyse_granularity
from clcg_pipeline.granularity._scoring import score_tasks
from clcg_pipeline.granularity.assets import granularity_results_check
from clcg_pipeline.report._granularity_section import granularity_section
from clcg_pipeline.synthetic import synthetic_task_scores
from clcg_pipeline_tests.granularity.analysis_world import granularity_config, one

LANGS = ("en", "pt", "sw", "fon")
GAPS = {"pt": 0.02, "sw": 0.1, "fon": 0.2}
N_DOCS = 12
WITHOUT = [f"doc{d:03d}" for d in range(6)]  # Swahili has no summary of these documents


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return granularity_config()


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    frame = synthetic_task_scores(LANGS, n_documents=N_DOCS, gaps=GAPS)
    lost = (frame["task"] == "summary") & (frame["language"] == "sw") & frame["doc_id"].isin(WITHOUT)
    # What score_tasks writes for such a row: the status, and no score on any metric.
    frame.loc[lost, "status"] = "no_reference"
    for col in ("score", "rouge_l", "bleu", "chrf", "judge_total"):
        if col in frame.columns:
            frame.loc[lost, col] = np.nan
    return frame


@pytest.fixture(scope="module")
def results(scores: pd.DataFrame, config: ProjectConfig) -> dict[str, Any]:
    return analyse_granularity(scores, config, replicates=20).results


def test_summary_score_excludes_rows_without_a_reference(results: dict[str, Any]) -> None:
    sw = one(results["scores"], task="summary", metric="rouge_l", language="sw", model="m1")
    # The six documents with a Swahili summary score 0.7 - 0.1; the other six are not zeros.
    assert sw["estimate"] == pytest.approx(0.6) and sw["n"] == 6 and sw["n_documents"] == 6
    assert sw["n_no_reference"] == 6
    en = one(results["scores"], task="summary", metric="rouge_l", language="en", model="m1")
    assert "n_no_reference" not in en and en["n"] == N_DOCS


def test_summary_gaps_per_language_group_and_pooled_exclude_them(results: dict[str, Any]) -> None:
    def gap(language: str) -> float:
        row = one(
            results["gaps"],
            granularity="document",
            metric="rouge_l",
            region="all",
            position="all",
            language=language,
            model="all",
        )
        return float(row["gap"])

    assert gap("sw") == pytest.approx(0.1)  # was (6 x 0.1 + 6 x 0.7) / 12 = 0.4
    assert gap("mid") == pytest.approx(0.1)  # Swahili is the only mid-resource language
    # targets pool Swahili's 6 paired rows with Fon's 12 (gap 0.2).
    assert gap("targets") == pytest.approx((6 * 0.1 + N_DOCS * 0.2) / (6 + N_DOCS))


def test_no_context_drop_excludes_them(results: dict[str, Any]) -> None:
    drop = one(results["no_context"], task="summary", metric="rouge_l", language="sw", model="m1")
    assert drop["with_context"] == pytest.approx(0.6) and drop["drop"] == pytest.approx(0.3)


def test_rows_without_a_reference_are_counted_and_said(results: dict[str, Any]) -> None:
    counts = results["no_reference"]
    assert {(r["task"], r["language"], r["context"]) for r in counts} == {
        ("summary", "sw", "full"),
        ("summary", "sw", "none"),
    }
    full = one(counts, context="full")
    assert full["n_no_reference"] == 6 and full["n_documents"] == 6 and full["model"] == "m1"
    assert results["settings"]["rows_no_reference"] == 12
    assert any("no_reference" in c and "summary in sw" in c for c in results["caveats"])
    check = granularity_results_check(results)
    assert "12 row(s) without a reference" in (check.description or "")


def test_the_report_shows_the_count(results: dict[str, Any]) -> None:
    section = granularity_section(results, lambda *args: None)  # type: ignore[arg-type]
    heading = "Rows without a reference (left out of the means, not scored 0)"
    at = next(i for i, p in enumerate(section.parts) if p.kind == "heading" and p.text == heading)
    table = section.parts[at + 1]
    assert table.kind == "table" and table.columns[:6] == [
        "task",
        "language",
        "model",
        "context",
        "rows",
        "documents",
    ]
    assert [r.cells[:6] for r in table.rows] == [
        ["summary", "sw", "m1", "full", "6", "6"],
        ["summary", "sw", "m1", "none", "6", "6"],
    ]


def test_scored_frame_round_trip_a_language_without_its_own_summary(config: ProjectConfig) -> None:
    """From score_tasks: a language whose document has no summary gets no_reference rows, which the
    analysis leaves out instead of scoring 0."""
    tasks = pd.DataFrame(
        [{"task_id": "t1", "doc_id": "d1", "task": "summary", "gold": "the english summary"}]
    )
    paragraphs = pd.DataFrame(
        [
            {"language": lang, "doc_id": "d1", "pid": "p1", "ordinal": 1, "text": "text"}
            for lang in ("en", "sw")
        ]
    )
    documents = pd.DataFrame([{"language": "en", "doc_id": "d1", "summary": "the english summary"}])
    predictions = pd.DataFrame(
        [
            {
                "model": "m1",
                "language": lang,
                "doc_id": "d1",
                "task_id": "t1",
                "group_id": "g1",
                "task": "summary",
                "context": "full",
                "rep": 0,
                "status": "ok",
                "answer": "the english summary",
            }
            for lang in ("en", "sw")
        ]
    )
    scored = score_tasks(predictions, tasks, paragraphs, documents).assign(granularity="document")
    assert list(scored["status"]) == ["ok", "no_reference"]
    res = analyse_granularity(scored, config, replicates=5).results
    assert [r["language"] for r in res["scores"] if r["task"] == "summary"] == ["en"]
    assert one(res["no_reference"], language="sw")["n_no_reference"] == 1
    assert not [r for r in res["gaps"] if r["language"] == "sw"]
