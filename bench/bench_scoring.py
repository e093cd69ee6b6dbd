"""Benchmark: scoring throughput on a study-sized synthetic panel (~830,000 prediction rows).

Reports rows/s of ``score_predictions`` and the ratio to a baseline measured in the same run:
a plain ``normalize_answer`` over every row's answer (no caching), i.e. the cheapest possible
per-row pass. Two answer mixes are timed: "realistic" (each item's answers come from a small
pool of variants, as repetitions, models and languages repeat answers) and "unique" (every
answer distinct: the cache cannot help; worst case).

    .venv/bin/python bench/bench_scoring.py [--rows 830000] [--unique-rows 830000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from clcg_pipeline.scoring import normalize_answer, score_predictions

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


def bench(label: str, predictions: pd.DataFrame, items: pd.DataFrame) -> None:
    answers = predictions["answer"].tolist()
    start = time.perf_counter()
    _ = [normalize_answer(a) for a in answers]
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    result = score_predictions(predictions, items)
    elapsed = time.perf_counter() - start
    n = len(predictions)
    print(
        f"{label:>9}: {n:,} rows scored in {elapsed:.2f} s "
        f"= {n / elapsed:,.0f} rows/s; "
        f"baseline normalize_answer {baseline:.2f} s = {n / baseline:,.0f} rows/s; "
        f"ratio {elapsed / baseline:.2f}x baseline time; "
        f"dropped {result.dropped}; mean token_f1 {result.scores['token_f1'].mean():.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=830_000)
    parser.add_argument("--unique-rows", type=int, default=830_000, help="0 skips the worst case")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    items = make_items(150, rng)
    normalize_answer("warm up")  # builds the punctuation table once, outside the timings
    bench("realistic", make_predictions(items, args.rows, rng, unique=False), items)
    if args.unique_rows:
        bench("unique", make_predictions(items, args.unique_rows, rng, unique=True), items)


if __name__ == "__main__":
    main()
