"""The granularity task bank: built once from English, validated, frozen (STUDY.md section 8).

Every task is built from the English version of a long document and refers to paragraphs by
``pid``, which is the same in every language, so one bank serves every language. One row per
task; a cloze document prompt has one row per blank sharing a ``group_id``.

Rules (rule-based builders; no model writes a question):

- **word_single_qa** (word level), one per region x position cell: a sentence of a paragraph
  in the cell with one distinctive word removed (a number first, else a capitalised name that
  does not open the sentence); the question is the sentence with the gap; the answer is the
  word. The answer must occur in the aligned paragraph of every language (numbers compared by
  digits), which keeps mostly numbers and names that survive translation.
- **word_multi_qa** (word level), one per region: two sentences from two different paragraphs
  of the region, each with a number removed; the question asks for the larger missing number,
  so both evidence paragraphs are needed; the answer is that number as English writes it.
- **cloze** (sentence level): target sentences blanked in place, at most one per paragraph,
  spread over region x paragraph position (the diagonal cells first, so three targets cover
  every region and every position) and cycling the sentence's place in its paragraph. Gold
  targets per document: 9 for 8K-16K English tokens, 12 above 16K; confusions: 1 and 2
  (MGAL). Below 8K (the demo) the gold count scales with length, ``max(3, round(9 x
  tokens / 12000))`` (12K is the middle of 8K-16K), with 1 confusion. The blank is the
  paragraph's ``sentence_index``-th sentence (:func:`~._documents.blank_sentence`); a
  paragraph whose sentence count differs in any language is not used. Options are the
  English gold sentences plus the confusions, shuffled with the seed (English options for
  every language, as the study's questions are English). Confusions are written by
  ``study.granularity.confusion_writer`` through the judge runner (template
  ``cloze-confusion-v1``) and validated against every gold option (_validate.py).
- **paragraph_fill** (paragraph level): per region 1 paragraph below 8K tokens, 2 for
  8K-16K, 3 above; a paragraph with a neighbour on each side (``context_pids``), never next
  to another target; the reference in a language is that language's paragraph.
- **summary** (document level): only when the source document has its own summary (the JSONL
  source's ``summary``). Assembled documents have none, and their articles' titles or leads
  summarise a member article, not the document, so the task is skipped with the rule
  ``no_source_summary``.
- **translation** (document level): one excerpt per region, consecutive English paragraphs
  within the region of at most ``translation_excerpt_tokens`` tokens; the question is the
  English excerpt, the reference the aligned paragraphs of the target language (gold is null:
  it depends on the language); not asked in English.

``task_id`` is a hash of what identifies the task (document, kind, pids, sentence); the
``frozen_hash`` covers its full content, so a rebuild from the same inputs gives identical ids
and hashes, and a changed task is visible.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pydantic

from clcg_pipeline.calls import Budget, ChatRequest, JudgeTemplate, run_judge
from clcg_pipeline.config import GranularitySettings, ModelSpec
from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity._documents import THIRDS, split_sentences, text_hash
from clcg_pipeline.granularity._validate import (
    MIN_WORDS,
    REJECTION_COLUMNS,
    answer_in_text,
    confusion_problem,
    tokens,
)

TASK_COLUMNS = [
    "task_id",
    "group_id",
    "doc_id",
    "task",
    "granularity",
    "region",
    "position",
    "question",
    "gold",
    "options",
    "blank_pids",
    "evidence_pids",
    "max_output_tokens",
    "builder",
    "frozen_hash",
    # beyond the contract
    "bucket",
    "sentence_index",
    "sentence_position",
    "marker",
    "context_pids",
    "answer_type",
    "doc_hash",
]
GRANULARITY = {
    "word_single_qa": "word",
    "word_multi_qa": "word",
    "cloze": "sentence",
    "paragraph_fill": "paragraph",
    "summary": "document",
    "translation": "document",
}
GAP = "____"
WORD_MAX_OUTPUT_TOKENS = 16
CLOZE_MAX_OUTPUT_TOKENS = 16  # per blank; a group's prompt gets the sum
# Generated text is capped at this many times its English reference's tokens. The cap is in
# English tokens: other scripts take several times the tokens for the same text (Georgian
# ~9x in cl100k_base on the demo), so a call in another language should scale it by that
# language's tokenizer fertility (tokenizer_fertility_by_language), or Georgian is truncated.
OUTPUT_FACTOR = 4
# The diagonal first: three targets cover every region and every position.
CELL_ORDER: tuple[tuple[str, str], ...] = (
    ("begin", "begin"),
    ("middle", "middle"),
    ("end", "end"),
    ("begin", "middle"),
    ("middle", "end"),
    ("end", "begin"),
    ("begin", "end"),
    ("middle", "begin"),
    ("end", "middle"),
)
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,]*\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w]|[.,]\d)")
_NAME = re.compile(r"(?<![\w'’-])[A-Z][a-z]{2,}(?![\w'’-])")


class ConfusionReply(pydantic.BaseModel):
    """What the confusion writer returns."""

    model_config = pydantic.ConfigDict(extra="forbid")
    confusions: list[str]


CONFUSION_TEMPLATE = JudgeTemplate(
    version="cloze-confusion-v1",
    system=(
        "You write distractor sentences for a sentence-level cloze test on a long document. A "
        "distractor stays on the topic of the target sentence and its paragraph but is wrong at "
        "the blank: change a detail (a number, a name, a date, a cause or a negation) so that it "
        "contradicts the document. Never copy or paraphrase any correct option. Reply with a JSON "
        "object only."
    ),
    user=(
        "Write {n} distractor sentence(s) for the target sentence.\n\n"
        "Paragraph before:\n<<<{before}>>>\n\n"
        "Paragraph with the target sentence:\n<<<{paragraph}>>>\n\n"
        "Paragraph after:\n<<<{after}>>>\n\n"
        "Target sentence (the correct answer at the blank):\n<<<{target}>>>\n\n"
        "Other correct options (every distractor must differ from each):\n<<<{others}>>>\n\n"
        'Reply with {{"confusions": ["...", "..."]}} and nothing else.'
    ),
    schema=ConfusionReply,
)
WRITER_CANDIDATES = 3  # distractors asked per target; the first valid one is used


@dataclass
class TaskBank:
    tasks: pd.DataFrame
    rejections: pd.DataFrame
    writer_calls: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _sha(obj: object) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """A cell as the builder made it: a bank read back from Parquet has numpy arrays for lists,
    numpy scalars, and NaN / <NA> or whole floats in nullable integer columns (sentence_index)."""
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def frozen_hash(row: Mapping[str, Any]) -> str:
    """sha256 of a task's content (every column but the hash itself and the doc hash)."""
    content = {k: _plain(v) for k, v in row.items() if k not in ("frozen_hash", "doc_hash")}
    return _sha(content)


