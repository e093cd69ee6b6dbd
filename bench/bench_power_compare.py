"""Benchmark ``clcg plan --power`` and ``clcg compare`` at study scale (issue 21).

On the default synthetic panel (~800k scored rows, five models), each against the H1 family
(``h1_core``: the primary estimates with their article-cluster bootstrap) on the same rows,
timed in the same run, so the figures are ratios:

1. power for the H1 gap and for the paired difference of two models (2,000 replicates, then
   2,000 resampled studies at the articles needed);
2. the comparison of two runs on the same items (the H1 family of both on the common rows,
   paired), estimates tables of the two runs given.

    .venv/bin/python bench/bench_power_compare.py
"""

from __future__ import annotations

import time

import numpy as np


def main() -> int:
    from clcg_pipeline.analysis import PowerQuestion, h1_core, power_from_pilot, run_suite
    from clcg_pipeline.config import load_config
    from clcg_pipeline.results import RunSide, compare_runs
    from clcg_pipeline.synthetic import synthetic_config, synthetic_scores

    config = synthetic_config(load_config("assets_config"))
    scores = synthetic_scores(config.languages, seed=0)
    models = sorted(scores["model"].astype(str).unique())
    print(f"panel: {len(scores):,} scored rows, {len(models)} models")

    start = time.perf_counter()
    h1_core(scores, config.languages, config.study)
    baseline = time.perf_counter() - start
    print(f"baseline h1_core: {baseline:.2f} s")

    start = time.perf_counter()
    gap = power_from_pilot(scores, config, PowerQuestion(effect=0.01))
    pair = power_from_pilot(scores, config, PowerQuestion(effect=0.01, models=(models[0], models[1])))
    power_s = time.perf_counter() - start
    print(
        f"plan --power (gap + model pair): {power_s:.2f} s = {power_s / baseline:.2f} x h1_core; "
        f"articles needed {gap['articles_needed']} (simulated power {gap['simulated_power']:.3f}), "
        f"pair {pair['articles_needed']} ({pair['simulated_power']:.3f})"
    )

    metric = config.study.band.metric
    targets = scores["language"].isin(list(config.languages.targets))
    other = scores.assign(**{metric: np.clip(scores[metric] - np.where(targets, 0.01, 0.0), 0, 1)})
    small = config.model_copy(update={"study": config.study.model_copy(update={"bootstrap_replicates": 200})})
    estimates = [run_suite(frame, small).estimates for frame in (scores, other)]
    start = time.perf_counter()
    table, info = compare_runs(RunSide("A", estimates[0], scores), RunSide("B", estimates[1], other), config)
    compare_s = time.perf_counter() - start
    print(
        f"compare (paired on {info['common_rows']:,} rows, {len(table)} estimands): {compare_s:.2f} s "
        f"= {compare_s / baseline:.2f} x h1_core"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
