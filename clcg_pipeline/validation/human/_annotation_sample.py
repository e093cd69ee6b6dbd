"""The human-validation annotation sample (docs/HUMAN_VALIDATION.md).

Pure: frames in, one frame out. Three arms, each a row kind:

- ``single``: parseable ``full_body`` responses of the evaluated models, stratified by
  language x category {llm_shallow L0-L2, llm_deep L3-L5, human} x model; within each cell
  the quota is split over Token-F1 bins LOW/MID/HIGH by ``quality_weights`` (0.40/0.30/0.30),
  so weak responses are oversampled and ratings do not pile up at the ceiling;
- ``pair``: the same model, item and repetition answered from a higher- and a lower-resource
  language (Joshi class), shown as Answer A / Answer B in a seeded random order (``a_side``
  records which one A is), with a non-decisive option in the rubric;
- ``attention``: one instructed-response item per form (position ``attention_position``),
  with a known correct answer, so the QC funnel can exclude inattentive annotators;
- ``fill`` (issue 11): full-context paragraph-filling answers of the granularity family
  (``task_predictions``), stratified by language, rated on the fill judge's five 0-20
  dimensions so ``granularity_results`` can correlate human and judge totals. Drawn with its
  own seeded generator and given its own annotator pool (``fill-NN``, no attention check: the
  check is an adequacy item), so the single/pair/attention arms are exactly as without it.

Annotators: every single and pair task gets ``annotators_per_item`` distinct annotators by a
load-balanced incomplete block design (greedy least-loaded, seeded tie-break: loads differ by
at most one); each annotator's tasks form one form of ``items_per_form`` tasks.

Everything is seeded (``human_validation.seed``) and starts from key-sorted inputs, so the same
data give the same sample, task ids and forms. Shortfalls (a cell, bin or arm the data cannot
fill) are returned as sentences, never silently absorbed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from clcg_pipeline.config import HumanValidationSettings
from clcg_pipeline.validation.human._fill_sample import draw_fills
from clcg_pipeline.validation.human._forms import allocate, assign_annotators, task_id_of

CATEGORIES = ("llm_shallow", "llm_deep", "human")
BINS: tuple[Literal["LOW", "MID", "HIGH"], ...] = ("LOW", "MID", "HIGH")  # quality_weights' keys
SHALLOW = ("L0", "L1", "L2")
DEEP = ("L3", "L4", "L5")
ATTENTION_FIELD = "adequacy"
ATTENTION_EXPECTED = "1"
ATTENTION_TEXT = (
    "ATTENTION CHECK - this is not an answer to the question. To show that you are reading "
    "carefully, rate Adequacy as 1 (the lowest value) for this item, whatever the question."
)
SAMPLE_COLUMNS = [
    "task_id",
    "kind",
    "model",
    "language",
    "doc_id",
    "item_id",
    "rep",
    "level",
    "item_source",
    "category",
    "quality_bin",
    "token_f1",
    "annotators",
    "positions",
    "response",
    "response_a",
    "response_b",
    "a_side",
    "language_a",
    "language_b",
    "language_higher",
    "language_lower",
    "token_f1_a",
    "token_f1_b",
    "question",
    "gold_answer",
    "passage_ref",
    "ask_error_category",
    "attention_field",
    "attention_expected",
    # fill rows only: the granularity answer rated (task_predictions key) and its neighbours
    "gran_task_id",
    "context",
    "previous_text",
    "next_text",
]
FILL_DIMENSIONS = (
    "topic_fidelity",
    "local_coherence",
    "entity_consistency",
    "instruction_following",
    "format_compliance",
)


@dataclass(frozen=True)
class AnnotationSample:
    """The sample (``annotation_sample`` table) and the shortfalls met while drawing it."""

    sample: pd.DataFrame
    shortfalls: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        kinds = self.sample["kind"].value_counts() if len(self.sample) else pd.Series(dtype=int)
        return {k: int(kinds.get(k, 0)) for k in ("single", "pair", "attention")}


def category_of(item_source: Any, level: Any) -> str | None:
    """llm_shallow (L0-L2), llm_deep (L3-L5), human; anything else (multiple choice) is not rated."""
    if item_source == "human":
        return "human"
    if item_source == "llm" and level in SHALLOW:
        return "llm_shallow"
    if item_source == "llm" and level in DEEP:
        return "llm_deep"
    return None


def quality_bin(token_f1: float, cuts: tuple[float, float]) -> str:
    low, high = cuts
    return "LOW" if token_f1 < low else ("MID" if token_f1 < high else "HIGH")


def eligible_responses(
    predictions: pd.DataFrame, scores: pd.DataFrame, items: pd.DataFrame, *, models: Sequence[str]
) -> pd.DataFrame:
    """Parseable full_body responses of ``models`` with their Token-F1, item text and category."""
    keys = ["model", "language", "doc_id", "item_id", "rep"]
    if predictions.empty or scores.empty or items.empty:
        return pd.DataFrame(columns=[*keys, "answer", "token_f1", "level", "item_source", "category"])
    pred = predictions[
        (predictions["context_scope"] == "full_body")
        & (predictions["status"] == "ok")
        & predictions["model"].isin(list(models))
        & predictions["answer"].notna()
    ][[*keys, "answer"]]
    sc = scores[(scores["context_scope"] == "full_body") & scores["token_f1"].notna()][[*keys, "token_f1"]]
    it = items[["item_id", "doc_id", "item_source", "level", "question", "gold_answer", "target_pids"]]
    frame = pred.merge(sc, on=keys, how="inner").merge(it, on=["item_id", "doc_id"], how="inner")
    frame["category"] = [
        category_of(s, lv) for s, lv in zip(frame["item_source"], frame["level"], strict=True)
    ]
    frame = frame[frame["category"].notna() & frame["gold_answer"].notna()]
    frame = frame.drop_duplicates(keys).sort_values(keys, kind="stable").reset_index(drop=True)
    frame["rep"] = frame["rep"].astype(int)
    return frame


def _passage_ref(pids: Any) -> str:
    if pids is None or (isinstance(pids, float) and pd.isna(pids)):
        return ""
    return ",".join(str(p) for p in list(pids))


def draw_singles(
    eligible: pd.DataFrame, settings: HumanValidationSettings, rng: np.random.Generator
) -> tuple[pd.DataFrame, list[str]]:
    """The individual arm: quota per cell, then per Token-F1 bin within the cell."""
    shortfalls: list[str] = []
    if settings.responses == 0:
        return eligible.iloc[0:0].assign(quality_bin=pd.Series(dtype=str)), shortfalls
    frame = eligible.assign(quality_bin=[quality_bin(f, settings.quality_bins) for f in eligible["token_f1"]])
    if frame.empty:
        shortfalls.append(
            f"individual arm: 0 of {settings.responses} responses - no parseable full_body response "
            "with a score and a rated category (llm L0-L5 or human) is stored yet"
        )
        return frame, shortfalls
    cells = sorted(frame.groupby(["language", "category", "model"]).groups)
    grouped = {key: g for key, g in frame.groupby(["language", "category", "model"])}
    sizes = [len(grouped[c]) for c in cells]
    quotas = allocate(settings.responses, [1.0] * len(cells), sizes)
    if sum(quotas) < settings.responses:
        shortfalls.append(
            f"individual arm: only {sum(quotas)} of {settings.responses} responses available across "
            f"{len(cells)} language x category x model cells (the data cannot fill the quota)"
        )
    weights = [settings.quality_weights.get(b, 0.0) for b in BINS]
    short_bins: dict[str, int] = dict.fromkeys(BINS, 0)
    picked: list[pd.DataFrame] = []
    for cell, quota in zip(cells, quotas, strict=True):
        group = grouped[cell]
        by_bin = {b: group[group["quality_bin"] == b] for b in BINS}
        wanted = allocate(quota, weights, [10**9] * 3)
        takes = allocate(quota, weights, [len(by_bin[b]) for b in BINS])
        for b, want, take in zip(BINS, wanted, takes, strict=True):
            short_bins[b] += max(0, want - take)
            if take:
                rows = by_bin[b]
                idx = rng.choice(len(rows), size=take, replace=False)
                picked.append(rows.iloc[np.sort(idx)])
    for label, n in short_bins.items():
        if n:
            shortfalls.append(
                f"individual arm: {n} response(s) of the {label} Token-F1 bin were not available in their "
                "cells and were taken from the cell's other bins (the planned 0.40/0.30/0.30 mix is not met)"
            )
    singles = pd.concat(picked, ignore_index=True) if picked else frame.iloc[0:0]
    return singles, shortfalls


def draw_pairs(
    eligible: pd.DataFrame,
    joshi: dict[str, int],
    settings: HumanValidationSettings,
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The contrastive arm: same model, item and rep; a higher- vs a lower-resource language."""
    shortfalls: list[str] = []
    if settings.pairs == 0:
        return [], shortfalls
    frame = eligible[eligible["language"].isin(list(joshi))]
    candidates: list[tuple[Any, ...]] = []
    groups = frame.groupby(["model", "doc_id", "item_id", "rep"], sort=True) if len(frame) else []
    for (model, doc_id, item_id, rep), group in groups:
        langs = sorted(group["language"], key=lambda iso: (-joshi[iso], iso))
        for i, hi in enumerate(langs):
            for lo in langs[i + 1 :]:
                if joshi[hi] > joshi[lo]:
                    candidates.append((model, doc_id, item_id, rep, hi, lo))
    if len(candidates) < settings.pairs:
        shortfalls.append(
            f"contrastive arm: only {len(candidates)} of {settings.pairs} pairs available (same model, "
            "item and repetition answered in two languages of different Joshi class)"
        )
    # Spread the pairs over language combinations: round-robin over them in a seeded order.
    by_combo: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for cand in candidates:
        by_combo.setdefault((cand[4], cand[5]), []).append(cand)
    combos = sorted(by_combo)
    for combo in combos:
        order = rng.permutation(len(by_combo[combo]))
        by_combo[combo] = [by_combo[combo][i] for i in order]
    combos = [combos[i] for i in rng.permutation(len(combos))]
    chosen: list[tuple[Any, ...]] = []
    while len(chosen) < min(settings.pairs, len(candidates)):
        for combo in combos:
            if by_combo[combo] and len(chosen) < settings.pairs:
                chosen.append(by_combo[combo].pop())
    lookup = frame.set_index(["model", "language", "doc_id", "item_id", "rep"])
    rows: list[dict[str, Any]] = []
    for model, doc_id, item_id, rep, hi, lo in chosen:
        high = lookup.loc[(model, hi, doc_id, item_id, rep)]
        low = lookup.loc[(model, lo, doc_id, item_id, rep)]
        a_higher = bool(rng.integers(2))
        a, b = (high, low) if a_higher else (low, high)
        rows.append(
            {
                "task_id": task_id_of("p", model, doc_id, item_id, rep, hi, lo),
                "kind": "pair",
                "model": model,
                "language": lo,
                "doc_id": doc_id,
                "item_id": item_id,
                "rep": int(rep),
                "level": high["level"],
                "item_source": high["item_source"],
                "category": high["category"],
                "quality_bin": None,
                "token_f1": None,
                "response": None,
                "response_a": str(a["answer"]),
                "response_b": str(b["answer"]),
                "a_side": "higher" if a_higher else "lower",
                "language_a": hi if a_higher else lo,
                "language_b": lo if a_higher else hi,
                "language_higher": hi,
                "language_lower": lo,
                "token_f1_a": float(a["token_f1"]),
                "token_f1_b": float(b["token_f1"]),
                "question": str(high["question"]),
                "gold_answer": str(high["gold_answer"]),
                "passage_ref": _passage_ref(high["target_pids"]),
                "ask_error_category": False,
            }
        )
    return rows, shortfalls


