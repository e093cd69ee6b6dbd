"""A data folder copied to a fresh Dagster instance is up to date for the daemon too (issue 32).

The folder's records decide what is up to date (``Freshness``); the daemon's automation reads the
instance. On a fresh instance the demo study's copied folder looked unbuilt: the first tick
requested every language's corpus, and the whole study would have been rebuilt after it.
``report_folder_records`` (run by ``make dev`` first and by ``folder_records_sensor``) reports
the current partitions as runless materializations; a stale one is left to be rebuilt.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import (
    LocalDaemon,
    build_definitions,
    report_folder_records,
    run_study,
    sync_folder_records,
)
from clcg_pipeline.orchestration._jobs import CORPUS_ASSETS
from clcg_pipeline.orchestration._records_sync import REPORTED_FROM, folder_records_sensor
from clcg_pipeline.resources import StudyResource, load_study_config
from clcg_pipeline.storage import RECORDS

STALE = ("paragraphs", "pt")


def _requested(tick: dg.EvaluateAutomationConditionsResult) -> dict[str, set[str]]:
    return {
        r.key.to_user_string(): {str(p) for p in tick.get_requested_partitions(r.key)}
        for r in tick.results
        if tick.get_num_requested(r.key)
    }


def _copied(demo_study: Any, tmp_path: Path) -> Path:
    """The demo study's data folder, copied (records, tables and call cache)."""
    return Path(shutil.copytree(demo_study.data_dir, tmp_path / "data"))


def test_a_copied_folder_on_a_fresh_instance_is_up_to_date_after_the_sensor(
    demo_study: Any, tmp_path: Path
) -> None:
    data = _copied(demo_study, tmp_path)
    defs = build_definitions(demo_study.config_dir, data)
    study = StudyResource(config_dir=str(demo_study.config_dir), data_dir=str(data))
    with dg.instance_for_test() as instance:
        # A run in progress writes records before Dagster stores its materializations: wait for it.
        running = create_run_for_test(instance, status=dg.DagsterRunStatus.STARTED)
        waiting = folder_records_sensor(
            dg.build_sensor_context(instance=instance, resources={"study": study})
        )
        assert "in progress" in str(waiting.skip_reason)  # type: ignore[union-attr]
        assert instance.get_latest_materialization_event(dg.AssetKey("paragraphs")) is None
        instance.delete_run(running.run_id)
        first = folder_records_sensor(dg.build_sensor_context(instance=instance, resources={"study": study}))
        assert isinstance(first, dg.SensorResult) and first.cursor
        paragraphs = instance.get_latest_materialization_event(dg.AssetKey("paragraphs"))
        assert paragraphs is not None and paragraphs.asset_materialization is not None
        assert paragraphs.asset_materialization.metadata["reported_from"].value == REPORTED_FROM
        # What `make dev` after a copy, or `clcg run` on a fresh instance, then leaves the daemon.
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert _requested(tick) == {}
        # Unchanged records: the sensor does not look again; looked at anyway, nothing is told twice.
        again = dg.build_sensor_context(instance=instance, resources={"study": study}, cursor=first.cursor)
        assert "unchanged" in str(folder_records_sensor(again).skip_reason)  # type: ignore[union-attr]
        anew = folder_records_sensor(dg.build_sensor_context(instance=instance, resources={"study": study}))
        assert "every recorded partition is known" in str(anew.skip_reason)  # type: ignore[union-attr]
        assert (
            report_folder_records(instance, defs, str(data), load_study_config(demo_study.config_dir)) == []
        )


def _make_stale(data: Path, asset: str, partition: str) -> None:
    path = data / RECORDS / asset / f"{partition}.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["code_version"] = "an-older-code-version"
    path.write_text(json.dumps(record), encoding="utf-8")


def test_a_stale_partition_is_not_reported_and_is_rebuilt(
    demo_study: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _copied(demo_study, tmp_path)
    _make_stale(data, *STALE)
    defs = build_definitions(demo_study.config_dir, data)
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.instance_for_test() as fresh:
        # The hole: a fresh instance's first tick asks for the corpus of every language.
        sync_model_partitions(fresh, load_study_config(demo_study.config_dir))
        before = _requested(dg.evaluate_automation_conditions(defs=defs, instance=fresh))
        assert set(CORPUS_ASSETS) <= set(before) and len(before["paragraphs"]) > 1
    # What `make dev` runs before the daemon starts, on DAGSTER_HOME's instance.
    reported = sync_folder_records(str(demo_study.config_dir), str(data))
    assert "paragraphs[en]" in reported and "report[]" in reported
    assert "paragraphs[pt]" not in reported
    with dg.DagsterInstance.from_config(str(home)) as instance:
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        # The corpus is one multi-asset: its language is loaded again as a whole, as `clcg run` would.
        assert _requested(tick) == {key: {STALE[1]} for key in CORPUS_ASSETS}


def _unknown_partitions(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, set[str]]:
    """Every asset partition of ``defs`` that ``instance`` has no materialization of."""
    graph = defs.resolve_asset_graph()
    unknown: dict[str, set[str]] = {}
    for key in graph.materializable_asset_keys:
        partitions_def = graph.get(key).partitions_def
        if partitions_def is None:
            missing = set() if instance.get_latest_materialization_event(key) else {""}
        else:
            every = set(partitions_def.get_partition_keys(dynamic_partitions_store=instance))
            missing = every - set(instance.get_materialized_partitions(key))
        if missing:
            unknown[key.to_user_string()] = missing
    return unknown


def test_clcg_run_on_a_copied_folder_tells_a_fresh_instance_what_it_found_current(
    demo_study: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`clcg run` found everything current and ran nothing, and the UI showed every asset missing."""
    data = _copied(demo_study, tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    summary = run_study(config_dir=str(demo_study.config_dir), data_dir=str(data))
    assert summary.runs == 0, "the copied folder is up to date by its records: nothing to run"
    reported = summary.reported_current
    assert reported > 0, "clcg run says how many partitions it told the fresh instance of"
    defs = build_definitions(demo_study.config_dir, data)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_runs() == []
        assert _unknown_partitions(defs, instance) == {}
        report = instance.get_latest_materialization_event(dg.AssetKey("report"))
        assert report is not None and report.asset_materialization is not None
        assert report.asset_materialization.metadata["reported_from"].value == REPORTED_FROM
        # The daemon of `make dev` on this home then has nothing to rebuild.
        assert _requested(dg.evaluate_automation_conditions(defs=defs, instance=instance)) == {}
    # Run again on the same instance: it knows everything now, nothing is told or said.
    assert run_study(config_dir=str(demo_study.config_dir), data_dir=str(data)).reported_current == 0


class _IdleDaemon(LocalDaemon):
    """``LocalDaemon`` with a process that ticks nothing in place of ``dagster-daemon``: what
    ``start`` did before the daemon's first tick is what is judged."""

    def command(self, workspace: Path) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(120)"]


def test_local_daemon_tells_its_fresh_instance_the_folder_before_the_daemon_starts(
    demo_study: Any, tmp_path: Path
) -> None:
    root = tmp_path / "run"
    shutil.copytree(demo_study.data_dir, root / "data")
    defs = build_definitions(demo_study.config_dir, root / "data")
    with (
        _IdleDaemon(root, demo_study.config_dir) as daemon,
        dg.DagsterInstance.from_config(str(daemon.home)) as instance,
    ):
        assert _unknown_partitions(defs, instance) == {}
        assert _requested(dg.evaluate_automation_conditions(defs=defs, instance=instance)) == {}
