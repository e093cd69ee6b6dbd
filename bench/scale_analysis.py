"""Scale curve of the whole analysis suite (``clcg estimate --full``) over the number of models (issue 37).

The study-shaped synthetic panel (150 articles, the configured languages, five models, about
0.78M scored rows) is replicated to 5, 20, 50, 100 (and, with ``--sizes``, 500) models, each
block of five with its own seed and model ids ``m000``, ``m001``... Every point runs
``estimate_file(..., full=True)`` (read the Parquet file, run the suite, write the JSON) in
its own subprocess, which reports its wall time, its CPU seconds (user + system: on a shared
machine the steadier figure; wall time grows with the other processes' load) and its peak
resident memory (``VmHWM`` of ``/proc/self/status`` on Linux; ``ru_maxrss`` elsewhere, which
on Linux starts at the parent's resident memory at fork: the panel writer's, about 1 GB).

The baseline is the suite as it was before issue 37 (``--baseline-ref``, a commit), extracted
with ``git archive`` into a temporary folder and put first on ``PYTHONPATH`` for its
subprocesses, measured at 5 and 20 models in the same run; speeds are printed as its ratio.
At the baseline sizes both JSON documents must agree on every estimand to 1e-12.

    .venv/bin/python bench/scale_analysis.py [--sizes 5 20 50 100] [--baseline-sizes 5 20]
        [--replicates 2000] [--baseline-ref e8ef00e] [--added-sizes 20 100]

``--added-sizes``: at each size N, a study of N-1 models is analysed (writing its model pair
store), then the N-th model is added and the analysis refreshed reusing the store, against a
full recomputation of the N models; both documents must be identical. The refresh's seconds
per part of the suite (its own timer, through ``estimate_file(timings=)``) are printed below
its line.

The 500-model point holds about 78M rows on disk and needs several GB: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The commit before issue 37: the implementation the curve is compared with.
BASELINE_REF = "e8ef00e"
BLOCK = 5  # models per generated block (the synthetic generator's five cutoffs)
TOLERANCE = 1e-12

_POINT = """
import inspect, json, resource, sys, time
start = time.perf_counter()
from clcg_pipeline.analysis import estimate_file
parts = {{}}
from clcg_pipeline.config import default_config_dir, load_config
sys.path.insert(0, {bench!r})
from scale_analysis import panel_config
config = panel_config(load_config(default_config_dir()), {n_models})
store = {{"pair_store_path": sys.argv[4]}} if len(sys.argv) > 4 else {{}}
if "timings" in inspect.signature(estimate_file).parameters:  # absent from older trees
    store["timings"] = parts  # seconds per part of the suite, from its own timer
estimate_file(sys.argv[1], sys.argv[2], config, full=True, replicates={replicates},
              articles_path=sys.argv[3], **store)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
peak, cpu = usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime
try:  # Linux: this process's own high-water mark (ru_maxrss starts at the parent's at fork)
    peak = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
except OSError:
    pass
import clcg_pipeline.analysis as a
print(json.dumps({{"wall": wall, "cpu": cpu, "peak": peak, "module": a.__file__, "parts": parts}}))
"""


def panel_config(base, n_models: int):  # type: ignore[no-untyped-def]
    """``base`` with models ``m000``... (staggered knowledge cutoffs, as the synthetic five)."""
    from clcg_pipeline.config import ModelsConfig, ModelSpec
    from clcg_pipeline.synthetic import synthetic_models

    cutoffs = [m.knowledge_cutoff for m in synthetic_models(BLOCK).models]
    specs = [
        ModelSpec(id=_model_id(i), provider="offline", model="synthetic", knowledge_cutoff=cutoffs[i % BLOCK])
        for i in range(n_models)
    ]
    return base.model_copy(update={"models": ModelsConfig(models=specs)})


def _model_id(i: int) -> str:
    return f"m{i:03d}"


def write_panel(path: Path, n_models: int, n_articles: int) -> int:
    """Write the ``n_models`` panel to ``path`` block by block (row groups); return its rows."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.synthetic import synthetic_scores

    languages = load_config(default_config_dir()).languages
    writer, rows = None, 0
    for block in range(math.ceil(n_models / BLOCK)):
        size = min(BLOCK, n_models - block * BLOCK)
        frame = synthetic_scores(languages, n_models=size, n_articles=n_articles, seed=block)
        names = {f"model-{chr(ord('a') + k)}": _model_id(block * BLOCK + k) for k in range(size)}
        frame["model"] = frame["model"].astype(str).map(names)
        frame["language"] = frame["language"].astype(str)
        table = pa.Table.from_pandas(pd.DataFrame(frame), preserve_index=False)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        rows += table.num_rows
    if writer is not None:
        writer.close()
    return rows


