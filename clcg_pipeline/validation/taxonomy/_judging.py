"""Judging the diagnostic sample with ``clcg-error-v1``.

Every side (English and target) of every pair is labelled by every judge of
``study.error_taxonomy.judges`` with one primary label, a verbatim evidence quote and a short
rationale (template ``error-judge-v1``). The judge sees the passage (in the side's language),
the question, the gold answer and the response, never the evaluated model, language code or
resource class: those ride in the request metadata, which is neither sent nor hashed
(metadata blinding; the passage itself still reveals its language).

Order bias: on a seeded subsample of ``order_bias_pairs`` pairs a judge sees the two responses
side by side (``error-judge-pair-v1``: which is better supported, A, B or tie), once each way
round; the analysis reports how often the preference flips with the order.

The prompt sections are delimited by ``<<<NAME>>>`` lines, which field values can never
reproduce (see :func:`_field`), so the rule-based offline judge can read them back exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import pydantic

from clcg_pipeline.calls import CALL_COLUMNS, Budget, CallOptions, JudgeTemplate, run_judge
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy, load_taxonomy

ERROR_JUDGE_VERSION = "error-judge-v1"
PAIR_JUDGE_VERSION = "error-judge-pair-v1"
SIDES = ("en", "target")
ORDERS = ("en_first", "target_first")

# Section headers of the two user templates (the offline judge parses by them).
PASSAGE, QUESTION, GOLD, RESPONSE = "PASSAGE", "QUESTION", "GOLD ANSWER", "RESPONSE"
RESPONSE_A, RESPONSE_B, END = "RESPONSE A", "RESPONSE B", "END"


def header(name: str) -> str:
    return f"<<<{name}>>>"


def _field(text: object) -> str:
    """A field value that cannot contain a section header (nor break the template's layout)."""
    value = "" if text is None or (isinstance(text, float) and np.isnan(text)) else str(text)
    return value.replace("<<<", "<\u200b<<").strip()


_ERROR_SYSTEM = """You are an annotator of answers to reading-comprehension questions. The answer \
(RESPONSE) was written by a model that read the PASSAGE and had to answer the QUESTION in English, \
briefly, or say "Not stated" when the passage does not support an answer. Compare the RESPONSE with \
the GOLD ANSWER and the PASSAGE and give it exactly one primary label of the error taxonomy \
{taxonomy_id}; when several apply, pick the one that most explains why the response falls short:
{definitions}
An empty RESPONSE means no answer could be read from the model's reply.
Reply with one JSON object and nothing else: {{"label": "<one label>", "evidence": "<a short span \
copied verbatim from the RESPONSE, the PASSAGE, the QUESTION or the GOLD ANSWER>", "rationale": \
"<one short sentence>"}}."""

_PAIR_SYSTEM = """You compare two answers (RESPONSE A and RESPONSE B) to the same reading-comprehension \
QUESTION against its GOLD ANSWER. Say which answer is better supported by the gold answer: "A", "B", \
or "tie" when neither is better. Judge content only, not length or style.
Reply with one JSON object and nothing else: {"preferred": "A" | "B" | "tie", "evidence": "<a short \
span copied verbatim from one of the responses or the GOLD ANSWER>", "rationale": "<one short sentence>"}."""


_ERROR_USER = "\n".join(
    [
        header(PASSAGE),
        "{passage}",
        header(QUESTION),
        "{question}",
        header(GOLD),
        "{gold_answer}",
        header(RESPONSE),
        "{response}",
        header(END),
    ]
)
_PAIR_USER = "\n".join(
    [
        header(QUESTION),
        "{question}",
        header(GOLD),
        "{gold_answer}",
        header(RESPONSE_A),
        "{response_a}",
        header(RESPONSE_B),
        "{response_b}",
        header(END),
    ]
)
ERROR_EVIDENCE_FIELDS = ("passage", "question", "gold_answer", "response")
PAIR_EVIDENCE_FIELDS = ("question", "gold_answer", "response_a", "response_b")


class PairVerdict(pydantic.BaseModel):
    """The pair judge's reply."""

    model_config = pydantic.ConfigDict(extra="forbid")
    preferred: Literal["A", "B", "tie"]
    evidence: str = pydantic.Field(min_length=1, max_length=1000)
    rationale: str = pydantic.Field(max_length=1000)


@functools.cache
def _label_schema(taxonomy_id: str) -> type[pydantic.BaseModel]:
    taxonomy = load_taxonomy(taxonomy_id)
    label_type: Any = Literal[taxonomy.labels]  # type: ignore[valid-type]
    return pydantic.create_model(
        "ErrorLabel",
        __config__=pydantic.ConfigDict(extra="forbid"),
        label=(label_type, ...),
        evidence=(str, pydantic.Field(min_length=1, max_length=1000)),
        rationale=(str, pydantic.Field(max_length=1000)),
    )


@functools.cache
def error_template(taxonomy_id: str = "clcg-error-v1") -> JudgeTemplate:
    """``error-judge-v1`` for a taxonomy: its definitions are quoted, so they enter the hash."""
    taxonomy = load_taxonomy(taxonomy_id)
    return JudgeTemplate(
        version=ERROR_JUDGE_VERSION,
        system=_ERROR_SYSTEM.format(taxonomy_id=taxonomy.id, definitions=taxonomy.definitions_text()),
        user=_ERROR_USER,
        schema=_label_schema(taxonomy_id),
    )


PAIR_TEMPLATE = JudgeTemplate(
    version=PAIR_JUDGE_VERSION, system=_PAIR_SYSTEM, user=_PAIR_USER, schema=PairVerdict
)

ERROR_JUDGEMENT_COLUMNS = (
    "pair_id",
    "side",
    "judge",
    "label",
    "collapsed_label",
    "semantic_error",
    "evidence",
    "rationale",
    "status",
    "error",
    "prompt_version",
    "template_hash",
    "call_id",
    "model",
    "language",
    "pair_language",
    "doc_id",
    "item_id",
    "rep",
    "context_scope",
)
ORDER_BIAS_COLUMNS = (
    "pair_id",
    "judge",
    "order",
    "preferred",
    "choice",
    "status",
    "error",
    "evidence",
    "prompt_version",
    "template_hash",
    "call_id",
    "model",
    "language",
    "doc_id",
    "item_id",
)


def passages_by_doc(paragraphs: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(doc_id, language) -> the passage as the judge sees it: paragraphs in order, blank-line separated."""
    if paragraphs.empty:
        return {}
    missing = [c for c in ("doc_id", "language", "ordinal", "text") if c not in paragraphs.columns]
    if missing:
        raise ValueError(f"error judging: paragraphs is missing column(s) {missing}")
    out: dict[tuple[str, str], str] = {}
    ordered = paragraphs.sort_values(["doc_id", "language", "ordinal"], kind="mergesort")
    for (doc, lang), group in ordered.groupby(["doc_id", "language"], sort=False):
        out[(str(doc), str(lang))] = "\n\n".join(" ".join(str(t).split()) for t in group["text"])
    return out


def _item_lookup(items: pd.DataFrame) -> dict[str, tuple[str, str]]:
    if items.empty:
        return {}
    missing = [c for c in ("item_id", "question", "gold_answer") if c not in items.columns]
    if missing:
        raise ValueError(f"error judging: items is missing column(s) {missing}")
    return {
        str(r["item_id"]): (str(r["question"]), "" if r["gold_answer"] is None else str(r["gold_answer"]))
        for r in items[["item_id", "question", "gold_answer"]].to_dict("records")
    }


def side_subjects(
    sample: pd.DataFrame, passages: Mapping[tuple[str, str], str], items: pd.DataFrame, *, reference: str
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Both sides of every pair as judge subjects: (key columns, template fields)."""
    lookup = _item_lookup(items)
    subjects: list[tuple[dict[str, Any], dict[str, str]]] = []
    for row in sample.to_dict("records"):
        item = lookup.get(str(row["item_id"]))
        if item is None:
            raise ValueError(
                f"diagnostic_sample: pair {row['pair_id']!r} field item_id {row['item_id']!r} is not in items"
            )
        for side in SIDES:
            language = reference if side == "en" else str(row["language"])
            passage = passages.get((str(row["doc_id"]), language))
            if passage is None:
                raise ValueError(
                    f"diagnostic_sample: pair {row['pair_id']!r}: no {language!r} paragraphs of doc_id "
                    f"{row['doc_id']!r}"
                )
            keys = {
                "pair_id": row["pair_id"],
                "side": side,
                "model": row["model"],
                "language": language,
                "pair_language": row["language"],
                "doc_id": row["doc_id"],
                "item_id": row["item_id"],
                "rep": int(row["rep"]),
                "context_scope": row["context_scope"],
            }
            fields = {
                "passage": _field(passage),
                "question": _field(item[0]),
                "gold_answer": _field(item[1]),
                "response": _field(row["en_answer" if side == "en" else "target_answer"]),
            }
            subjects.append((keys, fields))
    return subjects


def order_bias_pairs(sample: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """The seeded subsample of pairs shown to the pair judge (both orders each)."""
    if n <= 0 or sample.empty:
        return sample.iloc[0:0]
    ordered = sample.sort_values("pair_id", kind="mergesort").reset_index(drop=True)
    rng = np.random.default_rng([seed, 1])  # its own stream: independent of the sample's draw
    chosen = np.sort(rng.permutation(len(ordered))[: min(n, len(ordered))])
    return ordered.iloc[chosen].reset_index(drop=True)


def pair_subjects(
    subsample: pd.DataFrame, items: pd.DataFrame
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    lookup = _item_lookup(items)
    subjects: list[tuple[dict[str, Any], dict[str, str]]] = []
    for row in subsample.to_dict("records"):
        question, gold = lookup[str(row["item_id"])]
        en, target = _field(row["en_answer"]), _field(row["target_answer"])
        for order in ORDERS:
            a, b = (en, target) if order == "en_first" else (target, en)
            keys = {
                "pair_id": row["pair_id"],
                "order": order,
                "model": row["model"],
                "language": row["language"],
                "doc_id": row["doc_id"],
                "item_id": row["item_id"],
            }
            fields = {
                "question": _field(question),
                "gold_answer": _field(gold),
                "response_a": a,
                "response_b": b,
            }
            subjects.append((keys, fields))
    return subjects


def _with_labels(frame: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    values = [json.loads(j) if isinstance(j, str) else {} for j in frame["judgement"]]
    label = [v.get("label") for v in values]
    return frame.assign(
        label=label,
        collapsed_label=[taxonomy.collapse(lab) for lab in label],
        semantic_error=pd.array([taxonomy.is_semantic_error(lab) for lab in label], dtype="boolean"),
        evidence=[v.get("evidence") for v in values],
        rationale=[v.get("rationale") for v in values],
    )


def _preferred(order: str, choice: str | None) -> str | None:
    if choice is None:
        return None
    if choice == "tie":
        return "tie"
    first, second = ("en", "target") if order == "en_first" else ("target", "en")
    return first if choice == "A" else second


@dataclass(frozen=True)
class JudgingResult:
    error_judgements: pd.DataFrame
    order_bias_judgements: pd.DataFrame
    judge_calls: pd.DataFrame
    summary: dict[str, Any]


def judge_sample(
    sample: pd.DataFrame,
    *,
    paragraphs: pd.DataFrame,
    items: pd.DataFrame,
    judges: Sequence[ModelSpec],
    reference: str,
    taxonomy_id: str,
    order_bias_n: int,
    seed: int,
    options: CallOptions,
    settings: ConditionSettings | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> JudgingResult:
    """Every side of every pair by every judge, then the order-bias subsample both ways round.

    ``options.budget`` (``run_budget``) is the run's budget, shared with its other paid ops;
    ``progress(what, done, total)`` is told which judge and which list of calls it hears about.
    """
    taxonomy = load_taxonomy(taxonomy_id)
    template = error_template(taxonomy_id)
    passages = passages_by_doc(paragraphs)
    sides = side_subjects(sample, passages, items, reference=reference)
    subsample = order_bias_pairs(sample, order_bias_n, seed)
    pairs = pair_subjects(subsample, items)
    labels, orders, calls = [], [], []

    # One budget for every judge and both templates; once it stops, no later (smaller) call sneaks past.
    if options.budget is None:
        options = dataclasses.replace(options, budget=Budget(options.budget_usd))

    for judge in judges if sides else ():
        judged, judge_calls = run_judge(
            judge,
            template,
            sides,
            options.with_progress(
                functools.partial(progress, f"{judge.id}: pair sides") if progress else None
            ),
            settings=settings,
            evidence_fields=ERROR_EVIDENCE_FIELDS,
        )
        labels.append(_with_labels(judged, taxonomy))
        calls.append(judge_calls)

        if not pairs:
            continue
        preferred, pair_calls = _order_bias_judged(judge, pairs, options, settings, progress)
        orders.append(preferred)
        calls.append(pair_calls)
    error_judgements = _frame(labels, ERROR_JUDGEMENT_COLUMNS)
    order_bias = _frame(orders, ORDER_BIAS_COLUMNS)
    judge_calls = (
        pd.concat(calls, ignore_index=True)
        if calls
        else pd.DataFrame({c: pd.Series(dtype=object) for c in CALL_COLUMNS})
    )
    summary = {
        "pairs": len(sample),
        "sides": len(sides),
        "judges": [j.id for j in judges],
        "order_bias_pairs": len(subsample),
        "statuses": _counts(error_judgements, "status"),
        "order_bias_statuses": _counts(order_bias, "status"),
        "unparseable_share": (
            float((error_judgements["status"] == "unparseable").mean()) if len(error_judgements) else None
        ),
        "template_hashes": {
            template.version: template.template_hash,
            PAIR_TEMPLATE.version: PAIR_TEMPLATE.template_hash,
        },
    }
    return JudgingResult(error_judgements, order_bias, judge_calls, summary)


def _order_bias_judged(
    judge: ModelSpec,
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, str]]],
    options: CallOptions,
    settings: ConditionSettings | None,
    progress: Callable[[str, int, int], None] | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One judge's preference on each order-bias pair shown each way round, and its calls."""
    preferred, pair_calls = run_judge(
        judge,
        PAIR_TEMPLATE,
        pairs,
        options.with_progress(
            functools.partial(progress, f"{judge.id}: order-bias pairs") if progress else None
        ),
        settings=settings,
        evidence_fields=PAIR_EVIDENCE_FIELDS,
    )
    values = [json.loads(j) if isinstance(j, str) else {} for j in preferred["judgement"]]
    choice = [v.get("preferred") for v in values]
    preferred = preferred.assign(
        choice=choice,
        preferred=[_preferred(o, c) for o, c in zip(preferred["order"], choice, strict=True)],
        evidence=[v.get("evidence") for v in values],
    )
    return preferred, pair_calls


def _frame(parts: list[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    return pd.concat(parts, ignore_index=True).reindex(columns=list(columns))


def _counts(frame: pd.DataFrame, column: str) -> dict[str, int]:
    if frame.empty:
        return {}
    return {str(k): int(v) for k, v in frame[column].value_counts().sort_index().items()}
