"""Subprocess body for the kill -9 resume test: runs N requests against the fake server."""

from __future__ import annotations

import sys

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for


def requests_for(n: int) -> list:  # type: ignore[type-arg]
    return [make_request(tag=f"resume-{i}") for i in range(n)]


def main() -> None:
    url, cache_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = spec_for("openai", url, concurrency=4)
    results = run_requests(spec, requests_for(n), CallOptions(cache_dir=cache_dir, policy=FAST))
    print(sum(r.outcome == "ok" for r in results), sum(r.cached for r in results))


if __name__ == "__main__":
    main()
