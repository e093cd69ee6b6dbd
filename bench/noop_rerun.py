"""A second ``clcg run`` with nothing changed: how long it takes to say "up to date".

After one full run on the bundled demo (default config, timed and reported as setup), the
same ``clcg run --data DIR`` is repeated ``--runs`` times. Each rerun must exit 0, print
"everything is up to date" and rewrite no file in the data folder. The baseline, measured in
the same run, is the CLI's own start-up (``clcg --help``): the rerun is reported as a ratio to
it and to the first full run. Target: median no-op rerun under 3.0 s.

    .venv/bin/python bench/noop_rerun.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 3.0
UP_TO_DATE = "everything is up to date"
BASELINE_RUNS = 5


def clcg(args: list[str], tmp: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``clcg ARGS`` in ``tmp`` with its own DAGSTER_HOME; (wall seconds, result)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLCG_CONFIG_DIR", "CLCG_DATA_DIR")}
    env["DAGSTER_HOME"] = str(tmp / "home")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "clcg_pipeline.cli", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, done


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file under ``root``, by relative path."""
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def failed(what: str, done: subprocess.CompletedProcess[str]) -> int:
    print(f"FAIL: {what} exited {done.returncode}")
    print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "home").mkdir()
        data = tmp / "data"
        run = ["run", "--data", str(data)]

        setup_s, done = clcg(run, tmp)
        if done.returncode:
            return failed("setup run", done)
        print(f"setup (first full run)  {setup_s:8.2f} s", flush=True)

        startup = []
        for _ in range(BASELINE_RUNS):
            seconds, done = clcg(["--help"], tmp)
            if done.returncode:
                return failed("clcg --help", done)
            startup.append(seconds)
        startup_s = statistics.median(startup)

        before = snapshot(data)
        reruns = []
        for i in range(args.runs):
            seconds, done = clcg(run, tmp)
            if done.returncode:
                return failed(f"rerun {i + 1}", done)
            if UP_TO_DATE not in done.stdout:
                print(f"FAIL: rerun {i + 1} did not print {UP_TO_DATE!r}")
                print(done.stdout[-4000:])
                return 1
            reruns.append(seconds)
        after = snapshot(data)

    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    rerun_s = statistics.median(reruns)
    print(f"CLI start-up (--help)   {startup_s:8.2f} s  (median of {BASELINE_RUNS})")
    print(
        f"no-op rerun             {rerun_s:8.2f} s  (median of {len(reruns)}, "
        f"{min(reruns):.2f}-{max(reruns):.2f} s)"
    )
    print(f"rerun / CLI start-up    {rerun_s / startup_s:8.1f}x")
    print(f"rerun / first full run  {rerun_s / setup_s:8.1%}")
    print(f"files rewritten         {len(changed):8d}  (of {len(before)} in the data folder)")
    for path in changed:
        print(f"  rewritten: {path} {before.get(path)} -> {after.get(path)}")
    misses = []
    if rerun_s >= TARGET_S:
        misses.append(f"MISS: median no-op rerun {rerun_s:.1f} s >= target {TARGET_S} s")
    if changed:
        misses.append(f"MISS: {len(changed)} file(s) in the data folder rewritten by no-op reruns")
    for miss in misses:
        print(miss)
    print("PASS" if not misses else "FAIL", f"(target: median no-op rerun < {TARGET_S} s, no file rewritten)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
