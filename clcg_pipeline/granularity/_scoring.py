"""Scores of the granularity tasks, and the paragraph and cloze-error judges (docs/GRANULARITY.md).

- word QA and cloze: accuracy after normalisation (word: the task builder's normalisation,
  numbers compared by their digits; cloze: option letters);
- paragraph filling and summary: ROUGE-L; filling also the ``fill-judge-v1`` total (five 0-20
  dimensions, 0-100) averaged over ``study.granularity.judges`` with the judges' spread;
- translation (English into the language): BLEU and chrF from sacrebleu, with tokenisers that
  need no download (``13a``; ``char`` for scripts written without spaces).

``score`` is the row's ``metric`` on its own scale (accuracy and ROUGE-L 0-1, BLEU and chrF
0-100, as sacrebleu reports them); the metrics are not comparable across tasks, only across
languages, regions and positions within a task (MGAL's own caution). A failed answer
(unparseable or missing) scores 0 with its status kept (rule A of the responses); a row
without a reference in its language is ``no_reference`` with no score: not a failure, so the
analysis leaves it out of every mean and counts it (docs/GRANULARITY.md).

ROUGE-L here tokenises by Unicode words, not rouge-score's ASCII ``[a-z0-9]+`` runs: the
generated text is in the document's language, and the ASCII tokenizer deletes every Georgian,
Amharic or Devanagari letter (and splits "ação" into "a" and "o"), which would score those
languages 0 whatever was written. On ASCII text the two agree (a test pins it); the LCS is
rapidfuzz's, as in ``scoring/_metrics.py``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from rapidfuzz.distance import LCSseq

from clcg_pipeline.calls import Budget, CallOptions, run_judge
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.granularity._parse import normalise_letter
from clcg_pipeline.granularity._prompts import (
    CLOZE_ERROR_JUDGE,
    CLOZE_EVIDENCE_FIELDS,
    FILL_DIMENSIONS,
    FILL_EVIDENCE_FIELDS,
    FILL_JUDGE,
    GRANULARITY,
    OPTION_LETTERS,
    Blank,
    blank_document,
)
from clcg_pipeline.granularity._validate import normalise_answer
from clcg_pipeline.scoring import harmonic_mean

PREDICTION_KEY = ["model", "language", "doc_id", "task_id", "group_id", "task", "context", "rep"]
SCORE_COLUMNS = [
    *PREDICTION_KEY,
    "granularity",
    "region",
    "position",
    "metric",
    "score",
    "rouge_l",
    "bleu",
    "chrf",
    "judge_total",
    "judge_spread",
    "status",
    # beyond the contract
    "judge_range",
    "judge_n",
    "judge_status",
    *FILL_DIMENSIONS,
    "bucket",
    "sentence_position",
    "role",
    "bleu_tokenize",
]
JUDGEMENT_COLUMNS = [
    *PREDICTION_KEY,
    "kind",
    "judge",
    "prompt_version",
    "template_hash",
    "status",
    "error",
    "call_id",
    *FILL_DIMENSIONS,
    "total",
    "label",
    "tags",
    "confidence",
    "evidence",
    "judgement",
]
METRIC = {
    "word_single_qa": "accuracy",
    "word_multi_qa": "accuracy",
    "cloze": "accuracy",
    "paragraph_fill": "rouge_l",
    "summary": "rouge_l",
    "translation": "bleu",
}
# Scripts written without spaces between words: BLEU counts characters there ("char").
_NO_SPACE_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})
_CHAR_TOKENS = (
    r"[\u0E00-\u0EFF\u1000-\u109F\u1780-\u17FF\u0F00-\u0FFF"  # Thai, Lao, Myanmar, Khmer, Tibetan
    r"\u3040-\u30FF\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF]"  # kana, CJK ideographs
)
_ROUGE_TOKEN = re.compile(f"{_CHAR_TOKENS}|[^\\W_]+", re.UNICODE)


# -- metrics -------------------------------------------------------------------------------------
def rouge_tokens(text: str) -> list[str]:
    """Lower-cased Unicode word tokens (one token per character in scripts without spaces)."""
    return _ROUGE_TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def rouge_l(predictions: Sequence[str], references: Sequence[str]) -> list[float]:
    """ROUGE-L F-measure per pair (rouge-score's formula; LCS by rapidfuzz over tokens)."""
    if len(predictions) != len(references):
        raise ValueError(f"rouge_l: {len(predictions)} predictions but {len(references)} references")
    pred_tokens = [rouge_tokens(p) for p in predictions]
    ref_tokens = [rouge_tokens(r) for r in references]
    hits = np.array([LCSseq.similarity(p, r) for p, r in zip(pred_tokens, ref_tokens, strict=True)], float)
    n_pred = np.array([len(p) for p in pred_tokens], float)
    n_ref = np.array([len(r) for r in ref_tokens], float)
    return [float(v) for v in harmonic_mean(hits, n_pred, n_ref)]


def bleu_tokenizer(language: str) -> str:
    """sacrebleu tokenizer for a target language; neither needs a download."""
    return "char" if language in _NO_SPACE_LANGUAGES else "13a"


def bleu_chrf(prediction: str, reference: str, language: str) -> tuple[float, float]:
    """Sentence-level BLEU (effective order) and chrF, both 0-100, from sacrebleu."""
    from sacrebleu.metrics import BLEU, CHRF  # imported here: only translation rows need it

    bleu = BLEU(tokenize=bleu_tokenizer(language), effective_order=True).sentence_score(
        prediction, [reference]
    )
    chrf = CHRF().sentence_score(prediction, [reference])
    return min(100.0, max(0.0, float(bleu.score))), min(100.0, max(0.0, float(chrf.score)))


def word_correct(answer: str, gold: str) -> float:
    """1.0 when the normalised answer equals the normalised gold (numbers by their digits)."""
    return float(bool(normalise_answer(gold)) and normalise_answer(answer) == normalise_answer(gold))


def gold_letter(gold: str, options: Sequence[str]) -> str | None:
    """The option letter of a cloze gold sentence (or a gold given as a letter)."""
    return normalise_letter(gold, options)


# -- inputs --------------------------------------------------------------------------------------
def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    try:
        return [str(v) for v in value]
    except TypeError:
        return []


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return None


class _Docs:
    """Paragraphs and summaries by (language, doc) for references and judge fields."""

    def __init__(self, paragraphs: pd.DataFrame, documents: pd.DataFrame | None) -> None:
        ordered = paragraphs.sort_values(["language", "doc_id", "ordinal"], kind="stable")
        self.texts: dict[tuple[str, str, str], str] = {}
        self.order: dict[tuple[str, str], list[str]] = {}
        for lang, doc, pid, text in ordered[["language", "doc_id", "pid", "text"]].itertuples(index=False):
            self.texts[(str(lang), str(doc), str(pid))] = str(text)
            self.order.setdefault((str(lang), str(doc)), []).append(str(pid))
        self.summaries: dict[tuple[str, str], str] = {}
        if documents is not None and len(documents) and "summary" in documents.columns:
            for lang, doc, summary in documents[["language", "doc_id", "summary"]].itertuples(index=False):
                if _text(summary):
                    self.summaries[(str(lang), str(doc))] = str(summary)

    def text(self, language: str, doc: str, pid: str) -> str | None:
        return self.texts.get((language, doc, pid))

    def neighbour(self, language: str, doc: str, pid: str, step: int) -> str:
        order = self.order.get((language, doc), [])
        if pid not in order:
            return ""
        k = order.index(pid) + step
        return self.texts[(language, doc, order[k])] if 0 <= k < len(order) else ""


def _reference(task: Mapping[str, Any], language: str, docs: _Docs, reference: str) -> str | None:
    """The reference a generated answer is compared with, in the partition's language."""
    kind, doc = str(task["task"]), str(task["doc_id"])
    if kind == "paragraph_fill":
        pids = _strings(task.get("blank_pids"))
        return docs.text(language, doc, pids[0]) if pids else None
    if kind == "translation":
        parts = [docs.text(language, doc, p) for p in _strings(task.get("evidence_pids"))]
        return "\n\n".join(p for p in parts if p) if parts and all(parts) else None
    if kind == "summary":
        # The document's own summary in the language; the task's gold is the English one.
        own = docs.summaries.get((language, doc))
        return own or (_text(task.get("gold")) if language == reference else None)
    return _text(task.get("gold"))


# -- scores --------------------------------------------------------------------------------------
def _unscored_row(pred: Mapping[str, Any], task: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A prediction's ``task_scores`` row before scoring: its key, the task's labels, no scores."""
    row: dict[str, Any] = {c: pred.get(c) for c in PREDICTION_KEY}
    row.update(
        granularity=task.get("granularity") or GRANULARITY[kind],
        region=task.get("region"),
        position=task.get("position"),
        metric=METRIC[kind],
        score=np.nan,
        rouge_l=np.nan,
        bleu=np.nan,
        chrf=np.nan,
        judge_total=np.nan,
        judge_spread=np.nan,
        judge_range=np.nan,
        judge_n=0,
        judge_status="not_judged",
        bucket=task.get("bucket"),
        sentence_position=task.get("sentence_position"),
        role=task.get("role"),
        bleu_tokenize=bleu_tokenizer(str(pred["language"])) if kind == "translation" else None,
        **dict.fromkeys(FILL_DIMENSIONS, np.nan),
    )
    return row


def score_tasks(
    predictions: pd.DataFrame,
    tasks: pd.DataFrame,
    paragraphs: pd.DataFrame,
    documents: pd.DataFrame | None = None,
    *,
    reference: str = "en",
) -> pd.DataFrame:
    """One ``task_scores`` row per prediction (judge columns empty; see :func:`attach_judges`)."""
    docs = _Docs(paragraphs, documents)
    by_id = {str(r["task_id"]): r for r in tasks.to_dict("records")}
    rows: list[dict[str, Any]] = []
    text_rows: list[int] = []
    preds, refs = [], []
    for pred in predictions.to_dict("records"):
        task = by_id.get(str(pred["task_id"]))
        if task is None:
            raise ValueError(
                f"task_predictions: task_id {pred['task_id']!r} ({pred['language']}/{pred['model']}) "
                "is not in granularity_tasks"
            )
        kind = str(task["task"])
        metric = METRIC[kind]
        row = _unscored_row(pred, task, kind)
        language = str(pred["language"])
        ref = _reference(task, language, docs, reference)
        if ref is None and kind != "cloze":
            row["status"] = "no_reference"
        elif pred["status"] != "ok":
            row["status"] = str(pred["status"])
            row["score"] = 0.0
            if metric != "accuracy":
                row[metric] = 0.0
            if kind == "translation":
                row["chrf"] = 0.0
        else:
            row["status"] = "ok"
            answer = str(pred["answer"])
            if kind in ("word_single_qa", "word_multi_qa"):
                row["score"] = word_correct(answer, str(ref))
            elif kind == "cloze":
                options = _strings(task.get("options"))
                gold = gold_letter(str(task.get("gold") or ""), options)
                if gold is None:
                    raise ValueError(
                        f"granularity_tasks: task {task['task_id']!r} field 'gold' is not one of its options"
                    )
                row["score"] = float(normalise_letter(answer, options) == gold)
            else:
                text_rows.append(len(rows))
                preds.append(answer)
                refs.append(str(ref))
                if kind == "translation":
                    bleu, chrf = bleu_chrf(answer, str(ref), language)
                    row["bleu"], row["chrf"], row["score"] = bleu, chrf, bleu
        rows.append(row)
    for k, value in zip(text_rows, rouge_l(preds, refs), strict=True):
        rows[k]["rouge_l"] = value
        if rows[k]["metric"] == "rouge_l":
            rows[k]["score"] = value
    frame = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    frame["rep"] = frame["rep"].astype("int64")
    frame["judge_n"] = frame["judge_n"].astype("int64")
    return frame


# -- judges --------------------------------------------------------------------------------------
def fill_subjects(
    predictions: pd.DataFrame,
    tasks: pd.DataFrame,
    paragraphs: pd.DataFrame,
    *,
    contexts: Sequence[str] = ("full",),
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """(keys, fields) for every parsed paragraph-filling answer: the previous and next
    paragraph, the reference (in the answer's language) and the answer. Judged in
    ``contexts`` only (by default the full-context answers; the ablation is scored by ROUGE-L)."""
    docs = _Docs(paragraphs, None)
    by_id = {str(r["task_id"]): r for r in tasks.to_dict("records")}
    out: list[tuple[dict[str, Any], dict[str, str]]] = []
    chosen = predictions[
        (predictions["task"] == "paragraph_fill")
        & (predictions["status"] == "ok")
        & predictions["context"].isin(list(contexts))
    ]
    for pred in chosen.to_dict("records"):
        task = by_id[str(pred["task_id"])]
        lang, doc = str(pred["language"]), str(pred["doc_id"])
        pid = _strings(task.get("blank_pids"))[0]
        ref = docs.text(lang, doc, pid)
        if ref is None:
            continue
        out.append(
            (
                {c: pred[c] for c in PREDICTION_KEY},
                {
                    "previous": docs.neighbour(lang, doc, pid, -1),
                    "reference": ref,
                    "generated": str(pred["answer"]),
                    "next": docs.neighbour(lang, doc, pid, 1),
                },
            )
        )
    return out


def cloze_error_subjects(
    predictions: pd.DataFrame, tasks: pd.DataFrame, paragraphs: pd.DataFrame
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """(keys, fields) for every wrong full-context cloze answer: the paragraphs before and
    after, the blank's paragraph with its blank, the gold and the chosen sentence."""
    docs = _Docs(paragraphs, None)
    by_id = {str(r["task_id"]): r for r in tasks.to_dict("records")}
    out: list[tuple[dict[str, Any], dict[str, str]]] = []
    chosen = predictions[
        (predictions["task"] == "cloze")
        & (predictions["status"] == "ok")
        & (predictions["context"] == "full")
    ]
    for pred in chosen.to_dict("records"):
        task = by_id[str(pred["task_id"])]
        options = _strings(task.get("options"))
        gold = gold_letter(str(task.get("gold") or ""), options)
        picked = normalise_letter(str(pred["answer"]), options)
        if gold is None or picked is None or picked == gold:
            continue
        lang, doc = str(pred["language"]), str(pred["doc_id"])
        pid = _strings(task.get("blank_pids"))[0]
        text = docs.text(lang, doc, pid)
        index = task.get("sentence_index")
        if text is None or index is None or pd.isna(index):
            continue
        current = blank_document([(pid, text)], [Blank(1, pid, int(index))])[0][1]
        out.append(
            (
                {c: pred[c] for c in PREDICTION_KEY},
                {
                    "previous": docs.neighbour(lang, doc, pid, -1),
                    "current": current,
                    "next": docs.neighbour(lang, doc, pid, 1),
                    "gold": options[OPTION_LETTERS.index(gold)],
                    "chosen": options[OPTION_LETTERS.index(picked)],
                },
            )
        )
    return out


def _expand(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Judge rows with the validated JSON spread into columns."""
    parsed = [json.loads(j) if isinstance(j, str) else {} for j in frame["judgement"]]
    out = frame.assign(kind=kind)
    for d in FILL_DIMENSIONS:
        out[d] = [p.get(d, np.nan) for p in parsed]
    out["total"] = [p.get("total", np.nan) for p in parsed]
    out["label"] = [p.get("main_class") for p in parsed]
    out["tags"] = [p.get("secondary") if p else None for p in parsed]
    out["confidence"] = [p.get("confidence") for p in parsed]
    out["evidence"] = [p.get("evidence") if p else None for p in parsed]
    return out


def judge_tasks(
    predictions: pd.DataFrame,
    tasks: pd.DataFrame,
    paragraphs: pd.DataFrame,
    judges: Sequence[ModelSpec],
    options: CallOptions,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(task_judgements, judge calls): every judge scores every filled paragraph and labels
    every wrong cloze choice, through the shared judge runner (cached, budgeted, blinded:
    the judge sees only the texts, never the model or the language)."""
    fill = fill_subjects(predictions, tasks, paragraphs)
    cloze = cloze_error_subjects(predictions, tasks, paragraphs)
    frames: list[pd.DataFrame] = []
    calls: list[pd.DataFrame] = []
    # One budget for every judge and template (``options.budget``: the run's, shared with its other ops).
    if options.budget is None:
        options = replace(options, budget=Budget(options.budget_usd))
    for judge in judges:
        for kind, template, subjects, evidence in (
            ("fill", FILL_JUDGE, fill, FILL_EVIDENCE_FIELDS),
            ("cloze_error", CLOZE_ERROR_JUDGE, cloze, CLOZE_EVIDENCE_FIELDS),
        ):
            if not subjects:
                continue
            judged, judge_calls = run_judge(
                judge,
                template,
                subjects,
                options,
                evidence_fields=evidence,
            )
            frames.append(_expand(judged, kind))
            calls.append(judge_calls)
    if not frames:
        return pd.DataFrame(columns=JUDGEMENT_COLUMNS), pd.DataFrame()
    judgements = pd.concat(frames, ignore_index=True)[JUDGEMENT_COLUMNS]
    judgements["rep"] = judgements["rep"].astype("int64")
    return judgements, pd.concat(calls, ignore_index=True)


def attach_judges(scores: pd.DataFrame, judgements: pd.DataFrame, judges: Sequence[str]) -> pd.DataFrame:
    """Fill the judge columns of paragraph-filling rows: the mean over judges whose verdict
    parsed (total and each dimension), the spread (sample sd; range = max - min) and status
    ``ok`` (every judge), ``partial``, ``failed`` (none) or ``not_judged``."""
    out = scores.copy()
    fill = judgements[judgements["kind"] == "fill"] if len(judgements) else judgements
    if not len(fill):
        return out
    keys = ["model", "language", "task_id", "context", "rep"]
    ok = fill[fill["status"] == "ok"].copy()
    ok["total"] = ok["total"].astype(float)
    stats = ok.groupby(keys).agg(
        judge_total=("total", "mean"),
        judge_spread=("total", lambda s: float(s.std(ddof=1)) if len(s) > 1 else np.nan),
        judge_range=("total", lambda s: float(s.max() - s.min()) if len(s) > 1 else np.nan),
        judge_n=("total", "size"),
        **{d: (d, "mean") for d in FILL_DIMENSIONS},
    )
    asked = fill.groupby(keys).size().rename("asked")
    index = pd.MultiIndex.from_frame(out[keys].astype({"rep": "int64"}))
    merged = stats.reindex(index)
    n_asked = asked.reindex(index).fillna(0).to_numpy()
    n_ok = merged["judge_n"].fillna(0).to_numpy()
    for col in ("judge_total", "judge_spread", "judge_range", *FILL_DIMENSIONS):
        out[col] = np.where(n_asked > 0, merged[col].to_numpy(dtype=float), out[col].to_numpy(dtype=float))
    out["judge_n"] = n_ok.astype("int64")
    status = np.where(n_asked == 0, "not_judged", np.where(n_ok == 0, "failed", "partial"))
    status = np.where((n_asked > 0) & (n_ok == len(judges)) & (n_ok == n_asked), "ok", status)
    out["judge_status"] = status
    return out


__all__ = [
    "JUDGEMENT_COLUMNS",
    "METRIC",
    "PREDICTION_KEY",
    "SCORE_COLUMNS",
    "attach_judges",
    "bleu_chrf",
    "bleu_tokenizer",
    "cloze_error_subjects",
    "fill_subjects",
    "gold_letter",
    "judge_tasks",
    "rouge_l",
    "rouge_tokens",
    "score_tasks",
    "word_correct",
]
