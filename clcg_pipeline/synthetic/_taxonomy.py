"""Seeded synthetic error-taxonomy data: the diagnostic sample and both judges' labels.

For tests and ``bench/bench_validation.py`` only: a study-shaped set with a known label mix,
judge agreement and order bias, so the analysis can be checked against what was put in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from clcg_pipeline.validation.taxonomy import ORDER_COLUMNS, ORDERS


def synthetic_frames(
    n_pairs: int,
    n_articles: int,
    *,
    judges: Sequence[str] = ("judge-a", "judge-b"),
    labels: Sequence[str],
    languages: Mapping[str, int | None],
    models: Sequence[str] = ("model-x", "model-y"),
    order_pairs: int = 0,
    agreement: float = 0.8,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Synthetic ``diagnostic_sample``, ``error_judgements`` and ``order_bias_judgements`` (bench, tests).

    ``labels[0]`` is the correct label; the first judge labels EN mostly correct and target sides
    worse, the other judges copy its label with probability ``agreement`` and otherwise draw one.
    """
    rng = np.random.default_rng(seed)
    langs = list(languages)
    pair_ids = [f"p{i:06d}" for i in range(n_pairs)]
    target_p = np.array([0.6, 0.2, 0.08] + [0.12 / (len(labels) - 3)] * (len(labels) - 3))
    loss_of = np.linspace(0.0, 0.6, len(labels))
    en_l = np.where(rng.random(n_pairs) < 0.85, 0, rng.integers(1, len(labels), n_pairs))
    tg_l = rng.choice(len(labels), size=n_pairs, p=target_p / target_p.sum())
    sample = pd.DataFrame(
        {
            "pair_id": pair_ids,
            "model": rng.choice(list(models), n_pairs),
            "doc_id": [f"a{i:04d}" for i in rng.integers(0, n_articles, n_pairs)],
            "item_id": [f"i{i}" for i in range(n_pairs)],
            "rep": 0,
            "context_scope": "full_body",
            "language": rng.choice(langs, n_pairs),
            "level": "L3",
            "item_source": "llm",
            "en_score": 0.8,
            "metric": "token_f1",
        }
    )
    delta = loss_of[tg_l] + rng.normal(0, 0.05, n_pairs)
    sample = sample.assign(target_score=0.8 - delta, score_delta=delta, candidate_loss=delta > 0.15)
    judgements = _judgements(sample, en_l, tg_l, judges, labels, agreement, rng)
    chosen = rng.choice(n_pairs, size=min(order_pairs, n_pairs), replace=False)
    order_bias = _order_bias([pair_ids[i] for i in chosen], judges, rng)
    return sample, judgements, order_bias


def _judgements(
    sample: pd.DataFrame,
    en_l: np.ndarray,
    tg_l: np.ndarray,
    judges: Sequence[str],
    labels: Sequence[str],
    agreement: float,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Every judge's label of both sides: the first judge's are the drawn ones, the others copy
    them with probability ``agreement``; 1% of labels are unparseable."""
    pair_ids = sample["pair_id"].tolist()
    n_pairs = len(pair_ids)
    rows = []
    for j, judge in enumerate(judges):
        for side, base in (("en", en_l), ("target", tg_l)):
            keep = rng.random(n_pairs) < agreement if j else np.ones(n_pairs, dtype=bool)
            lab = np.where(keep, base, rng.integers(0, len(labels), n_pairs))
            status = np.where(rng.random(n_pairs) < 0.01, "unparseable", "ok")
            rows.append(
                pd.DataFrame(
                    {
                        "pair_id": pair_ids,
                        "side": side,
                        "judge": judge,
                        "label": [labels[k] if s == "ok" else None for k, s in zip(lab, status, strict=True)],
                        "status": status,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True).merge(
        sample[["pair_id", "model", "language", "doc_id", "item_id"]], on="pair_id"
    )


def _order_bias(chosen: list[str], judges: Sequence[str], rng: np.random.Generator) -> pd.DataFrame:
    """Each judge's preference on the ``chosen`` pairs shown both ways round: EN preferred 70% of
    the time, flipped by the order 15% of the time."""
    order_rows = []
    for judge in judges:
        prefer = np.where(rng.random(len(chosen)) < 0.7, "en", "target")
        flip = rng.random(len(chosen)) < 0.15
        for order in ORDERS:
            pref = (
                prefer
                if order == "en_first"
                else np.where(flip, np.where(prefer == "en", "target", "en"), prefer)
            )
            order_rows.append(
                pd.DataFrame(
                    {
                        "pair_id": chosen,
                        "judge": judge,
                        "order": order,
                        "preferred": pref,
                        "status": "ok",
                    }
                )
            )
    return (
        pd.concat(order_rows, ignore_index=True) if order_rows else pd.DataFrame(columns=list(ORDER_COLUMNS))
    )
