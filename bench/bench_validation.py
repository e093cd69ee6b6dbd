"""Benchmark the error-taxonomy analysis at study scale (issue 10: the wall of the validation analysis).

Study scale: 2,000 English/target pairs x 2 judges x 2 sides (8,000 labels), 150 articles, 2,000
bootstrap replicates, plus 100 order-bias pairs per judge shown both ways round. Two baselines are
timed in the same run, so the figures are ratios:

1. the suite's H1 section (``h1_core``: micro gap, per-language gaps, 2,000 article-cluster
   replicates) on a synthetic score panel of the same 150 articles;
2. a plain pandas pass over the same frames: the label counts per judge x side x label, the
   transition crosstab and the per-article counts the bootstrap starts from, with no resampling.

The analysis is run twice and its JSON documents must be identical (one seed, one draw of article
multiplicities for every estimand).

    .venv/bin/python bench/bench_validation.py [--pairs 2000] [--articles 150] [--replicates 2000]
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd

BUDGET_S = 60.0  # the analysis alone; the whole script stays well under two minutes


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def plain_pass(sample: pd.DataFrame, judgements: pd.DataFrame) -> int:
    """What a no-bootstrap implementation would do at least once: counts, crosstab, per-article counts."""
    ok = judgements[judgements["status"] == "ok"].merge(
        sample[["pair_id", "doc_id"]], on="pair_id", suffixes=("_j", "")
    )
    counts = ok.groupby(["judge", "side", "label"]).size()
    wide = ok.pivot_table(
        index=["pair_id", "judge"], columns="side", values="label", aggfunc="first"
    ).dropna()
    crosstab = wide.groupby(["judge", "en", "target"]).size()
    per_article = ok.groupby(["doc_id", "judge", "side", "label"]).size()
    return len(counts) + len(crosstab) + len(per_article)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--articles", type=int, default=150)
    parser.add_argument("--replicates", type=int, default=2000)
    args = parser.parse_args()

    from clcg_pipeline.analysis import h1_core
    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.synthetic import synthetic_config, synthetic_frames, synthetic_scores
    from clcg_pipeline.validation import (
        AnalysisInputs,
        analyse_error_taxonomy,
        load_taxonomy,
    )

    config = synthetic_config(load_config(default_config_dir()))
    taxonomy = load_taxonomy("clcg-error-v1")
    targets = config.languages.targets
    joshi = {iso: config.languages.get(iso).joshi_class for iso in targets}
    judges = ("judge-a", "judge-b")
    sample, judgements, order_bias = synthetic_frames(
        args.pairs,
        args.articles,
        judges=judges,
        labels=taxonomy.labels,
        languages=joshi,
        models=[m.id for m in config.models.evaluated],
        order_pairs=100,
        seed=42,
    )
    # Judge A shares a family with the first evaluated model, so self-preference is estimated too.
    families = {"judge-a": "fam-a", "judge-b": "fam-b", config.models.evaluated[0].id: "fam-a"}
    inputs = AnalysisInputs(
        judges=judges,
        families=families,
        joshi=joshi,
        replicates=args.replicates,
        seed=42,
        confidence=0.95,
        min_articles=config.study.min_articles,
    )

    scores = synthetic_scores(config.languages, n_articles=args.articles, seed=0)
    _, h1_s = _timed(h1_core, scores, config.languages, config.study, replicates=args.replicates, seed=42)
    _, plain_s = _timed(plain_pass, sample, judgements)

    first, wall = _timed(analyse_error_taxonomy, sample, judgements, order_bias, taxonomy, inputs, config)
    second, wall2 = _timed(analyse_error_taxonomy, sample, judgements, order_bias, taxonomy, inputs, config)
    identical = json.dumps(first.results, sort_keys=True) == json.dumps(second.results, sort_keys=True)
    identical &= first.estimates.equals(second.estimates)

    best = min(wall, wall2)
    doc = first.results
    print(
        f"[error taxonomy] {len(sample):,} pairs x {len(judges)} judges x 2 sides = "
        f"{len(judgements):,} labels, "
        f"{sample['doc_id'].nunique()} articles, {args.replicates} replicates"
    )
    print(f"  H1 section on {args.articles} articles ({len(scores):,} score rows)  {h1_s:7.2f}s")
    print(f"  plain pandas pass (counts, crosstab, per article)   {plain_s:7.3f}s")
    print(f"  error-taxonomy analysis                {wall:7.2f}s, {wall2:7.2f}s (budget {BUDGET_S:.0f}s)")
    print(f"  ratio to the H1 section                {best / h1_s:7.2f}x")
    print(f"  ratio to the plain pandas pass         {best / plain_s:7.1f}x")
    print(f"  estimands {len(first.estimates)}, status {doc['status']}, identical across runs: {identical}")
    kappa = {a["level"]: a["kappa"] for a in doc["agreement"]}
    print(
        f"  kappa fine {kappa['fine']:.3f}, binary {kappa['binary']:.3f}; "
        f"flip rates {[round(b['flip_rate'], 3) for b in doc['order_bias']]}"
    )
    ok = identical and best < BUDGET_S and doc["status"] == "ok"
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
