"""Issue 32, "fewer, bigger runs": a new model's language x model partitions in one Dagster run.

Every asset of the family (``RESPONSE_ASSETS``) backfills in a single run over the model's
language range; that run writes each partition's files, records, calls and check results as
runs of one partition each would.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

# The backfill daemon's own iteration, on a workspace loading the code location as the daemon
# does: what an asset backfill from the UI goes through (no public face runs it in a test).
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.backfill import execute_backfill_iteration

from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import PROJECT_ROOT, build_definitions
from clcg_pipeline.orchestration._jobs import CODE_LOCATION, PROVIDER_TAG, RESPONSE_ASSETS, provider_tags
from clcg_pipeline.partitions import MODEL_DIMENSION, response_key
from clcg_pipeline.storage import read_frame, read_records
from clcg_pipeline_tests.conftest import add_partition_backfill

FIRST = "lexical-reader"
PANEL = ("en", "pt")
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# Differ between any two runs of the same partition: the run, when, how long a call took.
_VOLATILE = ("paid_run", "paid_at", "latency_s")


@pytest.fixture
def panel_config(demo_config_dir: Path, edit_yaml: Callable) -> Path:
    edit_yaml(
        demo_config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in PANEL]),
    )
    return demo_config_dir


def _materialize_inputs(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    for iso in PANEL:
        corpus = defs.resolve_job_def("corpus_job")
        assert corpus.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success
    inputs = defs.resolve_job_def("study_inputs_job")
    assert inputs.execute_in_process(instance=instance, run_config=_QUIET).success


def _table(data: Path, asset: str, key: str) -> pd.DataFrame:
    language, model = key.split("|")
    frame = read_frame(data / asset / f"language={language}" / f"model={model}" / "data.parquet")
    frame = frame.drop(columns=[c for c in _VOLATILE if c in frame.columns])
    sort = [
        c for c in ("call_id", "item_id", "task_id", "judge", "rep", "context", "context_scope") if c in frame
    ]
    return frame.sort_values(sort).reset_index(drop=True) if sort and len(frame) else frame


def _checks(instance: dg.DagsterInstance, run_id: str) -> dict[tuple[str, str, str | None], Any]:
    """The run's check evaluations by (asset, check, partition)."""
    found: dict[tuple[str, str, str | None], Any] = {}
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data  # type: ignore[union-attr]
        key = (evaluation.asset_key.to_user_string(), evaluation.check_name, evaluation.partition)
        assert key not in found, f"{key} evaluated twice in one run"
        found[key] = (
            evaluation.passed,
            evaluation.severity,
            evaluation.description,
            dict(evaluation.metadata),
        )
    return found


@pytest.mark.slow  # corpus, inputs, two partition runs and the range run: ~10 s of CPU
def test_one_run_over_a_models_languages_writes_what_runs_of_one_partition_write(
    panel_config: Path, tmp_path: Path
) -> None:
    alone, ranged = tmp_path / "alone", tmp_path / "ranged"
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(panel_config))
        defs = build_definitions(panel_config, alone)
        _materialize_inputs(defs, instance)
        shutil.copytree(alone, ranged)  # the same inputs and an empty cache for the range run
        job = defs.resolve_job_def("responses_job")
        keys = [str(response_key(iso, FIRST)) for iso in PANEL]
        single_runs = {}
        for key in keys:
            result = job.execute_in_process(instance=instance, partition_key=key, run_config=_QUIET)
            assert result.success
            single_runs[key] = result.run_id
        range_job = build_definitions(panel_config, ranged).resolve_job_def("responses_job")
        ranged_run = range_job.execute_in_process(
            instance=instance, tags={RANGE_START: keys[0], RANGE_END: keys[-1]}, run_config=_QUIET
        )
        assert ranged_run.success

        for asset in RESPONSE_ASSETS:
            records = read_records(str(ranged), asset)
            assert set(records) == set(keys), asset
            for key in keys:
                single, many = _table(alone, asset, key), _table(ranged, asset, key)
                pd.testing.assert_frame_equal(single, many, obj=f"{asset}[{key}]")
                assert records[key]["run_id"] == ranged_run.run_id
                assert records[key]["partition"] == key
                own = read_records(str(alone), asset)[key]
                assert (records[key]["metadata"], records[key]["path"]) == (own["metadata"], own["path"])
        # Calls paid in the range run are recorded as paid by it, partition by partition.
        calls = read_frame(ranged / "calls" / "language=pt" / f"model={FIRST}" / "data.parquet")
        assert len(calls) and set(calls.loc[~calls["cached"].astype(bool), "paid_run"]) <= {ranged_run.run_id}

        # One check evaluation per partition, as the partition's own run records it.
        expected: dict[tuple[str, str, str | None], Any] = {}
        for run_id in single_runs.values():
            expected.update(_checks(instance, run_id))
        assert _checks(instance, ranged_run.run_id) == expected
        assert {partition for (_, _, partition) in expected} == set(keys)

        # Each partition's materialization carries its own metadata.
        for key in keys:
            for asset in ("predictions", "task_calls", "scores"):
                record = instance.fetch_materializations(
                    dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=1
                ).records[0]
                assert record.run_id == ranged_run.run_id
                metadata = record.asset_materialization.metadata  # type: ignore[union-attr]
                rows = len(
                    read_frame(ranged / asset / f"language={key[:2]}" / f"model={FIRST}" / "data.parquet")
                )
                assert metadata["dagster/row_count"].value == rows, (asset, key)
        statuses = {
            key: instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey("predictions"), asset_partitions=[key]), limit=1
            )
            .records[0]
            .asset_materialization.metadata["statuses"]  # type: ignore[union-attr]
            .value
            for key in keys
        }
        assert statuses == {
            key: read_records(str(alone), "predictions")[key]["metadata"]["statuses"] for key in keys
        }


