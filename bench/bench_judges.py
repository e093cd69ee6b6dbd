"""Judge calls per second: ``run_judge`` through the runner against the fake server, and offline.

The fake server (its own process) answers every error-judge request after 200 ms with a valid
``clcg-error-v1`` judgement (a scripted reply in the prompt), concurrency 32: the ceiling is
32 / 0.2 s = 160 calls/s. Measured in the same run: a bare asyncio + httpx2 loop posting the
same bodies (no SDK, no cache, no parsing) as the baseline; then ``run_judge`` (render, bind,
runner, cache, strict parse with the evidence check); then the rule-based offline judge
(``offline-judge-a``: no network, so its rate is the machinery's CPU cost alone).

    .venv/bin/python bench/bench_judges.py [--calls 2000] [--offline-calls 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from typing import Any

from fake_model import bare_loop, fake_server_model  # bench/ is the script's folder: on sys.path

from clcg_pipeline.calls import CallOptions, judge_settings, render_judge_request, run_judge
from clcg_pipeline.calls.fake_server import Faults, ServerProcess, reply_marker
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.validation import ERROR_EVIDENCE_FIELDS, error_template

LATENCY_S = 0.2
CONCURRENCY = 32
PASSAGE = " ".join(
    f"Paragraph {i}: the bridge over the river was built in 1932 by the harbour board, and fishermen "
    f"opposed it for {i + 2} years."
    for i in range(12)
)
REPLY = json.dumps({"label": "correct", "evidence": "built in 1932", "rationale": "matches the gold"})


def _subjects(n: int, tag: str, *, scripted: bool) -> list[tuple[dict[str, Any], dict[str, str]]]:
    marker = reply_marker(REPLY) if scripted else ""
    return [
        (
            {"pair_id": f"{tag}{i}", "side": "target"},
            {
                "passage": PASSAGE,
                "question": "When and by whom was the bridge built?",
                "gold_answer": "in 1932 by the harbour board",
                "response": f"It was built in 1932 by the harbour board ({tag} {i}). {marker}",
            },
        )
        for i in range(n)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--baseline-calls", type=int, default=1000)
    parser.add_argument("--offline-calls", type=int, default=5000)
    args = parser.parse_args()
    template = error_template()
    theoretical = CONCURRENCY / LATENCY_S
    with ServerProcess(Faults(latency_s=LATENCY_S)) as server, tempfile.TemporaryDirectory() as cache:
        spec = fake_server_model(
            server.url, model_id="bench-judge", model="bench-judge-model", concurrency=CONCURRENCY
        )
        settings = judge_settings(spec)
        bodies = [
            {
                "model": "m",
                "messages": render_judge_request(template, f, settings=settings).messages,
                "temperature": 0,
            }
            for _, f in _subjects(args.baseline_calls, "baseline", scripted=True)
        ]
        bare_s = asyncio.run(bare_loop(server.url, bodies, concurrency=CONCURRENCY))
        bare_rate = len(bodies) / bare_s

        subjects = _subjects(args.calls, "runner", scripted=True)
        t0 = time.perf_counter()
        judged, _ = run_judge(
            spec, template, subjects, CallOptions(cache_dir=cache), evidence_fields=ERROR_EVIDENCE_FIELDS
        )
        wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_judge(
            spec, template, subjects, CallOptions(cache_dir=cache), evidence_fields=ERROR_EVIDENCE_FIELDS
        )
        cached_wall = time.perf_counter() - t0

        offline = ModelSpec(id="offline-judge-a", provider="offline", model="rule-judge-v1", evaluated=False)
        offline_subjects = _subjects(args.offline_calls, "offline", scripted=False)
        t0 = time.perf_counter()
        offline_judged, _ = run_judge(
            offline,
            template,
            offline_subjects,
            CallOptions(cache_dir=cache),
            evidence_fields=ERROR_EVIDENCE_FIELDS,
        )
        offline_wall = time.perf_counter() - t0
    ok = int((judged["status"] == "ok").sum())
    offline_ok = int((offline_judged["status"] == "ok").sum())
    rate = len(subjects) / wall
    print(
        f"fake server latency {LATENCY_S}s, concurrency {CONCURRENCY}; theoretical {theoretical:.1f} calls/s"
    )
    print(f"bare asyncio+httpx2       {bare_rate:8.1f} calls/s over {len(bodies)} calls")
    print(
        f"run_judge (openai SDK)    {rate:8.1f} calls/s over {len(subjects)} calls, {ok} ok "
        f"({rate / bare_rate:6.1%} of bare loop, {rate / theoretical:6.1%} of theoretical)"
    )
    print(f"run_judge, all cached     {len(subjects) / cached_wall:8.1f} judgements/s")
    offline_rate = len(offline_subjects) / offline_wall
    print(
        f"offline rule judge        {offline_rate:8.1f} calls/s over {len(offline_subjects)} calls, "
        f"{offline_ok} ok ({offline_rate / bare_rate:.1f}x the bare loop)"
    )
    return 0 if ok == len(subjects) and offline_ok == len(offline_subjects) else 1


if __name__ == "__main__":
    sys.exit(main())
