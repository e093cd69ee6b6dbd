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
from clcg_pipeline.orchestration._jobs import PROVIDER_TAG, provider_tags, study_run_tags
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


def test_sensor_adds_new_model_partitions_and_launches_nothing(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    """Runs are the automation sensor's job, once their inputs exist: requesting them here, on a
    fresh instance, launched runs that failed for want of a corpus and were never asked again."""
    study = StudyResource(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "data"))
    with dg.instance_for_test() as instance:
        first = _evaluate(instance, study)
        assert instance.get_dynamic_partitions("model") == ["lexical-reader"]
        assert not first.run_requests

        # Nothing new: nothing added.
        assert not _evaluate(instance, study).dynamic_partitions_requests

        edit_yaml(demo_config_dir / "models.yaml", lambda doc: doc["models"].append(NEW_MODEL))
        added = _evaluate(instance, study)
        assert set(instance.get_dynamic_partitions("model")) == {"lexical-reader", "local-llama"}
        assert not added.run_requests


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
        # No item bank yet: a run now would only fail on its missing inputs.
        assert list(missing_partitions_schedule(context)) == []

        for asset in ("items", "study_sample"):
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=asset))
        ready = config.languages.isos[:2]  # only these languages have paragraphs
        for iso in ready:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(asset_key="paragraphs", partition=iso)
            )
        requests = list(missing_partitions_schedule(context))
        requested = {str(r.partition_key) for r in requests}
        assert requested == {str(k) for k in missing[1:] if k.keys_by_dimension["language"] in ready}
        assert str(done) not in requested
        assert {r.tags[PROVIDER_TAG] for r in requests} == {"offline"}
        # A day later the same partitions may be asked again (a failed run is retried daily).
        assert len({r.run_key for r in requests}) == len(requests)


def test_runs_of_a_model_partition_get_the_provider_tag_however_they_are_launched(
    demo_config_dir: Path, edit_yaml: Callable
) -> None:
    edit_yaml(demo_config_dir / "models.yaml", lambda doc: doc["models"].append(NEW_MODEL))
    config = load_config(demo_config_dir)
    # The automation sensor and the UI tag runs per dimension; `dagster job launch` and
    # backfills may carry only the whole key, as text.
    assert provider_tags(config, {"dagster/partition/model": "local-llama"}) == {
        PROVIDER_TAG: "openai_compatible"
    }
    assert provider_tags(config, {"dagster/partition": "en|local-llama"}) == {
        PROVIDER_TAG: "openai_compatible"
    }
    assert study_run_tags(config, "pt|lexical-reader") == {PROVIDER_TAG: "offline"}
    # Not a model partition, or a model no longer in models.yaml: no tag, no error.
    assert provider_tags(config, {"dagster/partition": "en"}) == {}
    assert provider_tags(config, {"dagster/partition": "en|gone"}) == {}
    assert study_run_tags(config, None) == {}
