"""Runner throughput against the fake server: 200 ms per call, concurrency 32.

Theoretical ceiling: 32 / 0.2 s = 160 calls/s. The target is at least 90% of it over 5,000
calls. A bare asyncio + httpx2 loop (no SDK, no cache, no runner) is measured in the same
run as a second baseline, and the runner's own CPU per call (SDK included) is reported.

    .venv/bin/python bench/runner_throughput.py [--calls 5000] [--provider openai]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time

from fake_model import bare_loop, fake_server_model

from clcg_pipeline.calls import CallOptions, bind, run_requests
from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.config import ConditionSettings
from clcg_pipeline.inference import Question, render_request

LATENCY_S = 0.2
CONCURRENCY = 32


def distinct_requests(n: int, tag: str) -> list:  # type: ignore[type-arg]
    """``n`` full-body requests, distinct by ``tag`` and number (also used by runner_s3.py)."""
    settings = ConditionSettings(temperature=0.2, seed=42, max_output_tokens=256)
    paragraphs = [
        (f"p{i}", f"Paragraph {i} of the article says something about topic {i}.") for i in range(8)
    ]
    return [
        render_request(
            "full_body",
            questions=[Question(f"q{j}", f"What does paragraph {j} say? ({tag} {i})") for j in range(5)],
            paragraphs=paragraphs,
            settings=settings,
            rep=0,
        )
        for i in range(n)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--baseline-calls", type=int, default=1000)
    parser.add_argument("--provider", default="openai", choices=["openai", "anthropic", "gemini"])
    args = parser.parse_args()
    theoretical = CONCURRENCY / LATENCY_S
    with ServerProcess(Faults(latency_s=LATENCY_S)) as server, tempfile.TemporaryDirectory() as cache:
        spec = fake_server_model(server.url, provider=args.provider, concurrency=CONCURRENCY)
        bodies = [
            {"model": "m", "messages": r.messages, "temperature": 0.2, "seed": 42}
            for r in distinct_requests(args.baseline_calls, "baseline")
        ]
        cpu0 = time.process_time()
        bare_s = asyncio.run(bare_loop(server.url, bodies, concurrency=CONCURRENCY))
        bare_cpu = (time.process_time() - cpu0) / len(bodies)
        bare_rate = len(bodies) / bare_s

        requests = bind(spec, distinct_requests(args.calls, "runner"))
        server.set_faults(Faults(latency_s=LATENCY_S))
        cpu0, t0 = time.process_time(), time.perf_counter()
        results = run_requests(spec, requests, CallOptions(cache_dir=cache))
        wall = time.perf_counter() - t0
        cpu = (time.process_time() - cpu0) / len(requests)
        stats = server.stats()
    ok = sum(r.outcome == "ok" for r in results)
    rate = len(requests) / wall
    print(
        f"provider={args.provider} calls={len(requests)} ok={ok} "
        f"latency={LATENCY_S}s concurrency={CONCURRENCY}"
    )
    print(f"theoretical rate        {theoretical:8.1f} calls/s")
    print(
        f"bare asyncio+httpx2     {bare_rate:8.1f} calls/s  ({bare_rate / theoretical:6.1%} of theoretical), "
        f"CPU {bare_cpu * 1e3:.2f} ms/call over {len(bodies)} calls"
    )
    print(
        f"runner ({args.provider:9s})     {rate:8.1f} calls/s  ({rate / theoretical:6.1%} of theoretical, "
        f"{rate / bare_rate:6.1%} of bare loop), wall {wall:.1f}s"
    )
    print(
        f"runner CPU per call     {cpu * 1e3:8.2f} ms (SDK build + parse, cache write, runner; "
        f"{cpu / bare_cpu:.1f}x the bare loop)"
    )
    print(f"server: max in flight {stats['max_in_flight']}, requests {stats['total_requests']}")
    passed = rate >= 0.9 * theoretical and ok == len(requests)
    print("PASS" if passed else "FAIL", "(target: >= 90% of theoretical, every call ok)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
