"""The granularity task bank: rules, option sets, confusion validation, freezing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions, render_judge_request
from clcg_pipeline.config import ConditionSettings, GranularityBucket, GranularitySettings, load_config
from clcg_pipeline.corpus import audit_corpus, load_source_cached
from clcg_pipeline.granularity._documents import assemble_documents, load_long_documents, split_sentences
from clcg_pipeline.granularity._tasks import (
    CONFUSION_TEMPLATE,
    build_tasks,
    cloze_counts,
    fill_per_region,
    freeze,
    frozen_hash,
    judge_writer,
    write_confusion_offline,
)
from clcg_pipeline.granularity._validate import answer_in_text, confusion_problem
from clcg_pipeline.storage import conform

DEMO = Path(__file__).resolve().parents[2] / "assets_config"
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
    audit = audit_corpus(tables.articles, tables.paragraphs, reference="en", threshold=0.9)
    result = assemble_documents(tables.paragraphs, audit, SETTINGS, languages=LANGS, reference="en")
    return result.documents, result.paragraphs


@pytest.fixture(scope="module")
def bank(documents: tuple[pd.DataFrame, pd.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> Any:
    config = load_config(DEMO)
    writer = config.models.get("offline-writer")
    cache = str(tmp_path_factory.mktemp("cache"))
    return build_tasks(
        *documents,
        SETTINGS,
        reference="en",
        writer=judge_writer(writer, CallOptions(cache_dir=cache)),
        writer_id=writer.id,
    )


def test_the_demo_bank_has_every_task_kind_and_fits_the_contract(bank: Any) -> None:
    tasks = bank.tasks
    conform("granularity_tasks", tasks)
    conform("task_rejections", bank.rejections)
    per_doc = tasks.groupby("doc_id")["task"].apply(set)
    for kinds in per_doc:
        assert kinds == {"word_single_qa", "word_multi_qa", "cloze", "paragraph_fill", "translation"}
    assert tasks["task_id"].is_unique
    assert (tasks["max_output_tokens"] > 0).all()
    # Assembled documents have no summary: the task is skipped with the reason, never silently.
    summary = bank.rejections[bank.rejections["task"] == "summary"]
    assert set(summary["rule"]) == {"no_source_summary"} and len(summary) == 3
    # One writer call per cloze target, through the runner (the calls table's shape).
    assert len(bank.writer_calls) == (tasks["task"] == "cloze").sum()
    assert set(bank.writer_calls["prompt_version"]) == {"cloze-confusion-v1"}


def test_word_answers_are_in_the_evidence_of_every_language(
    bank: Any, documents: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    _, paragraphs = documents
    text = {(r.doc_id, r.language, r.pid): r.text for r in paragraphs.itertuples()}
    words = bank.tasks[bank.tasks["task"].isin(["word_single_qa", "word_multi_qa"])]
    assert len(words) >= 30
    for row in words.itertuples():
        assert "____" in row.question and row.gold not in row.question.replace("____", "")
        for language in LANGS:
            assert any(
                answer_in_text(row.gold, text[(row.doc_id, language, pid)]) for pid in row.evidence_pids
            )
    multi = words[words["task"] == "word_multi_qa"]
    assert (multi["evidence_pids"].map(len) == 2).all()
    assert (multi["evidence_pids"].map(lambda p: p[0] != p[1])).all()


def test_word_single_qa_covers_every_region_and_position(bank: Any) -> None:
    single = bank.tasks[bank.tasks["task"] == "word_single_qa"]
    for _, group in single.groupby("doc_id"):
        assert len(set(zip(group["region"], group["position"], strict=True))) == 9


def test_option_set_sizes_follow_document_length() -> None:
    assert cloze_counts(9000) == (9, 1)
    assert cloze_counts(16000) == (9, 1)
    assert cloze_counts(20000) == (12, 2)
    assert cloze_counts(1300) == (3, 1)
    assert cloze_counts(6000) == (4, 1)
    assert [fill_per_region(n) for n in (2000, 9000, 20000)] == [1, 2, 3]


def test_cloze_groups_have_the_right_option_set_and_stratified_blanks(
    bank: Any, documents: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    docs, paragraphs = documents
    cloze = bank.tasks[bank.tasks["task"] == "cloze"]
    en_tokens = docs[docs["language"] == "en"].set_index("doc_id")["n_tokens"]
    for group_id, group in cloze.groupby("group_id"):
        n_gold, n_conf = cloze_counts(int(en_tokens[group["doc_id"].iloc[0]]))
        assert len(group) == n_gold
        options = group["options"].iloc[0]
        assert all(list(o) == list(options) for o in group["options"])
        assert len(options) == n_gold + n_conf
        assert set(group["gold"]) <= set(options)
        assert set(group["region"]) == {"begin", "middle", "end"}
        assert set(group["position"]) == {"begin", "middle", "end"}  # the diagonal cells first
        assert group["blank_pids"].map(tuple).is_unique  # at most one blank per paragraph
        # The blank's sentence index finds the same-numbered sentence in every language.
        for row in group.itertuples():
            (pid,) = row.blank_pids
            en = paragraphs[(paragraphs["doc_id"] == row.doc_id) & (paragraphs["pid"] == pid)]
            counts = {len(split_sentences(t)) for t in en["text"]}
            assert len(counts) == 1
            english = en[en["language"] == "en"]["text"].iloc[0]
            assert split_sentences(english)[row.sentence_index] == row.gold
        confusions = [o for o in options if o not in set(group["gold"])]
        for confusion in confusions:
            assert confusion_problem(confusion, list(group["gold"]), []) is None, (group_id, confusion)


def test_confusion_validation_rejects_a_duplicate_of_a_gold_option() -> None:
    golds = ["Members voted 412 to 57 in favour of the plan.", "The work began in March 2018."]
    assert confusion_problem(golds[1], golds, [])[0] == "confusion_identical"  # type: ignore[index]
    assert confusion_problem("  the WORK began in march 2018. ", golds, [])[0] == "confusion_identical"  # type: ignore[index]
    # Only function words or punctuation changed: the same content, a near-duplicate.
    near = confusion_problem("The work began in March 2018!", golds, [])
    assert near is not None and near[0] == "confusion_near_duplicate"
    assert confusion_problem("Members voted 412 to 75 in favour of the plan.", golds, []) is None
    assert confusion_problem("Members voted 412 to 75 in favour of the plan.", golds, [], max_overlap=0.8)[
        0
    ] == (  # type: ignore[index]
        "confusion_near_duplicate"
    )
    in_doc = confusion_problem("The audit found leaks in 2016.", golds, ["The audit found leaks in 2016."])
    assert in_doc is not None and in_doc[0] == "confusion_in_document"
    assert confusion_problem("Too short.", golds, [])[0] == "confusion_too_short"  # type: ignore[index]


def test_a_writer_copying_gold_options_gets_rejections_and_no_cloze(
    documents: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    docs, paragraphs = documents
    one = docs[docs["doc_id"] == "long-1k-2k-01"]
    copying = build_tasks(one, paragraphs, SETTINGS, reference="en", writer=_parrot(), writer_id="parrot")
    assert not (copying.tasks["task"] == "cloze").any()
    rules = set(copying.rejections.loc[copying.rejections["task"] == "cloze", "rule"])
    assert {"confusion_identical", "too_few_confusions"} <= rules


def _parrot() -> Any:
    """A writer that returns the target sentence itself (a duplicate of a gold option)."""

    def write(subjects: list[tuple[dict[str, Any], dict[str, str]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = [
            {
                **keys,
                "status": "ok",
                "error": None,
                "judgement": json.dumps({"confusions": [fields["target"]]}),
            }
            for keys, fields in subjects
        ]
        return pd.DataFrame(rows), pd.DataFrame()

    return write


def test_a_duplicate_is_skipped_and_the_next_candidate_used(
    documents: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    docs, paragraphs = documents
    one = docs[docs["doc_id"] == "long-1k-2k-01"]

    def write(subjects: list[tuple[dict[str, Any], dict[str, str]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = [
            {
                **keys,
                "status": "ok",
                "error": None,
                "judgement": json.dumps(
                    {
                        "confusions": [
                            fields["target"],
                            "The marsh was drained in 1850 to build a new harbour.",
                        ]
                    }
                ),
            }
            for keys, fields in subjects
        ]
        return pd.DataFrame(rows), pd.DataFrame()

    result = build_tasks(one, paragraphs, SETTINGS, reference="en", writer=write, writer_id="w")
    cloze = result.tasks[result.tasks["task"] == "cloze"]
    assert "The marsh was drained in 1850 to build a new harbour." in cloze["options"].iloc[0]
    assert "confusion_identical" in set(result.rejections["rule"])


def test_without_a_writer_cloze_is_rejected_with_the_reason(
    documents: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    docs, paragraphs = documents
    result = build_tasks(docs, paragraphs, SETTINGS, reference="en")
    assert not (result.tasks["task"] == "cloze").any()
    assert "no_confusion_writer" in set(result.rejections["rule"])


def test_frozen_ids_and_hashes_are_stable(
    bank: Any, documents: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    config = load_config(DEMO)
    writer = config.models.get("offline-writer")
    again = build_tasks(
        *documents,
        SETTINGS,
        reference="en",
        writer=judge_writer(writer, CallOptions(cache_dir=str(tmp_path))),
        writer_id=writer.id,
    )
    pd.testing.assert_frame_equal(again.tasks, bank.tasks)
    assert again.tasks["frozen_hash"].is_unique
    # A stored bank is kept for unchanged documents, replaced for a changed one.
    stored = bank.tasks.copy()
    differs = again.tasks.copy()
    first = differs["doc_id"] == "long-1k-2k-01"
    differs.loc[first, "question"] = "a different rebuild"
    differs.loc[first, "frozen_hash"] = [frozen_hash(r) for r in differs[first].to_dict("records")]
    kept, notes = freeze(stored, differs)
    pd.testing.assert_frame_equal(kept, stored)
    assert any("long-1k-2k-01: stored tasks kept (frozen)" in n for n in notes)
    # A changed document takes the rebuilt tasks.
    changed = stored.copy()
    changed.loc[changed["doc_id"] == "long-1k-2k-01", "doc_hash"] = "old"
    rebuilt, notes = freeze(changed, differs)
    assert (rebuilt.loc[rebuilt["doc_id"] == "long-1k-2k-01", "question"] == "a different rebuild").all()
    assert any("long-1k-2k-01: document changed" in n for n in notes)
    # A stored row edited by hand no longer matches its hash, and says so.
    edited = stored.copy()
    edited.loc[0, "gold"] = "edited"
    _, notes = freeze(edited, again.tasks)
    assert any("no longer match their frozen_hash" in n for n in notes)


def test_offline_writer_swaps_a_detail_and_is_deterministic() -> None:
    fields = {
        "n": "3",
        "before": "In 2016 the cooperative recorded 41 burst mains.",
        "paragraph": "At a general meeting in May 2017, members voted 412 to 57 in favour. Arlen spoke.",
        "after": "The Hollin Hill reservoir holds water.",
        "target": "At a general meeting in May 2017, members voted 412 to 57 in favour.",
        "others": "",
    }
    request = render_judge_request(CONFUSION_TEMPLATE, fields, settings=ConditionSettings(temperature=0))
    config = load_config(DEMO)
    spec = config.models.get("offline-writer")
    reply = json.loads(write_confusion_offline(request, spec))
    assert reply == json.loads(write_confusion_offline(request, spec))
    confusions = reply["confusions"]
    assert confusions and all(c != fields["target"] for c in confusions)
    assert any("41" in c or "2016" in c for c in confusions)  # a number of the nearby paragraphs
    for confusion in confusions:
        assert confusion_problem(confusion, [fields["target"]], []) is None


def test_a_source_summary_becomes_a_summary_task(tmp_path: Path) -> None:
    text = (
        "The council met on 12 May to discuss the harbour. Mayor Olsen opened the meeting with a "
        "report on the 45 boats moored there. Members asked about repairs to the north wall."
    )
    for lang, summary in (
        ("en", "The council discussed the harbour."),
        ("pt", "O conselho discutiu o porto."),
    ):
        record = {
            "doc_id": "un-1",
            "language": lang,
            "summary": summary,
            "paragraphs": [{"pid": f"p{i:02d}", "text": f"{text} Item {i}."} for i in range(1, 13)],
        }
        (tmp_path / "articles").mkdir(exist_ok=True)
        (tmp_path / "articles" / f"{lang}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    settings = GranularitySettings(
        enabled=True,
        source=str(tmp_path),
        buckets=[GranularityBucket(name="small", min_tokens=100, max_tokens=2000, documents=1)],
    )
    docs = load_long_documents(str(tmp_path), settings, languages=["en", "pt"], reference="en", threshold=0.9)
    bank = build_tasks(docs.documents, docs.paragraphs, settings, reference="en")
    (summary,) = bank.tasks[bank.tasks["task"] == "summary"].itertuples()
    assert summary.gold == "The council discussed the harbour."
    assert summary.region is None and summary.position is None and summary.granularity == "document"
    assert "no_source_summary" not in set(bank.rejections["rule"])
