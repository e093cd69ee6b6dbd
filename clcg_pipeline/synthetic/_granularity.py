"""Synthetic granularity task scores with known effects (tests and ``bench/bench_granularity.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from clcg_pipeline.granularity import EXTRA_METRICS, POSITIONS


def synthetic_task_scores(
    languages: Sequence[str],
    *,
    reference: str = "en",
    models: Sequence[str] = ("m1",),
    n_documents: int = 12,
    gaps: Mapping[str, float] | None = None,
    middle_penalty: Mapping[str, float] | None = None,
    base: float = 0.7,
    no_context_drop: float = 0.3,
    noise: float = 0.0,
    per_position: int = 1,
    seed: int = 0,
    effects: ExtraEffects | None = None,
) -> pd.DataFrame:
    """A ``task_scores``-shaped frame with known effects, one row per task x language x model x context.

    Per document: ``per_position`` word_single_qa, word_multi_qa and cloze tasks at every region x
    position (accuracy; 54 tasks with ``per_position=2``), two
    paragraph_fill tasks per region (rouge_l, judge_total), one summary (rouge_l) and one
    translation (bleu, no English row). A row's score is ``base - gaps[language] -
    middle_penalty[language] (region middle) - no_context_drop (context none) + noise``, clipped
    to [0, 1]; with ``noise=0`` every estimate is known exactly. ``effects`` adds the length
    bucket, sentence-position and role columns and their effects (:class:`ExtraEffects`).
    """
    gaps = dict(gaps or {})
    middle_penalty = dict(middle_penalty or {})
    rng = np.random.default_rng(seed)
    tasks: list[tuple[str, str, str | None, str | None, str]] = []
    for region in POSITIONS:
        for position in POSITIONS:
            for _ in range(per_position):
                tasks.append(("word_single_qa", "word", region, position, "accuracy"))
                tasks.append(("word_multi_qa", "word", region, position, "accuracy"))
                tasks.append(("cloze", "sentence", region, position, "accuracy"))
        for position in ("begin", "end"):
            tasks.append(("paragraph_fill", "paragraph", region, position, "rouge_l"))
    tasks.append(("summary", "document", None, None, "rouge_l"))
    tasks.append(("translation", "document", None, None, "bleu"))
    task_frame = pd.DataFrame(tasks, columns=["task", "granularity", "region", "position", "metric"])
    task_frame["t"] = np.arange(len(task_frame))
    # One cross join (documents x tasks x languages x models x contexts) instead of a Python
    # loop, so the benchmark's study-scale frame is built in about a second.
    parts = [
        pd.DataFrame({"doc_id": [f"doc{d:03d}" for d in range(n_documents)]}),
        task_frame,
        pd.DataFrame({"language": list(languages)}),
        pd.DataFrame({"model": list(models)}),
        pd.DataFrame({"context": ["full", "none"]}),
    ]
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.merge(part, how="cross")
    frame = frame.loc[~((frame["task"] == "translation") & (frame["language"] == reference))]
    frame = frame.reset_index(drop=True)
    t = frame.pop("t").map("{:02d}".format)
    frame["task_id"] = frame["doc_id"] + "-t" + t
    frame["group_id"] = frame["doc_id"] + "-g" + t
    frame["rep"] = 0
    value = base - frame["language"].map(lambda iso: gaps.get(iso, 0.0)).to_numpy(dtype=np.float64)
    middle = frame["language"].map(lambda iso: middle_penalty.get(iso, 0.0)).to_numpy(dtype=np.float64)
    value = value - np.where((frame["region"] == "middle").to_numpy(), middle, 0.0)
    value = value - np.where((frame["context"] == "none").to_numpy(), no_context_drop, 0.0)
    if noise:
        value = value + rng.normal(0, noise, size=len(frame))
    frame["score"] = np.clip(value, 0.0, 1.0)
    frame["status"] = "ok"
    order = [
        "model", "language", "doc_id", "task_id", "group_id", "task", "context", "rep", "granularity",
        "region", "position", "metric", "score", "status",
    ]  # fmt: skip
    frame = frame[order]
    for metric in EXTRA_METRICS:
        frame[metric] = np.where(frame["metric"] == metric, frame["score"], np.nan)
    fill = (frame["task"] == "paragraph_fill").to_numpy()
    frame["judge_total"] = np.where(fill, 100.0 * frame["score"], np.nan)
    return with_extra_effects(frame, effects, reference) if effects is not None else frame


@dataclass(frozen=True)
class ExtraEffects:
    """The analysis's extra dimensions and their known effects (all subtracted from the score).

    Documents cycle through ``buckets``; a non-reference row loses ``bucket_gap[bucket]`` (a gap
    growing with length). Cloze rows cycle through sentence positions begin, middle, end and
    lose ``sentence_middle`` in the middle; the cloze and paragraph-filling rows of document
    ``d`` take role ``ROLES[d % 3]`` and lose ``role_penalty[role]``.
    """

    buckets: tuple[str, ...] = ("8K", "32K", "64K", "128K")
    bucket_gap: Mapping[str, float] = field(default_factory=dict)
    sentence_middle: float = 0.0
    role_penalty: Mapping[str, float] = field(default_factory=dict)


#: Key-sentence roles (as the task builders write them).
ROLES = ("core", "transitional", "summary")


def with_extra_effects(frame: pd.DataFrame, effects: ExtraEffects, reference: str) -> pd.DataFrame:
    """``frame`` with ``bucket``, ``sentence_position`` and ``role`` and their effects applied."""
    doc_index = frame["doc_id"].str.slice(3).astype(int).to_numpy()
    bucket = np.asarray(effects.buckets, dtype=object)[doc_index % len(effects.buckets)]
    task_index = frame["task_id"].str.rsplit("-t", n=1).str[1].astype(int).to_numpy()
    cloze = (frame["task"] == "cloze").to_numpy()
    roled = cloze | (frame["task"] == "paragraph_fill").to_numpy()
    sentence = np.where(cloze, np.asarray(POSITIONS, dtype=object)[task_index % 3], None)
    # Roles cycle over documents, sentence positions over tasks: the two effects stay apart.
    role = np.where(roled, np.asarray(ROLES, dtype=object)[doc_index % 3], None)
    other = (frame["language"] != reference).to_numpy()
    loss = np.where(
        other, pd.Series(bucket).map(lambda b: effects.bucket_gap.get(b, 0.0)).to_numpy(float), 0.0
    )
    loss = loss + np.where(sentence == "middle", effects.sentence_middle, 0.0)
    loss = loss + pd.Series(role).map(lambda r: effects.role_penalty.get(r, 0.0) if r else 0.0).to_numpy(
        float
    )
    score = np.clip(frame["score"].to_numpy(float) - loss, 0.0, 1.0)
    out = frame.assign(bucket=bucket, sentence_position=sentence, role=role, score=score)
    for metric in EXTRA_METRICS:
        out[metric] = np.where(out["metric"] == metric, out["score"], np.nan)
    out["judge_total"] = np.where((out["task"] == "paragraph_fill").to_numpy(), 100.0 * out["score"], np.nan)
    return out
