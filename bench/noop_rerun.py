"""A second ``clcg run`` with nothing changed: how long it takes to say "up to date".

After one full run on the bundled demo (``assets_config/``, timed and reported as setup), the
same ``clcg run --config assets_config --data DIR`` is repeated ``--runs`` times. Each rerun
must exit 0, print "everything is up to date" without starting a Dagster run (no progress bar)
and rewrite no file in the data folder. The baseline, measured in the same run, is the CLI's
own start-up (``clcg --help``): the rerun is reported as a ratio to it and to the first full
run, with its CPU seconds (what a machine shared with other work inflates least). Target:
median no-op rerun under 3.0 s.

``--s3``: the data folder is ``s3://`` on a local S3-compatible server (moto, its own process,
reached through the standard AWS variables); "rewritten" is then an object whose ETag,
LastModified or size changed, or one added or removed.

``--before DIR``: each rerun is followed by one with the package in DIR (``git archive HEAD
clcg_pipeline sql | tar -x -C DIR``): a before/after ratio measured in the same run. On a local
folder those reruns use a copy of it (its first one is then a full check, as a copy misses the
memo); on ``s3://`` the same folder (a package that keeps no memo there writes none).

    .venv/bin/python bench/noop_rerun.py [--runs 5] [--s3] [--before DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from moto_server import moto_s3  # bench/ is the script's folder: on sys.path

TARGET_S = 3.0
UP_TO_DATE = "everything is up to date"
FULL_CHECK = "done "  # the progress bar's last label: a Dagster run was started
BASELINE_RUNS = 5
BUCKET = "clcg-noop"
CONFIG = Path(__file__).resolve().parents[1] / "assets_config"  # the bundled demo


def clcg(args: list[str], tmp: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``clcg ARGS`` in ``tmp`` with ``env``; (wall seconds, result)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "clcg_pipeline.cli", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, done


def local_files(root: Path) -> dict[str, Any]:
    """(mtime_ns, size) of every file under ``root``, by relative path."""
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def s3_objects(url: str) -> dict[str, Any]:
    """(ETag, LastModified, size) of every object under ``url``, by key, from a fresh listing."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    found = fs.find(url, detail=True)
    return {
        key: (info.get("ETag"), str(info.get("LastModified")), info.get("size"))
        for key, info in found.items()
    }


@contextlib.contextmanager
def moto_server(env: dict[str, str]) -> Iterator[None]:
    """A local S3-compatible server with one bucket; ``env`` gets the AWS variables that reach it."""
    with moto_s3() as aws:
        env.update(aws, CLCG_ALLOW_LOCAL_COORD="1")  # one host: its file locks coordinate the s3:// cache
        os.environ.update(aws)  # for s3_objects
        import s3fs

        s3fs.S3FileSystem(skip_instance_cache=True).mkdir(BUCKET)
        yield


def failed(what: str, done: subprocess.CompletedProcess[str]) -> int:
    print(f"FAIL: {what} exited {done.returncode}")
    print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
    return 1


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rerun(
    i: int, run: list[str], tmp: Path, env: dict[str, str], label: str
) -> tuple[float, bool, float] | int:
    """One timed no-op rerun: (wall seconds, whether it ran the full check, CPU seconds of the
    process and the workers it waited for: what a loaded machine inflates least), or the exit
    status of a failure."""
    cpu = _children_cpu()
    seconds, done = clcg(run, tmp, env)
    cpu = _children_cpu() - cpu
    if done.returncode:
        return failed(f"{label} {i + 1}", done)
    if UP_TO_DATE not in done.stdout:
        print(f"FAIL: {label} {i + 1} did not print {UP_TO_DATE!r}")
        print(done.stdout[-4000:])
        return 1
    full = FULL_CHECK in done.stdout
    print(f"  {label} {i + 1}: {seconds:.2f} s, CPU {cpu:.2f} s{' (full check)' if full else ''}", flush=True)
    return seconds, full, cpu


