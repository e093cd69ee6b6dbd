"""The annotation inbox sensor on a fresh cursor: files the last import took are not imported again."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import write_record
from clcg_pipeline.validation.human import INBOX_METADATA, inbox_fingerprint


def test_a_fresh_cursor_does_not_import_what_the_last_import_took(config_dir: Path, tmp_path: Path) -> None:
    """Issue 32: `make dev` after `make run` starts the sensor with no cursor; it requested the
    import of the demo files `clcg run` had imported, and the run rewrote the analysis."""
    data = tmp_path / "data"
    inbox = data / "annotations" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "batch-1.csv").write_text("task_id,annotator_id,adequacy\n", encoding="utf-8")
    sensor = build_definitions(config_dir, data).resolve_sensor_def("annotation_inbox_sensor")
    study = StudyResource(config_dir=str(config_dir), data_dir=str(data))
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        for name in ("annotation_sample", "keypoints"):
            instance.report_runless_asset_event(dg.AssetMaterialization(name))

        def tick() -> dg.SensorResult:
            context = dg.build_sensor_context(instance=instance, cursor=None, resources={"study": study})
            return sensor.evaluate_tick(context)  # type: ignore[return-value]

        assert len(tick().run_requests) == 1  # never imported: requested

        def imported(inbox_seen: str) -> None:
            metadata = {INBOX_METADATA: inbox_seen}
            table = str(data / "annotation_imports" / "data.parquet")
            write_record(
                str(data),
                "annotation_imports",
                None,
                code_version="v",
                run_id="r",
                path=table,
                metadata=metadata,
            )

        imported(inbox_fingerprint(str(data), "annotations/inbox"))
        already = tick()
        assert not already.run_requests and "already imported" in (already.skip_message or "")

        (inbox / "batch-2.csv").write_text("task_id,annotator_id,adequacy\n", encoding="utf-8")
        assert len(tick().run_requests) == 1  # a file the import has not seen
