"""Benchmark the paired model contrasts and ranks (issue 21) against the suite that hosts them.

On the default synthetic panel (~800k scored rows, five models, the study's scale) ``run_suite``
runs once; its own timer gives the seconds of the ``model_contrasts`` part, reported as a ratio
to the H1 by-model computation (``h1``) and to the whole suite in the same run. The section is
then timed alone (best of three) on the same prepared rows, as a second view of the same cost.

    .venv/bin/python bench/bench_model_contrasts.py [--replicates 2000] [--articles 150]
"""

from __future__ import annotations

import argparse
import time

# The contrasts may cost at most this share of the whole suite (ten pairs, five models).
BUDGET_SHARE = 0.15


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--articles", type=int, default=150)
    args = parser.parse_args()

    from clcg_pipeline.analysis import SuiteContext, h1_core, roles_of, run_suite
    from clcg_pipeline.analysis.sections import model_contrasts as sec
    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.synthetic import (
        synthetic_articles,
        synthetic_config,
        synthetic_fertility,
        synthetic_scores,
    )

    config = synthetic_config(load_config(default_config_dir()), n_models=5)
    scores = synthetic_scores(config.languages, n_models=5, n_articles=args.articles, seed=0)
    start = time.perf_counter()
    result = run_suite(
        scores,
        config,
        articles=synthetic_articles(args.articles, seed=0),
        fertility=synthetic_fertility(config.languages),
        replicates=args.replicates,
    )
    suite_s = time.perf_counter() - start
    part, h1 = result.timings["model_contrasts"], result.timings["h1"]
    block = result.results["model_contrasts"]
    print(
        f"[model contrasts] {len(scores):,} rows, {len(block['models'])} models, {len(block['pairs'])} pairs"
    )
    print(f"  run_suite                   {suite_s:7.2f}s")
    print(f"  h1 (incl. by model)         {h1:7.2f}s")
    print(f"  model_contrasts (in suite)  {part:7.2f}s")
    print(f"  ratio to h1                 {part / h1:7.2f}x")
    print(f"  share of the suite          {part / suite_s:7.1%} (budget {BUDGET_SHARE:.0%})")

    ctx = SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=args.replicates,
        seed=config.study.seed,
        confidence=config.study.confidence,
        min_articles=int(getattr(config.study, "min_articles", 10)),
    )
    band = _band_rows(scores, config)
    start = time.perf_counter()
    core = h1_core(scores, config.languages, config.study, replicates=args.replicates, rows=band)
    alone_h1 = time.perf_counter() - start
    walls = []
    for _ in range(3):
        ctx.rows.clear()
        start = time.perf_counter()
        sec.model_contrasts(ctx, core, band)
        walls.append(time.perf_counter() - start)
    print(f"  alone: h1_core {alone_h1:.2f}s, model_contrasts best of 3 {min(walls):.2f}s")
    print(f"  alone ratio to h1_core      {min(walls) / alone_h1:7.2f}x")
    ok = part / suite_s < BUDGET_SHARE
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _band_rows(scores, config):  # type: ignore[no-untyped-def]
    """The suite's band rows under rule A (panel languages only), as run_suite prepares them."""
    from clcg_pipeline.analysis import analysis_rows

    band = config.study.band
    rows = analysis_rows(
        scores,
        metric=band.metric,
        rule="A",
        levels=band.levels,
        item_source=band.item_source,
        context_scope=band.context_scope,
    )
    return rows.loc[rows["language"].isin(config.languages.isos).to_numpy()]


if __name__ == "__main__":
    raise SystemExit(main())
