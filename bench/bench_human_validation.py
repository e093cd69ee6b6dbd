"""Benchmark the human-validation analysis at study scale (docs/HUMAN_VALIDATION.md).

600 individual responses + 66 contrastive pairs, 3 annotators each, 200 annotators (21 failing
the attention check, 2 contradictory, impossible values and speed outliers planted), 2,000
bootstrap replicates: ``run_human_validation`` end to end (QC funnel, alpha per dimension with
item bootstrap, Spearman with item bootstrap, class adequacy, paired preference with the
crossed-random-intercept model and annotator bootstrap, ceiling rule, joins).

Baselines measured in the same run:
- ``points``: the QC funnel and the point estimates alone through the maintained libraries (krippendorff.alpha
  per dimension, scipy spearmanr, binomtest) - the floor of any implementation;
- ``naive``: the adequacy alpha bootstrap done the obvious way (the ``krippendorff`` package
  called once per replicate on the resampled matrix), timed on 100 replicates and scaled to
  2,000 - what the vectorized coincidence-matrix bootstrap replaces.

Runs the analysis twice and checks both results documents are identical (seeded).

    .venv/bin/python bench/bench_human_validation.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BUDGET_S = 120.0


def main() -> int:
    import krippendorff
    import numpy as np
    from scipy.stats import binomtest, spearmanr

    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.synthetic import synthetic_human_study
    from clcg_pipeline.validation import (
        RUBRIC,
        alpha_table,
        attach_sample,
        per_response,
        run_human_validation,
        run_qc,
        value_counts,
    )

    cfg = load_config(default_config_dir())
    assert cfg.study.bootstrap_replicates == 2000
    t0 = time.perf_counter()
    annotations, sample, _ = synthetic_human_study(seed=0)
    print(f"generated {len(annotations):,} annotation rows in {time.perf_counter() - t0:.1f}s")

    # Baseline 1: point estimates only, through the libraries.
    t0 = time.perf_counter()
    kept = attach_sample(run_qc(annotations, cfg.study.human_validation).kept, sample)
    for spec in RUBRIC:
        rows = kept[kept["kind"].isin(spec.kinds)]
        if rows[spec.name].notna().sum() == 0:
            continue
        domain = spec.values if spec.level == "ordinal" else None
        _, dom, counts = value_counts(
            rows, unit="task_id", value=spec.name, coder="annotator_id", domain=domain
        )
        seen = counts.sum(axis=0) > 0
        if seen.sum() > 1:
            krippendorff.alpha(
                value_counts=counts[:, seen],
                value_domain=dom[seen].astype(float) if spec.level == "interval" else np.arange(seen.sum()),
                level_of_measurement=spec.level,
            )
    per = per_response(kept[kept["kind"] == "single"]).dropna()
    spearmanr(per["token_f1"], per["adequacy"])
    binomtest(85, 138, 0.5, alternative="greater")
    points_s = time.perf_counter() - t0

    # Baseline 2: the naive adequacy-alpha bootstrap (package per replicate), 100 replicates.
    singles = kept[kept["kind"] == "single"]
    _, _, counts = value_counts(
        singles, unit="task_id", value="adequacy", coder="annotator_id", domain=(1, 2, 3, 4, 5)
    )
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in range(100):
        pick = counts[rng.integers(0, len(counts), len(counts))]
        seen = pick.sum(axis=0) > 0
        krippendorff.alpha(
            value_counts=pick[:, seen], value_domain=np.arange(seen.sum()), level_of_measurement="ordinal"
        )
    naive_s = (time.perf_counter() - t0) * 20

    # The same bootstrap, vectorized (alpha_table: every dimension, 2,000 replicates).
    t0 = time.perf_counter()
    alphas = alpha_table(kept, replicates=2000, seed=42, confidence=0.95, min_units=10)
    vector_s = time.perf_counter() - t0
    fields = len([a for a in alphas if a["status"] == "ok"])
    naive_all_s = naive_s * fields

    runs, docs = [], []
    for _ in range(2):
        t0 = time.perf_counter()
        result = run_human_validation(cfg, annotations, sample)
        runs.append(time.perf_counter() - t0)
        docs.append(json.dumps(result.results, sort_keys=True, default=str))
    doc = result.results
    wall = max(runs)
    funnel = {r["step"]: (r["remaining_annotators"], r["remaining_ratings"]) for r in doc["qc_funnel"]}
    print(f"funnel (annotators, ratings): {funnel}")
    pref = doc["preference"]
    print(f"preference: raw {pref['proportion']:.3f}, mixed {pref['mixed']['probability']:.3f}")
    print(f"points-only baseline            {points_s:7.2f}s")
    print(f"naive alpha bootstrap, 1 dim    {naive_s:7.2f}s  (package per replicate, 100 timed x 20)")
    print(f"naive alpha bootstrap, all dims {naive_all_s:7.2f}s  (estimated: {fields} fields with an alpha)")
    print(f"vectorized alpha bootstrap      {vector_s:7.2f}s  (every field, 2,000 replicates)")
    print(f"human-validation analysis       {runs[0]:7.2f}s, {runs[1]:7.2f}s (budget {BUDGET_S:.0f}s)")
    print(f"analysis / points-only baseline       {wall / points_s:6.1f}x")
    print(f"vectorized / naive alpha bootstrap    {vector_s / naive_all_s:6.3f}x")
    identical = docs[0] == docs[1]
    print(f"results identical across runs: {identical}")
    return 0 if identical and wall < BUDGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
