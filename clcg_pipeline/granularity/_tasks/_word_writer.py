"""Word-level questions written by a model (``study.granularity.word_question_writer``).

MGAL's word-level questions are written by a model per category, each with the answer and
its evidence, then checked. Here the categories are MGAL's two: **Single-QA**
(``word_single_qa``: one paragraph of a region x position cell, the same paragraph order as the
rule builder's) and **Multi-QA** (``word_multi_qa``: two paragraphs of a region, the answer needs
both). The writer is asked once per cell or region for :data:`WRITER_CANDIDATES` questions with
template ``gran-word-question-v1`` through the judge runner (cached, budgeted, like the item
generator's calls); the first candidate that passes validation becomes the task.

Validation, first failure wins (the rule names the ``task_rejections`` row):

- the item bank's checks (``clcg_pipeline.items.validate_items``, the answer as an L1 span of
  the subject's paragraphs): ``missing_field``, ``unknown_pid``, ``span_not_found``,
  ``duplicate`` (the same question twice in a document);
- ``answer_not_one_word``: the answer is not one word or number;
- ``question_malformed``: fewer than four words, or not ending with a question mark;
- ``answer_in_question``: the question contains the answer;
- ``evidence_not_in_document``: an evidence span is not (whitespace-normalised) in the
  subject's paragraphs; ``evidence_too_few_paragraphs``: Multi-QA evidence from one paragraph;
- ``answer_not_in_evidence``: the answer is not a word of the evidence;
- ``gold_missing_in_language``: the answer is absent from the evidence paragraphs of some
  language (a task built from English must be answerable in every language version).

A failed call or an unreadable reply is recorded as ``unparseable``; a cell or region left
without a valid question as ``no_candidate``. Nothing is padded with rule-based questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pydantic

from clcg_pipeline.calls import JudgeTemplate
from clcg_pipeline.granularity._documents import THIRDS, split_sentences
from clcg_pipeline.granularity._tasks._base import NUMBER, TaskBuilder, sentence_position
from clcg_pipeline.granularity._validate import answer_in_text, tokens
from clcg_pipeline.items import validate_items

WRITER_CANDIDATES = 3
MIN_QUESTION_WORDS = 4
_CATEGORY_INSTRUCTIONS = {
    "word_single_qa": (
        "Category Single-QA: each question is about the one paragraph below and is answered by a "
        "single word of it (a number, a name or another single word). The evidence is the span of "
        "the paragraph, copied verbatim, that states the answer."
    ),
    "word_multi_qa": (
        "Category Multi-QA: each question needs both paragraphs below: it is answered by a single "
        "word (for example the larger of two numbers, one from each paragraph) that neither "
        "paragraph gives alone. The evidence is one span copied verbatim from each paragraph."
    ),
}


class WrittenQuestion(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    question: str
    answer: str
    evidence: list[str]


class WordQuestionReply(pydantic.BaseModel):
    """What the word-question writer returns."""

    model_config = pydantic.ConfigDict(extra="forbid")
    questions: list[WrittenQuestion]


WORD_QUESTION_TEMPLATE = JudgeTemplate(
    version="gran-word-question-v1",
    system=(
        "You write word-level reading questions about a long English document. Every question "
        "must be answerable from the given paragraph(s) alone, with an answer of exactly one word "
        "or number that occurs in them, and must not contain its answer. Reply with a JSON object "
        "only."
    ),
    user=(
        "Category: {category}\n{instructions}\n\n"
        "{paragraphs}\n\n"
        "Write {n} question(s). Reply with "
        '{{"questions": [{{"question": "...?", "answer": "...", "evidence": ["..."]}}]}} '
        "and nothing else."
    ),
    schema=WordQuestionReply,
)


def word_subjects(builder: TaskBuilder) -> list[dict[str, Any]]:
    """One writer subject per Single-QA cell and Multi-QA region of the document (its task, cell
    and paragraphs); a cell or region without the paragraphs it needs is rejected here."""
    out: list[dict[str, Any]] = []
    for region in THIRDS:
        for position in THIRDS:
            paras = builder.ordered(builder.cell(region, position), "single", region, position)
            if not paras:
                _no_paragraphs(builder, "word_single_qa", [region, position], region, position)
                continue
            out.append(_subject(builder, "word_single_qa", region, position, paras[:1]))
    for region in THIRDS:
        paras = builder.ordered(builder.cell(region), "multi", region)
        if len(paras) < 2:
            _no_paragraphs(builder, "word_multi_qa", [region], region, None)
            continue
        pair = sorted(paras[:2], key=lambda p: int(p["ordinal"]))
        out.append(_subject(builder, "word_multi_qa", region, None, pair))
    return out


def _subject(
    builder: TaskBuilder, task: str, region: str, position: str | None, paras: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "task": task,
        "region": region,
        "position": position,
        "cell": f"{region}/{position}" if position else region,
        "pids": [str(p["pid"]) for p in paras],
        "fields": {
            "category": task,
            "instructions": _CATEGORY_INSTRUCTIONS[task],
            "paragraphs": "\n\n".join(f"Paragraph {p['pid']}:\n<<<{p['text']}>>>" for p in paras),
            "n": str(WRITER_CANDIDATES),
        },
        "doc_id": builder.doc.doc_id,
    }


def _no_paragraphs(
    builder: TaskBuilder, task: str, key: list[str], region: str, position: str | None
) -> None:
    need = "a paragraph" if task == "word_single_qa" else "two paragraphs"
    where = f"{region}/{position}" if position else f"region {region}"
    builder.reject(task, key, region, position, "no_candidate", f"{where} has no {need} to ask about")


def add_written_word_tasks(
    builder: TaskBuilder,
    subjects: Sequence[dict[str, Any]],
    replies: Mapping[str, tuple[str, list[dict[str, Any]]]],
    writer_id: str,
) -> None:
    """Tasks from the writer's validated questions (first valid candidate per subject).

    ``replies``: cell -> (status or error, candidate questions) for this document's subjects.
    """
    candidates: list[dict[str, Any]] = []
    for subject in subjects:
        status, questions = replies.get(subject["cell"], ("missing: no reply", []))
        if status != "ok":
            _reject(builder, subject, [subject["cell"], "reply"], "unparseable", f"writer reply: {status}")
        candidates += [{**q, "subject": subject, "n": n} for n, q in enumerate(questions)]
    valid = _validated(builder, candidates)
    for subject in subjects:
        mine = [c for c in valid if c["subject"] is subject]
        if not mine:
            _reject(
                builder,
                subject,
                [subject["cell"]],
                "no_candidate",
                f"{subject['cell']}: none of the writer's questions passed validation",
            )
            continue
        builder.tasks.append(_task_row(builder, subject, mine[0], writer_id))


def _validated(builder: TaskBuilder, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates passing the item bank's checks, then the word-level ones; rejections recorded."""
    if not candidates:
        return []
    items = pd.DataFrame(
        [
            {
                "item_id": str(i),
                "doc_id": builder.doc.doc_id,
                "item_source": "llm",
                "level": "L1",
                "answer_format": "span",
                "question": c["question"],
                "gold_answer": c["answer"],
                "gold_answerable": True,
                "target_pids": c["subject"]["pids"],
                "supporting_pids": c["subject"]["pids"],
            }
            for i, c in enumerate(candidates)
        ]
    )
    paragraphs = builder.doc.paras[["pid", "text"]].assign(doc_id=builder.doc.doc_id)
    kept, rejections = validate_items(items, paragraphs)
    for row in rejections.itertuples(index=False):
        c = candidates[int(row.item_id)]
        _reject(builder, c["subject"], _key(c), str(row.rule), f"{c['question'][:80]!r}: {row.detail}")
    out: list[dict[str, Any]] = []
    for index in kept["item_id"].astype(int):
        c = candidates[index]
        problem = word_question_problem(builder, c)
        if problem is None:
            out.append(c)
        else:
            _reject(builder, c["subject"], _key(c), problem[0], f"{c['question'][:80]!r}: {problem[1]}")
    return out


