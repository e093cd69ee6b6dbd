"""New model -> refreshed study_results.json, with the real daemon and nobody typing anything.

Starts ``dagster-daemon run`` (as ``make dev`` does) on a temporary instance, config folder and
data folder, lets it build the study from nothing, then adds a second offline model to
``models.yaml`` and measures the wall until ``study_results.json`` has it in ``h1.by_model``.
Baseline, measured in the same run: the same work (one more offline model: its responses
partitions, then the analysis) executed in process, as ``clcg run`` does. Also prints the
per-run overhead of the daemon's runs (queue to end, minus the time spent in steps).

    .venv/bin/python bench/bench_new_model.py [--languages 18] [--timeout 900]
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import PROJECT_ROOT, LocalDaemon, build_definitions
from clcg_pipeline.partitions import response_key

FIRST = "lexical-reader"


def _edit(path: Path, change: Any) -> None:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _add_model(config_dir: Path, model_id: str) -> None:
    def add(doc: dict) -> None:
        model = dict(next(m for m in doc["models"] if m["id"] == FIRST))
        doc["models"].append({**model, "id": model_id, "options": {"threshold": 0.3}})

    _edit(config_dir / "models.yaml", add)


def make_config(root: Path, languages: int, replicates: int | None) -> Path:
    config_dir = root / "config"
    shutil.copytree(PROJECT_ROOT / "assets_config", config_dir)

    def cut(doc: dict) -> None:
        # The demo corpus's languages first, so a cut panel still has data in every language.
        demo = ("en", "pt", "is", "mt", "sw", "ka", "ht")
        ordered = sorted(
            doc["languages"],
            key=lambda lang: (lang["iso"] not in demo, demo.index(lang["iso"]) if lang["iso"] in demo else 0),
        )
        doc["languages"] = ordered[:languages]

    _edit(config_dir / "languages.yaml", cut)
    if replicates:
        _edit(config_dir / "study.yaml", lambda doc: doc.update(bootstrap_replicates=replicates))
    return config_dir


@contextmanager
def _instance(home: Path) -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


def run_overheads(instance: dg.DagsterInstance, since: float) -> tuple[list[float], list[float]]:
    """Per run created after ``since``: (queue wait, start-up overhead) in seconds.

    Queue wait: creation to launch (the per-provider limit holds runs back here, by design).
    Overhead: launch to end, minus the time spent in steps (what a run costs beyond its work).
    """
    waits, overheads = [], []
    for record in instance.get_run_records():
        run = record.dagster_run
        created = record.create_timestamp.timestamp()
        if created < since or record.end_time is None:
            continue
        launched = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_STARTING)
        begin = launched[0].timestamp if launched else created  # in process: never queued
        steps = instance.get_run_step_stats(run.run_id)
        in_steps = sum((s.end_time or s.start_time or 0) - (s.start_time or 0) for s in steps)
        waits.append(begin - created)
        overheads.append(record.end_time - begin - in_steps)
    return waits, overheads


def in_process_baseline(
    root: Path, config_dir: Path, daemon: LocalDaemon, model_id: str
) -> tuple[float, float]:
    """Wall and per-run overhead of the same work in process (what ``clcg run`` does)."""
    _add_model(config_dir, model_id)
    config = load_config(config_dir)
    defs = build_definitions(config_dir, daemon.data_dir)
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with _instance(daemon.home) as instance:
        start = time.time()
        t0 = time.monotonic()
        sync_model_partitions(instance, config)
        for iso in study_coverage(config).covered:  # the languages with partitions
            result = defs.resolve_job_def("responses_job").execute_in_process(
                instance=instance, partition_key=str(response_key(iso, model_id)), run_config=quiet
            )
            assert result.success
        assert (
            defs.resolve_job_def("analysis_job")
            .execute_in_process(instance=instance, run_config=quiet)
            .success
        )
        wall = time.monotonic() - t0
        _, overheads = run_overheads(instance, start)
    return wall, statistics.mean(overheads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", type=int, default=18, help="panel size (the study: 18)")
    parser.add_argument(
        "--replicates", type=int, default=None, help="bootstrap replicates (default: study.yaml)"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per wait before giving up")
    args = parser.parse_args()
    # A killed benchmark still stops its daemon (the `finally` below and LocalDaemon's exit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="clcg-bench-daemon-"))
    try:
        measure(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def measure(root: Path, args: argparse.Namespace) -> None:
    config_dir = make_config(root, args.languages, args.replicates)
    second = "lexical-reader-b"
    daemon = LocalDaemon(root, config_dir)
    with daemon:
        t_nothing = daemon.wait_for(
            f"a study with {FIRST}", lambda: FIRST in daemon.models_in_results(), args.timeout
        )
        # Let the first study's last runs finish, so the measurement starts from idle.
        time.sleep(2)
        since = time.time()
        _add_model(config_dir, second)
        t_new = daemon.wait_for(
            f"{second} in study_results.json", lambda: second in daemon.models_in_results(), args.timeout
        )
        with _instance(daemon.home) as instance:
            waits, daemon_overheads = run_overheads(instance, since)
    baseline_wall, baseline_overhead = in_process_baseline(root, config_dir, daemon, "lexical-reader-c")
    per_run = statistics.mean(daemon_overheads) if daemon_overheads else float("nan")
    config = load_config(config_dir)
    covered = len(study_coverage(config).covered)
    print(
        f"languages: {args.languages} in the panel, {covered} with a corpus file (partitions); "
        f"replicates: {config.study.bootstrap_replicates}"
    )
    print(f"study from nothing (daemon only):           {t_nothing:7.1f} s")
    print(f"new model -> study_results.json (daemon):   {t_new:7.1f} s over {len(daemon_overheads)} runs")
    print(f"same work in process (baseline):            {baseline_wall:7.1f} s")
    print(f"ratio daemon / in process:                  {t_new / baseline_wall:7.2f}")
    print(f"per-run overhead, daemon runs:              {per_run:7.2f} s (launch to end minus steps)")
    print(f"queue wait per daemon run (provider limit): {statistics.mean(waits):7.2f} s")
    print(f"per-run overhead, in-process runs:          {baseline_overhead:7.2f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
