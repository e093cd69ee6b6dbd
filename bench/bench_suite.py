"""Benchmark the whole analysis suite (``clcg estimate --full``) and the mixed-effects scaling.

Three measurements, each with a baseline timed in the same run so the figures are ratios:

1. ``clcg estimate --full`` as a subprocess (process start included) on the default synthetic
   panel (~800k rows, the issue 9 figure of 783k), against a subprocess that only reads the
   same Parquet file; run twice, and the two JSON documents must be identical apart from
   ``settings.generated_at``.
2. ``run_suite`` in process at 600 articles (~2.4M rows), each part's share, against the
   in-process time to read that panel's Parquet file.
3. The crossed mixed-effects fit alone at 150, 300, 600 and 1200 articles (the cost that grew
   with articles^2.2 before), with the fitted exponent.

    .venv/bin/python bench/bench_suite.py [--replicates 2000] [--articles 600] [--skip-full]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUDGET_FULL_S = 120.0
BUDGET_SUITE_S = 30.0


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - start


def _stable(path: Path) -> str:
    doc = json.loads(path.read_text())
    doc.get("settings", {}).pop("generated_at", None)
    doc.get("settings", {}).pop("code_version", None)
    return json.dumps(doc, sort_keys=True)


def bench_full(config, workdir: Path, replicates: int) -> bool:
    from clcg_pipeline.synthetic import synthetic_articles, synthetic_scores

    scores = synthetic_scores(config.languages, seed=0)
    scores_path, articles_path = workdir / "scores.parquet", workdir / "articles.parquet"
    scores.to_parquet(scores_path, index=False)
    synthetic_articles(seed=0).to_parquet(articles_path, index=False)
    read_s = _timed(
        [sys.executable, "-c", f"import pyarrow.parquet as pq; pq.read_table({str(scores_path)!r})"]
    )
    outs = [workdir / "full_1.json", workdir / "full_2.json"]
    code = (
        "import sys; from clcg_pipeline.analysis import estimate_file;"
        "from clcg_pipeline.synthetic import synthetic_config;"
        "from clcg_pipeline.config import load_config, default_config_dir;"
        "cfg = synthetic_config(load_config(default_config_dir()));"
        f"estimate_file(sys.argv[1], sys.argv[2], cfg, full=True, replicates={replicates},"
        f" articles_path={str(articles_path)!r})"
    )
    walls = [_timed([sys.executable, "-c", code, str(scores_path), str(out)]) for out in outs]
    identical = _stable(outs[0]) == _stable(outs[1])
    if not identical:
        a, b = (json.loads(_stable(p)) for p in outs)
        print("  differing sections:", sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))
    wall = max(walls)
    print(f"[--full] {len(scores):,} rows, {replicates} replicates")
    print(f"  parquet read (subprocess)   {read_s:7.2f}s")
    print(f"  estimate --full             {walls[0]:7.2f}s, {walls[1]:7.2f}s (budget {BUDGET_FULL_S:.0f}s)")
    print(f"  ratio to parquet read       {wall / read_s:7.1f}x")
    print(f"  identical apart from generated_at: {identical}")
    return identical and wall < BUDGET_FULL_S


def bench_suite(config, workdir: Path, replicates: int, n_articles: int) -> bool:
    import pyarrow.parquet as pq

    from clcg_pipeline.analysis import run_suite
    from clcg_pipeline.synthetic import synthetic_articles, synthetic_fertility, synthetic_scores

    scores = synthetic_scores(config.languages, n_articles=n_articles, seed=0)
    path = workdir / f"scores_{n_articles}.parquet"
    scores.to_parquet(path, index=False)
    start = time.perf_counter()
    scores = pq.read_table(path).to_pandas()
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    result = run_suite(
        scores,
        config,
        articles=synthetic_articles(n_articles, seed=0),
        fertility=synthetic_fertility(config.languages),
        replicates=replicates,
    )
    wall = time.perf_counter() - start
    print(f"\n[suite] {n_articles} articles, {len(scores):,} rows, {replicates} replicates")
    print(f"  parquet read (in process)   {read_s:7.2f}s")
    print(f"  run_suite                   {wall:7.2f}s (budget {BUDGET_SUITE_S:.0f}s)")
    print(f"  ratio to parquet read       {wall / read_s:7.1f}x")
    total = sum(result.timings.values())
    for name, secs in sorted(result.timings.items(), key=lambda kv: -kv[1])[:8]:
        print(f"    {name:<20}{secs:7.2f}s {secs / total:6.1%}")
    mixed = result.results["mixed_effects"]
    print(f"  mixed models: h1 {mixed['h1'].get('status')}, h2 {mixed['h2'].get('status')}")
    return wall < BUDGET_SUITE_S


def bench_mixed(config) -> None:
    from clcg_pipeline.analysis import analysis_rows, mixed_h1
    from clcg_pipeline.synthetic import synthetic_scores

    sizes, walls = [150, 300, 600, 1200], []
    print("\n[mixed h1 fit] articles, cells, seconds")
    for n in sizes:
        s = synthetic_scores(
            config.languages,
            n_articles=n,
            n_stability=0,
            items_per_level=1,
            human_per_article=0,
            probe_articles=0,
            closed_book=False,
            seed=0,
        )
        band = config.study.band
        rows = analysis_rows(
            s,
            metric=band.metric,
            rule="A",
            levels=band.levels,
            item_source=band.item_source,
            context_scope=band.context_scope,
        )
        start = time.perf_counter()
        fit = mixed_h1(rows, config.languages.reference, list(config.languages.targets), 0.95)
        walls.append(time.perf_counter() - start)
        print(f"  {n:5d} {fit['n_cells']:7d} {walls[-1]:7.2f}s  {fit['status']}")
    slope = np.polyfit(np.log(sizes), np.log(walls), 1)[0]
    print(f"  fitted exponent: wall ~ articles^{slope:.2f} (statsmodels MixedLM before: ~2.2)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--articles", type=int, default=600)
    parser.add_argument("--skip-full", action="store_true")
    args = parser.parse_args()

    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.synthetic import synthetic_config

    config = synthetic_config(load_config(default_config_dir()))
    ok = True
    with tempfile.TemporaryDirectory(prefix="clcg_bench_suite_") as tmp:
        workdir = Path(tmp)
        if not args.skip_full:
            ok &= bench_full(config, workdir, args.replicates)
        ok &= bench_suite(config, workdir, args.replicates, args.articles)
    bench_mixed(config)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
