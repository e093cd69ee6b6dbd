"""A hosted model added while the daemon runs: its calls over the calling phase, against a bare loop.

The daemon (``dagster-daemon run``, as ``make dev`` starts it) builds a synthetic study
(bench/synthetic_corpus.py, default 600 articles x 7 languages) from nothing with an offline
model. Then a hosted model, served by the fake OpenAI-compatible server at 200 ms per call with
concurrency 32, is added to ``models.yaml``. Nobody launches anything: the daemon adds its
partitions, runs its stream (``model_calls``: every pending partition's requests through one
call session) and then its language x model partitions, which find their calls answered.

Measured in the same run: a bare asyncio + httpx2 loop sending calls to the same server at the
same concurrency (the baseline). Reported: the daemon path's rate over the calling phase (first
request to last response) as a ratio to the bare loop's rate (target >= 0.9, as ``clcg run``),
the gaps in the phase, and the wall from the edit of ``models.yaml`` to the model's last scored
partition.

    .venv/bin/python bench/daemon_stream.py [--articles 600] [--timeout 900]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner_study import CONCURRENCY, KEY_ENV, LATENCY_S, ROOT, CallingPhase, _config
from synthetic_corpus import LANGUAGES, write_corpus

from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.orchestration import LocalDaemon
from clcg_pipeline.partitions import MODEL_CALLS, response_key

HOSTED, OFFLINE = "fake-gpt", "lexical-reader"


def _models(config_dir: Path, keep_hosted: bool, hosted: dict | None = None) -> dict:  # type: ignore[type-arg]
    """Set models.yaml's evaluated models: the offline one, plus the hosted one when asked."""
    path = config_dir / "models.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    found = hosted or next(m for m in doc["models"] if m["id"] == HOSTED)
    original = yaml.safe_load((ROOT / "assets_config" / "models.yaml").read_text(encoding="utf-8"))
    offline = next(m for m in original["models"] if m["id"] == OFFLINE)
    auxiliary = [m for m in doc["models"] if m.get("evaluated") is False]
    doc["models"] = auxiliary + [offline] + ([found] if keep_hosted else [])
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return found


def _scored(daemon: LocalDaemon, model: str) -> bool:
    with dg.DagsterInstance.from_config(str(daemon.home)) as instance:
        done = instance.get_materialized_partitions(dg.AssetKey("scores"))
        return all(str(response_key(iso, model)) in done for iso in LANGUAGES)


def _stream_metadata(daemon: LocalDaemon) -> dict[str, object]:
    with dg.DagsterInstance.from_config(str(daemon.home)) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(MODEL_CALLS), asset_partitions=[HOSTED]), limit=1
        ).records
        materialization = records[0].asset_materialization if records else None
        return {k: v.value for k, v in materialization.metadata.items()} if materialization else {}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=600)
    parser.add_argument("--timeout", type=float, default=900, help="seconds per wait before giving up")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed bench still stops its daemon
    root = Path(tempfile.mkdtemp(prefix="clcg-bench-stream-"))
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"  # the daemon and its runs inherit it
    try:
        with ServerProcess(Faults(latency_s=LATENCY_S)) as server:
            write_corpus(root / "corpus", articles=args.articles)
            config_dir = root / "config"
            _config(config_dir, root / "corpus", server.url)
            hosted = _models(config_dir, keep_hosted=False)
            with LocalDaemon(root / "run", config_dir) as daemon:
                # Files first: opening the instance while the daemon creates it races its migrations.
                t_first = daemon.wait_for(
                    f"study_results.json with {OFFLINE}",
                    lambda: OFFLINE in daemon.models_in_results(),
                    args.timeout,
                )
                time.sleep(2)  # the first study's last runs settle
                server.set_faults(Faults(latency_s=LATENCY_S))  # counts from here
                edited = time.monotonic()
                _models(config_dir, keep_hosted=True, hosted=hosted)
                daemon.wait_for(f"{HOSTED} scored", lambda: _scored(daemon, HOSTED), args.timeout)
                t_new = time.monotonic() - edited
                stream = _stream_metadata(daemon)
            phase = CallingPhase.measure(server)  # the daemon stopped: the bare loop has the CPU
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ratio = phase.ratio
    print(f"daemon path: {args.articles} articles x {len(LANGUAGES)} languages, latency {LATENCY_S}s, ")
    print(f"  concurrency {CONCURRENCY}; first study ({OFFLINE}) built by the daemon in {t_first:.1f}s")
    print(f"  {HOSTED} added to models.yaml -> every partition scored: {t_new:.1f}s")
    print(f"  sent by the stream      {stream.get('new_calls')} of {stream.get('requests')} requests")
    print("\n".join(phase.lines("daemon over the phase")))
    print("PASS" if ratio >= 0.9 else "FAIL", "(target: >= 0.9 of the bare loop over the calling phase)")
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
