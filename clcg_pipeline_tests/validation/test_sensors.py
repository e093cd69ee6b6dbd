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
        (inbox / "README.txt").write_text("what to drop here", encoding="utf-8")  # the export's
        readme_only = _tick(sensor, instance, study, None)
        assert not readme_only.run_requests and "awaiting annotations" in (readme_only.skip_message or "")
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
    paragraphs = pd.DataFrame(
        [
            {
                "doc_id": doc,
                "language": lang,
                "pid": f"p0{n}",
                "ordinal": n,
                "text": f"{lang} {doc} paragraph {n}.",
            }
            for lang in ("en", "pt")
            for doc in sorted(w["items"]["doc_id"].unique())
            for n in (1, 2, 3)
        ]
    )
    for lang, part in paragraphs.groupby("language"):
        write_frame(data / "paragraphs" / f"language={lang}" / "data.parquet", part)


def _log_lines(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.user_message for e in instance.all_logs(run_id)]


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key.to_user_string() == asset:
            return {k: v.value for k, v in materialization.metadata.items()}
    raise AssertionError(f"{asset} not materialized")


def test_every_study_gets_an_inbox_with_a_readme(config_dir: Path, tmp_path: Path, edit_yaml) -> None:
    """Not only the demo: a real source's study gets its inbox (and no simulated file)."""

    def real_source(doc: dict) -> None:
        doc["sources"] = [
            {"name": "corpus", "kind": "jsonl", "path": str(tmp_path / "c.jsonl"), "role": "primary"}
        ]

    edit_yaml(config_dir / "sources.yaml", real_source)
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["human_validation"].update(responses=12, pairs=2))
    data = tmp_path / "data"
    _store_world(data)
    names = ["annotation_sample", "keypoints", "keypoint_calls", "annotation_exports"]
    defs = dg.Definitions.merge(
        build_definitions(config_dir, data), dg.Definitions(jobs=[dg.define_asset_job("v3", selection=names)])
    )
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        assert defs.resolve_job_def("v3").execute_in_process(instance=instance).success
    inbox = data / "annotations" / "inbox"
    assert [p.name for p in inbox.iterdir()] == ["README.txt"]
    readme = (inbox / "README.txt").read_text(encoding="utf-8")
    assert "Label Studio" in readme and "annotation_codebook.md" in readme


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
            "README.txt",
            "SIMULATED-crowd-export.csv",
            "SIMULATED-label-studio-pair-export.json",
            "SIMULATED-label-studio-single-export.json",
        ]
        export = data / "annotations" / "export"
        assert {p.name for p in export.iterdir()} >= {"annotation_tasks.csv", "annotation_codebook.md"}
        # The passage shown is the reference language's (English) linked paragraphs, never the
        # evaluated language's (blinding), in the CSV and the Label Studio tasks alike.
        tasks_csv = (export / "annotation_tasks.csv").read_text(encoding="utf-8")
        assert "¶p01 en d0 paragraph 1." in tasks_csv and "pt d0" not in tasks_csv
        assert "paragraph 3" not in tasks_csv  # only the item's linked paragraphs (p01, p02)
        assert "¶p01 en d0 paragraph 1." in (export / "label_studio_single_tasks.json").read_text("utf-8")
        lines = _log_lines(instance, first.run_id)
        assert any(
            line.startswith("annotation import: SIMULATED-crowd-export.csv (csv): accepted: ")
            and " imported, 0 skipped, 0 revised, 0 excluded, 0 refused" in line
            for line in lines
        ), lines
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
        # issue 19: the run says per file what happened, a refusal with its reason; only this
        # run's file (the accepted ones were imported by the first run).
        reason = "annotation file 'broken.json': expected a Label Studio export"
        warned = [line for line in _log_lines(instance, second.run_id) if "broken.json" in line]
        assert warned and warned[0].startswith(
            "annotation import: broken.json (label_studio_json): rejected: 0 imported, 0 skipped, "
            "0 revised, 0 excluded, 0 refused: " + reason
        ), warned
        table = _metadata(second, "annotation_imports")["this_run"]
        assert table.count("\n") == 2 and "| broken.json |" in table and reason in table
        assert "SIMULATED" not in table
        again = read_frame(data / "human_annotations" / "data.parquet")
        assert len(again) == len(annotations)
        # issue 19: every revision is stored beside human_annotations (each the current one here)
        revisions = read_frame(data / "human_annotation_revisions" / "data.parquet")
        assert len(revisions) == len(annotations) and revisions["current"].all()
        # issue 36: a bad rating is excluded, named in the check; the file's good rating imports
        (inbox / "broken.json").unlink()
        singles = read_frame(data / "annotation_sample" / "data.parquet").query("kind == 'single'")["task_id"]
        (inbox / "late.csv").write_text(
            f"task_id,annotator_id,adequacy\n{singles.iloc[0]},ann-late,9\n{singles.iloc[1]},ann-late,4\n",
            encoding="utf-8",
        )
        late = job.execute_in_process(
            instance=instance,
            asset_selection=[dg.AssetKey("human_annotations"), dg.AssetKey("annotation_imports")],
        )
        check = _check(late, "annotations_imported")
        assert not check.passed and check.metadata["excluded"].value == 1
        assert "1 rating(s) excluded" in (check.description or "") and "'late.csv', line 2" in (
            check.description or ""
        )
        again = read_frame(data / "human_annotations" / "data.parquet")
        assert len(again) == len(annotations) + 1
        stored = read_frame(data / "human_annotation_revisions" / "data.parquet")
        assert stored["excluded_reason"].dropna().tolist() == [
            "out_of_scale: field 'adequacy': adequacy='9' is outside 1..5"
        ]
        (inbox / "late.csv").unlink()
        # A bad annotator map: the import fails naming the file and line; nothing stored changes.
        (data / "annotations" / "label_studio_users.csv").write_text(
            "instance,user_id,annotator_id\nlab,1,nobody\n", encoding="utf-8"
        )
        bad_map = job.execute_in_process(
            instance=instance,
            asset_selection=[dg.AssetKey("human_annotations"), dg.AssetKey("annotation_imports")],
            raise_on_error=False,
        )
        assert not bad_map.success
        failure = next(e for e in bad_map.all_events if e.is_step_failure).step_failure_data
        assert failure.user_failure_data is not None
        described = failure.user_failure_data.description or ""
        assert "'annotations/label_studio_users.csv', line 2, field 'annotator_id'" in described
        pd.testing.assert_frame_equal(read_frame(data / "human_annotations" / "data.parquet"), again)
        (data / "annotations" / "label_studio_users.csv").unlink()
        # Frozen sample: a second run keeps the same tasks.
        before = read_frame(data / "annotation_sample" / "data.parquet")
        job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey("annotation_sample")])
        pd.testing.assert_frame_equal(read_frame(data / "annotation_sample" / "data.parquet"), before)


