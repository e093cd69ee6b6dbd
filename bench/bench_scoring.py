"""Benchmark: scoring throughput on a study-sized synthetic panel (~830,000 prediction rows).

Reports rows/s of ``score_predictions`` and its speed-up over a naive per-row loop measured in
the same run on the same rows: ``token_f1``, ``exact_match`` and rouge-score's own
``RougeScorer(["rougeL"])`` called row by row on (answer, gold), no caching. Two answer mixes
are timed: "realistic" (each item's answers come from a small pool of variants, as repetitions,
models and languages repeat answers) and "unique" (every answer distinct: deduplication cannot
help; worst case, issue 12's target is >= 3x). The naive loop runs on the first --naive-rows
rows of each mix (all by default) and its time is scaled to the full row count.

    .venv/bin/python bench/bench_scoring.py [--rows 830000] [--unique-rows 830000] [--naive-rows N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from rouge_score import rouge_scorer

from clcg_pipeline.scoring import exact_match, normalize_answer, score_predictions, token_f1

_WORDS = [
    "river",
    "council",
    "harbour",
    "festival",
    "mountain",
    "treaty",
    "village",
    "school",
    "railway",
    "museum",
    "election",
    "bridge",
    "island",
    "market",
    "forest",
    "language",
    "church",
    "factory",
    "province",
    "college",
    "stadium",
]


def make_items(n_docs: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for d in range(n_docs):
        for level in ("L0", "L1", "L2", "L3", "L4", "L5"):
            for k in range(4):
                polar = level == "L0"
                mc = level == "L2" and k == 3
                options = [" ".join(rng.choice(_WORDS, 2)) for _ in range(4)] if mc else None
                if polar:
                    gold = str(rng.choice(["Yes", "No", "Not stated"]))
                elif mc:
                    gold = options[int(rng.integers(4))]
                else:
                    gold = " ".join(rng.choice(_WORDS, int(rng.integers(2, 12))))
                rows.append(
                    {
                        "item_id": f"d{d}-{level}-{k}",
                        "level": level,
                        "item_source": "llm",
                        "gold_answer": gold,
                        "answer_format": "polar"
                        if polar
                        else "mc"
                        if mc
                        else "span"
                        if level == "L1"
                        else "free",
                        "options": options,
                        "gold_answerable": bool(rng.random() > 0.01),
                    }
                )
    return pd.DataFrame(rows)


def make_predictions(
    items: pd.DataFrame, n_rows: int, rng: np.random.Generator, *, unique: bool
) -> pd.DataFrame:
    idx = rng.integers(0, len(items), n_rows)
    item = items.iloc[idx].reset_index(drop=True)
    variant = rng.integers(0, 8, n_rows)
    gold = item["gold_answer"].to_numpy()
    answers = np.empty(n_rows, dtype=object)
    # Each item has eight answer variants: the gold, truncations, "Not stated", a distractor.
    for i in range(n_rows):
        v, g = variant[i], gold[i]
        if v == 0:
            answers[i] = g
        elif v <= 3:
            answers[i] = " ".join(g.split()[: v + 1]) + "."
        elif v == 4:
            answers[i] = "Not stated"
        else:
            answers[i] = f"The {_WORDS[(len(g) + v) % len(_WORDS)]} of {g.split()[-1]} was {v}"
        if unique:
            answers[i] = f"{answers[i]} r{i}"
    status = rng.choice(["ok", "unparseable", "missing"], n_rows, p=[0.95, 0.03, 0.02])
    return pd.DataFrame(
        {
            "model": rng.choice([f"m{i}" for i in range(5)], n_rows),
            "language": rng.choice([f"l{i}" for i in range(18)], n_rows),
            "doc_id": item["item_id"].str.split("-").str[0],
            "item_id": item["item_id"],
            "rep": rng.integers(1, 4, n_rows),
            "context_scope": "full_body",
            "answer": answers,
            "status": status,
            "call_id": "c",
        }
    )


def naive_loop(predictions: pd.DataFrame, items: pd.DataFrame) -> float:
    """Seconds for the three metrics row by row, the way a first implementation would."""
    gold_of = items.set_index("item_id")["gold_answer"]
    answers = predictions["answer"].fillna("").astype(str).tolist()
    golds = predictions["item_id"].map(gold_of).fillna("").astype(str).tolist()
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    start = time.perf_counter()
    for answer, gold in zip(answers, golds, strict=True):
        token_f1(answer, gold)
        exact_match(answer, gold)
        scorer.score(gold, answer)
    return time.perf_counter() - start


def bench(label: str, predictions: pd.DataFrame, items: pd.DataFrame, naive_rows: int) -> None:
    n = len(predictions)
    sample = predictions.iloc[: min(naive_rows, n)] if naive_rows else predictions
    naive = naive_loop(sample, items) * n / len(sample)
    start = time.perf_counter()
    result = score_predictions(predictions, items)
    elapsed = time.perf_counter() - start
    print(
        f"{label:>9}: {n:,} rows scored in {elapsed:.2f} s = {n / elapsed:,.0f} rows/s; "
        f"naive per-row loop {naive:.2f} s{'' if len(sample) == n else f' (from {len(sample):,} rows)'} "
        f"= {n / naive:,.0f} rows/s; speed-up {naive / elapsed:.2f}x the naive loop; "
        f"dropped {result.dropped}; mean token_f1 {result.scores['token_f1'].mean():.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=830_000)
    parser.add_argument("--unique-rows", type=int, default=830_000, help="0 skips the worst case")
    parser.add_argument("--naive-rows", type=int, default=0, help="rows the naive loop times (0 = all)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    items = make_items(150, rng)
    normalize_answer("warm up")  # builds the punctuation table once, outside the timings
    bench("realistic", make_predictions(items, args.rows, rng, unique=False), items, args.naive_rows)
    if args.unique_rows:
        bench("unique", make_predictions(items, args.unique_rows, rng, unique=True), items, args.naive_rows)


if __name__ == "__main__":
    main()
