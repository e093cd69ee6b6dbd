"""Soak: 10,000 calls against the fake server with 20% 429s, 5% 5xx, 2% timeouts, 3% malformed.

Checks that the run completes, every slot has exactly one final status, no completed call is
repeated (the server counts completed responses per call id) and a rerun sends nothing.
Figures are printed next to a fault-free baseline: the theoretical rate at the same latency
and concurrency, and the fault-free attempts (one per call).

    .venv/bin/python bench/runner_soak.py [--calls 10000]
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from clcg_pipeline.calls import CallOptions, RetryPolicy, bind, run_requests
from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.inference import Question, render_request

LATENCY_S = 0.01
CONCURRENCY = 32
KEY_ENV = "CLCG_BENCH_FAKE_KEY"
FAULTS = Faults(
    latency_s=LATENCY_S,
    p429=0.20,
    p5xx=0.05,
    ptimeout=0.02,
    pmalformed=0.03,
    retry_after_s=0.05,
    slow_s=0.6,
    seed=7,
)
FINAL = {"ok", "refused", "truncated", "error", "skipped_budget"}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--provider", default="openai", choices=["openai", "anthropic", "gemini"])
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("clcg_pipeline.calls").setLevel(logging.INFO)
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    settings = ConditionSettings(temperature=0.2, seed=42, max_output_tokens=128)
    with ServerProcess(FAULTS) as server, tempfile.TemporaryDirectory() as cache:
        base = server.url + "/v1" if args.provider == "openai" else server.url
        spec = ModelSpec(
            id="soak",
            provider=args.provider,
            model="soak-model",
            base_url=base,
            api_key_env=KEY_ENV,
            concurrency=CONCURRENCY,
            timeout_s=0.3,
            max_attempts=30,
        )
        requests = bind(
            spec,
            [
                render_request(
                    "full_body",
                    questions=[Question(f"q{j}", f"Question {j} of call {i}?") for j in range(3)],
                    paragraphs=[("p1", f"Passage of call {i}.")],
                    settings=settings,
                    rep=0,
                )
                for i in range(args.calls)
            ],
        )
        policy = RetryPolicy(backoff_base_s=0.02, backoff_cap_s=0.5)
        t0 = time.perf_counter()
        results = run_requests(spec, requests, CallOptions(cache_dir=cache, policy=policy))
        wall = time.perf_counter() - t0
        stats = server.stats()
        rerun = run_requests(spec, requests, CallOptions(cache_dir=cache, policy=policy))
        after = server.stats()
        cached_files = sum(1 for _ in Path(cache).rglob("*.json"))

    outcomes = collections.Counter(r.outcome for r in results)
    attempts = collections.Counter(r.attempts for r in results)
    completed = stats["completed"]
    repeated = sum(1 for n in completed.values() if n > 1)
    checks = {
        "one result per slot": len(results) == len(requests) == len({r.call_id for r in results}),
        "every slot has a final status": all(r.outcome in FINAL for r in results),
        "every call completed": outcomes["ok"] == len(requests),
        "zero completed calls repeated": repeated == 0,
        "cache holds every completed call": cached_files == outcomes["ok"],
        "rerun sends no request": after["total_requests"] == stats["total_requests"]
        and all(r.cached for r in rerun),
    }
    theoretical = CONCURRENCY / LATENCY_S
    rate = len(requests) / wall
    total_attempts = sum(r.attempts for r in results)
    print(f"provider={args.provider} calls={len(requests)} latency={LATENCY_S}s concurrency={CONCURRENCY}")
    print(f"faults injected by the server: {stats['injected']}")
    print(f"outcomes: {dict(outcomes)}; attempts per call: {dict(sorted(attempts.items()))}")
    print(
        f"wall {wall:.1f}s, {rate:.1f} calls/s ({rate / theoretical:.1%} of the fault-free theoretical "
        f"{theoretical:.0f}/s); {total_attempts / len(requests):.2f} attempts per call (fault-free: 1.00)"
    )
    print(
        f"server requests {stats['total_requests']}, completed responses {sum(completed.values())}, "
        f"max in flight {stats['max_in_flight']}"
    )
    for name, passed in checks.items():
        print(f"  [{'x' if passed else ' '}] {name}")
    ok = all(checks.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
