"""Roles of cloze targets and filling paragraphs: the rule, the bank's role column, coverage notes."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.config import GranularityBucket, GranularitySettings, load_config
from clcg_pipeline.corpus import audit_corpus, load_source_cached
from clcg_pipeline.granularity._documents import assemble_documents
from clcg_pipeline.granularity._tasks import (
    ROLES,
    TASK_COLUMNS,
    build_tasks,
    freeze,
    frozen_hash,
    judge_writer,
)
from clcg_pipeline.granularity._tasks._roles import paragraph_role, sentence_role
from clcg_pipeline.storage import conform, read_frame, write_frame

DEMO = Path(__file__).resolve().parents[2] / "assets_config"
LONG_DEMO_ARTICLES = [f"demo-{k:03d}" for k in range(1, 7)]
LANGS = ["en", "pt", "is", "mt", "ka", "ht", "sw"]
SETTINGS = GranularitySettings(
    enabled=True,
    buckets=[
        GranularityBucket(name="1K-2K", min_tokens=1000, max_tokens=2000, documents=2),
        GranularityBucket(name="2K-4K", min_tokens=2000, max_tokens=4000, documents=1),
    ],
)


@pytest.fixture(scope="module")
def documents() -> tuple[pd.DataFrame, pd.DataFrame]:
    config = load_config(DEMO)
    tables = load_source_cached(config.sources.primary, config.languages)
    # The demo's six long articles: the documents (and the cells and roles pinned below) are
    # packed from them; the five three-paragraph articles added for issue 34 would reshuffle them.
    articles = tables.articles[tables.articles["doc_id"].isin(LONG_DEMO_ARTICLES)]
    paragraphs = tables.paragraphs[tables.paragraphs["doc_id"].isin(LONG_DEMO_ARTICLES)]
    audit = audit_corpus(articles, paragraphs, reference="en", threshold=0.9)
    result = assemble_documents(paragraphs, audit, SETTINGS, languages=LANGS, reference="en")
    return result.documents, result.paragraphs


def _build(documents: tuple[pd.DataFrame, pd.DataFrame], seed: int = 42) -> Any:
    writer = load_config(DEMO).models.get("offline-writer")
    with tempfile.TemporaryDirectory() as cache:
        return build_tasks(
            *documents,
            SETTINGS.model_copy(update={"seed": seed}),
            reference="en",
            writer=judge_writer(writer, CallOptions(cache_dir=cache)),
            writer_id=writer.id,
        )


@pytest.fixture(scope="module")
def bank(documents: tuple[pd.DataFrame, pd.DataFrame]) -> Any:
    return _build(documents)


def test_sentence_roles_follow_markers_and_restating() -> None:
    para = [
        "The cooperative replaced 14 kilometres of pipes beneath the town last year.",
        "However, several shop owners complained about the roadworks in the summer.",
        "The work cost 4.3 million euros and took eighteen months to finish.",
        "In short, the town now has new pipes.",
    ]
    assert [sentence_role(para, i) for i in range(4)] == ["core", "transitional", "core", "summary"]
    restating = [
        "The museum holds 6,000 old tools from local farms and workshops.",
        "Volunteers restored the building over three winters.",
        "Its tools from local farms and workshops fill the old building.",
    ]
    assert sentence_role(restating, 2) == "summary"  # most of its content words came before
    assert sentence_role(restating[:2], 1) == "core"  # a paragraph of two never restates
    assert sentence_role(["The survey counted 18,400 cranes, but only 12 storks."], 0) == "transitional"


def test_paragraph_roles_by_first_sentence_and_closing_restatement() -> None:
    article = [
        {"ordinal": 1, "text": "The village festival drew 7,500 visitors to the square."},
        {"ordinal": 2, "text": "Not everyone was satisfied. The road was blocked for two hours."},
        {"ordinal": 3, "text": "The festival drew visitors to the village square again."},
    ]
    assert [paragraph_role(p, article) for p in article] == ["core", "transitional", "summary"]


def test_every_cloze_and_fill_task_has_a_role_and_others_none(bank: Any) -> None:
    tasks = bank.tasks
    conform("granularity_tasks", tasks)
    has_role = tasks["task"].isin(["cloze", "paragraph_fill"])
    assert set(tasks.loc[has_role, "role"]) <= set(ROLES)
    assert tasks.loc[has_role, "role"].notna().all()
    assert tasks.loc[~has_role, "role"].isna().all()


def test_selection_covers_the_roles_the_document_has(bank: Any) -> None:
    """Role-first selection: on the demo every role appears; before it every target was core."""
    cloze = bank.tasks[bank.tasks["task"] == "cloze"]
    fill = bank.tasks[bank.tasks["task"] == "paragraph_fill"]
    assert set(cloze["role"]) == set(ROLES)
    assert set(fill["role"]) == set(ROLES)
    # A document with two cloze targets or more never repeats a role while another is available.
    for _, group in cloze.groupby("doc_id"):
        assert group["role"].nunique() >= 2


def test_a_role_missing_in_a_document_is_reported_never_silent(bank: Any) -> None:
    tasks, rejections = bank.tasks, bank.rejections
    role_rows = rejections[rejections["rule"] == "role_not_covered"]
    for task in ("cloze", "paragraph_fill"):
        for doc_id, group in tasks[tasks["task"] == task].groupby("doc_id"):
            missing = set(ROLES) - set(group["role"])
            reported = role_rows[(role_rows["doc_id"] == doc_id) & (role_rows["task"] == task)]
            assert {r for r in ROLES if any(f"a {r} " in d for d in reported["detail"])} == missing
            for role in missing:
                assert any(doc_id in n and task in n and role in n for n in bank.notes)
    assert len(role_rows) > 0  # the demo's documents lack some roles
    assert role_rows["detail"].str.contains("cannot be found").any()


def test_roles_are_deterministic_with_the_seed(
    documents: tuple[pd.DataFrame, pd.DataFrame], bank: Any
) -> None:
    again = _build(documents)
    pd.testing.assert_frame_equal(again.tasks, bank.tasks)
    other = _build(documents, seed=7)
    assert set(other.tasks.loc[other.tasks["role"].notna(), "role"]) <= set(ROLES)


def test_the_role_survives_freezing_and_the_parquet_round_trip(bank: Any, tmp_path: Path) -> None:
    path = tmp_path / "granularity_tasks" / "data.parquet"
    write_frame(path, bank.tasks, contract="granularity_tasks")
    stored = read_frame(path)
    assert list(stored["role"].where(stored["role"].notna(), None)) == list(
        bank.tasks["role"].where(bank.tasks["role"].notna(), None)
    )
    assert [frozen_hash(r) for r in stored.to_dict("records")] == list(bank.tasks["frozen_hash"])
    kept, notes = freeze(stored, bank.tasks)
    assert notes == []
    assert list(kept["role"].fillna("-")) == list(bank.tasks["role"].fillna("-"))


def test_a_stored_bank_from_before_roles_takes_them_from_the_rebuild(bank: Any) -> None:
    """An older frozen bank has no role column: its unchanged documents' tasks are kept and take
    the rule's role (same document, same rule), with a note; their hash is recomputed."""
    old = bank.tasks.drop(columns=["role", "evidence"]).copy()
    old["frozen_hash"] = [frozen_hash(r) for r in old.to_dict("records")]
    kept, notes = freeze(old, bank.tasks)
    assert list(kept.columns) == TASK_COLUMNS
    assert list(kept["role"].fillna("-")) == list(bank.tasks["role"].fillna("-"))
    assert list(kept["frozen_hash"]) == list(bank.tasks["frozen_hash"])
    assert any("predates column(s) ['role', 'evidence']" in n for n in notes)


def test_rows_without_a_role_keep_their_old_hash(bank: Any) -> None:
    """Translation and word rows hash as they did before the role column existed."""
    row = bank.tasks[bank.tasks["task"] == "translation"].iloc[0].to_dict()
    before = {k: v for k, v in row.items() if k not in ("role", "evidence")}
    assert frozen_hash(row) == frozen_hash(before)
    cloze = bank.tasks[bank.tasks["task"] == "cloze"].iloc[0].to_dict()
    assert frozen_hash(cloze) != frozen_hash({k: v for k, v in cloze.items() if k != "role"})
