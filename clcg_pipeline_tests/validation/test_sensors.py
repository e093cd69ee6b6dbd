"""The annotation inbox sensor, and the annotation assets run by Dagster (checks included)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd

from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import read_frame
from clcg_pipeline.storage._files import write_frame
from clcg_pipeline.validation.human.sensors import HUMAN_VALIDATION_JOB
from clcg_pipeline_tests.validation.annotation_world import world


def _tick(
    sensor: dg.SensorDefinition, instance: dg.DagsterInstance, study: StudyResource, cursor: str | None
):
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"study": study})
    return sensor.evaluate_tick(context)


def test_a_file_dropped_in_the_inbox_requests_the_import(config_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    defs = build_definitions(config_dir, data)
    sensor = defs.resolve_sensor_def("annotation_inbox_sensor")
    assert sensor.job_name == HUMAN_VALIDATION_JOB
    job = defs.resolve_job_def(HUMAN_VALIDATION_JOB)
    assert {"human_annotations", "annotation_imports"} <= {
        k.to_user_string() for k in job.asset_layer.selected_asset_keys
    }
    study = StudyResource(config_dir=str(config_dir), data_dir=str(data))
    inbox = data / "annotations" / "inbox"
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        empty = _tick(sensor, instance, study, None)
        assert not empty.run_requests and "awaiting annotations" in (empty.skip_message or "")

        inbox.mkdir(parents=True)
        (inbox / "batch-1.csv").write_text("task_id,annotator_id,adequacy\n", encoding="utf-8")
        (inbox / ".batch-2.csv.tmp").write_text("partial", encoding="utf-8")  # a copy in progress: ignored
        waiting = _tick(sensor, instance, study, None)
        assert not waiting.run_requests and "annotation_sample" in (waiting.skip_message or "")
        assert waiting.cursor is None  # looked at again once the sample exists

        for name in (
            "annotation_sample",
            "keypoints",
            "keypoint_calls",
            "human_annotations",
            "annotation_imports",
        ):
            instance.report_runless_asset_event(dg.AssetMaterialization(name))
        first = _tick(sensor, instance, study, None)
        assert len(first.run_requests) == 1 and first.cursor and "batch-1.csv" in first.cursor
        assert ".batch-2" not in first.cursor

        same = _tick(sensor, instance, study, first.cursor)
        assert not same.run_requests

        (inbox / "batch-1.csv").write_text("task_id,annotator_id,adequacy\nx,y,3\n", encoding="utf-8")
        changed = _tick(sensor, instance, study, first.cursor)
        assert len(changed.run_requests) == 1
        assert changed.run_requests[0].run_key != first.run_requests[0].run_key


def _store_world(data: Path) -> None:
    """The upstream tables the annotation assets read, stored as `clcg run` stores them."""
    w = world(models=("lexical-reader",))
    for table in ("predictions", "scores"):
        for (lang, model), part in w[table].groupby(["language", "model"]):
            write_frame(data / table / f"language={lang}" / f"model={model}" / "data.parquet", part)
    write_frame(data / "items" / "data.parquet", w["items"].assign(level_label_validated=False))
    write_frame(data / "languages" / "data.parquet", w["languages"])


def _check(result: dg.ExecuteInProcessResult, name: str) -> dg.AssetCheckEvaluation:
    return next(e for e in result.get_asset_check_evaluations() if e.check_name == name)


def test_annotation_assets_round_trip_in_dagster(config_dir: Path, tmp_path: Path, edit_yaml) -> None:
    def small(doc: dict) -> None:
        doc["human_validation"].update(responses=30, pairs=6)

    edit_yaml(config_dir / "study.yaml", small)
    data = tmp_path / "data"
    _store_world(data)
    names = [
        "annotation_sample",
        "keypoints",
        "keypoint_calls",
        "annotation_exports",
        "human_annotations",
        "annotation_imports",
    ]
    defs = dg.Definitions.merge(
        build_definitions(config_dir, data), dg.Definitions(jobs=[dg.define_asset_job("v3", selection=names)])
    )
    job = defs.resolve_job_def("v3")
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        first = job.execute_in_process(instance=instance)
        assert first.success
        # The demo source: SIMULATED answers were generated into the inbox and imported.
        inbox = data / "annotations" / "inbox"
        assert sorted(p.name for p in inbox.iterdir()) == [
            "SIMULATED-crowd-export.csv",
            "SIMULATED-label-studio-pair-export.json",
            "SIMULATED-label-studio-single-export.json",
        ]
        assert {p.name for p in (data / "annotations" / "export").iterdir()} >= {"annotation_tasks.csv"}
        annotations = read_frame(data / "human_annotations" / "data.parquet")
        assert len(annotations) and annotations["simulated"].all()
        imported = _check(first, "annotations_imported")
        assert imported.passed and "SIMULATED" in (imported.description or "")
        assert not _check(first, "annotation_sample_filled").passed  # 4 articles cannot fill every bin

        # A broken file: the WARN names it; what was imported before stays.
        (inbox / "broken.json").write_text('{"not": "a list"}', encoding="utf-8")
        second = job.execute_in_process(
            instance=instance,
            asset_selection=[dg.AssetKey("human_annotations"), dg.AssetKey("annotation_imports")],
        )
        refused = _check(second, "annotations_imported")
        assert not refused.passed and "'broken.json'" in (refused.description or "")
        again = read_frame(data / "human_annotations" / "data.parquet")
        assert len(again) == len(annotations)
        # Frozen sample: a second run keeps the same tasks.
        before = read_frame(data / "annotation_sample" / "data.parquet")
        job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey("annotation_sample")])
        pd.testing.assert_frame_equal(read_frame(data / "annotation_sample" / "data.parquet"), before)
