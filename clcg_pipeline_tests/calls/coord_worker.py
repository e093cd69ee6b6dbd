"""Subprocess body for the cross-process tests: one run of N requests against the fake server.

    python -m clcg_pipeline_tests.calls.coord_worker URL CACHE TAG N CONCURRENCY BUDGET GO_FILE [reverse]

Prints ``ready``, waits for ``GO_FILE`` so that the runs of several processes overlap, then
prints a JSON line of outcome counts.
"""

from __future__ import annotations

import collections
import json
import sys
import time
from pathlib import Path

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for


def main() -> None:
    url, cache_dir, tag, n, concurrency, budget, go = sys.argv[1:8]
    reverse = sys.argv[8:] == ["reverse"]
    spec = spec_for("openai", url, concurrency=int(concurrency), timeout_s=10)
    requests = [make_request(tag=f"{tag}-{i}") for i in range(int(n))]
    if reverse:  # from the other end: both processes send until they meet in the middle
        requests.reverse()
    import openai  # noqa: F401  (the SDK import takes seconds on a busy machine: done before the barrier)

    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    results = run_requests(
        spec,
        requests,
        CallOptions(
            cache_dir=cache_dir, policy=FAST, study_budget_usd=float(budget) if budget != "-" else None
        ),
    )
    outcomes = collections.Counter(
        f"{r.outcome}:{r.error or ''}:{'cached' if r.cached else 'new'}" for r in results
    )
    spent = sum(r.cost_usd for r in results if not r.cached)
    print(json.dumps({"outcomes": dict(outcomes), "spent": spent}))


if __name__ == "__main__":
    main()
