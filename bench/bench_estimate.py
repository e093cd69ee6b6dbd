"""Benchmark ``clcg estimate`` on a ~800k-row synthetic scores file (2,000 replicates).

Generates the seeded file, times the command as a subprocess (process start included) twice,
times a baseline in the same run (a bare ``python -c pass`` and a plain Parquet read), and
checks that both runs wrote byte-identical JSON.

    .venv/bin/python bench/bench_estimate.py [--rows-scale 1.0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 15.0


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - start


def _estimate_cmd(scores: Path, out: Path) -> list[str]:
    if importlib.util.find_spec("clcg_pipeline.cli") is not None:
        return [
            sys.executable,
            "-m",
            "clcg_pipeline.cli",
            "estimate",
            "--scores",
            str(scores),
            "--out",
            str(out),
        ]
    # Until the CLI exists, call the same entry point it will call.
    code = (
        "from clcg_pipeline.config import load_config, default_config_dir;"
        "from clcg_pipeline.analysis import estimate_file;"
        f"estimate_file({str(scores)!r}, {str(out)!r}, load_config(default_config_dir()))"
    )
    return [sys.executable, "-c", code]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, default=None, help="folder to keep the generated files in")
    args = parser.parse_args()

    from clcg_pipeline.config import default_config_dir, load_config
    from clcg_pipeline.synthetic import synthetic_scores

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="clcg_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    scores_path = workdir / "scores.parquet"
    t0 = time.perf_counter()
    frame = synthetic_scores(load_config(default_config_dir()).languages, seed=0)
    frame.to_parquet(scores_path, index=False)
    print(f"generated {len(frame):,} rows in {time.perf_counter() - t0:.1f}s -> {scores_path}")

    start_s = _timed([sys.executable, "-c", "pass"])
    read_s = _timed(
        [sys.executable, "-c", f"import pyarrow.parquet as pq; pq.read_table({str(scores_path)!r})"]
    )
    outs = [workdir / "estimate_1.json", workdir / "estimate_2.json"]
    runs = [_timed(_estimate_cmd(scores_path, out)) for out in outs]
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in outs]

    wall = max(runs)
    print(f"python start         {start_s:6.2f}s")
    print(f"parquet read (full)  {read_s:6.2f}s")
    print(f"clcg estimate        {runs[0]:6.2f}s, {runs[1]:6.2f}s (budget {BUDGET_S:.0f}s)")
    print(f"ratio to parquet read {wall / read_s:5.1f}x; to python start {wall / start_s:5.1f}x")
    identical = digests[0] == digests[1]
    print(f"bit-for-bit identical: {identical}")
    ok = identical and wall < BUDGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
