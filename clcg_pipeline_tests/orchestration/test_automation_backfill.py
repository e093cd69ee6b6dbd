"""A new model's analysis waits for its whole language x model family, backfill included (issue 32).

The family (``RESPONSE_ASSETS``) of a new model is one backfill, and Dagster counts a partition
of it in progress until the backfill daemon records its materialization, at its next iteration
(every 30 s), asset by asset: once it saw ``scores`` done but ``task_scores`` not yet, and the
daemon ran ``estimates`` and ``study_results`` from the old granularity results, then the
granularity and human-validation analyses, then ``estimates`` and ``study_results`` again (5
runs, two analyses). The conditions are evaluated in process, tick after tick, on an instance
built by hand: the real daemon adding a model is ``test_daemon.py``'s slow test.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.orchestration._jobs import ANALYSIS_ASSETS, RESPONSE_ASSETS
from clcg_pipeline.partitions import MODEL_CALLS, MODEL_DIMENSION
from clcg_pipeline_tests.conftest import add_partition_backfill

OLD, NEW = "lexical-reader", "second-model"
# What the backfill daemon had recorded at its last iteration, mid-run: the responses and their
# scores, not yet the granularity answers written after them in the same run.
RECORDED = ("predictions", "calls", "scores")
ANALYSIS = {dg.AssetKey(name) for name in ANALYSIS_ASSETS}


def _materialize(instance: dg.DagsterInstance, key: dg.AssetKey, partitions: list[str | None]) -> None:
    for partition in partitions:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))


def _partitions(
    graph: object, key: dg.AssetKey, instance: dg.DagsterInstance, model: str
) -> list[str | None]:
    """``key``'s partitions of ``model`` (every partition if it has no model dimension)."""
    partitions_def = graph.get(key).partitions_def  # type: ignore[attr-defined]
    if partitions_def is None:
        return [None]
    keys = partitions_def.get_partition_keys(dynamic_partitions_store=instance)
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return [k for k in keys if k.keys_by_dimension[MODEL_DIMENSION] == model]
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return [model]
    return list(keys)


def _requested(tick: dg.EvaluateAutomationConditionsResult) -> dict[dg.AssetKey, set[str | None]]:
    return {
        r.key: set(tick.get_requested_partitions(r.key))
        for r in tick.results
        if tick.get_num_requested(r.key)
    }


def _family_backfill(
    instance: dg.DagsterInstance, graph: object, assets: list[dg.AssetKey]
) -> PartitionBackfill:
    """An in-progress backfill of ``NEW``'s partitions of ``assets`` (what the daemon has not recorded)."""
    partitions = _partitions(graph, dg.AssetKey("task_scores"), instance, NEW)
    return add_partition_backfill(instance, graph, "new-model", [str(p) for p in partitions], assets)


def test_a_new_models_analysis_waits_for_its_backfill_then_is_one_run(
    demo_config_dir: Path, tmp_path: Path
) -> None:
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    graph = defs.resolve_asset_graph()
    with dg.instance_for_test() as instance:
        # A built study of one model: every asset materialized, nothing left to request.
        instance.add_dynamic_partitions(MODEL_DIMENSION, [OLD])
        for key in graph.materializable_asset_keys:
            _materialize(instance, key, _partitions(graph, key, instance, OLD))
        built = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert not _requested(built)

        # A new model: its stream and its whole family ran, but the family's backfill is still
        # in progress for the granularity answers (the backfill daemon has not ticked since).
        instance.add_dynamic_partitions(MODEL_DIMENSION, [NEW])
        family = [dg.AssetKey(name) for name in (MODEL_CALLS, *RESPONSE_ASSETS)]
        for key in family:
            _materialize(instance, key, _partitions(graph, key, instance, NEW))
        unrecorded = [dg.AssetKey(name) for name in RESPONSE_ASSETS if name not in RECORDED]
        backfill = _family_backfill(instance, graph, unrecorded)
        waiting = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=built.cursor)
        early = set(_requested(waiting)) & ANALYSIS
        assert not early, f"analysis requested while the family's backfill is in progress: {sorted(early)}"

        # The backfill daemon marks the backfill done: the whole analysis in the same tick, so
        # in one run (the study sensor launches one run per partition key, here the only one).
        instance.update_backfill(backfill.with_status(BulkActionStatus.COMPLETED_SUCCESS))
        done = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=waiting.cursor)
        requested = _requested(done)
        assert set(requested) == ANALYSIS, sorted(ANALYSIS ^ set(requested))
        assert all(partitions == {None} for partitions in requested.values())
