"""The webserver's GraphQL at 100 models x 18 languages, the partitions materialized cheaply.

Calling 100 models takes hours here, so this bench does not run the study: it builds the
project's real definitions over a ``models.yaml`` of N fake models and a synthetic corpus of
the panel's first L languages (bench_hundred_models.py's config and corpus), adds the models to
the instance's model dimension as the partition sensor does (``add_dynamic_partitions``), and
records a materialization of every partition a study without granularity tasks materializes
(the corpus' language partitions, ``model_calls``, the language x model ``calls``,
``predictions`` and ``scores``, the unpartitioned outputs once) through Dagster's public
``DagsterInstance.report_runless_asset_event``. Then it starts ``dagster-webserver`` on
127.0.0.1 over that instance (bench/hundred_web.py, as ``make dev`` starts it) and times the
``predictions`` asset's page and partition matrix, against ``{ version }``.

Each scale of ``--models`` (default 20 then 100 models: 360 then 1,800 language x model
partitions) has its own study folder and instance, the next a copy of the one before grown to
its models (only the new models' partitions are recorded). Every scale's webserver runs at once
and they take turns query by query, so the larger scale is compared with the smaller one
measured in the same run under the same load. The asset page's partition counts are checked
against the scale before anything is timed. Runless materializations have no runs behind
them: the matrix has no failed or in-progress partition to find, as in a study that finished.

    .venv/bin/python bench/hundred_graphql.py [--models 20 100] [--languages 18] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_hundred_models import KEY_ENV, add_model, panel, write_config, write_study_corpus
from hundred_launchers import GRAPHQL_S
from hundred_web import QUERIES, RESPONSES, Webserver

from clcg_pipeline.config import ensure_dagster_home, load_config
from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.partitions import MODEL_DIMENSION

# The granularity tasks are off in the study (bench_hundred_models.write_config): their assets
# are defined but never materialized.
SKIPPED_GROUPS = frozenset({"granularity"})
_URL = "http://127.0.0.1:9"  # the models' base URL: nothing is called
TIMED = ("version", "asset page", "partition matrix")


def unmaterialized(
    specs: Iterable[dg.AssetSpec], instance: dg.DagsterInstance, skipped: frozenset[str] = SKIPPED_GROUPS
) -> Iterator[tuple[dg.AssetKey, str | dg.MultiPartitionKey | None]]:
    """(asset, partition) of every partition (None: an unpartitioned asset) not yet materialized.

    The model dimension's partitions are those on ``instance``, so a scale that grows the
    instance yields only the new models' partitions.
    """
    for spec in specs:
        if spec.group_name in skipped:
            continue
        if spec.partitions_def is None:
            if instance.get_latest_materialization_event(spec.key) is None:
                yield spec.key, None
            continue
        done = instance.get_materialized_partitions(spec.key)
        with dg.partition_loading_context(dynamic_partitions_store=instance):
            keys = spec.partitions_def.get_partition_keys()
        yield from ((spec.key, key) for key in keys if str(key) not in done)


def materialize(instance: dg.DagsterInstance, config: Path, data: Path) -> int:
    """Add ``models.yaml``'s models to the model dimension and record a materialization of every
    partition not yet materialized (``report_runless_asset_event``); how many were recorded."""
    models = [m.id for m in load_config(config).models.evaluated]
    instance.add_dynamic_partitions(MODEL_DIMENSION, models)
    specs = build_definitions(config, data).resolve_all_asset_specs()
    found = list(unmaterialized(specs, instance))
    for key, partition in found:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))
    return len(found)


def spread(samples: list[float]) -> dict[str, float]:
    """The median and the max of a query's repeats (seconds)."""
    return {"median": statistics.median(samples), "max": max(samples)}


def check_counts(web: Webserver, partitions: int) -> None:
    """The asset page must count every partition materialized, or the bench would time a smaller matrix."""
    node = web.post(QUERIES["asset page"], RESPONSES)["assetNodeOrError"]
    stats = node["partitionStats"]
    if stats["numPartitions"] != partitions or stats["numMaterialized"] != partitions:
        raise SystemExit(f"predictions: expected {partitions} partitions materialized, the UI has {stats}")


def timings(webs: list[Webserver], repeats: int) -> list[dict[str, dict[str, float]]]:
    """Each timed query's first latency (after start-up), then the median and max of its repeats,
    for each webserver; the webservers take turns query by query, so a change in the shared
    machine's load falls on every scale alike."""
    samples: list[dict[str, list[float]]] = [{name: [] for name in TIMED} for _ in webs]
    first: list[dict[str, float]] = [{} for _ in webs]
    for name in TIMED:
        variables = None if name == "version" else RESPONSES
        for web, found in zip(webs, first, strict=True):
            found[name] = web.query(QUERIES[name], variables)
        for _ in range(repeats):
            for web, taken in zip(webs, samples, strict=True):
                taken[name].append(web.query(QUERIES[name], variables))
    return [
        {name: {"first": once[name], **spread(taken[name])} for name in TIMED}
        for once, taken in zip(first, samples, strict=True)
    ]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}"


