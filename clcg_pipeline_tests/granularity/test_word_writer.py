"""Word-level questions written by a model: the offline writer end to end, validation, freezing."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.config import ConfigError, GranularityBucket, GranularitySettings, load_config
from clcg_pipeline.corpus import audit_corpus, load_source_cached
from clcg_pipeline.granularity._documents import assemble_documents
from clcg_pipeline.granularity._tasks import (
    WORD_QUESTION_TEMPLATE,
    BoundWriter,
    build_tasks,
    freeze,
    frozen_hash,
    judge_writer,
)
from clcg_pipeline.granularity._validate import answer_in_text
from clcg_pipeline.storage import read_frame, write_frame

DEMO = Path(__file__).resolve().parents[2] / "assets_config"
LONG_DEMO_ARTICLES = [f"demo-{k:03d}" for k in range(1, 7)]
LANGS = ["en", "pt", "is", "mt", "ka", "ht", "sw"]
SETTINGS = GranularitySettings(
    enabled=True,
    buckets=[GranularityBucket(name="1K-2K", min_tokens=1000, max_tokens=2000, documents=1)],
)
WORD = ["word_single_qa", "word_multi_qa"]


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


def _build(documents: tuple[pd.DataFrame, pd.DataFrame], word_writer: BoundWriter | None) -> Any:
    return build_tasks(*documents, SETTINGS, reference="en", word_writer=word_writer)


@pytest.fixture(scope="module")
def offline_bank(documents: tuple[pd.DataFrame, pd.DataFrame]) -> Any:
    spec = load_config(DEMO).models.get("offline-writer")
    with tempfile.TemporaryDirectory() as cache:
        write = judge_writer(spec, CallOptions(cache_dir=cache), WORD_QUESTION_TEMPLATE)
        return _build(documents, BoundWriter(write, spec.id))


def test_the_offline_writer_writes_validated_word_tasks_through_the_runner(
    offline_bank: Any, documents: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    tasks = offline_bank.tasks
    words = tasks[tasks["task"].isin(WORD)]
    assert len(words) >= 6
    assert set(words["builder"]) == {"gran-word-question-v1+offline-writer"}
    # Every call went through the judge runner (the calls table's shape, the template's version).
    calls = offline_bank.writer_calls
    assert set(calls["prompt_version"]) == {"gran-word-question-v1"}
    assert len(calls) == 9 + 3  # one per Single-QA cell and Multi-QA region
    _, paragraphs = documents
    text = {(r.doc_id, r.language, r.pid): r.text for r in paragraphs.itertuples()}
    for row in words.itertuples():
        english = " ".join(" ".join(text[(row.doc_id, "en", p)].split()) for p in row.evidence_pids)
        assert len(row.evidence) >= 1 and all(e in english for e in row.evidence)
        assert answer_in_text(row.gold, " ".join(row.evidence))
        assert row.question.rstrip('"').endswith("?")
        for language in LANGS:
            assert any(answer_in_text(row.gold, text[(row.doc_id, language, p)]) for p in row.evidence_pids)
    multi = words[words["task"] == "word_multi_qa"]
    assert (multi["evidence_pids"].map(lambda p: len(set(p))) == 2).all()


def test_without_a_writer_the_word_tasks_are_the_rule_based_ones(
    offline_bank: Any, documents: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    rule = _build(documents, None)
    words = rule.tasks[rule.tasks["task"].isin(WORD)]
    assert set(words["builder"]) == {"rule-word-qa-v1"}
    assert (words["evidence"].map(len) == 0).all()
    # The other tasks do not depend on who writes the word questions.
    others = rule.tasks[~rule.tasks["task"].isin(WORD)].reset_index(drop=True)
    written = offline_bank.tasks[~offline_bank.tasks["task"].isin(WORD)].reset_index(drop=True)
    pd.testing.assert_frame_equal(others, written)


def _scripted(replies: dict[str, Any]) -> BoundWriter:
    """A writer whose reply per cell is given (a dict is a valid reply, a str a failed call)."""

    def write(subjects: list[Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = []
        for keys, _fields in subjects:
            reply = replies.get(keys["cell"], {"questions": []})
            ok = isinstance(reply, dict)
            rows.append(
                {
                    **keys,
                    "status": "ok" if ok else "unparseable",
                    "error": None if ok else reply,
                    "judgement": json.dumps(reply) if ok else None,
                }
            )
        return pd.DataFrame(rows), pd.DataFrame()

    return BoundWriter(write, "scripted")


def _cell_paragraph(documents: tuple[pd.DataFrame, pd.DataFrame], offline_bank: Any) -> tuple[str, str]:
    """The cell and English text the writer is asked about for begin/begin (from the offline bank)."""
    row = offline_bank.tasks[
        (offline_bank.tasks["task"] == "word_single_qa")
        & (offline_bank.tasks["region"] == "begin")
        & (offline_bank.tasks["position"] == "begin")
    ].iloc[0]
    _, paragraphs = documents
    en = paragraphs[(paragraphs["language"] == "en") & (paragraphs["pid"] == row.evidence_pids[0])]
    return row.gold, str(en["text"].iloc[0])


def test_bad_questions_are_rejected_with_their_rule(
    documents: tuple[pd.DataFrame, pd.DataFrame], offline_bank: Any
) -> None:
    answer, paragraph = _cell_paragraph(documents, offline_bank)
    sentence = next(s for s in paragraph.split(". ") if answer in s)
    two_words = " ".join(sentence.split()[:2])
    last = paragraph.split(". ")[-1]

    def ask(n: int, **fields: Any) -> dict[str, Any]:
        # Distinct questions: the same question twice would be the item bank's duplicate rule.
        return {
            "question": f"Which number does sentence {n} of the paragraph give?",
            "answer": answer,
            **fields,
        }

    bad = [
        ask(1, evidence=["A sentence that the document does not contain at all."]),
        ask(2, answer=two_words, evidence=[sentence]),
        ask(3, question="Which number", evidence=[sentence]),
        ask(4, question=f"Is it {answer} or not?", evidence=[sentence]),
        ask(5, answer="Zebra", evidence=[sentence]),
        ask(6, evidence=[last]) if not answer_in_text(answer, last) else None,
    ]
    questions = [q for q in bad if q is not None]
    bank = _build(documents, _scripted({"begin/begin": {"questions": questions}, "begin/middle": "no JSON"}))
    rules = bank.rejections[bank.rejections["task"] == "word_single_qa"]
    cell = rules[(rules["region"] == "begin") & (rules["position"] == "begin")]
    expected = {
        "evidence_not_in_document",
        "answer_not_one_word",
        "question_malformed",
        "answer_in_question",
        "span_not_found",  # the item bank's L1 check: the answer is not a span of the paragraph
        "no_candidate",
    }
    assert len(questions) == 6  # the demo paragraph's last sentence lacks the answer
    expected.add("answer_not_in_evidence")
    assert expected <= set(cell["rule"])
    failed = rules[(rules["region"] == "begin") & (rules["position"] == "middle")]
    assert {"unparseable", "no_candidate"} <= set(failed["rule"])
    assert any("begin/middle" in n for n in bank.notes)
    # Nothing is padded: the rejected cells have no task, the rule builder does not step in.
    words = bank.tasks[bank.tasks["task"].isin(WORD)]
    assert words.empty


def test_a_valid_scripted_question_becomes_the_task_and_repeats_are_duplicates(
    documents: tuple[pd.DataFrame, pd.DataFrame], offline_bank: Any
) -> None:
    answer, paragraph = _cell_paragraph(documents, offline_bank)
    sentence = next(s for s in paragraph.split(". ") if answer in s)
    good = {
        "question": "Which number does the paragraph about the survey give?",
        "answer": answer,
        "evidence": [sentence],
    }
    bank = _build(documents, _scripted({"begin/begin": {"questions": [good, good]}}))
    words = bank.tasks[bank.tasks["task"] == "word_single_qa"]
    assert len(words) == 1 and words.iloc[0]["gold"] == answer
    assert list(words.iloc[0]["evidence"]) == [" ".join(sentence.split())]
    assert "duplicate" in set(bank.rejections["rule"])


def test_written_tasks_survive_the_frozen_round_trip(offline_bank: Any, tmp_path: Path) -> None:
    path = tmp_path / "granularity_tasks" / "data.parquet"
    write_frame(path, offline_bank.tasks, contract="granularity_tasks")
    stored = read_frame(path)
    assert [frozen_hash(r) for r in stored.to_dict("records")] == list(offline_bank.tasks["frozen_hash"])
    kept, notes = freeze(stored, offline_bank.tasks)
    assert notes == []
    words = kept[kept["task"].isin(WORD)]
    assert all(len(e) >= 1 for e in words["evidence"])


def _long_source(root: Path, languages: list[str]) -> Path:
    """A one-document long corpus whose paragraphs hold distinct numbers (so questions can be written)."""
    (root / "articles").mkdir(parents=True, exist_ok=True)
    for lang in languages:
        paragraphs = [
            {
                "pid": f"p{i:02d}",
                "text": f"The survey of district {i} counted {100 + 37 * i} birds near the old mill. "
                + " ".join(["Observers walked the marsh paths slowly every morning before sunrise."] * 6),
            }
            for i in range(1, 21)
        ]
        record = {"doc_id": "un-1", "language": lang, "paragraphs": paragraphs}
        (root / "articles" / f"{lang}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return root


def _materialize_bank(config_dir: Path, data: Path) -> Any:
    import dagster as dg

    from clcg_pipeline.granularity.assets import build_task_bank_defs
    from clcg_pipeline.resources import StudyResource
    from clcg_pipeline.storage import ParquetIOManager
    from clcg_pipeline_tests.conftest import materialize

    config = load_config(config_dir)
    resources = {
        "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
        "io_manager": ParquetIOManager(base_path=str(data)),
    }
    assets = [a for a in build_task_bank_defs(config).assets if isinstance(a, dg.AssetsDefinition)]
    with dg.DagsterInstance.ephemeral() as instance:
        return materialize(assets, resources=resources, instance=instance, raise_on_error=False)


def test_the_task_bank_asset_asks_the_configured_word_writer(
    config_dir: Path, edit_yaml: Any, tmp_path: Path
) -> None:
    root = _long_source(tmp_path / "long", ["en", "pt"])
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt")]),
    )

    def configure(doc: dict[str, Any]) -> None:
        doc["granularity"].update(source=str(root), word_question_writer="offline-writer")
        doc["granularity"]["buckets"] = [
            {"name": "1K-4K", "min_tokens": 1000, "max_tokens": 4000, "documents": 1}
        ]

    edit_yaml(config_dir / "study.yaml", configure)
    result = _materialize_bank(config_dir, tmp_path / "data")
    assert result.success
    tasks = read_frame(tmp_path / "data" / "granularity_tasks" / "data.parquet")
    words = tasks[tasks["task"].isin(WORD)]
    assert len(words) > 0 and set(words["builder"]) == {"gran-word-question-v1+offline-writer"}
    assert set(tasks.loc[tasks["task"].isin(["cloze", "paragraph_fill"]), "role"]) <= {
        "core",
        "transitional",
        "summary",
    }
    # An id models.yaml lacks is refused when the settings are read, before any asset runs.
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(word_question_writer="nobody"))
    with pytest.raises(ConfigError, match=r"granularity\.word_question_writer 'nobody' is not a model id"):
        load_config(config_dir)