def test_the_run_summary_says_what_each_annotation_file_of_this_run_did(tmp_path: Path) -> None:
    from clcg_pipeline.orchestration._summary import RunSummary, record_imports

    def row(file: str, status: str, at: str, error: str | None = None, **counts: int) -> dict:
        base = dict.fromkeys(("records", "imported", "skipped", "revised", "refused"), 0)
        return {"file": file, "sha256": file, "format": "label_studio_json", **base, **counts,
                "status": status, "error": error, "imported_at": at}  # fmt: skip

    before, now = "2026-03-01T09:00:00+00:00", "2026-03-02T09:00:05+00:00"
    log = pd.DataFrame(
        [
            row("day-1.json", "accepted", before, imported=40),
            row("old-gone.json", "stale", before, "no longer imports against the current sample: x"),
            row("day-2.json", "accepted", now, records=44, imported=4, skipped=38, revised=2),
            row("typo.json", "rejected", now, "annotation file 'typo.json', task 3: bad", refused=1),
            # issue 36: an accepted file with an excluded rating says which and why
            row(
                "day-3.json",
                "accepted",
                now,
                "1 rating(s) excluded, ...: task 2, field 'adequacy'",
                excluded=1,
            ),
        ]
    )
    write_frame(tmp_path / "annotation_imports" / "data.parquet", log)
    summary = RunSummary()
    record_imports(summary, str(tmp_path), pd.Timestamp("2026-03-02T09:00:00", tz="UTC"))
    assert summary.annotation_files == [
        "old-gone.json (label_studio_json): stale: 0 imported, 0 skipped, 0 revised, 0 excluded, 0 refused: "
        "no longer imports against the current sample: x",
        "day-2.json (label_studio_json): accepted: 4 imported, 38 skipped, 2 revised, 0 excluded, 0 refused",
        "typo.json (label_studio_json): rejected: 0 imported, 0 skipped, 0 revised, 0 excluded, 1 refused: "
        "annotation file 'typo.json', task 3: bad",
        "day-3.json (label_studio_json): accepted: 0 imported, 0 skipped, 0 revised, 1 excluded, 0 refused: "
        "1 rating(s) excluded, ...: task 2, field 'adequacy'",
    ]
    assert summary.annotation_files_refused == 2
    empty = RunSummary()
    record_imports(empty, str(tmp_path / "nothing"), pd.Timestamp.now(tz="UTC"))
    assert empty.annotation_files == []