def build_annotation_sample(
    predictions: pd.DataFrame,
    scores: pd.DataFrame,
    items: pd.DataFrame,
    languages: pd.DataFrame,
    settings: HumanValidationSettings,
    *,
    models: Sequence[str],
    task_predictions: pd.DataFrame | None = None,
    granularity_tasks: pd.DataFrame | None = None,
    long_paragraphs: pd.DataFrame | None = None,
) -> AnnotationSample:
    """The whole sample: singles, pairs and planted attention checks, with their annotators; and,
    given the granularity frames, the paragraph-filling arm (``draw_fills``)."""
    _check_quality_settings(settings)
    rng = np.random.default_rng(settings.seed)
    eligible = eligible_responses(predictions, scores, items, models=models)
    singles, shortfalls = draw_singles(eligible, settings, rng)
    single_rows = _single_tasks(singles, settings, rng)
    joshi_raw = dict(zip(languages["iso"], languages["joshi_class"], strict=True)) if len(languages) else {}
    joshi = {str(k): int(v) for k, v in joshi_raw.items() if v is not None and not pd.isna(v)}
    pair_rows, pair_short = draw_pairs(eligible, joshi, settings, rng)
    shortfalls += pair_short
    tasks = {r["task_id"]: r for r in [*single_rows, *pair_rows]}
    forms = assign_annotators(list(tasks), settings, rng)
    templates = single_rows or pair_rows
    annotators, positions, attention_rows = _plant_attention_checks(forms, tasks, templates, settings, rng)
    rows = [{**r, "annotators": annotators[t], "positions": positions[t]} for t, r in tasks.items()]
    if not templates and settings.attention_checks:
        shortfalls.append("attention checks: none planted (no task to plant them in)")
    fill_rows, fill_short = draw_fills(
        task_predictions, granularity_tasks, long_paragraphs, settings, models=models
    )
    shortfalls += fill_short
    return AnnotationSample(sample=_sample_frame([*rows, *attention_rows, *fill_rows]), shortfalls=shortfalls)