def baseline_tree(ref: str, into: Path) -> Path:
    """The ``clcg_pipeline`` package at ``ref``, extracted under ``into`` (for PYTHONPATH)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", ref, "clcg_pipeline"], cwd=ROOT, check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def run_point(
    n_models: int,
    scores: Path,
    articles: Path,
    out: Path,
    replicates: int,
    pythonpath: Path | None,
    store: Path | None = None,
) -> dict[str, float]:
    """One suite run in a fresh subprocess: its wall seconds and peak resident bytes.

    ``store``: the pair store the run reads (when there) and writes (``estimate_file``'s
    ``pair_store_path``).
    """
    env = dict(os.environ, CLCG_CONFIG_DIR=str(ROOT / "assets_config"))
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    code = _POINT.format(bench=str(Path(__file__).parent), n_models=n_models, replicates=replicates)
    done = subprocess.run(
        [sys.executable, "-c", code, str(scores), str(out), str(articles), *([str(store)] if store else [])],
        # ``python -c`` puts its folder first on sys.path: the baseline runs from its own tree.
        cwd=pythonpath or ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    point = json.loads(done.stdout.strip().splitlines()[-1])
    if pythonpath is not None and not point["module"].startswith(str(pythonpath)):
        raise RuntimeError(f"the baseline ran {point['module']}, not the tree under {pythonpath}")
    return point


def differences(got: object, want: object, path: str = "") -> list[str]:
    """Where two results documents differ (numbers beyond 1e-12), the volatile settings aside."""
    if isinstance(want, dict) and isinstance(got, dict):
        keys = [k for k in want if k not in ("generated_at", "code_version")]
        out = [f"{path}: keys differ"] if set(got) - {"generated_at", "code_version"} != set(keys) else []
        return out + [d for k in keys if k in got for d in differences(got[k], want[k], f"{path}/{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{path}: lengths differ"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in differences(g, w, f"{path}[{i}]")
        ]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (got, want))
    if numbers:
        ok = math.isclose(float(got), float(want), rel_tol=TOLERANCE, abs_tol=TOLERANCE)  # type: ignore[arg-type]
        return [] if ok else [f"{path}: {got} vs {want}"]
    return [] if got == want else [f"{path}: {got!r} vs {want!r}"]


def without_last_model(path: Path, into: Path, n_models: int) -> None:
    """The panel at ``path`` less its last model (``m<n-1>``), written to ``into``."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    pq.write_table(table.filter(pc.field("model") != _model_id(n_models - 1)), into)


def added_model(n: int, work: Path, articles: Path, replicates: int, n_articles: int) -> bool:
    """One model added to an analysed study of ``n - 1``: the refresh reusing the pair store of the
    first analysis against a full recomputation, in fresh subprocesses; the documents must be identical."""
    scores, before = work / f"scores_{n}.parquet", work / f"scores_{n - 1}.parquet"
    write_panel(scores, n, n_articles)
    without_last_model(scores, before, n)
    store = work / f"pairs_{n}.parquet"
    first = run_point(n, before, articles, work / f"before_{n}.json", replicates, None, store)
    added = run_point(n, scores, articles, work / f"added_{n}.json", replicates, None, store)
    full = run_point(n, scores, articles, work / f"full_{n}.json", replicates, None)
    same = _volatile_less(work / f"added_{n}.json") == _volatile_less(work / f"full_{n}.json")
    print(
        f"{n - 1:6d}+1 first {first['wall']:7.2f}s   added: {added['wall']:7.2f}s {added['cpu']:7.2f} cpu "
        f"{added['peak'] / 1e9:5.2f} GB   full: {full['wall']:7.2f}s {full['cpu']:7.2f} cpu "
        f"{full['peak'] / 1e9:5.2f} GB   {full['wall'] / added['wall']:4.2f}x wall "
        f"{full['cpu'] / added['cpu']:4.2f}x cpu  " + ("identical" if same else "DIFFERENT"),
        flush=True,
    )
    print("        the refresh's seconds per part: " + _parts(added), flush=True)
    for path in (scores, before, store):
        path.unlink()
    return same


