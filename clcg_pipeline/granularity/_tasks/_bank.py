"""The task bank of every document: the builders in a fixed order, cloze confusions in one batch."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.calls import CallOptions, JudgeTemplate, run_judge
from clcg_pipeline.config import GranularitySettings, ModelSpec
from clcg_pipeline.granularity._tasks._base import TASK_COLUMNS, TaskBuilder, documents_of
from clcg_pipeline.granularity._tasks._cloze import (
    CONFUSION_TEMPLATE,
    add_cloze,
    cloze_targets,
    confusion_fields,
)
from clcg_pipeline.granularity._tasks._document_level import add_summary, add_translation
from clcg_pipeline.granularity._tasks._fill import add_paragraph_fill
from clcg_pipeline.granularity._tasks._freeze import frozen_hash
from clcg_pipeline.granularity._tasks._word import add_word_multi_qa, add_word_single_qa
from clcg_pipeline.granularity._tasks._word_writer import (
    add_written_word_tasks,
    word_subjects,
)
from clcg_pipeline.granularity._validate import REJECTION_COLUMNS

#: One confusion-writer subject: its key columns and the template's fields.
Subject = tuple[dict[str, Any], dict[str, str]]
Writer = Callable[[list[Subject]], tuple[pd.DataFrame, pd.DataFrame]]


@dataclass(frozen=True)
class BoundWriter:
    """A writer and the model id it asks (recorded in the tasks' ``builder``)."""

    write: Writer
    model_id: str


@dataclass
class TaskBank:
    tasks: pd.DataFrame
    rejections: pd.DataFrame
    writer_calls: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def judge_writer(
    writer: ModelSpec, options: CallOptions, template: JudgeTemplate = CONFUSION_TEMPLATE
) -> Writer:
    """A :data:`Writer` that asks ``writer`` with ``template`` (the cloze confusions' by default)
    through the judge runner (cached, budgeted).

    Online only: the bank is frozen once written, and a cloze set waiting on a batch would be
    frozen without its confusions. ``options.budget``: the run's (``calls.run_budget``).
    """

    def write(subjects: list[Subject]) -> tuple[pd.DataFrame, pd.DataFrame]:
        return run_judge(writer, template, subjects, options)

    return write


def build_tasks(
    documents: pd.DataFrame,
    paragraphs: pd.DataFrame,
    settings: GranularitySettings,
    *,
    reference: str,
    tokenizer: str = "cl100k_base",
    writer: Writer | None = None,
    writer_id: str | None = None,
    word_writer: BoundWriter | None = None,
) -> TaskBank:
    """The task bank of every document (English rows of ``documents``), with its rejections.

    ``writer`` writes cloze confusions (see :func:`judge_writer`); without one, cloze tasks are
    rejected (``no_confusion_writer``). Word tasks and cloze targets of every document come
    first, so that one writer call covers every document's targets; then per document its
    cloze set, filling, summary and translation (the bank's row order).

    ``word_writer`` (template ``gran-word-question-v1``, see ``_word_writer``) writes the word
    tasks; without one they are the rule-based gap questions.
    """
    builders = [
        TaskBuilder(doc, settings, tokenizer) for doc in documents_of(documents, paragraphs, reference)
    ]
    plans: list[tuple[TaskBuilder, list[dict[str, Any]]]] = []
    subjects: list[Subject] = []
    word_plans = {b.doc.doc_id: word_subjects(b) for b in builders} if word_writer else {}
    for builder in builders:
        if word_writer is None:
            add_word_single_qa(builder)
            add_word_multi_qa(builder)
        targets = cloze_targets(builder)
        plans.append((builder, targets))
        golds = [t["target"] for t in targets]
        for t in targets:
            subjects.append(
                ({"doc_id": builder.doc.doc_id, "pid": t["pid"]}, confusion_fields(builder, t, golds))
            )
    replies, calls, notes = _write_confusions(writer, subjects)
    if word_writer is not None:
        questions, word_calls, word_notes = _write_word_questions(word_writer.write, word_plans)
        calls = pd.concat([c for c in (calls, word_calls) if len(c)] or [calls], ignore_index=True)
        notes += word_notes
        for builder in builders:
            doc_questions = {cell: r for (d, cell), r in questions.items() if d == builder.doc.doc_id}
            add_written_word_tasks(
                builder, word_plans[builder.doc.doc_id], doc_questions, word_writer.model_id
            )
    for builder, targets in plans:
        if writer is None:
            builder.reject(
                "cloze",
                ["group"],
                None,
                None,
                "no_confusion_writer",
                "study.granularity.confusion_writer is null",
            )
        else:
            doc_replies = {pid: r for (d, pid), r in replies.items() if d == builder.doc.doc_id}
            add_cloze(builder, targets, doc_replies, writer_id or "writer")
        add_paragraph_fill(builder)
        add_summary(builder)
        add_translation(builder)
    return _bank(builders, calls, notes)


def _write_confusions(
    writer: Writer | None, subjects: list[Subject]
) -> tuple[dict[tuple[str, str], list[str]], pd.DataFrame, list[str]]:
    """The writer's candidate confusions per (doc_id, pid), its calls, and a note per failed reply."""
    calls = pd.DataFrame()
    replies: dict[tuple[str, str], list[str]] = {}
    notes: list[str] = []
    if writer is not None and subjects:
        judgements, calls = writer(subjects)
        for row in judgements.itertuples(index=False):
            if row.status == "ok" and row.judgement:
                replies[(row.doc_id, row.pid)] = list(json.loads(row.judgement)["confusions"])
            else:
                notes.append(f"confusion writer: {row.doc_id} {row.pid}: {row.status} ({row.error})")
    return replies, calls, notes


def _write_word_questions(
    writer: Writer, plans: dict[str, list[dict[str, Any]]]
) -> tuple[dict[tuple[str, str], tuple[str, list[dict[str, Any]]]], pd.DataFrame, list[str]]:
    """The writer's (status, questions) per (doc_id, cell), its calls, and a note per failed reply."""
    subjects: list[Subject] = [
        ({"doc_id": doc_id, "cell": s["cell"]}, s["fields"]) for doc_id, plan in plans.items() for s in plan
    ]
    if not subjects:
        return {}, pd.DataFrame(), []
    judgements, calls = writer(subjects)
    replies: dict[tuple[str, str], tuple[str, list[dict[str, Any]]]] = {}
    notes: list[str] = []
    for row in judgements.itertuples(index=False):
        if row.status == "ok" and row.judgement:
            replies[(row.doc_id, row.cell)] = ("ok", list(json.loads(row.judgement)["questions"]))
        else:
            replies[(row.doc_id, row.cell)] = (f"{row.status} ({row.error})", [])
            notes.append(f"word-question writer: {row.doc_id} {row.cell}: {row.status} ({row.error})")
    return replies, calls, notes


def _bank(builders: list[TaskBuilder], calls: pd.DataFrame, notes: list[str]) -> TaskBank:
    """Every builder's rows (hashed) and rejections (deduplicated) as the bank's tables."""
    rows = [t for b in builders for t in b.tasks]
    for row in rows:
        row["frozen_hash"] = frozen_hash(row)
    tasks = pd.DataFrame(rows, columns=TASK_COLUMNS)
    tasks["sentence_index"] = tasks["sentence_index"].astype("Int64")
    tasks["max_output_tokens"] = tasks["max_output_tokens"].astype("int64")
    rejections = pd.DataFrame([r for b in builders for r in b.rejections], columns=REJECTION_COLUMNS)
    rejections = rejections.drop_duplicates().reset_index(drop=True)
    return TaskBank(tasks, rejections, calls, [*notes, *(n for b in builders for n in b.notes)])