def _check_quality_settings(settings: HumanValidationSettings) -> None:
    """The quality weights must be a distribution over the bins, and the bin edges ordered in (0, 1]."""
    weights = [settings.quality_weights.get(b, 0.0) for b in BINS]
    if any(w < 0 for w in weights) or not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
        raise ValueError(f"human_validation.quality_weights: must be >= 0 and sum to 1, got {weights}")
    low, high = settings.quality_bins
    if not 0 < low < high <= 1:
        raise ValueError(
            f"human_validation.quality_bins: need 0 < low < high <= 1, got {settings.quality_bins}"
        )


def _single_tasks(
    singles: pd.DataFrame, settings: HumanValidationSettings, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """One task per drawn response; a random share of them also asks the primary error category."""
    n_error = round(len(singles) * settings.error_category_share)
    ask = set(rng.choice(len(singles), size=n_error, replace=False).tolist()) if len(singles) else set()
    return [
        {
            "task_id": task_id_of(
                "s", row["model"], row["language"], row["doc_id"], row["item_id"], row["rep"]
            ),
            "kind": "single",
            **{k: row[k] for k in ("model", "language", "doc_id", "item_id", "level", "item_source")},
            "rep": int(row["rep"]),
            "category": row["category"],
            "quality_bin": row["quality_bin"],
            "token_f1": float(row["token_f1"]),
            "response": str(row["answer"]),
            "question": str(row["question"]),
            "gold_answer": str(row["gold_answer"]),
            "passage_ref": _passage_ref(row["target_pids"]),
            "ask_error_category": i in ask,
        }
        for i, row in enumerate(singles.to_dict("records"))
    ]


def _plant_attention_checks(
    forms: dict[str, list[str]],
    tasks: dict[str, dict[str, Any]],
    templates: list[dict[str, Any]],
    settings: HumanValidationSettings,
    rng: np.random.Generator,
) -> tuple[dict[str, list[str]], dict[str, list[int]], list[dict[str, Any]]]:
    """Each annotator's form shuffled with its attention checks planted; every task's annotators
    and positions, and the attention tasks (one per annotator and check)."""
    annotators: dict[str, list[str]] = {t: [] for t in tasks}
    positions: dict[str, list[int]] = {t: [] for t in tasks}
    attention_rows: list[dict[str, Any]] = []
    for annotator, form in forms.items():
        ordered = [form[i] for i in rng.permutation(len(form))]
        for n in range(settings.attention_checks if templates else 0):
            # The n-th check sits at attention_position (+n), or last in a short form.
            at = min(settings.attention_position - 1 + n, len(ordered))
            base = templates[int(rng.integers(len(templates)))]
            task_id = task_id_of("a", annotator, n)
            ordered.insert(at, task_id)
            attention_rows.append(
                {
                    "task_id": task_id,
                    "kind": "attention",
                    "model": None,
                    "language": None,
                    "doc_id": base["doc_id"],
                    "item_id": base["item_id"],
                    "rep": None,
                    "category": None,
                    "response": ATTENTION_TEXT,
                    "question": base["question"],
                    "gold_answer": base["gold_answer"],
                    "passage_ref": base["passage_ref"],
                    "ask_error_category": False,
                    "attention_field": ATTENTION_FIELD,
                    "attention_expected": ATTENTION_EXPECTED,
                    "annotators": [annotator],
                    "positions": [at + 1],
                }
            )
        for pos, task in enumerate(ordered, start=1):
            if task in annotators:
                annotators[task].append(annotator)
                positions[task].append(pos)
    return annotators, positions, attention_rows


def _sample_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The ``annotation_sample`` table: its columns and types, singles then pairs, checks, fills."""
    sample = pd.DataFrame(rows, columns=SAMPLE_COLUMNS)
    for column in ("rep",):
        sample[column] = sample[column].astype("Int64")
    for column in ("gran_task_id", "context", "previous_text", "next_text"):
        sample[column] = sample[column].astype(object)  # text, also when no fill row sets it
    sample["ask_error_category"] = sample["ask_error_category"].fillna(False).astype(bool)
    order = {"single": 0, "pair": 1, "attention": 2, "fill": 3}
    return sample.sort_values(
        ["kind", "task_id"], key=lambda s: s.map(order) if s.name == "kind" else s, kind="stable"
    ).reset_index(drop=True)
