import datetime as dt
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import (
    missing_partitions_schedule,
    missing_response_keys,
    model_partitions_sensor,
    sync_model_partitions,
)
from clcg_pipeline.jobs import PROVIDER_TAG
from clcg_pipeline.resources import StudyResource

NEW_MODEL = {
    "id": "local-llama",
    "provider": "openai_compatible",
    "model": "llama-3.1-8b",
    "base_url": "http://127.0.0.1:9/v1",
    "knowledge_cutoff": "2023-12-01",
}


def _evaluate(instance: dg.DagsterInstance, study: StudyResource) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, resources={"study": study})
    result = model_partitions_sensor(context)
    assert isinstance(result, dg.SensorResult)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys or []))
    return result


def test_sensor_adds_new_model_partitions_and_requests_its_runs(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    study = StudyResource(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "data"))
    languages = load_config(demo_config_dir).languages.isos
    with dg.instance_for_test() as instance:
        first = _evaluate(instance, study)
        assert instance.get_dynamic_partitions("model") == ["lexical-reader"]
        assert len(first.run_requests or []) == len(languages)

        # Nothing new: nothing requested.
        assert not _evaluate(instance, study).run_requests

        edit_yaml(demo_config_dir / "models.yaml", lambda doc: doc["models"].append(NEW_MODEL))
        added = _evaluate(instance, study)
        assert set(instance.get_dynamic_partitions("model")) == {"lexical-reader", "local-llama"}
        requests = added.run_requests or []
        assert sorted(r.partition_key.keys_by_dimension["language"] for r in requests) == sorted(languages)  # type: ignore[union-attr]
        assert {r.partition_key.keys_by_dimension["model"] for r in requests} == {"local-llama"}  # type: ignore[union-attr]
        assert {r.tags[PROVIDER_TAG] for r in requests} == {"openai_compatible"}
        assert len({r.run_key for r in requests}) == len(requests)


def test_schedule_requests_only_unscored_partitions(demo_config_dir: Path, tmp_path: Path) -> None:
    study = StudyResource(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "data"))
    config = load_config(demo_config_dir)
    with dg.instance_for_test() as instance:
        assert sync_model_partitions(instance, config) == ["lexical-reader"]
        assert sync_model_partitions(instance, config) == []
        missing = missing_response_keys(instance, config)
        assert len(missing) == len(config.languages.isos)
        done = missing[0]
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="scores", partition=str(done)))
        context = dg.build_schedule_context(
            instance=instance,
            resources={"study": study},
            scheduled_execution_time=dt.datetime(2026, 11, 29, 3),
        )
        requests = list(missing_partitions_schedule(context))
        assert len(requests) == len(missing) - 1
        assert str(done) not in {str(r.partition_key) for r in requests}
