"""Benchmark the granularity analysis at study scale (2,000 replicates).

50 documents x 18 languages x 5 models x 62 tasks x 2 contexts (about 500k task_scores rows,
noisy, with a middle-region penalty) plus three judges' paragraph-filling totals. Times
``analyse_granularity`` twice in process and, in the same run, a baseline: one pandas
groupby-mean of the same rows over the same score cells (the work with no bootstrap). Reports
the wall as a ratio to that baseline and checks that both runs give identical results.

    .venv/bin/python bench/bench_granularity.py [--documents 50] [--replicates 2000]

The same run also times the analysis with its extra dimensions (docs/GRANULARITY.md "Analysis
dimensions"): the same rows plus four length buckets (8K to 128K), sentence positions and
roles, and reports that wall as a ratio to the analysis of the rows without those columns
(where the length, sentence-position and role dimensions are skipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np
import pandas as pd

BUDGET_S = 120.0


def judgements_for(scores: pd.DataFrame, judges: int, seed: int) -> pd.DataFrame:
    """Paragraph-filling totals from ``judges`` judges: the answer's score x 100 plus judge noise."""
    rng = np.random.default_rng(seed)
    fill = scores.loc[(scores["task"] == "paragraph_fill") & (scores["context"] == "full")]
    keys = fill[["model", "language", "doc_id", "task_id", "context", "rep"]]
    frames = []
    for j in range(judges):
        total = np.clip(np.round(100 * fill["score"].to_numpy() + rng.normal(0, 8, len(fill))), 0, 100)
        frames.append(keys.assign(judge=f"judge-{j}", total=total, status="ok"))
    return pd.concat(frames, ignore_index=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument("--replicates", type=int, default=2000)
    args = parser.parse_args()

    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.granularity import analyse_granularity
    from clcg_pipeline.synthetic import (
        ExtraEffects,
        synthetic_config,
        synthetic_task_scores,
        with_extra_effects,
    )

    config = synthetic_config(load_config(default_config_dir()), n_models=5)
    config = config.model_copy(
        update={
            "study": config.study.model_copy(
                update={"granularity": config.study.granularity.model_copy(update={"enabled": True})}
            )
        }
    )
    isos = config.languages.isos
    gaps = {}
    for lang in config.languages.languages:
        cls = lang.joshi_class if lang.joshi_class is not None else 1
        gaps[lang.iso] = 0.0 if lang.role == "reference" else 0.02 * (6 - cls)
    t0 = time.perf_counter()
    scores = synthetic_task_scores(
        isos,
        models=[m.id for m in config.models.evaluated],
        n_documents=args.documents,
        gaps=gaps,
        middle_penalty={iso: 0.05 + g / 2 for iso, g in gaps.items()},
        noise=0.15,
        per_position=2,
        seed=0,
    )
    judgements = judgements_for(scores, 3, seed=1)
    print(f"generated {len(scores):,} task_scores rows, {len(judgements):,} judgements in "
          f"{time.perf_counter() - t0:.1f}s")  # fmt: skip

    t0 = time.perf_counter()
    dims = ["task", "granularity", "metric", "region", "position", "language", "model"]
    baseline = scores.loc[scores["context"] == "full"].groupby(dims, dropna=False)["score"].mean()
    baseline_s = time.perf_counter() - t0

    walls, digests = [], []
    for _ in range(2):
        t0 = time.perf_counter()
        out = analyse_granularity(scores, config, judgements=judgements, replicates=args.replicates)
        walls.append(time.perf_counter() - t0)
        text = json.dumps(out.results, sort_keys=True, default=str)
        digests.append(hashlib.sha256(text.encode()).hexdigest())
    wall = max(walls)
    res = out.results
    print(f"baseline: groupby mean over {len(baseline):,} score cells  {baseline_s:6.3f}s")
    print(f"analyse_granularity ({args.replicates} replicates)  {walls[0]:6.2f}s, {walls[1]:6.2f}s "
          f"(budget {BUDGET_S:.0f}s)")  # fmt: skip
    print(f"ratio to the baseline: {wall / baseline_s:,.0f}x")
    alpha = res["judge_agreement"]["alpha_ordinal"]
    print(f"estimates rows {len(out.estimates):,}; scores {len(res['scores']):,}; gaps {len(res['gaps']):,}; "
          f"middle_vs_edges {len(res['middle_vs_edges'])}; judge alpha {alpha:.3f}")  # fmt: skip
    identical = digests[0] == digests[1]
    print(f"identical results across runs: {identical}")
    effects = ExtraEffects(
        buckets=("8K", "32K", "64K", "128K"),
        bucket_gap={"32K": 0.01, "64K": 0.02, "128K": 0.04},
        sentence_middle=0.03,
        role_penalty={"summary": 0.05},
    )
    t0 = time.perf_counter()
    lengthy = analyse_granularity(
        with_extra_effects(scores, effects, config.languages.reference),
        config,
        judgements=judgements,
        replicates=args.replicates,
    )
    with_dims = time.perf_counter() - t0
    lres = lengthy.results
    print(f"with the length axis, sentence positions and roles  {with_dims:6.2f}s: "
          f"{with_dims / min(walls):.2f}x the analysis without them (best of two {min(walls):.2f}s); "
          f"length gaps {len(lres['length']['gaps']):,}, "
          f"bucket contrasts {len(lres['length']['middle_vs_edges'])}, "
          f"ranks {len(lres['model_ranks'])}, trends {len(lres['gap_trends'])}")  # fmt: skip
    ok = identical and wall < BUDGET_S and with_dims < BUDGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