def word_question_problem(builder: TaskBuilder, candidate: Mapping[str, Any]) -> tuple[str, str] | None:
    """(rule, detail) of the first word-level check ``candidate`` fails, else None (module doc)."""
    question, answer = str(candidate["question"]).strip(), str(candidate["answer"]).strip()
    evidence = [" ".join(str(e).split()) for e in candidate["evidence"]]
    pids: list[str] = candidate["subject"]["pids"]
    texts = {pid: " ".join(builder.doc.texts[(builder.doc.languages[0], pid)].split()) for pid in pids}
    if len(tokens(answer)) != 1:
        return "answer_not_one_word", f"answer {answer!r} is not one word"
    if len(tokens(question)) < MIN_QUESTION_WORDS or not question.rstrip("\"'”’ ").endswith("?"):
        return "question_malformed", "a question of four or more words ending with '?' is needed"
    if answer_in_text(answer, question):
        return "answer_in_question", f"the question contains its answer {answer!r}"
    found = [next((pid for pid, text in texts.items() if span and span in text), None) for span in evidence]
    homes = [pid for pid in found if pid is not None]
    if not evidence or len(homes) < len(found):
        return "evidence_not_in_document", "an evidence span is missing or not in the paragraph(s)"
    if candidate["subject"]["task"] == "word_multi_qa" and len(set(homes)) < 2:
        return "evidence_too_few_paragraphs", "Multi-QA evidence must come from both paragraphs"
    if not answer_in_text(answer, " ".join(evidence)):
        return "answer_not_in_evidence", f"answer {answer!r} is not a word of the evidence"
    missing = [
        lang
        for lang in builder.doc.languages
        if not any(answer_in_text(answer, builder.doc.texts[(lang, pid)]) for pid in set(homes))
    ]
    if missing:
        return "gold_missing_in_language", f"{answer!r} not found in {missing}"
    return None


