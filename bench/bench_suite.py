"""Benchmark the whole analysis suite on a ~800k-row synthetic panel (2,000 replicates).

Reports wall time (budget: 2 minutes on the 2-core CI machine), each part's share, and
whether two runs give byte-identical ``study_results.json`` content.

    .venv/bin/python bench/bench_suite.py [--replicates 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

BUDGET_S = 120.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=2000)
    args = parser.parse_args()

    from clcg_pipeline.analysis import (
        run_suite,
        synthetic_articles,
        synthetic_config,
        synthetic_fertility,
        synthetic_scores,
    )
    from clcg_pipeline.analysis._io import to_jsonable
    from clcg_pipeline.config import default_config_dir, load_config

    config = synthetic_config(load_config(default_config_dir()))
    t0 = time.perf_counter()
    scores = synthetic_scores(config.languages, seed=0)
    articles = synthetic_articles(seed=0)
    fertility = synthetic_fertility(config.languages)
    replication = synthetic_scores(
        config.languages, n_articles=40, n_stability=0, human_per_article=0, seed=1
    )
    print(
        f"generated {len(scores):,} rows (+{len(replication):,} replication)"
        f" in {time.perf_counter() - t0:.1f}s"
    )

    digests, walls, timings = [], [], {}
    for run in range(2):
        start = time.perf_counter()
        result = run_suite(
            scores,
            config,
            articles=articles,
            fertility=fertility,
            replication_scores=replication,
            replicates=args.replicates,
        )
        walls.append(time.perf_counter() - start)
        text = json.dumps(to_jsonable(result.results), sort_keys=True)
        digests.append(hashlib.sha256(text.encode()).hexdigest())
        timings = result.timings
        print(f"run {run + 1}: {walls[-1]:.2f}s, {len(result.estimates)} estimate rows")

    total = sum(timings.values())
    print(f"\n{'part':<16}{'seconds':>9}{'share':>8}")
    for name, secs in sorted(timings.items(), key=lambda kv: -kv[1]):
        print(f"{name:<16}{secs:>9.2f}{secs / total:>8.1%}")
    mixed = result.results["mixed_effects"]
    print(
        f"\nmixed models on {mixed['aggregation']}:"
        f" h1 {mixed['h1'].get('status')}, h2 {mixed['h2'].get('status')}"
    )
    identical = digests[0] == digests[1]
    print(f"wall {max(walls):.2f}s (budget {BUDGET_S:.0f}s); bit-for-bit identical: {identical}")
    ok = identical and max(walls) < BUDGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
