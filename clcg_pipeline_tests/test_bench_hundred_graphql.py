"""bench/hundred_graphql.py: which partitions it records as materialized, and how it judges the latencies."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.partitions import MODEL_DIMENSION
from clcg_pipeline_tests.conftest import PROJECT_ROOT

_URL = "http://127.0.0.1:9"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))  # as the scripts find it
    import hundred_graphql

    return hundred_graphql


def test_every_partition_of_the_study_is_recorded_once_and_a_new_model_adds_only_its_own(
    bench, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import bench_hundred_models

    isos = bench_hundred_models.panel(3)
    config, data = tmp_path / "config", tmp_path / "data"
    bench_hundred_models.write_study_corpus(tmp_path / "corpus", isos, articles=1)
    bench_hundred_models.write_config(config, tmp_path / "corpus", _URL, isos, models=2)
    with dg.DagsterInstance.ephemeral() as instance:
        assert bench.materialize(instance, config, data) > 0
        assert instance.get_dynamic_partitions(MODEL_DIMENSION) == ["fake-000", "fake-001"]
        predictions = instance.get_materialized_partitions(dg.AssetKey("predictions"))
        assert predictions == {f"{iso}|fake-00{m}" for iso in isos for m in (0, 1)}
        assert instance.get_materialized_partitions(dg.AssetKey("model_calls")) == {"fake-000", "fake-001"}
        assert instance.get_latest_materialization_event(dg.AssetKey("study_results")) is not None
        # The granularity tasks are off: their assets are never materialized in such a study.
        assert not instance.get_materialized_partitions(dg.AssetKey("task_scores"))
        assert bench.materialize(instance, config, data) == 0  # nothing recorded twice

        bench_hundred_models.add_model(config, 2, _URL)
        instance.add_dynamic_partitions(MODEL_DIMENSION, ["fake-002"])
        specs = build_definitions(config, data).resolve_all_asset_specs()
        new = list(bench.unmaterialized(specs, instance))
        assert new and all("fake-002" in str(partition) for _, partition in new)
        assert {(key.to_user_string(), str(p)) for key, p in new} >= {
            ("predictions", f"{iso}|fake-002") for iso in isos
        } | {("model_calls", "fake-002")}


def test_a_query_over_two_seconds_at_some_scale_is_named(bench) -> None:  # type: ignore[no-untyped-def]
    def found(page: float, matrix: float) -> dict[str, dict[str, float]]:
        return {
            "version": {"first": 0.01, "median": 0.01, "max": 0.01},
            "asset page": {"first": 3.0, "median": page, "max": page},
            "partition matrix": {"first": 0.1, "median": matrix, "max": matrix},
        }

    scales = [(20, 360, found(0.05, 0.1)), (100, 1800, found(0.1, 2.5))]
    assert bench.misses(scales) == ["partition matrix at 1800 partitions: max 2.50 s > 2.0 s"]
    lines = bench.table(scales)
    assert lines[-1].split() == ["partition", "matrix", "1800", "100", "2500", "2500", "25.00"]
    assert bench.spread([0.3, 0.1, 0.2, 0.9]) == {"median": 0.25, "max": 0.9}


def test_the_scales_webservers_take_turns_query_by_query(bench) -> None:  # type: ignore[no-untyped-def]
    asked: list[tuple[str, str]] = []

    class Web:
        def __init__(self, name: str, seconds: float) -> None:
            self.name, self.seconds = name, seconds

        def query(self, text: str, variables: object = None) -> float:
            asked.append((self.name, next(n for n, q in bench.QUERIES.items() if q == text)))
            return self.seconds

    small, large = bench.timings([Web("360", 0.02), Web("1800", 0.05)], repeats=2)
    # Each query: a first one on every webserver, then the repeats, the webservers alternating.
    assert asked[:6] == [("360", "version"), ("1800", "version")] * 3
    assert [name for name, _ in asked] == ["360", "1800"] * 9
    assert [query for _, query in asked[6:12]] == ["asset page"] * 6
    assert small["partition matrix"] == {"first": 0.02, "median": 0.02, "max": 0.02}
    assert large["asset page"]["median"] == 0.05