def _rng(seed: int, *parts: object) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))


def _size(n_tokens: int) -> str:
    return "long" if n_tokens > 16000 else "mid" if n_tokens >= 8000 else "short"


def cloze_counts(n_tokens: int) -> tuple[int, int]:
    """(gold targets, confusions) of a document of ``n_tokens`` English tokens (see module doc)."""
    size = _size(n_tokens)
    if size == "long":
        return 12, 2
    if size == "mid":
        return 9, 1
    return max(3, round(9 * n_tokens / 12000)), 1


def fill_per_region(n_tokens: int) -> int:
    return {"long": 3, "mid": 2, "short": 1}[_size(n_tokens)]


def sentence_position(index: int, n: int) -> str:
    return "begin" if index == 0 else "end" if index == n - 1 else "middle"


@dataclass
class _Doc:
    doc_id: str
    bucket: str
    n_tokens: int
    summary: str | None
    paras: pd.DataFrame  # English rows, by ordinal
    texts: dict[tuple[str, str], str]  # (language, pid) -> text
    languages: list[str]
    doc_hash: str

    def sentences(self) -> list[str]:
        return [s for t in self.paras["text"] for s in split_sentences(t)]


class _Builder:
    def __init__(self, doc: _Doc, settings: GranularitySettings, tokenizer: str) -> None:
        self.doc = doc
        self.settings = settings
        self.tokenizer = tokenizer
        self.tasks: list[dict[str, Any]] = []
        self.rejections: list[dict[str, Any]] = []
        self._all_sentences = [" ".join(s.split()) for s in doc.sentences()]

    # -- rows ---------------------------------------------------------------------------------
    def task(self, task: str, key: object, **fields: Any) -> dict[str, Any]:
        task_id = f"{self.doc.doc_id}:{task}:{_sha([self.doc.doc_id, task, key])[:12]}"
        row: dict[str, Any] = {
            "task_id": task_id,
            "group_id": task_id,
            "doc_id": self.doc.doc_id,
            "task": task,
            "granularity": GRANULARITY[task],
            "region": None,
            "position": None,
            "question": "",
            "gold": None,
            "options": [],
            "blank_pids": [],
            "evidence_pids": [],
            "max_output_tokens": WORD_MAX_OUTPUT_TOKENS,
            "builder": "",
            "frozen_hash": "",
            "bucket": self.doc.bucket,
            "sentence_index": None,
            "sentence_position": None,
            "marker": None,
            "context_pids": [],
            "answer_type": None,
            "doc_hash": self.doc.doc_hash,
        }
        row.update(fields)
        return row

    def reject(
        self, task: str, key: object, region: str | None, position: str | None, rule: str, detail: str
    ) -> None:
        self.rejections.append(
            {
                "task_id": f"{self.doc.doc_id}:{task}:{_sha([self.doc.doc_id, task, key])[:12]}",
                "doc_id": self.doc.doc_id,
                "task": task,
                "granularity": GRANULARITY[task],
                "region": region,
                "position": position,
                "rule": rule,
                "detail": detail,
            }
        )

    def cell(self, region: str, position: str | None = None) -> pd.DataFrame:
        p = self.doc.paras
        mask = p["region"] == region
        if position is not None:
            mask &= p["position"] == position
        return p[mask]

    def ordered(self, frame: pd.DataFrame, *salt: object) -> list[dict[str, Any]]:
        rows = frame.to_dict("records")
        _rng(self.settings.seed, self.doc.doc_id, *salt).shuffle(rows)
        return rows

    def missing_languages(self, pid: str, answer: str) -> list[str]:
        return [
            lang for lang in self.doc.languages if not answer_in_text(answer, self.doc.texts[(lang, pid)])
        ]

    # -- word level ---------------------------------------------------------------------------
    def word_candidates(self, para: dict[str, Any], task: str = "word_single_qa") -> list[dict[str, Any]]:
        """Validated (sentence, answer) candidates of one paragraph; rejections recorded."""
        out: list[dict[str, Any]] = []
        pid = para["pid"]
        for s_index, sentence in enumerate(split_sentences(para["text"])):
            found = [(m, "number") for m in _NUMBER.finditer(sentence)]
            if task == "word_single_qa":
                found += [(m, "name") for m in _NAME.finditer(sentence) if m.start() > 0]
            for match, kind in found:
                answer = match.group(0)
                key = [pid, s_index, answer]
                masked = sentence[: match.start()] + GAP + sentence[match.end() :]
                if len(tokens(sentence)) < MIN_WORDS:
                    rule, detail = "sentence_too_short", f"{pid}: {sentence[:80]!r}"
                elif sum(1 for t in tokens(sentence) if t == answer.lower()) > 1:
                    rule, detail = "answer_repeated", f"{pid}: {answer!r} occurs twice in its sentence"
                elif self._all_sentences.count(" ".join(sentence.split())) > 1:
                    rule, detail = "sentence_not_unique", f"{pid}: {sentence[:80]!r}"
                elif missing := self.missing_languages(pid, answer):
                    rule, detail = "gold_missing_in_language", f"{pid}: {answer!r} not found in {missing}"
                else:
                    out.append(
                        {
                            "pid": pid,
                            "sentence_index": s_index,
                            "n_sentences": len(split_sentences(para["text"])),
                            "answer": answer,
                            "masked": " ".join(masked.split()),
                            "kind": kind,
                            "region": para["region"],
                            "position": para["position"],
                        }
                    )
                    continue
                self.reject(task, key, para["region"], para["position"], rule, detail)
        # Numbers first: they survive translation and are the most distinctive.
        return sorted(out, key=lambda c: c["kind"] != "number")

    def word_single_qa(self) -> None:
        for region in THIRDS:
            for position in THIRDS:
                chosen = None
                for para in self.ordered(self.cell(region, position), "single", region, position):
                    candidates = self.word_candidates(para)
                    if candidates:
                        chosen = candidates[0]
                        break
                if chosen is None:
                    self.reject(
                        "word_single_qa",
                        [region, position],
                        region,
                        position,
                        "no_candidate",
                        f"no paragraph of {region}/{position} has a valid sentence with a distinctive word",
                    )
                    continue
                self.tasks.append(
                    self.task(
                        "word_single_qa",
                        [chosen["pid"], chosen["sentence_index"], chosen["answer"]],
                        region=region,
                        position=position,
                        question="Which single word fills the gap in this sentence of the document: "
                        f'"{chosen["masked"]}"',
                        gold=chosen["answer"],
                        evidence_pids=[chosen["pid"]],
                        builder="rule-word-qa-v1",
                        sentence_index=chosen["sentence_index"],
                        sentence_position=sentence_position(chosen["sentence_index"], chosen["n_sentences"]),
                        answer_type=chosen["kind"],
                    )
                )

    def word_multi_qa(self) -> None:
        for region in THIRDS:
            pool: list[dict[str, Any]] = []
            for para in self.ordered(self.cell(region), "multi", region):
                candidates = self.word_candidates(para, "word_multi_qa")
                if candidates:
                    pool.append(candidates[0])
            pair = None
            for i, first in enumerate(pool):
                for second in pool[i + 1 :]:
                    if _value(first["answer"]) != _value(second["answer"]):
                        pair = (first, second)
                        break
                if pair:
                    break
            if pair is None:
                self.reject(
                    "word_multi_qa",
                    [region],
                    region,
                    None,
                    "no_candidate",
                    f"region {region}: fewer than two paragraphs with a valid sentence holding "
                    "distinct numbers",
                )
                continue
            first, second = sorted(pair, key=lambda c: self._ordinal(c["pid"]))
            larger = max(pair, key=lambda c: _value(c["answer"]))
            self.tasks.append(
                self.task(
                    "word_multi_qa",
                    [first["pid"], first["sentence_index"], second["pid"], second["sentence_index"]],
                    region=region,
                    position=larger["position"],
                    question=(
                        "Two sentences of the document each have a number replaced by a gap: "
                        f'(1) "{first["masked"]}" (2) "{second["masked"]}" '
                        "Which is the larger of the two missing numbers?"
                    ),
                    gold=larger["answer"],
                    evidence_pids=[first["pid"], second["pid"]],
                    builder="rule-word-qa-v1",
                    answer_type="number",
                )
            )

    def _ordinal(self, pid: str) -> int:
        p = self.doc.paras
        return int(p.loc[p["pid"] == pid, "ordinal"].iloc[0])

    # -- sentence level -----------------------------------------------------------------------
    def cloze_targets(self) -> list[dict[str, Any]]:
        n_gold, _ = cloze_counts(self.doc.n_tokens)
        used: set[str] = set()
        targets: list[dict[str, Any]] = []
        cells = [CELL_ORDER[i % len(CELL_ORDER)] for i in range(n_gold)]
        for k, (region, position) in enumerate(cells):
            want = THIRDS[k % 3]  # cycle the sentence's place in its paragraph
            best: dict[str, Any] | None = None
            for para in self.ordered(self.cell(region, position), "cloze", region, position, k):
                if para["pid"] in used:
                    continue
                sentences = split_sentences(para["text"])
                counts = {
                    lang: len(split_sentences(self.doc.texts[(lang, para["pid"])]))
                    for lang in self.doc.languages
                }
                off = sorted(lang for lang, n in counts.items() if n != len(sentences))
                if off:
                    self.reject(
                        "cloze",
                        [para["pid"]],
                        region,
                        position,
                        "sentence_count_mismatch",
                        f"{para['pid']}: {len(sentences)} sentence(s) in English, "
                        + ", ".join(f"{lang} {counts[lang]}" for lang in off),
                    )
                    continue
                eligible = [
                    i
                    for i, s in enumerate(sentences)
                    if len(tokens(s)) >= MIN_WORDS and self._all_sentences.count(" ".join(s.split())) == 1
                ]
                if not eligible:
                    self.reject(
                        "cloze",
                        [para["pid"]],
                        region,
                        position,
                        "sentence_too_short",
                        f"{para['pid']}: no sentence",
                    )
                    continue
                preferred = [i for i in eligible if sentence_position(i, len(sentences)) == want]
                index = (preferred or eligible)[0]
                best = {
                    "pid": para["pid"],
                    "region": region,
                    "position": position,
                    "sentence_index": index,
                    "sentence_position": sentence_position(index, len(sentences)),
                    "target": " ".join(sentences[index].split()),
                    "paragraph": para["text"],
                    "ordinal": int(para["ordinal"]),
                }
                break
            if best is None:
                self.reject(
                    "cloze",
                    [region, position, k],
                    region,
                    position,
                    "no_candidate",
                    f"no unused paragraph of {region}/{position} has a sentence to blank",
                )
                continue
            used.add(best["pid"])
            targets.append(best)
        return sorted(targets, key=lambda t: t["ordinal"])

    def neighbour(self, ordinal: int, step: int) -> dict[str, Any] | None:
        p = self.doc.paras
        hit = p[p["ordinal"] == ordinal + step]
        return hit.iloc[0].to_dict() if len(hit) else None

    def confusion_fields(self, target: dict[str, Any], golds: Sequence[str]) -> dict[str, str]:
        before = self.neighbour(target["ordinal"], -1)
        after = self.neighbour(target["ordinal"], 1)
        return {
            "n": str(WRITER_CANDIDATES),
            "before": before["text"] if before else "",
            "paragraph": target["paragraph"],
            "after": after["text"] if after else "",
            "target": target["target"],
            "others": "\n".join(g for g in golds if g != target["target"]),
        }

    def cloze_rows(
        self, targets: list[dict[str, Any]], replies: Mapping[str, list[str]], writer_id: str
    ) -> None:
        """Option sets from the gold targets and the writer's replies (pid -> candidate list)."""
        _, n_conf = cloze_counts(self.doc.n_tokens)
        golds = [t["target"] for t in targets]
        sentences = self._all_sentences
        confusions: list[str] = []
        order = list(targets)
        _rng(self.settings.seed, self.doc.doc_id, "confusion-order").shuffle(order)
        for target in order:
            if len(confusions) >= n_conf:
                break
            for candidate in replies.get(target["pid"], []):
                problem = confusion_problem(
                    candidate, golds + confusions, sentences, max_overlap=self.settings.near_duplicate_overlap
                )
                if problem is None:
                    confusions.append(" ".join(candidate.split()))
                    break
                self.reject(
                    "cloze",
                    [target["pid"], "confusion", candidate],
                    target["region"],
                    target["position"],
                    problem[0],
                    f"{target['pid']}: {problem[1]}",
                )
        if len(targets) < 3 or len(confusions) < n_conf:
            self.reject(
                "cloze",
                ["group"],
                None,
                None,
                "too_few_confusions" if len(targets) >= 3 else "no_candidate",
                f"{len(targets)} gold target(s) (need 3 or more) and {len(confusions)} valid confusion(s) "
                f"(need {n_conf}); the document has no cloze task",
            )
            return
        options = golds + confusions
        _rng(self.settings.seed, self.doc.doc_id, "options").shuffle(options)
        group_id = f"{self.doc.doc_id}:cloze"
        for number, target in enumerate(targets, start=1):
            marker = f"[BLANK {number}]"
            self.tasks.append(
                self.task(
                    "cloze",
                    [target["pid"], target["sentence_index"]],
                    group_id=group_id,
                    region=target["region"],
                    position=target["position"],
                    question=f"Which option fills {marker}?",
                    gold=target["target"],
                    options=list(options),
                    blank_pids=[target["pid"]],
                    evidence_pids=[target["pid"]],
                    max_output_tokens=CLOZE_MAX_OUTPUT_TOKENS,
                    builder=f"rule-cloze-v1+{writer_id}",
                    sentence_index=target["sentence_index"],
                    sentence_position=target["sentence_position"],
                    marker=marker,
                    answer_type="sentence",
                )
            )

    # -- paragraph level ----------------------------------------------------------------------
    def paragraph_fill(self) -> None:
        per_region = fill_per_region(self.doc.n_tokens)
        p = self.doc.paras
        last = int(p["ordinal"].max())
        chosen: set[int] = set()
        for region in THIRDS:
            got = 0
            for k in range(per_region):
                want = THIRDS[(k + 1) % 3] if per_region == 1 else THIRDS[k % 3]
                candidates = [
                    r
                    for r in self.ordered(self.cell(region), "fill", region, k)
                    if 1 < int(r["ordinal"]) < last
                    and not ({r["ordinal"] - 1, r["ordinal"], r["ordinal"] + 1} & chosen)
                ]
                candidates.sort(key=lambda r: r["position"] != want)
                if not candidates:
                    self.reject(
                        "paragraph_fill",
                        [region, k],
                        region,
                        None,
                        "no_neighbours",
                        f"region {region}: no paragraph with a neighbour on each side and away "
                        "from other targets",
                    )
                    continue
                para = candidates[0]
                ordinal = int(para["ordinal"])
                chosen.add(ordinal)
                before, after = self.neighbour(ordinal, -1), self.neighbour(ordinal, 1)
                assert before is not None and after is not None
                n = count_tokens([para["text"]], self.tokenizer)[0]
                self.tasks.append(
                    self.task(
                        "paragraph_fill",
                        [para["pid"]],
                        region=region,
                        position=para["position"],
                        question="Write the missing paragraph at the blank.",
                        gold=para["text"],
                        blank_pids=[para["pid"]],
                        evidence_pids=[para["pid"]],
                        context_pids=[before["pid"], after["pid"]],
                        max_output_tokens=max(128, OUTPUT_FACTOR * n),
                        builder="rule-fill-v1",
                        answer_type="paragraph",
                    )
                )
                got += 1

    # -- document level -----------------------------------------------------------------------
    def summary(self) -> None:
        if not self.doc.summary:
            self.reject(
                "summary",
                [],
                None,
                None,
                "no_source_summary",
                "the document has no summary of its own (assembled documents never do; member "
                "articles' titles or leads would summarise an article, not the document)",
            )
            return
        n = count_tokens([self.doc.summary], self.tokenizer)[0]
        self.tasks.append(
            self.task(
                "summary",
                [],
                question="Summarise the document.",
                gold=self.doc.summary,
                evidence_pids=list(self.doc.paras["pid"]),
                max_output_tokens=max(256, OUTPUT_FACTOR * n),
                builder="source-summary-v1",
                answer_type="summary",
            )
        )

    def translation(self) -> None:
        limit = self.settings.translation_excerpt_tokens
        for region in THIRDS:
            rows = self.cell(region).sort_values("ordinal").to_dict("records")
            counts = count_tokens([r["text"] for r in rows], self.tokenizer)
            starts = list(range(len(rows)))
            _rng(self.settings.seed, self.doc.doc_id, "translation", region).shuffle(starts)
            excerpt: list[int] = []
            for start in starts:
                if counts[start] > limit:
                    continue
                excerpt, total = [start], counts[start]
                for j in range(start + 1, len(rows)):
                    if total + counts[j] > limit:
                        break
                    excerpt.append(j)
                    total += counts[j]
                break
            if not excerpt:
                self.reject(
                    "translation",
                    [region],
                    region,
                    None,
                    "excerpt_too_long",
                    f"region {region}: every paragraph exceeds {limit} English tokens",
                )
                continue
            pids = [rows[j]["pid"] for j in excerpt]
            total = sum(counts[j] for j in excerpt)
            self.tasks.append(
                self.task(
                    "translation",
                    pids,
                    region=region,
                    question="\n\n".join(rows[j]["text"] for j in excerpt),
                    gold=None,
                    evidence_pids=pids,
                    max_output_tokens=max(128, OUTPUT_FACTOR * total),
                    builder="rule-translation-v1",
                    answer_type="translation",
                )
            )


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def _documents(documents: pd.DataFrame, paragraphs: pd.DataFrame, reference: str) -> list[_Doc]:
    ref_docs = documents[documents["language"] == reference].sort_values("doc_id")
    out: list[_Doc] = []
    for doc in ref_docs.itertuples(index=False):
        rows = paragraphs[paragraphs["doc_id"] == doc.doc_id]
        en = rows[rows["language"] == reference].sort_values("ordinal").reset_index(drop=True)
        languages = [reference, *sorted(set(rows["language"]) - {reference})]
        texts = {
            (str(lang), str(pid)): str(t)
            for lang, pid, t in rows[["language", "pid", "text"]].itertuples(index=False)
        }
        summary = doc.summary if isinstance(doc.summary, str) and doc.summary.strip() else None
        out.append(
            _Doc(
                doc_id=str(doc.doc_id),
                bucket=str(doc.bucket),
                n_tokens=int(doc.n_tokens),
                summary=summary,
                paras=en,
                texts=texts,
                languages=languages,
                doc_hash=text_hash([*en["pid"], *en["text"], summary or ""]),
            )
        )
    return out