def _task_row(
    builder: TaskBuilder, subject: Mapping[str, Any], chosen: Mapping[str, Any], writer_id: str
) -> dict[str, Any]:
    evidence = [" ".join(str(e).split()) for e in chosen["evidence"]]
    answer = str(chosen["answer"]).strip()
    pids = [p for p in subject["pids"] if any(e in " ".join(_english(builder, p).split()) for e in evidence)]
    where = _sentence_of(_english(builder, pids[0]), evidence[0]) if len(pids) == 1 else None
    answer_pid = next((p for p in pids if answer_in_text(answer, _english(builder, p))), pids[0])
    return builder.task(
        subject["task"],
        [subject["pids"], " ".join(str(chosen["question"]).split())],
        region=subject["region"],
        position=subject["position"] or _position(builder, answer_pid),
        question=str(chosen["question"]).strip(),
        gold=answer,
        evidence_pids=pids,
        builder=f"{WORD_QUESTION_TEMPLATE.version}+{writer_id}",
        sentence_index=where[0] if where else None,
        sentence_position=where[1] if where else None,
        answer_type="number" if NUMBER.fullmatch(answer) else "word",
        evidence=evidence,
    )


def _english(builder: TaskBuilder, pid: str) -> str:
    return builder.doc.texts[(builder.doc.languages[0], pid)]


def _position(builder: TaskBuilder, pid: str) -> str:
    p = builder.doc.paras
    return str(p.loc[p["pid"] == pid, "position"].iloc[0])


def _sentence_of(paragraph: str, span: str) -> tuple[int, str] | None:
    """(index, begin/middle/end) of the one sentence holding ``span``, if one does."""
    sentences = [" ".join(s.split()) for s in split_sentences(paragraph)]
    hits = [i for i, s in enumerate(sentences) if span in s]
    return (hits[0], sentence_position(hits[0], len(sentences))) if hits else None


def _key(candidate: Mapping[str, Any]) -> list[Any]:
    return [candidate["subject"]["pids"], " ".join(str(candidate["question"]).split())]


def _reject(builder: TaskBuilder, subject: Mapping[str, Any], key: list[Any], rule: str, detail: str) -> None:
    builder.reject(subject["task"], key, subject["region"], subject["position"], rule, detail)
