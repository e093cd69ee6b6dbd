"""bench/bench_hundred_models.py: its study set-up and how it sorts what a refresh rewrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline_tests.conftest import PROJECT_ROOT


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))  # as the scripts find it
    import bench_hundred_models

    return bench_hundred_models


def test_the_study_has_n_fake_models_every_language_covered_and_no_granularity(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    isos = bench.panel(9)  # eu and ne: no synthetic text, English copies with their marker
    bench.write_study_corpus(tmp_path / "corpus", isos, articles=2)
    bench.write_config(tmp_path / "config", tmp_path / "corpus", "http://127.0.0.1:9", isos, models=3)
    bench.add_model(tmp_path / "config", 3, "http://127.0.0.1:9")

    config = load_config(tmp_path / "config")
    assert [m.id for m in config.models.evaluated] == ["fake-000", "fake-001", "fake-002", "fake-003"]
    assert {m.concurrency for m in config.models.evaluated} == {bench.CONCURRENCY}
    assert config.languages.isos == isos and isos[:2] == ["en", "pt"]
    assert list(study_coverage(config).covered) == isos
    assert config.study.granularity.enabled is False
    first = json.loads((tmp_path / "corpus" / "articles" / "ne.jsonl").read_text().splitlines()[0])
    assert first["language"] == "ne" and first["paragraphs"][0]["text"].startswith("[ne] ")


def test_a_refresh_s_rewrites_are_sorted_by_whose_they_are(bench) -> None:  # type: ignore[no-untyped-def]
    before = {
        "responses/language=en/model=fake-000/data.parquet": (1, "a"),
        "items/data.parquet": (1, "i"),
        "study_results.json": (1, "r"),
        "cache/calls/ab/x.json": (1, ""),
        "_records/responses/en%7Cfake-000.json": (1, "x"),
        "_records/paragraphs/en.json": (1, "p"),
    }
    after = {
        "responses/language=en/model=fake-000/data.parquet": (2, "b"),  # an existing model's: rerun
        "responses/language=en/model=fake-001/data.parquet": (2, "n"),  # the new model's
        "items/data.parquet": (2, "i"),  # written again, same bytes
        "study_results.json": (2, "r2"),
        "cache/calls/ab/x.json": (1, ""),
        "cache/calls/cd/y.json": (2, ""),
        "_records/responses/en%7Cfake-000.json": (2, "y"),  # an existing partition's record
        "_records/responses/pt%7Cfake-001.json": (2, "z"),  # the new model's
        "_records/model_calls/fake-001.json": (2, "c"),  # a per-model asset's record
        "_records/paragraphs/en.json": (2, "p2"),  # a language's corpus partition: outside
    }
    found = bench.Rewrites.of(before, after, "fake-001")
    assert found.new_model == [
        "_records/responses/pt%7Cfake-001.json",
        "responses/language=en/model=fake-001/data.parquet",
    ]
    assert found.other_models == {("en", "fake-000")}
    assert found.new_partitions == {("en", "fake-001"), ("pt", "fake-001")}
    assert found.bookkeeping == ["_records/model_calls/fake-001.json", "cache/calls/cd/y.json"]
    assert found.outside == ["_records/paragraphs/en.json", "items/data.parquet", "study_results.json"]
    assert found.same_bytes == {"items/data.parquet"}


def test_make_bench_runs_it_at_a_small_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))
    import run_all

    launched: list[list[str]] = []
    monkeypatch.setattr(run_all.subprocess, "call", lambda cmd, **_: launched.append(cmd) or 0)
    monkeypatch.setattr(sys, "argv", ["run_all.py", "bench_hundred_models"])
    assert run_all.main() == 0
    [cmd] = launched
    assert cmd[1].endswith("bench_hundred_models.py")
    assert cmd[2:] == ["--models", "5", "--languages", "3"]


def test_every_graphql_request_of_the_bench_is_valid_against_dagster_s_schema(bench) -> None:  # type: ignore[no-untyped-def]
    import hundred_web
    from dagster_graphql.schema import create_schema
    from graphql import parse, validate

    schema = create_schema().graphql_schema
    assert set(hundred_web.QUERIES) >= {
        "sensors",
        "stop sensor",
        "asset graph",
        "launch backfill",
        "backfill",
    }
    for name, text in hundred_web.QUERIES.items():
        assert validate(schema, parse(text)) == [], name


def test_the_ui_backfill_is_model_calls_and_everything_downstream_over_the_new_model(bench) -> None:  # type: ignore[no-untyped-def]
    import hundred_launchers as launchers

    edges = {
        "items": ["model_calls", "scores"],
        "model_calls": ["predictions"],
        "predictions": ["scores"],
        "scores": ["study_results", "duckdb_catalog"],
        "study_results": ["duckdb_catalog"],
        "duckdb_catalog": [],
        "other/asset": [],
    }
    assets = launchers.descendants(edges, "model_calls")
    assert assets == ["duckdb_catalog", "model_calls", "predictions", "scores", "study_results"]
    params = launchers.backfill_params([*assets, "other/asset"], "fake-012")
    assert params["partitionNames"] == ["fake-012"]
    assert params["assetSelection"][0] == {"path": ["duckdb_catalog"]}
    assert params["assetSelection"][-1] == {"path": ["other", "asset"]}
    with pytest.raises(KeyError, match="'model_calls' is not in the asset graph"):
        launchers.descendants({"items": []}, "model_calls")


def test_sensor_ticks_and_process_groups_are_read_as_given(bench) -> None:  # type: ignore[no-untyped-def]
    import os

    import hundred_launchers as launchers

    sensors: dict[str, dict[str, Any]] = {
        "b_sensor": {"id": "x", "status": "RUNNING", "ticks": [{"timestamp": 10.0, "endTimestamp": 10.5}]},
        "a_sensor": {
            "id": "y",
            "status": "STOPPED",
            "ticks": [{"timestamp": 1.0, "endTimestamp": 3.0}, {"timestamp": 4.0, "endTimestamp": None}],
        },
    }
    assert launchers.busy_seconds([(5.0, 8.0), (0.0, 2.0), (1.0, 3.0), (7.0, 7.5)]) == 6.0
    assert launchers.tick_seconds(sensors) == {"a_sensor": [2.0], "b_sensor": [0.5]}
    assert launchers.proc_group("41 (dagster (code) x) S 7 41 41 0 -1") == (7, 41)
    own = Path(f"/proc/{os.getpid()}/stat").read_text()
    assert launchers.proc_group(own) == (os.getppid(), os.getpgrp())


def test_the_launchers_are_tabled_side_by_side_and_their_misses_named(bench) -> None:  # type: ignore[no-untyped-def]
    import hundred_launchers as launchers

    def launch(name: str, model: str, span: float, note: str = "") -> launchers.Launch:
        return launchers.Launch(
            name, model, 20.0, 100, span, 2, 4, {"s": [0.1, 0.3]}, {"daemon": 2**28}, note
        )

    found = [
        launch("clcg run", "fake-005", 5.0),  # 20 calls/s: its own miss is the refresh's, elsewhere
        launch("daemon", "fake-006", 2.5),  # 40 calls/s against 50: 0.8
        launch("UI backfill", "fake-007", 2.0, "COMPLETED_FAILED"),
    ]
    rows = {row[0]: row[1:] for row in launchers.launcher_rows(found, [50.0, 50.0, 50.0])}
    assert rows["launcher"] == ["clcg run", "daemon", "UI backfill"]
    assert rows["  of it, some Dagster run running"] == ["0.0 s"] * 3
    assert rows["calls/s / bare loop (>= 0.9)"] == ["0.40", "0.80", "1.00"]
    assert rows["overhead per partition"] == ["3.75 s", "4.38 s", "4.50 s"]
    assert rows["sensor ticks, median / max"] == ["0.20 / 0.30 s"] * 3
    assert rows["daemon peak RSS (its own, since start)"] == ["256 MiB"] * 3
    misses = launchers.launcher_misses(found, [50.0] * 3, {"asset page": 0.1, "partition matrix": 2.5}, 3)
    assert misses == [
        "daemon's calls/s 0.80 of the bare loop < 0.9",
        "the daemon launched 3 runs on a study clcg run had built",
        "the UI backfill ended COMPLETED_FAILED",
        "GraphQL partition matrix: 2.5 s >= 2 s",
    ]


def test_the_automation_sensors_are_stopped_again_when_a_tick_undid_the_stop(
    bench, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import hundred_launchers as launchers

    family, study = launchers.AUTOMATION_SENSORS[1], launchers.AUTOMATION_SENSORS[0]
    reads = iter(
        [
            {study: "RUNNING", family: "RUNNING"},
            {study: "STOPPED", family: "RUNNING"},  # a tick under way wrote its state back
            {study: "STOPPED", family: "STOPPED"},
        ]
    )

    class Web:
        def __init__(self) -> None:
            self.stopped: list[str] = []

        def sensors(self, after: float) -> dict[str, dict[str, str]]:
            return {name: {"status": status} for name, status in next(reads).items()}

        def stop_sensor(self, name: str) -> None:
            self.stopped.append(name)

    monkeypatch.setattr(launchers.time, "sleep", lambda _: None)
    web = Web()
    assert launchers.stop_automation(web) == 1  # type: ignore[arg-type]
    assert web.stopped == [study, family, family]
    never = {study: {"status": "RUNNING"}, family: {"status": "RUNNING"}}
    web.sensors = lambda after: never  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="not stopped after 2 tries"):
        launchers.stop_automation(web, tries=2)  # type: ignore[arg-type]


def test_the_bare_loop_sends_the_launcher_s_own_calls_timed_by_the_server(bench) -> None:  # type: ignore[no-untyped-def]
    """The baseline of calls/s: the very bodies the server received from a launcher (same count,
    same prompts), over the same phase measured the same way (the server's first request to its
    last response), not a loop of one-line prompts timed by its own clock from before its client
    connected."""
    import httpx2
    from hundred_launchers import bare_rate

    from clcg_pipeline.calls.fake_server import Faults, ServerProcess

    prompts = [f"1. Question {i}?\n" + "A long article. " * 200 for i in range(6)]
    with ServerProcess(Faults(latency_s=0.05)) as server:
        for i, prompt in enumerate(prompts):  # a launcher's calls
            body = {"model": "fake-model-1", "messages": [{"role": "user", "content": prompt}]}
            httpx2.post(f"{server.url}/v1/chat/completions", json=body, headers={"x-clcg-call-id": f"c{i}"})
        sent = server.bodies()
        assert sorted(b["messages"][0]["content"] for b in sent) == sorted(prompts)
        rate = bare_rate(server, sent, concurrency=2, latency=0.05)
        stats = server.stats()
    assert stats["total_requests"] == len(prompts) and stats["max_in_flight"] == 2
    assert rate == pytest.approx(len(prompts) / stats["calling_span_s"])
    assert 3 * 0.05 <= stats["calling_span_s"] < 2.0  # 3 rounds of 2 calls at 50 ms


def test_the_calling_phase_profile_names_the_drains(bench) -> None:  # type: ignore[no-untyped-def]
    """Where a stream loses rate: calls in flight at each arrival, and seconds with none."""
    from hundred_launchers import phase_profile

    stats = {
        "arrivals_s": [0.0, 0.1, 1.0],
        "departures_s": [0.2, 0.3, 1.2],
        "in_flight_at_arrival": [1, 2, 1],
        "total_requests": 3,
        "calling_span_s": 1.2,
    }
    assert phase_profile(stats) == (
        "3 calls in 1.20 s, in flight at an arrival: median 1, max 2; none in flight 0.70 s (longest 0.70 s)"
    )


class _Runs:
    """A stand-in for the study's instance: run records (``end_time`` None while in flight) and
    each asset's latest materialization time."""

    def __init__(
        self, spans: list[tuple[float, float | None]], latest: dict[str, float] | None = None
    ) -> None:
        from types import SimpleNamespace

        self.records = [SimpleNamespace(start_time=s, end_time=e) for s, e in spans]
        self.latest = latest
        self.looks: list[str] = []

    def get_runs_count(self) -> int:
        return len(self.records)

    def get_run_records(self, filters: Any) -> list[Any]:
        if filters.statuses:
            return [r for r in self.records if r.end_time is None]
        return self.records

    def fetch_materializations(self, records_filter: Any, limit: int) -> Any:
        from types import SimpleNamespace

        asset = records_filter.asset_key.path[-1]
        self.looks.append(asset)
        if self.latest is None:
            raise AssertionError(f"looked at {asset} while a run was in flight")
        return SimpleNamespace(records=[SimpleNamespace(timestamp=self.latest[asset])])