def measure(
    runs: int,
    tmp: Path,
    data: str,
    env: dict[str, str],
    listing: Callable[[], dict[str, Any]],
    old: str | None = None,
    old_data: Callable[[], str] | None = None,
) -> int:
    """The setup run, the start-up baseline and the timed no-op reruns (each followed by one with
    the package in ``old``, when given: the same folder and load), then the verdict."""
    run = ["run", "--config", str(CONFIG), "--data", data]
    setup_s, done = clcg(run, tmp, env)
    if done.returncode:
        return failed("setup run", done)
    print(f"setup (first full run)  {setup_s:8.2f} s", flush=True)

    startup = []
    for _ in range(BASELINE_RUNS):
        seconds, done = clcg(["--help"], tmp, env)
        if done.returncode:
            return failed("clcg --help", done)
        startup.append(seconds)
    startup_s = statistics.median(startup)

    # The --before package reruns in a copy of its own where one is made (a local folder): a
    # package that writes another memo format would otherwise spoil each other's.
    old_run = run if old_data is None else ["run", "--config", str(CONFIG), "--data", old_data()]
    before = listing()
    reruns, full_checks, old_reruns, cpu, old_cpu = [], 0, [], [], []
    for i in range(runs):
        timed = rerun(i, run, tmp, env, "rerun")
        if isinstance(timed, int):
            return timed
        reruns.append(timed[0])
        full_checks += timed[1]
        cpu.append(timed[2])
        if old is not None:
            timed = rerun(i, old_run, tmp, {**env, "PYTHONPATH": old}, "rerun, --before package")
            if isinstance(timed, int):
                return timed
            old_reruns.append(timed[0])
            old_cpu.append(timed[2])
    after = listing()
    if old_reruns:
        old_s, new_s = statistics.median(old_reruns), statistics.median(reruns)
        print(f"--before no-op rerun    {old_s:8.2f} s  (median of {len(old_reruns)}, interleaved)")
        print(f"rerun / --before rerun  {new_s / old_s:8.2f}x  ({old_s / new_s:.1f} times as fast)")
        old_c, new_c = statistics.median(old_cpu), statistics.median(cpu)
        print(f"CPU: rerun {new_c:.2f} s, --before {old_c:.2f} s  ({new_c / old_c:.2f}x)")
    print(f"CPU: no-op rerun        {statistics.median(cpu):8.2f} s  (median)")
    return verdict(reruns, startup_s, setup_s, full_checks, before, after)


def verdict(
    reruns: list[float],
    startup_s: float,
    setup_s: float,
    full_checks: int,
    before: dict[str, Any],
    after: dict[str, Any],
) -> int:
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    rerun_s = statistics.median(reruns)
    print(f"CLI start-up (--help)   {startup_s:8.2f} s  (median of {BASELINE_RUNS})")
    print(
        f"no-op rerun             {rerun_s:8.2f} s  (median of {len(reruns)}, "
        f"{min(reruns):.2f}-{max(reruns):.2f} s)"
    )
    print(f"rerun / CLI start-up    {rerun_s / startup_s:8.1f}x")
    print(f"rerun / first full run  {rerun_s / setup_s:8.1%}")
    print(f"reruns that ran Dagster {full_checks:8d}  (of {len(reruns)})")
    print(f"files rewritten         {len(changed):8d}  (of {len(before)} in the data folder)")
    for path in changed:
        print(f"  rewritten: {path} {before.get(path)} -> {after.get(path)}")
    misses = []
    if rerun_s >= TARGET_S:
        misses.append(f"MISS: median no-op rerun {rerun_s:.1f} s >= target {TARGET_S} s")
    if full_checks:
        misses.append(f"MISS: {full_checks} no-op rerun(s) ran the full check (a Dagster run)")
    if changed:
        misses.append(f"MISS: {len(changed)} file(s) in the data folder rewritten by no-op reruns")
    for miss in misses:
        print(miss)
    print("PASS" if not misses else "FAIL", f"(target: median no-op rerun < {TARGET_S} s, no file rewritten)")
    return 1 if misses else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--s3", action="store_true", help="the data folder on a local moto server")
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="a folder holding another clcg_pipeline (and sql/), e.g. the last commit's: each rerun "
        "is followed by one with it (PYTHONPATH=DIR), for a before/after ratio under the same load",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "home").mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("CLCG_CONFIG_DIR", "CLCG_DATA_DIR")}
        env["DAGSTER_HOME"] = str(tmp / "home")
        if not args.s3:
            data = tmp / "data"
            copy = lambda: str(shutil.copytree(data, tmp / "data-before"))  # noqa: E731
            return measure(args.runs, tmp, str(data), env, lambda: local_files(data), args.before, copy)
        with moto_server(env):
            url = f"s3://{BUCKET}/clcg"
            return measure(args.runs, tmp, url, env, lambda: s3_objects(url), args.before)


if __name__ == "__main__":
    sys.exit(main())