def table(scales: list[tuple[int, int, dict[str, Any]]]) -> list[str]:
    """One line per query and scale: first, median and max (ms), the median's ratio to the first scale's."""
    lines = [f"  {'query':<18}{'partitions':>11}{'first ms':>10}{'median ms':>11}{'max ms':>9}{'ratio':>8}"]
    for name in TIMED:
        base = scales[0][2][name]["median"]
        for _, partitions, found in scales:
            got = found[name]
            ratio = f"{got['median'] / base:.2f}" if base else "n/a"
            cells = f"{_ms(got['first']):>10}{_ms(got['median']):>11}{_ms(got['max']):>9}{ratio:>8}"
            lines.append(f"  {name:<18}{partitions:>11}{cells}")
    return lines


def misses(scales: list[tuple[int, int, dict[str, Any]]]) -> list[str]:
    """The asset page or partition matrix over ``GRAPHQL_S`` at some scale (its max, first query aside)."""
    return [
        f"{name} at {partitions} partitions: max {found[name]['max']:.2f} s > {GRAPHQL_S} s"
        for _, partitions, found in scales
        for name in ("asset page", "partition matrix")
        if found[name]["max"] > GRAPHQL_S
    ]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--models", type=int, nargs="+", default=[20, 100], help="models at each scale, increasing")
    add("--languages", type=int, default=18, help="the panel's first L languages (2-18)")
    add("--articles", type=int, default=2, help="articles per language (the corpus is never read)")
    add("--repeats", type=int, default=7, help="timed queries per figure (median, max)")
    add("--timeout", type=float, default=600, help="seconds for the webserver to answer")
    add("--strict", action="store_true", help="exit 1 when a query's max is over 2 s")
    args = parser.parse_args()
    if args.models != sorted(set(args.models)) or args.models[0] < 1:
        parser.error("--models: increasing counts, at least 1")
    if args.repeats < 1:
        parser.error("--repeats: at least 1")
    return args


def _grow(study: Path, models: int, isos: list[str]) -> str:
    """The study's ``models.yaml`` grown to ``models`` models, their partitions materialized."""
    config, data = study / "config", study / "data"
    for index in range(len(load_config(config).models.evaluated), models):
        add_model(config, index, _URL)
    started = time.perf_counter()
    with dg.DagsterInstance.from_config(str(study / "dagster_home")) as instance:
        events = materialize(instance, config, data)
    wrote = time.perf_counter() - started
    return f"{models} models x {len(isos)} languages: {events} materializations recorded in {wrote:.1f} s"


def _env(study: Path) -> dict[str, str]:
    """What the webserver runs with: the study's instance, config and data folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLCG_CONFIG_DIR", "CLCG_DATA_DIR")}
    env.update({KEY_ENV: "sk-bench-not-a-real-key", "DAGSTER_HOME": str(study / "dagster_home")})
    env.update({"CLCG_CONFIG_DIR": str(study / "config"), "CLCG_DATA_DIR": str(study / "data")})
    return env


def _studies(args: argparse.Namespace, root: Path, isos: list[str]) -> list[Path]:
    """One study folder per scale: the first built, each next one a copy of the one before
    (its instance closed) grown to its models."""
    studies = [root / f"models-{models}" for models in args.models]
    os.environ["DAGSTER_HOME"] = str(studies[0] / "dagster_home")
    ensure_dagster_home()  # the project's dagster.yaml, as clcg run sets up an instance
    write_study_corpus(root / "corpus", isos, args.articles)
    write_config(studies[0] / "config", root / "corpus", _URL, isos, args.models[0])
    for index, (study, models) in enumerate(zip(studies, args.models, strict=True)):
        if index:
            shutil.copytree(studies[index - 1], study)
        print(_grow(study, models, isos), flush=True)
    return studies


def _ready_since(web: Webserver, started: float) -> float:
    """Seconds from ``started`` (perf_counter) until ``web`` answers the asset page."""
    web.ready()
    return time.perf_counter() - started


def _run(args: argparse.Namespace, root: Path) -> list[tuple[int, int, dict[str, Any]]]:
    """Every scale's study built, then its webserver started, checked and timed beside the others."""
    isos = panel(args.languages)
    studies = _studies(args, root, isos)
    with ExitStack() as stack:
        started = time.perf_counter()
        webs = [stack.enter_context(Webserver(s, _env(s), args.timeout)) for s in studies]
        # Started side by side: each one's start-up is from the launch of all to its first answer.
        startups = [_ready_since(web, started) for web in webs]
        for web, models in zip(webs, args.models, strict=True):
            check_counts(web, models * len(isos))
        found = timings(webs, args.repeats)
    return [
        (models, models * len(isos), {"start-up": startup, **timed})
        for models, startup, timed in zip(args.models, startups, found, strict=True)
    ]


def main() -> int:
    args = _arguments()
    root = Path(tempfile.mkdtemp(prefix="clcg-bench-graphql-"))
    try:
        scales = _run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = scales[0][1]
    print(f"predictions asset, {args.repeats} repeats per query; ratio: median / the {base}-partition median")
    for _, partitions, timed in scales:
        print(f"  webservers launched together, to the asset page at {partitions}: {timed['start-up']:.1f} s")
    print("\n".join(table(scales)))
    found = misses(scales)
    for miss in found:
        print("MISS:", miss)
    print(
        "PASS" if not found else "FAIL", f"(target: asset page and partition matrix under {GRAPHQL_S:.0f} s)"
    )
    return 1 if found and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
