"""Seeded synthetic human-validation data (annotation sample + imported annotations).

For tests and ``bench/bench_human_validation.py`` only: a study-shaped set with known
properties (a preference probability, planted attention failures, contradictory annotators,
impossible values and speed outliers) so the analysis can be checked against what was put in.
Never used by the pipeline's assets: the demo ships its own labelled simulated set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

EQUIV = ("not_equivalent", "partially_equivalent", "equivalent")
ATTR = ("not_supported", "partially_supported", "supported")
CATS = ("correct", "partial_or_omission", "unsupported_addition", "wrong_answer", "no_answer")


@dataclass(frozen=True)
class Planted:
    """What was put into a synthetic set (the QC funnel must find exactly these)."""

    attention_failures: set[str]
    contradictory: set[str]
    invalid_ratings: int
    speed_outliers: int


def synthetic_human_study(
    *,
    singles: int = 600,
    pairs: int = 66,
    per_item: int = 3,
    annotators: int = 200,
    languages: dict[str, int] | None = None,
    p_higher: float = 0.65,
    attention_failures: int = 21,
    contradictory: int = 2,
    invalid: int = 20,
    fast: int = 22,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, Planted]:
    """``(annotations, sample, planted)`` in the ``human_annotations`` / ``annotation_sample`` shape."""
    rng = np.random.default_rng(seed)
    languages = languages or {"en": 5, "pt": 4, "sw": 2, "xh": 2, "ay": 1, "gn": 1, "ne": 1}
    names = [f"ann-{i:03d}" for i in range(annotators)]
    sample = _sample(singles, pairs, sorted(languages), rng)
    bad_attention = set(rng.choice(names, size=attention_failures, replace=False).tolist())
    rest = [n for n in names if n not in bad_attention]
    contra = set(rng.choice(rest, size=contradictory, replace=False).tolist())
    ann_effect = dict(zip(names, rng.normal(0, 0.5, annotators), strict=True))
    pair_effect = rng.normal(0, 0.5, pairs)
    load = {n: 0 for n in names}
    rows = []
    for t in sample.itertuples():
        chosen = sorted(names, key=lambda n: (load[n], rng.random()))[:per_item]
        for a in chosen:
            load[a] += 1
            row = {
                "task_id": t.task_id,
                "annotator_id": a,
                "kind": t.kind,
                "seconds": float(rng.lognormal(3.5, 0.4)),
            }
            if t.kind == "single":
                row.update(_single_rating(t.token_f1, ann_effect[a], a in contra, rng))
            else:
                row.update(
                    _pair_rating(t.a_side, p_higher, ann_effect[a], pair_effect[int(t.task_id[2:])], rng)
                )
            rows.append(row)
    rows += [
        {
            "task_id": f"a-{i:03d}",
            "annotator_id": a,
            "kind": "attention",
            "adequacy": 1,
            "attention_passed": a not in bad_attention,
            "seconds": 30.0,
        }
        for i, a in enumerate(names)
    ]
    annotations = pd.DataFrame(rows)
    annotations.insert(0, "annotation_id", [f"r{i:05d}" for i in range(len(annotations))])
    annotations["simulated"] = True
    # Impossible values and speed outliers on ratings of annotators who stay in.
    clean = annotations.index[
        (annotations["kind"] == "single") & ~annotations["annotator_id"].isin(bad_attention | contra)
    ].to_numpy()
    picks = rng.choice(clean, size=invalid + fast, replace=False)
    annotations.loc[picks[:invalid], "adequacy"] = 7
    annotations.loc[picks[invalid:], "seconds"] = 1.0
    return annotations, sample, Planted(bad_attention, contra, invalid, fast)


def _sample(singles: int, pairs: int, isos: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """The annotation sample: singles spread over the languages, pairs of sw (higher) vs ay."""
    rows = []
    for i in range(singles):
        f1 = float(rng.beta(2, 2))
        rows.append(
            {
                "task_id": f"s-{i:04d}",
                "kind": "single",
                "model": "m1",
                "language": isos[i % len(isos)],
                "doc_id": f"d{i % 40:02d}",
                "item_id": f"it{i:04d}",
                "rep": 0,
                "category": "llm_deep",
                "quality_bin": "LOW" if f1 < 0.33 else ("MID" if f1 < 0.66 else "HIGH"),
                "token_f1": f1,
                "a_side": None,
            }
        )
    for i in range(pairs):
        rows.append(
            {
                "task_id": f"p-{i:03d}",
                "kind": "pair",
                "model": "m1",
                "language": "ay",
                "doc_id": f"d{i % 40:02d}",
                "item_id": f"it{i:04d}",
                "rep": 0,
                "category": "llm_deep",
                "quality_bin": None,
                "token_f1": None,
                "a_side": "higher" if rng.integers(2) else "lower",
                "language_higher": "sw",
                "language_lower": "ay",
            }
        )
    return pd.DataFrame(rows)


def _single_rating(
    token_f1: float, effect: float, contradictory: bool, rng: np.random.Generator
) -> dict[str, object]:
    """One annotator's rubric answers on a response: adequacy follows Token-F1 plus their leniency;
    a contradictory annotator rates adequacy 5 yet not equivalent."""
    base = 1 + 4 * token_f1 + effect + rng.normal(0, 0.8)
    adequacy = int(np.clip(round(base), 1, 5))
    if contradictory:
        row: dict[str, object] = {"adequacy": 5, "equivalence": "not_equivalent"}
    else:
        row = {"adequacy": adequacy, "equivalence": EQUIV[min(2, (adequacy - 1) // 2 + (adequacy == 5))]}
    row.update(
        keypoint_recall=float(np.clip(round(token_f1 * 4 + rng.normal(0, 0.7)) / 4, 0, 1)),
        attribution=ATTR[int(rng.integers(3))],
        question_valid="yes",
        consistency="consistent",
        primary_error_category=CATS[0] if adequacy >= 4 else CATS[int(rng.integers(1, 5))],
    )
    return row


def _pair_rating(
    a_side: str, p_higher: float, annotator_effect: float, pair_effect: float, rng: np.random.Generator
) -> dict[str, object]:
    """One annotator's preference on a pair: the higher-resource side with probability ``p_higher``
    on the logit scale shifted by the annotator's and the pair's effects; one in five answers none."""
    higher = rng.random() < expit(np.log(p_higher / (1 - p_higher)) + annotator_effect + pair_effect)
    decisive = rng.random() > 0.2
    side = ("A" if a_side == "higher" else "B") if higher else ("B" if a_side == "higher" else "A")
    return {"preference": side if decisive else "none", "confidence": int(rng.integers(1, 6))}
