"""`clcg run` against a fake OpenAI-compatible server: how much of the wall is spent calling.

A synthetic corpus (bench/synthetic_corpus.py, default 600 articles x 7 languages, full_body and
closed_book) is run end to end by ``clcg run`` in a subprocess, against the fake server at
200 ms per call, model concurrency 32. In the same run a bare asyncio + httpx2 loop sends the
same number of calls to the same server at the same concurrency (the baseline). Reported:

* calling share: seconds with at least one call in flight / wall of ``clcg run``;
* calling phase: first request to last response; the runner's rate over it (calls / phase)
  as a ratio to the bare loop's rate (target >= 0.9);
* gaps: the calling phase minus busy time (drains between partitions show up here), and the
  longest stretch of the phase with no answer coming back.

By default ``clcg run`` sends every partition's calls ahead of the partitions' runs, one stream
per model (its ``model_calls`` run, clcg_pipeline/orchestration/_model_calls.py); ``--no-calls-ahead``
measures the calls made inside each partition's Dagster run instead.

    .venv/bin/python bench/runner_study.py [--articles 600] [--timeout 280] [--no-calls-ahead]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_corpus import LANGUAGES, write_corpus

from clcg_pipeline.calls.fake_server import Faults, ServerProcess

LATENCY_S = 0.2
CONCURRENCY = 32
KEY_ENV = "CLCG_BENCH_FAKE_KEY"
BARE_CALLS = 1500  # enough for a steady rate; keeps the whole bench under five minutes
ROOT = Path(__file__).resolve().parents[1]


async def _bare_loop(url: str, n: int) -> float:
    """Seconds for ``n`` chat calls through a bare asyncio loop at the same concurrency."""
    sem = asyncio.Semaphore(CONCURRENCY)
    limits = httpx2.Limits(max_connections=CONCURRENCY * 2, max_keepalive_connections=CONCURRENCY * 2)
    async with httpx2.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def one(i: int) -> None:
            body = {"model": "m", "messages": [{"role": "user", "content": f"1. Question {i}?"}]}
            async with sem:
                response = await client.post("/v1/chat/completions", json=body)
                json.loads(response.content)["choices"][0]["message"]["content"]

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - start


@dataclass(frozen=True)
class CallingPhase:
    """The fake server's calling phase, against a bare loop run on the same server right after."""

    stats: dict[str, Any]
    bare_n: int
    bare_s: float

    @classmethod
    def measure(cls, server: ServerProcess) -> CallingPhase:
        """Read the server's figures, then time the bare loop over as many calls (at most BARE_CALLS)."""
        stats = server.stats()
        server.set_faults(Faults(latency_s=LATENCY_S))  # resets the counts
        bare_n = min(max(stats["total_requests"], 1), BARE_CALLS)
        return cls(stats, bare_n, asyncio.run(_bare_loop(server.url, bare_n)))

    @property
    def calls(self) -> int:
        return int(self.stats["total_requests"])

    @property
    def busy(self) -> float:
        return float(self.stats["busy_s"])

    @property
    def bare_rate(self) -> float:
        return self.bare_n / self.bare_s

    @property
    def rate(self) -> float:
        span = self.stats["calling_span_s"]
        return self.calls / span if span else 0.0

    @property
    def ratio(self) -> float:
        return self.rate / self.bare_rate

    def lines(self, who: str, wall: float | None = None) -> list[str]:
        """The figures, one per line; ``who`` names the caller in the rate line."""
        span, busy = self.stats["calling_span_s"], self.busy
        departures = sorted(self.stats["departures_s"])
        longest = max((b - a for a, b in itertools.pairwise(departures)), default=0.0)
        lines = [f"  calls sent              {self.calls} (max in flight {self.stats['max_in_flight']})"]
        if wall is not None:
            lines.append(f"  calling share of wall   {busy / wall:6.1%}  (busy {busy:.1f}s of {wall:.1f}s)")
        bare = f"{self.bare_rate:8.1f} calls/s ({self.bare_n} calls in {self.bare_s:.1f}s)"
        return [
            *lines,
            f"  calling phase           {span:.1f}s first request to last response; gaps {span - busy:.1f}s",
            f"  longest wait for an answer within it {longest:.2f}s (latency {LATENCY_S}s)",
            f"  bare asyncio loop       {bare}",
            f"  {who:<24}{self.rate:8.1f} calls/s = {self.ratio:.2f} of the bare loop",
        ]


