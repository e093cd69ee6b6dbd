"""Call coordination through PostgreSQL against the file locks, and two hosts sharing one database.

1. Throughput of the three coordination steps a call takes (acquire + release a claim, take +
   give a model slot, reserve + settle a budget reservation), through the file locks and through
   PostgreSQL in the same run: figures as ratios to the file locks.
2. Two "hosts" (two processes, each with its own home and cache folders, no shared coordination
   folder) run the same calls from opposite ends against one fake server, coordinated by the
   database only; the call cache is one folder both see, standing in for the shared object store.
   Reported: calls paid twice (target 0), peak requests in flight against the model's
   concurrency (target <= limit), spend against the study budget (target <= 1.0).

The database is ``$CLCG_COORD_URL`` when set, else a throwaway server (initdb + pg_ctl on
127.0.0.1, trust auth) when the PostgreSQL server binaries are installed; without either the
script says so and exits 0. docs/DEPLOY.md, section 3, describes the coordination.

    .venv/bin/python bench/coord_postgres.py [--ops 2000] [--calls 200] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fake_model import fake_server_model  # bench/ is the script's folder: on sys.path
from runner_throughput import distinct_requests

from clcg_pipeline.calls import (
    COORD_URL_ENV,
    WAIT,
    CallClaims,
    CallOptions,
    PgCallClaims,
    PgSharedSlots,
    PgSpendLedger,
    RetryPolicy,
    SharedSlots,
    SpendLedger,
    run_requests,
    settings_from_url,
)
from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.config import ModelSpec
from clcg_pipeline_tests.pg_server import bin_dir, running_postgres  # the tests' throwaway server

LATENCY_S = 0.1
BUDGET_SHARE = 0.6  # of the calls' actual cost: the budget binds while both hosts send
RUN_CONCURRENCY = 32  # the one-host runs: enough calls in flight that coordination shows


@dataclass(frozen=True)
class TwoHostRun:
    """One two-host run's settings (each host gets the same ``calls``, in opposite orders)."""

    server_url: str
    cache: Path
    calls: int
    concurrency: int
    budget_usd: float
    db_url: str


def _model(url: str, concurrency: int) -> ModelSpec:
    spec = fake_server_model(url, concurrency=concurrency)
    # Priced, so that the study budget has something to bind.
    return spec.model_copy(update={"price_input_per_mtok": 1.0, "price_output_per_mtok": 4.0})


