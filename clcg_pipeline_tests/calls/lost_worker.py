"""Subprocess body for the lost-at-kill test: N requests against the fake server, with a
timeout no loaded test machine reaches (a timed-out attempt is one more request the server
logs, which a kill test comparing the record with that log must not have)."""

from __future__ import annotations

import sys

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline_tests.calls.conftest import FAST, spec_for
from clcg_pipeline_tests.calls.resume_worker import requests_for


def main() -> None:
    url, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = spec_for("openai", url, concurrency=4, timeout_s=30.0)
    results = run_requests(spec, requests_for(n), CallOptions(cache_dir=cache_dir, policy=FAST))
    print(sum(r.outcome == "ok" for r in results), sum(r.cached for r in results))


if __name__ == "__main__":
    main()