def _config(folder: Path, corpus: Path, url: str) -> None:
    shutil.copytree(ROOT / "assets_config", folder)

    def edit(name: str, change) -> None:  # type: ignore[no-untyped-def]
        path = folder / name
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        change(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")

    edit(
        "sources.yaml",
        lambda d: d.update(sources=[{"name": "synthetic", "kind": "jsonl", "path": str(corpus)}]),
    )
    edit(
        "languages.yaml",
        lambda d: d.update(languages=[lang for lang in d["languages"] if lang["iso"] in LANGUAGES]),
    )
    edit(
        "models.yaml",
        # The auxiliary models (judges, writers: ``evaluated: false``) stay, as study.yaml names them.
        lambda d: d.update(
            models=[m for m in d["models"] if m.get("evaluated") is False]
            + [
                {
                    "id": "fake-gpt",
                    "provider": "openai",
                    "model": "fake-gpt",
                    "base_url": f"{url}/v1",
                    "api_key_env": KEY_ENV,
                    "concurrency": CONCURRENCY,
                    "timeout_s": 30,
                    "knowledge_cutoff": "2024-06-01",
                }
            ]
        ),
    )

    def study(d: dict) -> None:  # type: ignore[type-arg]
        d["bootstrap_replicates"] = 50
        d["items_per_level"] = 2

    edit("study.yaml", study)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=600)
    parser.add_argument("--timeout", type=float, default=280, help="seconds before clcg run is stopped")
    parser.add_argument("--no-calls-ahead", action="store_true", help="calls inside each partition's run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Faults(latency_s=LATENCY_S)) as server:
        work = Path(tmp)
        write_corpus(work / "corpus", articles=args.articles)
        _config(work / "config", work / "corpus", server.url)
        env = {**os.environ, KEY_ENV: "sk-bench-not-a-real-key", "DAGSTER_HOME": str(work / "home")}
        cmd = [str(Path(sys.executable).parent / "clcg"), "run", "--config", str(work / "config")]
        cmd += ["--data", str(work / "data")] + (["--no-calls-ahead"] if args.no_calls_ahead else [])
        server.set_faults(Faults(latency_s=LATENCY_S))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
            finished = proc.returncode == 0
            tail = (proc.stdout + proc.stderr)[-1500:]
        except subprocess.TimeoutExpired:
            finished, tail = False, f"stopped after {args.timeout:.0f}s"
        wall = time.perf_counter() - t0
        phase = CallingPhase.measure(server)
    how = "inside each partition's run" if args.no_calls_ahead else "sent ahead"
    print(f"clcg run ({how}): {args.articles} articles x {len(LANGUAGES)} languages, latency {LATENCY_S}s, ")
    print(f"  concurrency {CONCURRENCY}: {'finished' if finished else 'DID NOT FINISH'} in {wall:.1f}s")
    print("\n".join(phase.lines("runner over the phase", wall)))
    over_busy = phase.calls / phase.busy if phase.busy else 0
    share = over_busy / phase.bare_rate
    print(f"  runner over busy time   {over_busy:8.1f} calls/s = {share:.2f} of the bare loop")
    ratio = phase.ratio
    if not finished:
        # The calling figures above stand when every call was sent; what failed is shown as is.
        print(tail)
    print(
        "PASS" if finished and ratio >= 0.9 else "FAIL",
        "(target: clcg run finishes, >= 0.9 of the bare loop)",
    )
    return 0 if finished and ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