def _parts(point: dict[str, object]) -> str:
    """A point's seconds per part of the suite, largest first (``Timer``'s names)."""
    parts = point.get("parts") or {}
    ranked = sorted(parts.items(), key=lambda kv: -float(kv[1]))  # type: ignore[union-attr]
    return ", ".join(f"{name} {float(seconds):.2f}" for name, seconds in ranked)


def _volatile_less(path: Path) -> dict[str, object]:
    """A written document less the settings that say when and from which checkout it was computed."""
    document = json.loads(path.read_text())
    for key in ("generated_at", "code_version"):
        document["settings"].pop(key, None)
    return document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 20, 50, 100])
    parser.add_argument("--baseline-sizes", type=int, nargs="*", default=[5, 20])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--articles", type=int, default=150)
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument(
        "--added-sizes",
        type=int,
        nargs="*",
        default=[20],
        help="sizes at which one model is added to an analysed study (reusing its pair store)",
    )
    args = parser.parse_args()

    from clcg_pipeline.synthetic import synthetic_articles

    ok = True
    with tempfile.TemporaryDirectory(prefix="clcg_scale_") as tmp:
        work = Path(tmp)
        articles = work / "articles.parquet"
        synthetic_articles(args.articles, seed=0).to_parquet(articles, index=False)
        old_tree = baseline_tree(args.baseline_ref, work / "baseline") if args.baseline_sizes else None
        print(f"[scale] {args.replicates} replicates, {args.articles} articles; baseline {args.baseline_ref}")
        heads = ("models", 6), ("rows", 11), ("wall s", 8), ("cpu s", 8), ("peak GB", 8)
        heads += ("old s", 8), ("old cpu", 8), ("old GB", 7)
        print(" ".join(f"{name:>{width}}" for name, width in heads), f"{'speed-up':>8}")
        for n in sorted(set(args.sizes) | set(args.baseline_sizes)):
            scores = work / f"scores_{n}.parquet"
            t0 = time.perf_counter()
            rows = write_panel(scores, n, args.articles)
            gen = time.perf_counter() - t0
            new = run_point(n, scores, articles, work / f"new_{n}.json", args.replicates, None)
            line = f"{n:6d} {rows:11,d} {new['wall']:8.2f} {new['cpu']:8.2f} {new['peak'] / 1e9:8.2f}"
            if n in args.baseline_sizes and old_tree is not None:
                old = run_point(n, scores, articles, work / f"old_{n}.json", args.replicates, old_tree)
                diffs = differences(
                    json.loads((work / f"new_{n}.json").read_text()),
                    json.loads((work / f"old_{n}.json").read_text()),
                )
                ok &= not diffs
                line += f" {old['wall']:8.2f} {old['cpu']:8.2f} {old['peak'] / 1e9:7.2f}"
                line += f" {old['wall'] / new['wall']:7.1f}x"
                line += "  identical" if not diffs else f"  {len(diffs)} DIFFERENCES, first {diffs[:3]}"
            print(line + f"   (panel written in {gen:.0f}s)", flush=True)
            scores.unlink()
        if args.added_sizes:
            print("[scale] one model added: the refresh reusing the last pairs vs a full recomputation")
        for n in args.added_sizes:
            ok &= added_model(n, work, articles, args.replicates, args.articles)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
