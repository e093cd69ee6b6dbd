"""Runner throughput with the call cache on object storage (s3://) versus a local cache folder.

A run whose cache_dir is an ``s3://`` URL writes every new call's entry to the bucket and
looks every call up there first, so a slow object-store path caps the whole runner. This runs
the same kind of calls (fake server, 50 ms per call, concurrency 32) three times in one run:
new calls with a local cache folder (the baseline), new calls with an s3 cache on a local
S3-compatible server (moto, its own process), and those s3 calls again, which must all come
back cached without reaching the model. The target is at least 100 new calls/s on s3.

    .venv/bin/python bench/runner_s3.py [--calls 600] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid

from fake_model import fake_server_model  # bench/ is the script's folder: on sys.path
from moto_server import moto_s3
from runner_throughput import distinct_requests

from clcg_pipeline.calls import CallOptions, CallResult, ChatRequest, bind, run_requests
from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.config import ModelSpec

CONCURRENCY = 32
TARGET = 100.0
BUCKET = "clcg-bench"


def _timed(spec: ModelSpec, requests: list[ChatRequest], cache: str) -> tuple[list[CallResult], float]:
    t0 = time.perf_counter()
    results = run_requests(spec, requests, CallOptions(cache_dir=cache))
    return results, time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    with moto_s3() as s3_env:
        os.environ.update(
            s3_env,
            CLCG_ALLOW_LOCAL_COORD="1",  # one host: its file locks coordinate the s3:// cache
        )
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir(BUCKET)
        s3_cache = f"s3://{BUCKET}/cache-{uuid.uuid4().hex}"
        faults = Faults(latency_s=args.latency)
        with ServerProcess(faults) as server, tempfile.TemporaryDirectory() as local_cache:
            spec = fake_server_model(server.url, concurrency=CONCURRENCY)
            # Warm-up (SDK import, connections, the s3 client), so neither timed phase pays for it.
            _timed(spec, bind(spec, distinct_requests(CONCURRENCY, "warm-local")), local_cache)
            _timed(spec, bind(spec, distinct_requests(CONCURRENCY, "warm-s3")), f"{s3_cache}-warm")
            local, local_s = _timed(spec, bind(spec, distinct_requests(args.calls, "local")), local_cache)
            s3_requests = bind(spec, distinct_requests(args.calls, "s3"))
            s3_new, s3_s = _timed(spec, s3_requests, s3_cache)
            server.set_faults(faults)  # resets the request counts
            rerun, rerun_s = _timed(spec, s3_requests, s3_cache)
            rerun_hits = server.stats()["total_requests"]
    n = args.calls
    ok = all(r.outcome == "ok" for r in local + s3_new)
    all_cached = all(r.cached for r in rerun) and len(rerun) == n
    local_rate, s3_rate = n / local_s, n / s3_s
    ceiling = CONCURRENCY / args.latency
    print(f"calls={n} latency={args.latency}s concurrency={CONCURRENCY} (ceiling {ceiling:.0f} calls/s)")
    print(f"local cache, new calls  {local_rate:8.1f} calls/s  wall {local_s:.1f}s")
    ratio = s3_rate / local_rate
    print(f"s3 cache, new calls     {s3_rate:8.1f} calls/s  wall {s3_s:.1f}s  (ratio s3/local {ratio:.2f})")
    print(f"s3 cache, cached rerun  {n / rerun_s:8.1f} lookups/s  wall {rerun_s:.2f}s")
    print(f"rerun: all cached {all_cached}, model requests {rerun_hits}; every new call ok {ok}")
    passed = s3_rate >= TARGET and ok and all_cached and rerun_hits == 0
    if s3_rate < TARGET:
        print(f"MISS: s3 new calls {s3_rate:.1f} calls/s < target {TARGET:.0f} calls/s")
    print("PASS" if passed else "FAIL", f"(target: s3 new calls >= {TARGET:.0f} calls/s, rerun all cached)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