Writer = Callable[[list[tuple[dict[str, Any], dict[str, str]]]], tuple[pd.DataFrame, pd.DataFrame]]


def judge_writer(
    writer: ModelSpec,
    *,
    cache_dir: str,
    budget_usd: float | None = None,
    study_budget_usd: float | None = None,
    budget: Budget | None = None,
) -> Writer:
    """A :data:`Writer` that asks ``writer`` through the judge runner (cached, budgeted).

    Online only: the bank is frozen once written, and a cloze set waiting on a batch would be
    frozen without its confusions. ``budget``: the run's (``inference._calls.run_budget``).
    """

    def write(subjects: list[tuple[dict[str, Any], dict[str, str]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
        return run_judge(
            writer,
            CONFUSION_TEMPLATE,
            subjects,
            cache_dir=cache_dir,
            budget_usd=budget_usd,
            study_budget_usd=study_budget_usd,
            budget=budget,
        )

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
) -> TaskBank:
    """The task bank of every document (English rows of ``documents``), with its rejections.

    ``writer`` writes cloze confusions (see :func:`judge_writer`); without one, cloze tasks are
    rejected (``no_confusion_writer``).
    """
    docs = _documents(documents, paragraphs, reference)
    builders = [_Builder(doc, settings, tokenizer) for doc in docs]
    plans: list[tuple[_Builder, list[dict[str, Any]]]] = []
    subjects: list[tuple[dict[str, Any], dict[str, str]]] = []
    for b in builders:
        b.word_single_qa()
        b.word_multi_qa()
        targets = b.cloze_targets()
        plans.append((b, targets))
        golds = [t["target"] for t in targets]
        for t in targets:
            subjects.append(({"doc_id": b.doc.doc_id, "pid": t["pid"]}, b.confusion_fields(t, golds)))
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
    for b, targets in plans:
        if writer is None:
            b.reject(
                "cloze",
                ["group"],
                None,
                None,
                "no_confusion_writer",
                "study.granularity.confusion_writer is null",
            )
        else:
            doc_replies = {pid: r for (d, pid), r in replies.items() if d == b.doc.doc_id}
            b.cloze_rows(targets, doc_replies, writer_id or "writer")
        b.paragraph_fill()
        b.summary()
        b.translation()
    rows = [t for b in builders for t in b.tasks]
    for row in rows:
        row["frozen_hash"] = frozen_hash(row)
    tasks = pd.DataFrame(rows, columns=TASK_COLUMNS)
    tasks["sentence_index"] = tasks["sentence_index"].astype("Int64")
    tasks["max_output_tokens"] = tasks["max_output_tokens"].astype("int64")
    rejections = pd.DataFrame([r for b in builders for r in b.rejections], columns=REJECTION_COLUMNS)
    rejections = rejections.drop_duplicates().reset_index(drop=True)
    return TaskBank(tasks, rejections, calls, notes)


def freeze(previous: pd.DataFrame | None, rebuilt: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Keep the stored tasks of every document whose English content is unchanged (``doc_hash``).

    The bank is frozen like the item bank: a rebuild never silently replaces stored tasks;
    documents that changed (or are new) take the rebuilt tasks, and the notes say which.
    """
    if previous is None or previous.empty or "doc_hash" not in previous.columns:
        return rebuilt, []
    kept: list[pd.DataFrame] = []
    notes: list[str] = []
    drifted = [
        str(row["task_id"])
        for row in previous[rebuilt.columns.intersection(previous.columns)].to_dict("records")
        if frozen_hash(row) != row["frozen_hash"]
    ]
    if drifted:
        notes.append(f"{len(drifted)} stored task(s) no longer match their frozen_hash: {drifted[:5]}")
    old_hash = previous.groupby("doc_id")["doc_hash"].first().to_dict()
    for doc_id, group in rebuilt.groupby("doc_id", sort=True):
        if old_hash.get(doc_id) == group["doc_hash"].iloc[0]:
            old = previous[previous["doc_id"] == doc_id]
            if set(old["frozen_hash"]) != set(group["frozen_hash"]):
                notes.append(f"{doc_id}: stored tasks kept (frozen) although a rebuild differs")
            kept.append(old)
        else:
            if doc_id in old_hash:
                notes.append(f"{doc_id}: document changed, tasks rebuilt")
            kept.append(group)
    docs_without_tasks = sorted(set(previous["doc_id"]) - set(rebuilt["doc_id"]))
    if docs_without_tasks:
        notes.append(f"stored tasks of documents no longer built dropped: {docs_without_tasks}")
    out = pd.concat(kept, ignore_index=True) if kept else rebuilt
    return out[rebuilt.columns].reset_index(drop=True), notes


# ---------------------------------------------------------------------------------------------
# The offline confusion writer (rule-writer-v1, prompt family cloze-confusion).

_SECTION = re.compile(r"(?P<label>[^\n]+):\n<<<(?P<body>.*?)>>>", re.DOTALL)
_AUX = re.compile(r"\b(is|was|are|were|has|had|have|will|can|could|would|should)\b")


def _sections(request: ChatRequest) -> dict[str, str]:
    user = "\n".join(m["content"] for m in request.messages if m["role"] == "user")
    return {m.group("label").strip(): m.group("body") for m in _SECTION.finditer(user)}


def write_confusion_offline(request: ChatRequest, spec: ModelSpec) -> str:
    """Rule-based distractors (not a language model): the target sentence with one detail
    changed, topical but wrong. In order: a number swapped for another number of the nearby
    paragraphs; a capitalised name swapped for another name there; a number shifted (years by
    3, other numbers doubled); a negation after the first auxiliary verb. Deterministic."""
    sections = _sections(request)
    target = next((v for k, v in sections.items() if k.startswith("Target sentence")), "").strip()
    context = " ".join(v for k, v in sections.items() if k.startswith("Paragraph"))
    if not target:
        return json.dumps({"confusions": []})
    out: list[str] = []
    numbers = [m for m in _NUMBER.finditer(target)]
    in_target = {m.group(0) for m in numbers}
    others = sorted({m.group(0) for m in _NUMBER.finditer(context)} - in_target, key=lambda x: (len(x), x))
    for m in numbers:
        for other in others:
            out.append(target[: m.start()] + other + target[m.end() :])
            break
    names = [m for m in _NAME.finditer(target) if m.start() > 0]
    target_names = {m.group(0) for m in names}
    other_names = sorted({m.group(0) for m in _NAME.finditer(context) if m.start() > 0} - target_names)
    for m in names:
        for other in other_names:
            out.append(target[: m.start()] + other + target[m.end() :])
            break
    for m in numbers:
        value = _value(m.group(0))
        if value.is_integer():
            shifted = int(value) + 3 if 1900 <= value <= 2100 else int(value) * 2 if value else 7
            out.append(target[: m.start()] + str(shifted) + target[m.end() :])
    aux = _AUX.search(target)
    if aux:
        out.append(target[: aux.end()] + " not" + target[aux.end() :])
    seen: list[str] = []
    for sentence in out:
        if sentence != target and sentence not in seen:
            seen.append(sentence)
    return json.dumps({"confusions": seen}, ensure_ascii=False)