def _ops_per_s(step: Callable[[int], None], n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        step(i)
    return n / (time.perf_counter() - started)


def _claim_step(claims: CallClaims | PgCallClaims, ids: list[str]) -> Callable[[int], None]:
    def step(i: int) -> None:
        claim = claims.try_claim(ids[i])
        assert claim is not None, ids[i]
        claims.release(claim)

    return step


def _slots_per_s(slots: SharedSlots | PgSharedSlots, n: int) -> float:
    async def loop() -> float:
        started = time.perf_counter()
        for _ in range(n):
            slots.release(await slots.acquire())
        return n / (time.perf_counter() - started)

    try:
        return asyncio.run(loop())
    finally:
        slots.close()


def _ledger_step(ledger: SpendLedger | PgSpendLedger) -> Callable[[int], None]:
    def step(i: int) -> None:
        rid = ledger.reserve(0.001, 1e12)
        assert rid not in (None, WAIT), rid
        ledger.settle(rid, 0.0005, model="bench", call_id=str(i))

    return step


def measure_steps(db_url: str, n: int) -> dict[str, tuple[float, float]]:
    """(file locks, PostgreSQL) operations per second of each step, measured here one after the other."""
    pg, scope = settings_from_url(db_url, COORD_URL_ENV), f"bench-{uuid.uuid4().hex}"
    ids = [uuid.uuid4().hex * 2 for _ in range(n)]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = {
            "claim": _ops_per_s(_claim_step(CallClaims(root), ids), n),
            "slot": _slots_per_s(SharedSlots(root, "bench-model", 4), n),
            "ledger": _ops_per_s(_ledger_step(SpendLedger(root)), n),
        }
    database = {
        "claim": _ops_per_s(_claim_step(PgCallClaims(pg, scope), ids), n),
        "slot": _slots_per_s(PgSharedSlots(pg, scope, "bench-model", 4), n),
        "ledger": _ops_per_s(_ledger_step(PgSpendLedger(pg, scope)), n),
    }
    return {name: (files[name], database[name]) for name in files}


@contextlib.contextmanager
def _database(db_url: str) -> Iterator[None]:
    saved = os.environ.get(COORD_URL_ENV)
    os.environ[COORD_URL_ENV] = db_url
    try:
        yield
    finally:
        os.environ.pop(COORD_URL_ENV)
        if saved is not None:
            os.environ[COORD_URL_ENV] = saved


def _calls_per_s(server_url: str, calls: int, tag: str) -> float:
    requests = distinct_requests(calls, tag)
    with tempfile.TemporaryDirectory() as cache:
        options = CallOptions(cache_dir=cache, study_budget_usd=1e6)  # the ledger is in the loop
        started = time.perf_counter()
        results = run_requests(_model(server_url, RUN_CONCURRENCY), requests, options)
        elapsed = time.perf_counter() - started
    failed = [r for r in results if r.outcome != "ok"]
    if failed:
        raise RuntimeError(f"{len(failed)} of {calls} calls failed, e.g. {failed[0].error}")
    return calls / elapsed


def measure_runs(server_url: str, db_url: str, calls: int) -> tuple[float, float]:
    """(file locks, PostgreSQL) calls/s of one run on one host: the steps inside the runner."""
    with _no_database():
        files = _calls_per_s(server_url, calls, f"files-{uuid.uuid4().hex}")
    with _database(db_url):
        database = _calls_per_s(server_url, calls, f"pg-{uuid.uuid4().hex}")
    return files, database


def cost_per_call(server_url: str) -> float:
    """One call's actual cost on the fake server (file locks, a cache of its own)."""
    with tempfile.TemporaryDirectory() as cache, _no_database():
        request = distinct_requests(1, "calibrate")
        [result] = run_requests(_model(server_url, 1), request, CallOptions(cache_dir=cache))
    if result.outcome != "ok" or result.cost_usd <= 0:
        raise RuntimeError(f"calibration call failed: {result.outcome} {result.error}")
    return result.cost_usd


@contextlib.contextmanager
def _no_database() -> Iterator[None]:
    saved = os.environ.pop(COORD_URL_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[COORD_URL_ENV] = saved


def _host_env(home: Path, db_url: str) -> dict[str, str]:
    """A host of its own: own home and cache folders, the shared database, no shared folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLCG_COORD_DIR", "DAGSTER_HOME")}
    for name in ("home", "xdg"):
        (home / name).mkdir(parents=True)
    return {**env, "HOME": str(home / "home"), "XDG_CACHE_HOME": str(home / "xdg"), COORD_URL_ENV: db_url}


def run_two_hosts(run: TwoHostRun, tmp: Path) -> list[dict[str, object]]:
    """Both hosts started, released together at a go file, and their outcome counts read back."""
    go, procs = tmp / "go", []
    for h, order in enumerate(("forward", "reverse")):
        args = [run.server_url, str(run.cache), str(run.calls), str(run.concurrency), str(run.budget_usd)]
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--host-worker", *args, str(go), order],
                env=_host_env(tmp / f"host{h}", run.db_url),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"a host did not start: {proc.communicate()[1][-2000:]}")
    go.touch()
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"a host failed (exit {proc.returncode}): {stderr[-2000:]}")
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def host_worker(argv: list[str]) -> None:
    """One host: prints ready, waits for the go file, runs its calls, prints outcome counts as JSON."""
    url, cache, calls, concurrency, budget, go, order = argv
    requests = distinct_requests(int(calls), "two-hosts")
    if order == "reverse":  # from the other end: the hosts meet in the middle
        requests.reverse()
    spec = _model(url, int(concurrency))
    import openai  # noqa: F401  (the SDK import takes seconds: done before the barrier)

    print("ready", flush=True)
    deadline = time.monotonic() + 120
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    policy = RetryPolicy(backoff_base_s=0.05, backoff_cap_s=0.5)
    options = CallOptions(cache_dir=cache, policy=policy, study_budget_usd=float(budget))
    results = run_requests(spec, requests, options)
    outcomes: dict[str, int] = {}
    for r in results:
        key = f"{r.outcome}:{'cached' if r.cached else 'new'}"
        outcomes[key] = outcomes.get(key, 0) + 1
    print(json.dumps({"outcomes": outcomes, "spent": sum(r.cost_usd for r in results if not r.cached)}))


def report_steps(rates: dict[str, tuple[float, float]]) -> None:
    print("coordination steps, operations/s (ratio = PostgreSQL / file locks, same run):")
    for name, (files, database) in rates.items():
        print(
            f"  {name:7s} files {files:9.0f}/s ({1e6 / files:7.1f} us)  "
            f"PostgreSQL {database:8.0f}/s ({1e6 / database:7.1f} us)  ratio {database / files:.3f}"
        )
    per_call_files = sum(1 / f for f, _ in rates.values())
    per_call_db = sum(1 / d for _, d in rates.values())
    print(
        f"  one call's three steps: files {per_call_files * 1e6:.0f} us, PostgreSQL "
        f"{per_call_db * 1e6:.0f} us (ratio {per_call_files / per_call_db:.3f} of the files' rate)"
    )


def report_two_hosts(run: TwoHostRun, stats: dict[str, object], outs: list[dict[str, object]]) -> bool:
    """Prints the closing note's figures; True when none is over its target."""
    sent: dict[str, int] = stats["requests"]  # type: ignore[assignment]
    paid_twice = sum(1 for count in sent.values() if count > 1)
    peak = int(stats["max_in_flight"])  # type: ignore[call-overload]
    spent = sum(float(o["spent"]) for o in outs)  # type: ignore[arg-type]
    ledger_spent, outstanding = PgSpendLedger(
        settings_from_url(run.db_url, COORD_URL_ENV), str(run.cache.resolve())
    ).totals()
    new = [sum(v for k, v in o["outcomes"].items() if k == "ok:new") for o in outs]  # type: ignore[attr-defined]
    print(f"two hosts, {run.calls} calls each from opposite ends, one database:")
    print(f"  calls sent {len(sent)} (host 0 paid {new[0]}, host 1 paid {new[1]}), paid twice {paid_twice}")
    for h, out in enumerate(outs):
        print(f"  host {h} outcomes: {json.dumps(out['outcomes'], sort_keys=True)}")
    print(f"  peak in flight {peak} / model limit {run.concurrency} = {peak / run.concurrency:.2f}")
    print(
        f"  spent ${spent:.5f} / budget ${run.budget_usd:.5f} = {spent / run.budget_usd:.3f} "
        f"(ledger ${ledger_spent:.5f}, reserved after the run ${outstanding:.5f})"
    )
    if min(new) == 0:
        print("  WARNING: one host sent nothing: the run did not overlap, the figures test little")
    return paid_twice == 0 and peak <= run.concurrency and spent <= run.budget_usd + 1e-9


def report_runs(files: float, database: float) -> None:
    print(
        f"one run, {RUN_CONCURRENCY} in flight, {LATENCY_S * 1000:.0f} ms a call (ceiling "
        f"{RUN_CONCURRENCY / LATENCY_S:.0f}/s): files {files:.0f} calls/s, PostgreSQL "
        f"{database:.0f} calls/s, ratio {database / files:.3f}"
    )


def bench(db_url: str, args: argparse.Namespace) -> int:
    report_steps(measure_steps(db_url, args.ops))
    with ServerProcess(Faults(latency_s=LATENCY_S)) as server, tempfile.TemporaryDirectory() as folder:
        report_runs(*measure_runs(server.url, db_url, args.run_calls))
        tmp = Path(folder)
        budget = BUDGET_SHARE * args.calls * cost_per_call(server.url)
        server.set_faults(Faults(latency_s=LATENCY_S))  # resets the counts: the calibration call is out
        run = TwoHostRun(server.url, tmp / "cache", args.calls, args.concurrency, budget, db_url)
        outs = run_two_hosts(run, tmp)
        ok = report_two_hosts(run, server.stats(), outs)
    return 0 if ok else 1


def main() -> int:
    if sys.argv[1:2] == ["--host-worker"]:
        host_worker(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ops", type=int, default=2000, help="operations per step and backend")
    parser.add_argument("--run-calls", type=int, default=1000, help="calls of each one-host run")
    parser.add_argument("--calls", type=int, default=200, help="calls on each host (the same calls)")
    parser.add_argument("--concurrency", type=int, default=4, help="the model's limit, shared by both hosts")
    args = parser.parse_args()
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        print("skipped: psycopg2 is not installed (pip install 'clcg-pipeline[postgres]')")
        return 0
    url = os.environ.get(COORD_URL_ENV, "").strip()
    if url and url != "files":
        return bench(url, args)
    binaries = bin_dir()
    if binaries is None:
        print(f"skipped: no PostgreSQL server binaries (apt-get install postgresql) and no ${COORD_URL_ENV}")
        return 0
    with running_postgres("clcg_bench", binaries) as throwaway:
        return bench(throwaway.url, args)


if __name__ == "__main__":
    sys.exit(main())