def test_a_refresh_is_not_looked_for_in_the_assets_while_a_run_is_in_flight(bench) -> None:  # type: ignore[no-untyped-def]
    """One query per look while the launcher's runs call (the bench's load on the cores the
    stream needs), not one per language."""
    import hundred_launchers as launchers

    running = launchers.Follow(_Runs([(10.0, None)]), ["en", "pt"], None, 0.2, lambda *_: 0.0)  # type: ignore[arg-type]
    assert running.refreshed("fake-002") is False
    done = _Runs([(10.0, 20.0)], {"scores": 18.0, "study_results": 19.0, "duckdb_catalog": 19.5})
    assert launchers.Follow(done, ["en", "pt"], None, 0.2, lambda *_: 0.0).refreshed("fake-002")  # type: ignore[arg-type]
    assert done.looks == ["scores", "scores", "study_results", "duckdb_catalog"]


def test_a_launcher_s_wall_ends_at_its_last_run_s_end_not_at_the_bench_s_look(bench) -> None:  # type: ignore[no-untyped-def]
    import time

    import hundred_launchers as launchers

    class Server:
        def stats(self) -> dict[str, Any]:
            return {
                "total_requests": 0,
                "calling_span_s": 0.0,
                "arrivals_s": [],
                "departures_s": [],
                "in_flight_at_arrival": [],
            }

        def bodies(self) -> list[dict[str, Any]]:
            return []

    runs = _Runs([(1010.0, 1030.0), (1031.0, 1042.5)])
    follow = launchers.Follow(runs, ["en"], Server(), 0.2, lambda *_: 0.0)  # type: ignore[arg-type]
    found = launchers._launch("daemon", "fake-002", follow, (0, 1000.0, time.monotonic()))
    assert found.wall == 42.5  # the edit (epoch 1000) to the last run's end, not ~0 s of this test
    assert (found.runs, found.in_runs) == (2, 31.5)