def test_a_new_model_is_backfilled_in_one_run_whatever_the_number_of_languages(
    demo_config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every asset of the family carries the single-run policy (assets with different policies
    never share a run), and an asset backfill of a new model over every language (what the UI's
    Materialize launches) submits one run, tagged with the model's provider."""
    graph = build_definitions(demo_config_dir, tmp_path / "data").resolve_asset_graph()
    for asset in RESPONSE_ASSETS:
        assert graph.get(dg.AssetKey(asset)).backfill_policy == dg.BackfillPolicy.single_run(), asset
    monkeypatch.setenv("CLCG_CONFIG_DIR", str(demo_config_dir))  # read by the code server
    monkeypatch.setenv("CLCG_DATA_DIR", str(tmp_path / "data"))
    settings = {
        # The project's coordinator (it tags runs); runs are queued, never executed here.
        "run_coordinator": {
            "module": "clcg_pipeline.orchestration",
            "class": "ProviderTaggingRunCoordinator",
        },
    }
    with dg.instance_for_test(overrides=settings) as instance:
        instance.add_dynamic_partitions(MODEL_DIMENSION, [FIRST])
        code = ModuleTarget(
            module_name="clcg_pipeline.definitions",
            attribute=None,
            working_directory=str(PROJECT_ROOT),
            location_name=CODE_LOCATION,
        )
        with create_test_daemon_workspace_context(code, instance) as workspace:
            asset_graph = workspace.create_request_context().asset_graph
            isos = (
                graph.get(dg.AssetKey("predictions"))
                .partitions_def.get_partitions_def_for_dimension(  # type: ignore[union-attr]
                    "language"
                )
                .get_partition_keys()
            )
            assert len(isos) > 2
            add_partition_backfill(
                instance,
                asset_graph,
                "new-model",
                [str(response_key(iso, FIRST)) for iso in isos],
                [dg.AssetKey(asset) for asset in RESPONSE_ASSETS],
            )
            list(execute_backfill_iteration(workspace, logging.getLogger("backfill")))
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": "new-model"}))
    assert len(runs) == 1, f"{len(runs)} runs for {len(isos)} languages"
    tags = runs[0].tags
    assert (tags[RANGE_START], tags[RANGE_END]) == (f"{isos[0]}|{FIRST}", f"{isos[-1]}|{FIRST}")
    assert tags[PROVIDER_TAG] == "offline"
    assert set(runs[0].asset_selection or ()) == {dg.AssetKey(a) for a in RESPONSE_ASSETS}


def test_a_run_over_one_models_languages_gets_its_provider_tag(demo_config_dir: Path) -> None:
    """The per-provider run limit binds a backfill's range run as it bound its runs of one partition."""
    config = load_config(demo_config_dir)
    second = next(m.id for m in config.models.models if m.id != FIRST)
    one_model = {RANGE_START: f"en|{FIRST}", RANGE_END: f"pt|{FIRST}"}
    assert provider_tags(config, one_model) == {PROVIDER_TAG: config.models.get(FIRST).provider}
    # A range over several models has no one provider to name.
    assert provider_tags(config, {RANGE_START: f"en|{FIRST}", RANGE_END: f"pt|{second}"}) == {}
