"""Run every benchmark in bench/ (``make bench``); each prints its own figures and ratios.

Machines here are shared and noisy, so every script reports its figures as ratios to a
baseline measured in the same run rather than as absolute times alone.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Scripts whose defaults are the study's full scale, and the small scale `make bench` runs them
# at (run the script itself, with its flags, for the full scale).
SMALL_SCALE = {
    "bench_hundred_models.py": ["--models", "5", "--languages", "3"],
    "hundred_graphql.py": ["--models", "5", "10", "--languages", "3"],
}


def main() -> int:
    scripts = sorted(
        p for p in HERE.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_")
    )
    if len(sys.argv) > 1:
        scripts = [p for p in scripts if any(word in p.name for word in sys.argv[1:])]
    failed = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        started = time.perf_counter()
        args = SMALL_SCALE.get(script.name, [])
        code = subprocess.call([sys.executable, str(script), *args], cwd=HERE.parent)
        print(f"--- {script.name}: exit {code} in {time.perf_counter() - started:.1f} s", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
